# The sources a program was built from (issue 21, item 3): scripts/source_digest.py (the
# one definition of the digest and of the files it covers) writes
# BUILD/generated/pagedattn/provenance.h at every build, rewriting it only when the commit
# or a digest changed, so an unchanged tree recompiles nothing. A target that records what
# it judged calls pagedattn_use_provenance(target).
find_package(Python3 COMPONENTS Interpreter REQUIRED)
set(PAGEDATTN_PROVENANCE_DIR ${CMAKE_BINARY_DIR}/generated)
add_custom_target(pagedattn_provenance_header
  COMMAND Python3::Interpreter ${CMAKE_SOURCE_DIR}/scripts/source_digest.py
          --root ${CMAKE_SOURCE_DIR} --header ${PAGEDATTN_PROVENANCE_DIR}/pagedattn/provenance.h
  BYPRODUCTS ${PAGEDATTN_PROVENANCE_DIR}/pagedattn/provenance.h
  COMMENT "provenance.h: commit and source digest"
  VERBATIM)
function(pagedattn_use_provenance target)
  target_include_directories(${target} PRIVATE ${PAGEDATTN_PROVENANCE_DIR})
  add_dependencies(${target} pagedattn_provenance_header)
endfunction()
