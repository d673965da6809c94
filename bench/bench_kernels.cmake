# Grouped against per-head V1/V2 on the emulator (bench_kernels.cpp): the library's kernels
# for the times; the same rows over the instrumented f16 kernels (emulator/tests'
# emu_kernels_harness, built with the tests) for the bytes each call moves.
if(TARGET pagedattn::testing AND TARGET pagedattn::kernels)
  pagedattn_bench(bench_kernels ${CMAKE_CURRENT_LIST_DIR}/bench_kernels.cpp)
  target_link_libraries(bench_kernels PRIVATE pagedattn::testing pagedattn::kernels)
endif()
if(TARGET emu_kernels_harness)
  pagedattn_bench(bench_kernels_traffic ${CMAKE_CURRENT_LIST_DIR}/bench_kernels.cpp
                  $<TARGET_OBJECTS:emu_kernels_harness>)
  target_link_libraries(bench_kernels_traffic PRIVATE emu_kernels_harness)
endif()
