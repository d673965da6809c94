"""python3 -m pagedattn_torch.check IMPL ...: exit 0 (exact-class or vllm-class), 1 (wrong),
2 (a bad argument: one line naming it and the allowed values; nothing is written)."""
import argparse
import sys

from . import DEFAULT_CASES, DEFAULT_REPLAY_DIR, UsageError, check

DESCRIPTION = """\
Judges a paged-attention implementation against this project's exact reference and proven
error bound. IMPL is pagedattn (this project's operators), vllm (vllm._custom_ops), a module
holding paged_attention_v1/_v2, or module:function (a callable with vLLM 0.6.x's
paged_attention_v1 or _v2 signature; k_scale/v_scale as floats or one-element tensors).
Cases are drawn by Hypothesis and a wrong one is shrunk to a small case, written as a replay
folder in `pagedattn run`'s format with the command that reproduces it."""

EPILOG = """\
verdicts: exact-class (within the bound of our numerics), vllm-class (within the bound of
vLLM's numerics), wrong (outside both, NaN where a finite value is required or the reverse,
a write outside an output, a modified input, output changed by garbage past seq_len, or an
exception). The last line printed is the verdict."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.exit(2, "pagedattn check: %s\n" % message)


def _positive(text):
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v < 1:
        raise argparse.ArgumentTypeError("must be an integer >= 1, got %r" % text)
    return v


def _seed(text):
    try:
        v = int(text)
    except ValueError:
        v = -1
    if v < 0:
        raise argparse.ArgumentTypeError("must be an integer >= 0, got %r" % text)
    return v


def parser():
    p = _Parser(prog="python3 -m pagedattn_torch.check", description=DESCRIPTION, epilog=EPILOG,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("impl", metavar="IMPL", help="pagedattn, vllm, MODULE or MODULE:FUNCTION")
    p.add_argument("--version", default="both", choices=("v1", "v2", "both"),
                   help="which of the subject's versions (default both: every one it has)")
    p.add_argument("--device", default="cpu", metavar="DEV",
                   help="torch device the subject runs on: cpu, cuda, cuda:N, ... (default cpu)")
    p.add_argument("--cases", default=DEFAULT_CASES, type=_positive, metavar="N",
                   help="cases drawn per version, >= 1 (default %d)" % DEFAULT_CASES)
    p.add_argument("--seed", default=0, type=_seed, metavar="S",
                   help="Hypothesis seed, >= 0 (default 0)")
    p.add_argument("--profile", default=None, metavar="NAME",
                   help="device profile (name or .json) whose warp width the bound assumes, and "
                        "the emulator's for IMPL pagedattn on cpu (default: bi-v100 on cpu, "
                        "h200 on NVIDIA CUDA, bi-v100 on an Iluvatar card)")
    p.add_argument("--json", default=None, metavar="FILE",
                   help="write the result as JSON (torch/CHECK_SCHEMA.md) for pagedattn report")
    p.add_argument("--replay-dir", default=DEFAULT_REPLAY_DIR, metavar="DIR",
                   help="where a failure's replay folder goes (default %s; written only on a "
                        "failure)" % DEFAULT_REPLAY_DIR)
    p.add_argument("--case", default=None, metavar="DIR",
                   help="judge the one case of a replay folder instead of drawing cases")
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        result = check(args.impl, version=args.version, device=args.device, cases=args.cases,
                       seed=args.seed, profile=args.profile, json_path=args.json,
                       replay_dir=args.replay_dir, case_dir=args.case,
                       echo=lambda line: print(line, flush=True))
    except UsageError as e:
        print("pagedattn check: %s" % e, file=sys.stderr)
        return 2
    for line in result.lines():
        print(line)
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
