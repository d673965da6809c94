# pagedattn::testing's sources, for the library (CMakeLists.txt here) and for builds that
# compile them against another copy of the kernels (the mutation build in property_tests/,
# the race-instrumented kernels in emulator/tests/).
set(PAGEDATTN_TESTING_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/src/formats.cpp ${CMAKE_CURRENT_LIST_DIR}/src/case.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/uniform_case.cpp ${CMAKE_CURRENT_LIST_DIR}/src/run.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/judge.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/magnitudes.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/adversarial_exp.cpp)
set(PAGEDATTN_TESTING_INCLUDE ${CMAKE_CURRENT_LIST_DIR}/include)
