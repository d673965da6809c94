pagedattn_bench(bench_reference ${CMAKE_CURRENT_LIST_DIR}/bench_reference.cpp)
target_link_libraries(bench_reference PRIVATE pagedattn::reference)
