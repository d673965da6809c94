"""pytest plugin: gate a CI on the check.

    pytest -p pagedattn_torch.check.pytest_plugin --pagedattn-impl mymodule:paged_attention_v2 \\
        [--pagedattn-device cuda] [--pagedattn-cases N] [--pagedattn-seed S] \\
        [--pagedattn-require exact-class|vllm-class] [--pagedattn-json FILE]

Each --pagedattn-impl adds one test item, `pagedattn-check[IMPL]`, that fails unless the
implementation's verdict is at least the required class (default vllm-class); its failure
report is the check's output (shrunk case, replay folder, command to reproduce). The
fixture `pagedattn_check` runs the check from a test of your own with these defaults:

    def test_my_kernel(pagedattn_check):
        result = pagedattn_check("mymodule:paged_attention_v1")
        assert result.ok, "\\n".join(result.lines())
"""
import pytest

from . import DEFAULT_CASES, RANK_OF, check

_REQUIRE = ("exact-class", "vllm-class")


def pytest_addoption(parser):
    g = parser.getgroup("pagedattn", "pagedattn check (python -m pagedattn_torch.check)")
    g.addoption("--pagedattn-impl", action="append", default=[], metavar="IMPL",
                help="an implementation to check: pagedattn, vllm, MODULE or MODULE:FUNCTION "
                     "(repeatable); each becomes a test item")
    g.addoption("--pagedattn-version", default="both", choices=("v1", "v2", "both"))
    g.addoption("--pagedattn-device", default="cpu", metavar="DEV")
    g.addoption("--pagedattn-cases", type=int, default=DEFAULT_CASES, metavar="N")
    g.addoption("--pagedattn-seed", type=int, default=0, metavar="S")
    g.addoption("--pagedattn-profile", default=None, metavar="NAME")
    g.addoption("--pagedattn-require", default="vllm-class", choices=_REQUIRE,
                help="the least verdict that passes (default vllm-class)")
    g.addoption("--pagedattn-json", default=None, metavar="FILE")
    g.addoption("--pagedattn-replay-dir", default="pagedattn-check-replay", metavar="DIR")


def _kwargs(config):
    o = config.option
    return {"version": o.pagedattn_version, "device": o.pagedattn_device,
            "cases": o.pagedattn_cases, "seed": o.pagedattn_seed,
            "profile": o.pagedattn_profile, "replay_dir": o.pagedattn_replay_dir}


@pytest.fixture
def pagedattn_check(request):
    """check(impl, **overrides) with the command line's --pagedattn-* defaults."""
    defaults = _kwargs(request.config)

    def run(impl, **overrides):
        return check(impl, **dict(defaults, **overrides))
    return run


class CheckFailed(Exception):
    pass


class CheckItem(pytest.Item):
    def __init__(self, *, impl, json_path, **kw):
        super().__init__(**kw)
        self.impl, self.json_path = impl, json_path

    def runtest(self):
        result = check(self.impl, json_path=self.json_path, **_kwargs(self.config))
        need = self.config.option.pagedattn_require
        if RANK_OF[result.verdict] > RANK_OF[need]:
            raise CheckFailed("\n".join(result.lines() + ["required: %s" % need]))

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, CheckFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, "pagedattn-check[%s]" % self.impl


def pytest_collection_modifyitems(session, config, items):
    impls = config.option.pagedattn_impl
    for i, impl in enumerate(impls):
        json_path = config.option.pagedattn_json
        if json_path and len(impls) > 1:
            stem, dot, ext = json_path.rpartition(".")
            json_path = "%s-%d.%s" % (stem, i, ext) if dot else "%s-%d" % (json_path, i)
        items.append(CheckItem.from_parent(session, name="pagedattn-check[%s]" % impl,
                                           impl=impl, json_path=json_path))
