#!/usr/bin/env python3
"""The headline audit against a plain PyTorch V2, timed in one run.

The PyTorch V2 here is a TIMING BASELINE written from vLLM's contract (gather the keys and
values by the block table, per-partition softmax states (max, exp-sum, partial output),
the log-sum-exp reduce over partitions), in plain PyTorch on the CPU. It is not a
reference: nothing in the project is judged against it (the exact reference is
reference/). It only says what an ordinary implementation of the same shape costs on the
same machine, so the audit's time can be given as a ratio.

Each round runs `pagedattn audit` on the headline shape (a subprocess, wall time) and then
the PyTorch V2 on inputs of the same shape (wall time of the call only; inputs are made
once, outside the timing), interleaved, so both see the same machine load; the medians and
their ratio are printed (and written as JSON with --json).

  /usr/bin/python3 bench/torch_v2_baseline.py --pagedattn build-release/tools/pagedattn
"""
import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import torch

HEADLINE = ["audit", "--profile", "bi-v100", "--num-seqs", "1", "--num-heads", "32",
            "--num-kv-heads", "8", "--head-size", "128", "--seq-lens", "100000", "--dtype", "f16"]


def make_inputs(num_heads, num_kv_heads, head_size, block_size, seq_len, seed=0):
    """vLLM's layouts: query [S, H, D]; key_cache [blocks, KVH, D/x, B, x] with x = 16 bytes
    of elements; value_cache [blocks, KVH, D, B]; block_tables [S, max_blocks]; seq_lens [S].
    Elements uniform in +-D^-0.5 (vLLM's test inputs), fp16."""
    g = torch.Generator().manual_seed(seed)
    x = 16 // 2
    num_blocks = (seq_len + block_size - 1) // block_size
    r = head_size ** -0.5

    def uniform(*shape):
        return ((torch.rand(*shape, generator=g) * 2 - 1) * r).half()

    query = uniform(1, num_heads, head_size)
    key_cache = uniform(num_blocks, num_kv_heads, head_size // x, block_size, x)
    value_cache = uniform(num_blocks, num_kv_heads, head_size, block_size)
    block_tables = torch.randperm(num_blocks, generator=g).to(torch.int32).reshape(1, -1)
    seq_lens = torch.tensor([seq_len], dtype=torch.int32)
    return query, key_cache, value_cache, block_tables, seq_lens


def paged_attention_v2(query, key_cache, value_cache, block_tables, seq_lens, scale,
                       partition_size=512):
    """out[s, h] = softmax(scale q.K) V over the sequence's tokens, by partitions of
    partition_size tokens: each partition's max m_p, exp-sum s_p and output o_p, then the
    reduce sum_p s_p e^(m_p - M) o_p / sum_p s_p e^(m_p - M) with M = max_p m_p. fp32
    arithmetic, the output in the query's dtype."""
    num_seqs, num_heads, head_size = query.shape
    num_kv_heads, block_size = key_cache.shape[1], key_cache.shape[3]
    group = num_heads // num_kv_heads
    out = torch.empty_like(query)
    for s in range(num_seqs):
        n = int(seq_lens[s])
        blocks = block_tables[s, : (n + block_size - 1) // block_size].long()
        # [blocks, KVH, D/x, B, x] -> [KVH, tokens, D]; [blocks, KVH, D, B] -> [KVH, tokens, D]
        k = key_cache.index_select(0, blocks).permute(1, 0, 3, 2, 4)
        k = k.reshape(num_kv_heads, -1, head_size)[:, :n].float()
        v = value_cache.index_select(0, blocks).permute(1, 0, 3, 2)
        v = v.reshape(num_kv_heads, -1, head_size)[:, :n].float()
        q = query[s].float().reshape(num_kv_heads, group, head_size)
        logits = torch.bmm(q, k.transpose(1, 2)) * scale  # [KVH, group, n]
        parts = (n + partition_size - 1) // partition_size
        pad = parts * partition_size - n
        lp = torch.nn.functional.pad(logits, (0, pad), value=-math.inf)
        lp = lp.reshape(num_kv_heads, group, parts, partition_size)
        m = lp.amax(-1)  # per-partition max
        e = torch.exp(lp - m.unsqueeze(-1))
        es = e.sum(-1)  # per-partition exp-sum
        vp = torch.nn.functional.pad(v, (0, 0, 0, pad)).reshape(num_kv_heads, parts,
                                                               partition_size, head_size)
        o = torch.einsum("kgpt,kptd->kgpd", e, vp) / es.unsqueeze(-1)  # per-partition output
        big_m = m.amax(-1, keepdim=True)
        w = es * torch.exp(m - big_m)
        r = (w.unsqueeze(-1) * o).sum(2) / w.sum(-1, keepdim=True)
        out[s] = r.reshape(num_heads, head_size).to(out.dtype)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pagedattn", default="build-release/tools/pagedattn")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2, help="torch intra-op threads")
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--also", help="a second pagedattn binary timed in the same rounds "
                    "(e.g. an older build, for a before/after in one run)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    inputs = make_inputs(32, 8, 128, 16, 100000)
    scale = 128 ** -0.5
    # The partitioned computation against one softmax over all tokens (a sanity check of
    # this baseline, fp32 against fp32; it is not a test of anything in the project).
    out = paged_attention_v2(*inputs, scale)
    q, kc, vc, bt, sl = inputs
    k = kc.index_select(0, bt[0].long()).permute(1, 0, 3, 2, 4).reshape(8, -1, 128).float()
    v = vc.index_select(0, bt[0].long()).permute(1, 0, 3, 2).reshape(8, -1, 128).float()
    p = torch.softmax(torch.bmm(q[0].float().reshape(8, 4, 128), k.transpose(1, 2)) * scale, -1)
    direct = torch.bmm(p, v).reshape(1, 32, 128)
    sanity = float((out.float() - direct).abs().max())
    def children_cpu():
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    def audit(binary):
        """Wall and CPU time of one audit, and the emulator's V2 time (its two V2 cases)."""
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            c0, t0 = children_cpu(), time.perf_counter()
            subprocess.run([binary] + HEADLINE + ["--json", f.name], check=True,
                           stdout=subprocess.DEVNULL)
            wall, cpu = time.perf_counter() - t0, children_cpu() - c0
            cases = json.load(open(f.name))["cases"]
        return wall, cpu, sum(c["time_s"] for c in cases if c["kernel"] == "v2")

    times = {k: [] for k in ("audit", "audit_cpu", "audit_v2_kernels", "torch_v2",
                             "torch_v2_cpu", "also", "also_cpu", "also_v2_kernels")}
    for i in range(a.rounds):
        wall, cpu, v2 = audit(a.pagedattn)
        times["audit"].append(wall)
        times["audit_cpu"].append(cpu)
        times["audit_v2_kernels"].append(v2)
        if a.also:
            w, c, v = audit(a.also)
            times["also"].append(w)
            times["also_cpu"].append(c)
            times["also_v2_kernels"].append(v)
        c0, t0 = time.process_time(), time.perf_counter()
        paged_attention_v2(*inputs, scale)
        times["torch_v2"].append(time.perf_counter() - t0)
        times["torch_v2_cpu"].append(time.process_time() - c0)
        print("round %d: audit %.2f s wall, %.2f s CPU (its V2 launches %.2f s); torch V2 %.3f s "
              "wall, %.3f s CPU%s" % (i + 1, wall, cpu, v2, times["torch_v2"][-1],
                                      times["torch_v2_cpu"][-1],
                                      "; also %.2f s wall, %.2f s CPU (its V2 launches %.2f s)"
                                      % (times["also"][-1], times["also_cpu"][-1],
                                         times["also_v2_kernels"][-1])
                                      if a.also else ""), flush=True)
    med = {k: statistics.median(v) for k, v in times.items() if v}
    res = {"command": "pagedattn " + " ".join(HEADLINE), "rounds": a.rounds,
           "torch_threads": a.threads, "load_average": os.getloadavg(), "times_s": times,
           "medians_s": med, "ratio": med["audit"] / med["torch_v2"],
           "cpu_ratio": med["audit_cpu"] / med["torch_v2_cpu"],
           "v2_kernels_ratio": med["audit_v2_kernels"] / med["torch_v2"],
           "baseline_vs_one_softmax_max_abs": sanity}
    if a.also:
        res["also"] = a.also
        res["also_ratio"] = med["also"] / med["torch_v2"]
        res["audit_over_also"] = med["audit"] / med["also"]
        res["audit_cpu_over_also"] = med["audit_cpu"] / med["also_cpu"]
        res["v2_kernels_over_also"] = med["audit_v2_kernels"] / med["also_v2_kernels"]
    print("median: audit %.2f s, torch V2 %.3f s: audit / torch = %.2fx (CPU %.2f s / %.3f s = "
          "%.2fx); the audit's two emulated V2 launches alone %.2f s = %.2fx%s (load %.1f; "
          "baseline check %.1e)"
          % (med["audit"], med["torch_v2"], res["ratio"], med["audit_cpu"], med["torch_v2_cpu"],
             res["cpu_ratio"], med["audit_v2_kernels"], res["v2_kernels_ratio"],
             "; also %.2f s = %.2fx, audit / also = %.2f (CPU %.2f, V2 launches %.2f)"
             % (med["also"], res["also_ratio"], res["audit_over_also"],
                res["audit_cpu_over_also"], res["v2_kernels_over_also"])
             if a.also else "", os.getloadavg()[0], sanity))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
