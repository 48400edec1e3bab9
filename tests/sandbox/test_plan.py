"""One isolation plan, rendered by both start methods: every field of the plan has a renderer on each path
or a recorded reason why not, and a rendered field is one whose change that path's output shows (or
refuses). The kernels themselves are tested on both starts in tests/kernel/ and tests/sandbox/test_disk.py."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import Any

import pytest
from source_tree import parse_file

from workbench.errors import SandboxError
from workbench.sandbox import bwrap, zygote
from workbench.sandbox.plan import (
    INSIDE_RUN,
    Bind,
    IsolationPlan,
    Mount,
    ProfilePlan,
    Rendered,
    Unsupported,
    plan_for,
)
from workbench.sandbox.profile import SandboxProfile
from workbench.sandbox.zygote import ZygoteRequest, request_fds, zygote_argv, zygote_request

PATHS = {"exec": bwrap.RENDERS, "zygote": zygote.RENDERS}
FIELDS = [f"{cls.__name__}.{f.name}" for cls in (ProfilePlan, IsolationPlan) for f in dataclasses.fields(cls)]
FIELDS.remove("IsolationPlan.profile")  # the per-profile part, walked above

# A changed value for each field: rendering it must show the change, or refuse it by name. A new field
# without an entry here fails `test_every_field_has_a_variant`.
VARIANTS: dict[str, Any] = {
    "ProfilePlan.namespaces": ("mount", "pid"),
    "ProfilePlan.network": True,
    "ProfilePlan.hostname": "elsewhere",
    "ProfilePlan.mounts": lambda m: (*m, Mount("dir", "/opt/extra")),
    "ProfilePlan.env": lambda e: (*e, ("EXTRA", "1")),
    "ProfilePlan.cwd": "/tmp",
    "ProfilePlan.rlimits": lambda r: (*r[:-1], ("core", 1)),
    "ProfilePlan.capabilities": ("CAP_NET_RAW",),
    "ProfilePlan.no_new_privs": False,
    "ProfilePlan.nested_userns": True,
    "ProfilePlan.new_session": False,
    "ProfilePlan.die_with_parent": False,
    "ProfilePlan.fresh_address_space": False,
    "IsolationPlan.env": (("OTHER", "2"),),
    "IsolationPlan.run": Bind(Path("/elsewhere"), INSIDE_RUN),
    "IsolationPlan.binds": (),
    "IsolationPlan.uid": 60002,
    "IsolationPlan.gid": 60003,
    "IsolationPlan.cgroup": (),
}


@pytest.fixture
def plan(tmp_path: Path) -> IsolationPlan:
    """A root host's plan with one of everything: a bind, an extra variable, a cgroup."""
    (tmp_path / "data").mkdir()
    return plan_for(
        SandboxProfile(),
        tmp_path / "run",
        uid=60001,
        env={"WB_EXTRA": "yes"},
        extra_ro_binds=(f"{tmp_path / 'data'}:/data",),
        cgroup=(tmp_path / "cgroup",),
    )


def render(path: str, plan: IsolationPlan) -> object:
    if path == "exec":
        return bwrap.build_argv(plan, ["python"])
    return zygote_argv(plan.profile, ["python"]), zygote_request(plan, ["-f", "k.json"]), request_fds(plan)


def changed(plan: IsolationPlan, name: str) -> IsolationPlan:
    cls, _, field = name.partition(".")
    old = getattr(plan.profile if cls == "ProfilePlan" else plan, field)
    new = VARIANTS[name](old) if callable(VARIANTS[name]) else VARIANTS[name]
    assert new != old, name
    if cls == "ProfilePlan":
        return dataclasses.replace(plan, profile=dataclasses.replace(plan.profile, **{field: new}))
    return dataclasses.replace(plan, **{field: new})


