"""pagedattn's PagedAttention kernels as PyTorch operators with vLLM's signatures.

    import pagedattn_torch
    pagedattn_torch.paged_attention_v1(out, query, key_cache, value_cache, num_kv_heads,
        scale, block_tables, seq_lens, block_size, max_seq_len, alibi_slopes, "auto",
        1.0, 1.0, 0, 0, 0, 64, 0)

The operators live in torch.ops.pagedattn. On CPU they run the production kernel source
on the emulator under a device profile (set_profile, or $PAGEDATTN_PROFILE; default
bi-v100); a build against a CUDA-enabled torch also registers them for CUDA tensors.
"""
import os
from collections import namedtuple

import torch

__all__ = [
    "library_path", "paged_attention_v1", "paged_attention_v2", "paged_attention_reduce",
    "choose_version", "use_v1", "set_profile", "get_profile", "set_grouped", "get_grouped",
    "has_cuda_backend",
    "VersionChoice", "PARTITION_SIZE",
]

# vLLM's _PARTITION_SIZE (attention/ops/paged_attn.py); the operators' default too.
PARTITION_SIZE = 512

_LIB_NAME = "libpagedattn_torch.so"


def _candidates():
    """Where the built library may be, in the order tried."""
    here = os.path.dirname(os.path.abspath(__file__))
    env = os.environ.get("PAGEDATTN_TORCH_LIB")
    if env:
        return [env]  # an explicit choice is never second-guessed
    out = [os.path.join(here, _LIB_NAME)]  # installed beside the package
    build = os.environ.get("PAGEDATTN_BUILD_DIR")
    if build:
        out.append(os.path.join(build, "torch", _LIB_NAME))
    # The source tree: torch/python/pagedattn_torch -> <repo>/build/torch/
    repo = os.path.normpath(os.path.join(here, "..", "..", ".."))
    out.append(os.path.join(repo, "build", "torch", _LIB_NAME))
    return out


def _load():
    tried = _candidates()
    for path in tried:
        if os.path.isfile(path):
            torch.ops.load_library(path)
            return path
    raise ImportError(
        "pagedattn_torch: cannot find %s; tried %s. Build it (cmake --build build --target "
        "pagedattn_torch) or set PAGEDATTN_TORCH_LIB to its path." % (_LIB_NAME, ", ".join(tried)))


library_path = _load()
_ops = torch.ops.pagedattn

# The operators themselves (each takes float or one-element-tensor k_scale/v_scale).
paged_attention_v1 = _ops.paged_attention_v1
paged_attention_v2 = _ops.paged_attention_v2
paged_attention_reduce = _ops.paged_attention_reduce

VersionChoice = namedtuple("VersionChoice", ["version", "reason", "grouped", "grouped_reason"])


def _device_string(device):
    if device is None:
        return ""
    if isinstance(device, torch.device):
        if device.type == "cuda":
            return "cuda" if device.index is None else "cuda:%d" % device.index
        return device.type  # "cpu" (and "meta"): the current profile
    return str(device)


def _dtype_string(dtype):
    if dtype is None:
        return "float16"
    return str(dtype).replace("torch.", "")


def choose_version(num_seqs, num_heads, head_size, block_size, max_seq_len, device=None,
                   partition_size=PARTITION_SIZE, num_kv_heads=None, dtype=None):
    """The project's V1/V2 and grouped rule (kernels/include/pagedattn/version_select.h),
    computed by the C++ library for `device`: None or a CPU device (the current profile), a
    profile name or .json path, or a CUDA device (its own properties; CUDA builds only).
    num_kv_heads None: one per query head (nothing to group); dtype: the query's (None:
    float16). Returns VersionChoice(version="v1"|"v2", reason, grouped, grouped_reason)."""
    dev = _device_string(device)
    if dev == "meta":
        dev = ""
    version, reason, grouped, grouped_reason = _ops.choose_version(
        int(num_seqs), int(num_heads), int(head_size), int(block_size), int(max_seq_len), dev,
        int(partition_size), int(num_kv_heads or 0), _dtype_string(dtype))
    return VersionChoice(version, reason, bool(grouped), grouped_reason)


def use_v1(num_seqs, num_heads, head_size, block_size, max_seq_len, device=None,
           partition_size=PARTITION_SIZE, num_kv_heads=None, dtype=None):
    """choose_version(...) == "v1", the boolean vLLM's paged_attn.py wants. Given
    num_kv_heads (the switch-on passes it), it also applies the choice's `grouped` to the
    operators (set_grouped), so the V1/V2 call that follows runs the variant the version was
    chosen for. The outputs are the same bits grouped or not, so a concurrent caller can at
    worst get the other variant's speed, never other numbers."""
    c = choose_version(num_seqs, num_heads, head_size, block_size, max_seq_len, device,
                       partition_size, num_kv_heads, dtype)
    if num_kv_heads is not None:
        set_grouped(c.grouped)
    return c.version == "v1"


def set_profile(name):
    """Device profile for CPU (emulator) calls: a name ("bi-v100", "h200", ...) or a .json
    path. Raises ValueError for an unknown profile."""
    _ops.set_profile(str(name))


def get_profile():
    return _ops.get_profile()


def set_grouped(on):
    """Run the V1/V2 operators with the grouped kernels (Options::grouped: one thread block
    serves the query heads of one KV head, reading each KV element once for them) where
    they are built, the per-head kernels elsewhere; the outputs are the same bits. For the
    whole process; the first value comes from $PAGEDATTN_GROUPED ("1": on), else off."""
    _ops.set_grouped(bool(on))


def get_grouped():
    return bool(_ops.get_grouped())


def has_cuda_backend():
    """True when the operators are registered for CUDA tensors too."""
    return bool(_ops.has_cuda_backend())
