pagedattn_bench(bench_emulator bench_emulator.cpp)
target_link_libraries(bench_emulator PRIVATE pagedattn::emulator)
# The emulator against a plain C++ loop of the same math (the V2 headline case).
if(TARGET pagedattn::kernels)
  pagedattn_bench(bench_emulator_overhead bench_emulator_overhead.cpp)
  target_link_libraries(bench_emulator_overhead PRIVATE pagedattn::kernels)
  # The native loop built for the same instructions as the emulated kernels (fmaf, F16C).
  target_compile_options(bench_emulator_overhead PRIVATE ${PAGEDATTN_EMU_KERNEL_ISA})
endif()