@pytest.mark.parametrize("path", sorted(PATHS))
def test_every_field_has_a_renderer_or_a_reason_on_each_start(path: str):
    renders = PATHS[path]
    missing = [name for name in FIELDS if name not in renders]
    assert not missing, f"start={path!r} has no renderer and no Unsupported(because=...) for {missing}"
    assert sorted(set(renders) - set(FIELDS)) == [], "RENDERS names fields the plan no longer has"
    for name, how in renders.items():
        assert isinstance(how, (Rendered, Unsupported)), name
        assert callable(how.by) if isinstance(how, Rendered) else len(how.because) > 20, name


def test_every_field_has_a_variant():
    assert sorted(VARIANTS) == sorted(FIELDS)


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("name", FIELDS)
def test_a_rendered_field_changes_the_rendering_or_is_refused(plan: IsolationPlan, path: str, name: str):
    if isinstance(PATHS[path][name], Unsupported):
        pytest.skip(f"start={path!r} cannot apply {name}: {PATHS[path][name]}")
    before = render(path, plan)
    try:
        after = render(path, changed(plan, name))
    except SandboxError as exc:
        assert name.rpartition(".")[2] in str(exc)  # refused, naming what it cannot apply
        return
    assert after != before, f"start={path!r} ignores {name}"


def test_the_zygotes_weaker_points_are_recorded():
    weaker = {name: how for name, how in zygote.RENDERS.items() if isinstance(how, Unsupported) or how.weaker}
    assert sorted(weaker) == ["IsolationPlan.binds", "ProfilePlan.capabilities", "ProfilePlan.fresh_address_space"]
    assert not [n for n, how in bwrap.RENDERS.items() if isinstance(how, Unsupported) or how.weaker]


def test_the_zygote_request_round_trips_and_is_typed(plan: IsolationPlan):
    request = zygote_request(plan, ["-f", "k.json"])
    assert ZygoteRequest.decode(request.encode()) == request
    assert request.binds == ("/data",) and request.cgroups == 1 and request.env["WB_EXTRA"] == "yes"
    assert dict(request.rlimits)["nproc"] == SandboxProfile().limits.processes
    assert [inside for inside, _, _ in request.scratch] == ["/tmp", "/workspace"]
    with pytest.raises(TypeError):
        ZygoteRequest.decode(request.encode().replace(b'"cwd"', b'"cwdx"'))
    with pytest.raises(SandboxError, match="uid"):
        zygote_request(dataclasses.replace(plan, uid=None, gid=None), [])


def test_the_zygote_mounts_the_profiles_view_as_exec_does(plan: IsolationPlan):
    """Stage 1 (the zygote's bwrap) sets the environment and mounts exactly as exec's bwrap does, up to
    the run dir (an empty mount point there: each child mounts its own)."""
    bare = dataclasses.replace(plan, binds=(), env=(), cgroup=())
    exec_argv, zygote_argv_ = bwrap.build_argv(bare, ["python"]), zygote_argv(plan.profile, ["python"])
    run_point = len(zygote_argv_) - 1 - zygote_argv_[::-1].index(INSIDE_RUN)
    assert zygote_argv_[run_point - 3 : run_point] == ["--perms", "0755", "--dir"]
    exec_view = exec_argv[exec_argv.index("--clearenv") : exec_argv.index("--bind")]
    assert zygote_argv_[zygote_argv_.index("--clearenv") : run_point - 3] == exec_view


def test_a_missing_extra_bind_names_the_fix(tmp_path: Path):
    with pytest.raises(SandboxError, match="extra_ro_binds"):
        plan_for(SandboxProfile(), tmp_path, extra_ro_binds=(str(tmp_path / "nope"),))


def test_no_private_name_crosses_into_or_out_of_the_sandbox_package():
    root = Path(__file__).resolve().parents[2] / "workbench"
    crossing = []
    for module in root.rglob("*.py"):
        parts = module.relative_to(root).parts
        home = parts[0] if len(parts) > 1 else module.stem
        if home != "sandbox" and "workbench.sandbox" not in module.read_text():
            continue
        for node in ast.walk(parse_file(module)):
            if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith("workbench."):
                continue
            there = (node.module or "").split(".")[1]
            private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
            if private and there != home and "sandbox" in (there, home):
                crossing.append(f"{'/'.join(parts)} imports {private} from {node.module}")
    assert crossing == []
