#!/usr/bin/env bash
# The test suite again under AddressSanitizer + UndefinedBehaviorSanitizer, built by
# scripts/sanitizer_build.sh (clang -O1, the build the fuzz stage reuses; gcc -O2 where clang's
# libFuzzer is missing) with CUDA and the benchmarks off. Any sanitizer report fails the test
# that triggered it (halt_on_error, -fno-sanitize-recover), and so this stage.
#
# What runs: every ctest test except
#  - kernels.under_emu_checks_all.{0,1,2}: the whole kernels suite a second time (three
#    shards) with every emulator check on. Under ASan it alone took 475 s (it passed; run it
#    by hand with `ctest --test-dir build-san -R under_emu_checks_all`), more than the rest of the
#    suite together (177 s), while the same kernels already run under ASan in the kernels
#    label and the checks themselves in the emulator label.
#  - proofs.coq: Coq checking its proofs (105-126 s); no program of ours runs in it.
#  - bound.coq (16 s): Python reading Bound.v against the table of bound_table, a program
#    that runs here in bound.table.
#  - kernels.output_digests and kernels.output_digests_grouped (68 s and 75 s under ASan):
#    every output byte over a grid, pinned as digests; the same instantiations run under
#    ASan in All/Combination (every supported combination, 225 tests) and the properties,
#    so here they would add the bit pattern, which the main run checks, and no memory access.
#  - Ablation.SixteenBitChoicesCostMoreThanOurs (61 s), Ablation.Fp32PartialsAreOurs (14 s) and
#    Grouped.BitIdenticalToPerHeadKernelsOverRatios (31 s):
#    numerical comparisons between kernel variants whose calls the audit, kernels and
#    grouped tests make under ASan too. (Kept, although as long: LongSequence's 4,000,000
#    tokens, the only test whose reduce reads thousands of partitions, and the fp16/fp8
#    conversion sweeps, where UBSan watches the bit arithmetic.)
#  - report.render_fixture (40 s), properties.mutation_lists_current, docs.citations_resolve
#    and docs.citation_check_catches_dangling: Python alone (matplotlib on fixture JSON,
#    mutate.py --list, the docs' citations); they start no program of this build, so
#    nothing in them is instrumented.
#  - emulator.install_and_consume: installs the package and builds a consumer project
#    with the default flags; it tests packaging, not memory safety.
#  - torch.vllm_grid (see below).
#  - slurm.campaign_and_mutants (label slurm): it tests the job scripts on a scheduler, and
#    its mutate.py run would build the mutant programs again under ASan, racecheck's
#    -fsanitize=thread build among them, which neither gcc nor clang allows beside -fsanitize=address.
#  - racecheck's hazard-mode tests (emulator/tests: test_racecheck_hazard,
#    test_kernels_hazard) are not built: their kernels are compiled with
#    -fsanitize=thread, which neither compiler allows beside -fsanitize=address. They run in the
#    main ctest run.
# The emulator's memcheck catches device out-of-bounds with guard pages and its own
# SIGSEGV handler. ASan lets a program install its own handler (allow_user_segv_handler
# is on by default), and the emulator's handler hands faults that are not its own back
# to the previous disposition (ASan's), so both work together: no memcheck test is
# skipped.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$(bash scripts/sanitizer_build.sh "${ASAN_BUILD_DIR:-${SAN_BUILD_DIR:-build-san}}")
jobs=${JOBS:-$(nproc)}
# detect_leaks=0: LeakSanitizer needs ptrace, absent in many CI containers; leaks are
# not the memory errors this stage is for.
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=0:detect_stack_use_after_return=0:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:${UBSAN_OPTIONS:-}"
start=$SECONDS
ctest --test-dir "$build" --output-on-failure -j "$jobs" -LE '^(torch|check|slurm)$' \
  -E '^(kernels\.under_emu_checks_all\.[0-9]+|emulator\.install_and_consume|proofs\.coq|bound\.coq|kernels\.output_digests(_grouped)?|report\.render_fixture|properties\.mutation_lists_current|docs\.citation[a-z_]+|Ablation\.(SixteenBitChoicesCostMoreThanOurs|Fp32PartialsAreOurs)|Grouped\.BitIdenticalToPerHeadKernelsOverRatios)$' "$@"
# The torch and check labels run /usr/bin/python3, which is not linked with the sanitizer
# runtimes: they must come first in the process, so they are preloaded (for these tests
# only). Left out: torch.vllm_grid (280 s under ASan; its calls take the same code paths as
# torch.run_equality and torch.schema, which run) and check.cli (the check's command line
# over the same judge and operators that check.subjects runs).
if ctest --test-dir "$build" -N -L '^(torch|check)$' | grep -q 'Test *#'; then
  # The runtimes the build's programs link (clang's one, or gcc's libasan and libubsan).
  runtime=$(ldd "$build/tools/pagedattn" | awk '/lib(asan|ubsan|clang_rt\.asan)/ {print $3}' | paste -sd:)
  LD_PRELOAD="$runtime" \
    ctest --test-dir "$build" --output-on-failure -j "$jobs" -L '^(torch|check)$' \
    -E '^(torch\.vllm_grid|check\.cli)$'
fi
echo "20-sanitizers: tests took $((SECONDS - start)) s"
