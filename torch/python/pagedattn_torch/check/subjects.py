"""What the check is pointed at (IMPL): this project's operators, vLLM's, or any Python
callable with vLLM 0.6.x's paged_attention_v1 / paged_attention_v2 signature.

    pagedattn          torch.ops.pagedattn (this project's operators)
    vllm               vllm._custom_ops.paged_attention_v1 and _v2
    module             module.paged_attention_v1 and/or module.paged_attention_v2
    module:attr        attr (dotted) is a callable (V1 or V2, from its signature) or an object
                       holding paged_attention_v1 and/or paged_attention_v2
"""
import importlib
import inspect

import torch


class UsageError(ValueError):
    """A bad argument: the message names it and the allowed values."""


V1_PARAMS = 19  # out ... blocksparse_head_sliding_step (vLLM 0.6.x)
V2_PARAMS = 22  # V1's with exp_sums, max_logits, tmp_out after out


class Subject:
    def __init__(self, name, v1=None, v2=None):
        self.name, self.fns = name, {}
        if v1 is not None:
            self.fns["v1"] = v1
        if v2 is not None:
            self.fns["v2"] = v2

    @property
    def versions(self):
        return tuple(sorted(self.fns))

    def call(self, version, out, states, case_inputs, scales):
        """One call in vLLM's argument order. case_inputs: the device tensors and scalars;
        scales: ("float" | "tensor", k_scale, v_scale) already in that form."""
        c = case_inputs
        args = [c["query"], c["key_cache"], c["value_cache"], c["num_kv_heads"], c["scale"],
                c["block_tables"], c["seq_lens"], c["block_size"], c["max_seq_len"],
                c["alibi_slopes"], c["kv_cache_dtype"], scales[1], scales[2], 0, 0, 0, 64, 0]
        if version == "v2":
            args = list(states) + args
        self.fns[version](out, *args)


def _version_of(fn, name):
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    names = [p.name for p in params[1:4]]
    if any(n in ("exp_sums", "exp_sum", "max_logits", "tmp_out") for n in names):
        return "v2"
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return None
    if len(positional) >= V2_PARAMS:
        return "v2"
    if len(positional) >= V1_PARAMS - 5:  # the five trailing ones may be left out
        return "v1"
    raise UsageError(
        "IMPL %r: %s takes %d positional parameters; vLLM's paged_attention_v1 takes %d and "
        "paged_attention_v2 %d" % (name, getattr(fn, "__name__", fn), len(positional), V1_PARAMS,
                                   V2_PARAMS))


def _from_namespace(name, ns):
    v1 = getattr(ns, "paged_attention_v1", None)
    v2 = getattr(ns, "paged_attention_v2", None)
    if v1 is None and v2 is None:
        raise UsageError("IMPL %r: %r has neither paged_attention_v1 nor paged_attention_v2"
                         % (name, ns))
    return Subject(name, v1, v2)


def _import(name, module):
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise UsageError("IMPL %r: cannot import module %r (%s); IMPL must be pagedattn, vllm, "
                         "a module or module:function" % (name, module, e)) from None


def resolve(impl, version):
    """IMPL and --version -> Subject with the requested versions only."""
    if not impl:
        raise UsageError("IMPL: give pagedattn, vllm, a module or module:function")
    if impl == "pagedattn":
        import pagedattn_torch as pa
        subject = Subject(impl, pa.paged_attention_v1, pa.paged_attention_v2)
    elif impl == "vllm":
        try:
            ops = importlib.import_module("vllm._custom_ops")
        except Exception as e:  # vLLM's import can fail in many ways on a CPU-only host
            raise UsageError("IMPL 'vllm': vllm._custom_ops is not importable here (%s: %s); "
                             "install vLLM in this Python, or pass pagedattn, a module or "
                             "module:function" % (type(e).__name__, e)) from None
        subject = _from_namespace(impl, ops)
    elif ":" in impl:
        module, _, attr = impl.partition(":")
        obj = _import(impl, module)
        for part in attr.split("."):
            if not hasattr(obj, part):
                raise UsageError("IMPL %r: module %r has no attribute %r" % (impl, module, attr))
            obj = getattr(obj, part)
        if callable(obj) and not inspect.isclass(obj) and not inspect.ismodule(obj) and not (
                hasattr(obj, "paged_attention_v1") or hasattr(obj, "paged_attention_v2")):
            v = _version_of(obj, impl)
            if v is None:
                v = version if version in ("v1", "v2") else None
            if v is None:
                raise UsageError("IMPL %r: cannot tell from its signature whether it is V1 or "
                                 "V2; pass --version v1 or --version v2" % impl)
            subject = Subject(impl, obj if v == "v1" else None, obj if v == "v2" else None)
        else:
            subject = _from_namespace(impl, obj)
    else:
        subject = _from_namespace(impl, _import(impl, impl))
    if version == "both":
        return subject
    if version not in subject.fns:
        raise UsageError("--version %s: IMPL %r has only %s" % (
            version, impl, " and ".join(subject.versions)))
    return Subject(impl, **{version: subject.fns[version]})


def check_device(device):
    """--device: any torch device string that can hold a tensor here."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError) as e:
        raise UsageError("--device: %r is not a torch device string (allowed: cpu, cuda, "
                         "cuda:N or any device type this torch has; %s)" % (device, e)) from None
    try:
        torch.empty(1, device=dev)
    except Exception as e:
        raise UsageError("--device %s: this torch cannot allocate there (%s: %s); allowed: cpu%s"
                         % (device, type(e).__name__, str(e).splitlines()[0] if str(e) else "",
                            ", cuda, cuda:N" if torch.cuda.is_available() else
                            " (this torch has no CUDA)")) from None
    return dev


def default_profile(dev):
    """The device profile whose warp width the bound assumes: BI-V100's (64) for an Iluvatar
    card, h200's (NVIDIA, 32) for another CUDA device, else the operators' current profile
    (bi-v100 unless set)."""
    import pagedattn_torch as pa
    if dev.type == "cuda":
        name = torch.cuda.get_device_properties(dev).name
        return "bi-v100" if ("Iluvatar" in name or "BI-V100" in name.upper()) else "h200"
    return pa.get_profile()


def check_profile(profile):
    import pagedattn_torch as pa
    try:
        pa.choose_version(1, 1, 32, 16, 1, device=profile)
    except (ValueError, RuntimeError) as e:
        raise UsageError("--profile %s: %s" % (profile, str(e).splitlines()[0])) from None
    return profile
