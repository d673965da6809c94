# The audit of the headline case (V2 on the emulator beside the exact reference).
pagedattn_bench(bench_audit ${CMAKE_CURRENT_LIST_DIR}/bench_audit.cpp)
target_link_libraries(bench_audit PRIVATE pagedattn::audit)
