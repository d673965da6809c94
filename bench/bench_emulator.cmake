pagedattn_bench(bench_emulator bench_emulator.cpp)
target_link_libraries(bench_emulator PRIVATE pagedattn::emulator)
