"""A check's result: per version the verdict, cases, throughput, worst case and shrunk
failure; the text a run ends with; the JSON `pagedattn report` reads (torch/CHECK_SCHEMA.md)."""
import dataclasses
import json
import math
import os
import tempfile
from typing import List, Optional

from .judging import EXACT, RANK, WRONG

SCHEMA = "pagedattn-check/1"


def _num(x):
    """JSON has no inf: an infinite ratio (a NaN or exception failure) is written as null."""
    return None if x is None or not math.isfinite(x) else x


@dataclasses.dataclass
class VersionResult:
    version: str
    verdict: str = EXACT
    cases: int = 0          # cases judged, shrinking included
    shrink_steps: int = 0   # of them, after the first failure
    seconds: float = 0.0
    worst: Optional[dict] = None    # the passing case with the largest error over our bound
    failure: Optional[dict] = None  # the shrunk failing case

    @property
    def cases_per_s(self):
        return self.cases / self.seconds if self.seconds > 0 else 0.0

    def to_json(self):
        d = dataclasses.asdict(self)
        d["cases_per_s"] = self.cases_per_s
        for part in ("worst", "failure"):
            if d[part]:
                d[part] = {k: (_num(v) if isinstance(v, float) else v)
                           for k, v in d[part].items()}
        return d


@dataclasses.dataclass
class Result:
    implementation: str
    device: str
    profile: str
    seed: int
    cases_requested: int
    torch_version: str
    versions: List[VersionResult] = dataclasses.field(default_factory=list)

    @property
    def verdict(self):
        return max((v.verdict for v in self.versions), key=RANK.get, default=EXACT)

    @property
    def ok(self):
        return self.verdict != WRONG

    def lines(self):
        """What a run prints, ending with the one verdict line."""
        out = []
        for v in self.versions:
            head = "%s: %-11s %d cases in %.1f s (%.1f cases/s)" % (
                v.version, v.verdict, v.cases, v.seconds, v.cases_per_s)
            if v.worst:
                w = v.worst
                head += "; worst %.3g ulp, %.3g of our bound, %.3g of vLLM's at %s of %s" % (
                    w["err_ulps"], w["over_ours"], w["over_vllm"], w["where"], w["case"])
            out.append(head)
            if v.failure:
                f = v.failure
                out.append("  failure (after %d cases, shrunk in %d more): %s" % (
                    v.cases - v.shrink_steps, v.shrink_steps, f["reason"]))
                out.append("  shrunk case: %s" % f["case"])
                if f.get("replay_dir"):
                    out.append("  replay folder: %s" % f["replay_dir"])
                    out.append("  reproduce: %s" % f["reproduce"])
                    out.append("  this project's kernels on it: %s" % f["pagedattn_run"])
        worst = max((v.worst["over_ours"] for v in self.versions if v.worst), default=None)
        parts = ", ".join("%s %s" % (v.version, v.verdict) for v in self.versions)
        tail = "verdict: %s on %s: %s (%s; %d cases" % (
            self.implementation, self.device, self.verdict, parts,
            sum(v.cases for v in self.versions))
        if worst is not None:
            tail += ", worst %.3g of our bound" % worst
        fails = [v for v in self.versions if v.failure]
        if fails:
            tail += "; %s: %s" % (fails[0].version, fails[0].failure["reason"].split(":")[0])
        out.append(tail + ")")
        return out

    def to_json(self):
        return {
            "schema": SCHEMA,
            "implementation": self.implementation, "device": self.device,
            "profile": self.profile, "seed": self.seed,
            "cases_requested": self.cases_requested, "torch": self.torch_version,
            "verdict": self.verdict,
            "versions": [v.to_json() for v in self.versions],
        }

    def write_json(self, path):
        """Atomically: a reader never sees half a file."""
        folder = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".check-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump(self.to_json(), f, indent=1)
            f.write("\n")
        os.replace(tmp, path)
