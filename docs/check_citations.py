#!/usr/bin/env python3
"""Every Markdown file the repository cites exists in the repository.

Scans the tracked text files (sources, scripts, build files, docs) for paths ending in
`.md` and fails, naming file:line and the path, for each one that resolves neither
against the citing file's folder nor against the repository root. The repository may
cite only files inside it: an absolute path, or a path into another checkout, is
dangling. Anchors (`#...`) are not checked.

Not citations, listed below with the reason: the report's generated `summary.md`, the GPU
bundle's README (a copy the bundle script writes), and
one external project's file named in a source string of the BI-V100 profile.

    check_citations.py [ROOT]      check ROOT (default: this file's repository)
    check_citations.py --self-test check the checker: a tree with one dangling citation
                                   must fail, naming it, and the same tree fixed must pass
"""
import os
import re
import subprocess
import sys
import tempfile

# A path: letters, digits and ./_- (a leading / included), ending in .md, not preceded by
# a character that would make it part of a longer word or URL.
CITATION = re.compile(r"(?<![A-Za-z0-9_.:/-])(/?[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.md)\b")

# Cited but not files of the repository, each for a stated reason.
NOT_CITATIONS = {
    "summary.md": "written by `pagedattn report` into its output folder",
    "DIR/summary.md": "written by `pagedattn report` into its output folder",
    "out/report/summary.md": "written by scripts/report.sh",
    "gpu_bundle/README.md": "written by scripts/gpu_bundle.sh into the bundle (a copy of "
                            "gpu_bench/bundle/README.md)",
    "docs/ILUVATAR.md": "the FlagSparse project's file, named as the source of a BI-V100 figure",
}

# Data, not text anyone cites from: fuzz inputs, vendored third-party fixtures, and this
# file (its self-test's fixture names files that exist only in a temporary tree).
SKIP_DIRS = ("fuzz/corpus/", "fuzz/regressions/", "torch/tests/fixtures/")
SKIP_FILES = ("docs/check_citations.py",)
TEXT_SUFFIXES = (".md", ".h", ".cpp", ".cuh", ".cu", ".inc", ".py", ".sh", ".txt", ".cmake",
                 ".in", ".json", ".v", ".toml", ".cfg", ".yml", ".yaml")


def files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files"], check=True, capture_output=True,
                             text=True).stdout.split("\n")
        listed = [f for f in out if f]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: walk it
        listed = []
        for d, subdirs, names in os.walk(root):
            subdirs[:] = [s for s in subdirs
                          if not s.startswith(".") and not s.startswith("build") and s != "out"]
            listed += [os.path.relpath(os.path.join(d, n), root) for n in names]
    for f in sorted(listed):
        name = os.path.basename(f)
        if f.startswith(SKIP_DIRS) or f.startswith("out/") or f in SKIP_FILES:
            continue
        if f.endswith(TEXT_SUFFIXES) or name in ("CMakeLists.txt", "run") or "." not in name:
            yield f


def dangling(root):
    found = []
    for f in files(root):
        path = os.path.join(root, f)
        if not os.path.isfile(path):
            continue
        try:
            with open(path, encoding="utf-8") as fh:
                lines = fh.read().split("\n")
        except (UnicodeDecodeError, OSError):
            continue
        for n, line in enumerate(lines, 1):
            for m in CITATION.finditer(line):
                cited = m.group(1)
                if cited in NOT_CITATIONS:
                    continue
                here = os.path.join(root, os.path.dirname(f), cited)
                top = os.path.join(root, cited.lstrip("/"))
                inside = not cited.startswith("/")
                if inside and (os.path.isfile(here) or os.path.isfile(top)):
                    continue
                found.append(f"{f}:{n}: cites {cited}, which is not a file of the repository")
    return found


def self_test():
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "docs"))
        os.makedirs(os.path.join(root, "src"))
        with open(os.path.join(root, "docs", "A.md"), "w") as fh:
            fh.write("See [B](B.md) and src/notes.md.\n")
        with open(os.path.join(root, "docs", "B.md"), "w") as fh:
            fh.write("Back to A.md.\n")
        with open(os.path.join(root, "src", "code.cpp"), "w") as fh:
            fh.write("// The rule (docs/A.md); the lost one (docs/GONE.md).\n")
        got = dangling(root)
        want = ["docs/A.md:1: cites src/notes.md, which is not a file of the repository",
                "src/code.cpp:1: cites docs/GONE.md, which is not a file of the repository"]
        if got != want:
            print("self-test: expected", want, "got", got)
            return 1
        with open(os.path.join(root, "src", "notes.md"), "w") as fh:
            fh.write("notes\n")
        with open(os.path.join(root, "docs", "GONE.md"), "w") as fh:
            fh.write("here now\n")
        if dangling(root):
            print("self-test: the fixed tree still fails:", dangling(root))
            return 1
    print("self-test: a dangling citation fails and names file:line; the fixed tree passes")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = dangling(root)
    for line in found:
        print(line)
    if found:
        print(f"{len(found)} dangling .md citation(s)")
        return 1
    print("every cited .md file exists")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
