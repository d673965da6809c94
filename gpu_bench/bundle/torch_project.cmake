# The GPU bundle's torch project (scripts/gpu_bundle.sh copies this to torch/CMakeLists.txt
# of the payload): builds torch/ of the repository, unchanged (src/), against the machine's
# torch, on this build's libraries. Every static library of the build is merged into
# lib/libpagedattn_bundle.a; each of their CMake names (lib/targets.txt, pagedattn_X and
# pagedattn::X) is a stand-in that links it, so torch/CMakeLists.txt finds the targets it
# names, new ones too. pagedattn_kernels (CPU-only, the same API) maps to the archive's
# CUDA library. Configure: cmake -S . -B B -DTorch_DIR=...; run.sh does it.
cmake_minimum_required(VERSION 3.20)
project(pagedattn_torch_bundle LANGUAGES C CXX)
set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-ffp-contract=off>)
set(PAGEDATTN_TESTS OFF)
find_package(Threads REQUIRED)
find_package(CUDAToolkit QUIET)

set(bundle_lib ${CMAKE_CURRENT_SOURCE_DIR}/lib)
file(GLOB bundle_runtime ${bundle_lib}/*.so*)
add_library(pagedattn_bundle_archive INTERFACE)
target_link_libraries(pagedattn_bundle_archive INTERFACE ${bundle_lib}/libpagedattn_bundle.a
                      ${bundle_runtime} Threads::Threads ${CMAKE_DL_LIBS})
if(TARGET CUDA::cudart)
  target_link_libraries(pagedattn_bundle_archive INTERFACE CUDA::cudart)
endif()
target_include_directories(pagedattn_bundle_archive INTERFACE
                           ${CMAKE_CURRENT_SOURCE_DIR}/include)
# As pagedattn::emulator links (emulator/CMakeLists.txt): -rdynamic, and the emulator's
# link step (link/ld, run as the linker through -B) that defines the extern __shared__ pool.
target_link_options(pagedattn_bundle_archive INTERFACE -rdynamic
                    -B${CMAKE_CURRENT_SOURCE_DIR}/link/)
file(STRINGS ${bundle_lib}/targets.txt bundle_targets)
list(APPEND bundle_targets pagedattn_kernels)
list(REMOVE_DUPLICATES bundle_targets)
foreach(t IN LISTS bundle_targets)
  add_library(${t} INTERFACE)
  target_link_libraries(${t} INTERFACE pagedattn_bundle_archive)
  string(REGEX REPLACE "^pagedattn_" "" short ${t})
  add_library(pagedattn::${short} ALIAS ${t})
endforeach()
add_library(nlohmann_json::nlohmann_json ALIAS pagedattn_bundle_archive)

add_subdirectory(src)
