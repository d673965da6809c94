"""The GPU bundle's torch smoke test (run.sh step torch_smoke): the operators built against
the machine's torch run on DEVICE and match, bit for bit, the CPU key (the emulator under
the h200 profile, warp 32 as NVIDIA's) on inputs whose math order is the same on both
executors: every token of a KV head has the same key, so every exp is exp(0) = 1 exactly
(kernels/tools/gpu_check.cpp, class "bitwise"). V1 and V2 (out, exp_sums, max_logits,
tmp_out), f16 and bf16, GQA 4 over 2, seq_lens 1 and 300 with 512-token partitions.
Catches: a CUDA key that is not registered or not the CUDA kernels (the check then says
which key ran), tensors not moved to the device, a dispatch to another warp width.

usage: python3 torch_smoke.py DEVICE      (cuda, or cpu in dry mode: CPU against CPU)
Needs PAGEDATTN_TORCH_LIB (the built library) and pagedattn_torch on PYTHONPATH.
"""
import sys

import torch

import pagedattn_torch as pa

dev = sys.argv[1]
pa.set_profile("h200")
if dev.startswith("cuda") and not pa.has_cuda_backend():
    print("torch_smoke: FAIL: the library has no CUDA key (built against a torch without CUDA?)")
    sys.exit(1)
H, KVH, D, B, P = 4, 2, 128, 16, 512
lens = [1, 300]
S = len(lens)
blocks_per_seq = max((n + B - 1) // B for n in lens)
NB = S * blocks_per_seq + 2
bad = []
for dtype in (torch.float16, torch.bfloat16):
    g = torch.Generator().manual_seed(5)
    x = 16 // torch.tensor([], dtype=dtype).element_size()
    q = (torch.rand(S, H, D, generator=g) * 2 - 1).to(dtype)
    one_key = (torch.rand(KVH, D // x, 1, x, generator=g) * 2 - 1).to(dtype)
    k = one_key.expand(KVH, D // x, B, x).unsqueeze(0).expand(NB, KVH, D // x, B, x).contiguous()
    v = (torch.rand(NB, KVH, D, B, generator=g) * 2 - 1).to(dtype)
    perm = torch.randperm(NB, generator=g)[: S * blocks_per_seq].to(torch.int32)
    bt = perm.view(S, blocks_per_seq).contiguous()
    sl = torch.tensor(lens, dtype=torch.int32)
    parts = (max(lens) + P - 1) // P
    scale = D ** -0.5

    def run(device):
        t = [a.to(device) for a in (q, k, v, bt, sl)]
        out1 = torch.full((S, H, D), float("nan"), dtype=dtype, device=device)
        pa.paged_attention_v1(out1, t[0], t[1], t[2], KVH, scale, t[3], t[4], B, max(lens), None,
                              "auto", 1.0, 1.0, 0, 0, 0, 64, 0)
        out2 = torch.full((S, H, D), float("nan"), dtype=dtype, device=device)
        es = torch.full((S, H, parts), float("nan"), device=device)
        ml = torch.full((S, H, parts), float("nan"), device=device)
        tmp = torch.full((S, H, parts, D), float("nan"), device=device)
        pa.paged_attention_v2(out2, es, ml, tmp, t[0], t[1], t[2], KVH, scale, t[3], t[4], B,
                              max(lens), None, "auto", 1.0, 1.0, 0, 0, 0, 64, 0)
        return [a.cpu() for a in (out1, out2, es, ml, tmp)]

    want = run("cpu")
    got = run(dev)
    for name, a, b in zip(("v1 out", "v2 out", "exp_sums", "max_logits", "tmp_out"), got, want):
        ia = a.view(torch.int16) if a.element_size() == 2 else a.view(torch.int32)
        ib = b.view(torch.int16) if b.element_size() == 2 else b.view(torch.int32)
        same = torch.equal(ia, ib)
        print(f"torch_smoke: {str(dtype):15} {name:10} on {dev}: "
              f"{'bit-identical to the CPU key' if same else 'DIFFERS from the CPU key'}")
        if not same:
            bad.append(f"{dtype} {name}")
print("torch_smoke: " + ("PASS" if not bad else "FAIL: " + ", ".join(bad)))
sys.exit(1 if bad else 0)
