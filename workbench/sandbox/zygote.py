"""The zygote's two renderings of an isolation plan (`workbench.sandbox.plan`).

    zygote_argv(plan.profile, command)       # stage 1: bwrap … -- COMMAND, the profile's zygote
    zygote_request(plan, args).encode()      # stage 2: one child's request, sent with its fds

Stage 1: a zygote (`workbench.kernel.zygote`) runs as root inside this bwrap, keeping only the
capabilities its children need to isolate themselves (see `isolate.py`): SYS_ADMIN (namespaces,
mounts), SETUID/SETGID/SETPCAP (becoming the sandbox uid, dropping capabilities), NET_ADMIN
(bringing up a child's loopback). It shares the host's PID namespace (so the host sees its
children's pids) and has no network (unless the profile shares it) and its own IPC/UTS namespaces.
/run/workbench is an empty mount point and /tmp, /workspace are placeholders: every child mounts
its own.

Stage 2: a `ZygoteRequest` is what one forked child applies to itself (`workbench.kernel.zygote_main`
decodes it); the host sends beside it, in this order, the fds `request_fds` lists.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from workbench.children import die_with_parent
from workbench.errors import SandboxError
from workbench.sandbox import isolate
from workbench.sandbox.bwrap import _which, env_argv, filesystem_argv
from workbench.sandbox.plan import (
    IsolationPlan,
    ProfilePlan,
    Rendered,
    Renders,
    Unsupported,
    profile_plan,
    require_fixed,
)
from workbench.sandbox.profile import SandboxProfile

ZYGOTE_CAPS = ("CAP_SYS_ADMIN", "CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_NET_ADMIN")


def zygote_argv(plan: ProfilePlan | SandboxProfile, command: list[str]) -> list[str]:
    """bwrap … -- COMMAND, for the zygote of a profile's plan (run as root)."""
    if isinstance(plan, SandboxProfile):
        plan = profile_plan(plan)
    require_fixed(plan, "start='zygote'", RENDERS)
    argv = [_which("bwrap"), "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session"]
    argv += [] if plan.network else ["--unshare-net"]
    argv += ["--hostname", plan.hostname, *env_argv(dict(plan.env))]
    argv += [*filesystem_argv(plan.mounts, (), None), "--chdir", plan.cwd, "--cap-drop", "ALL"]
    for cap in ZYGOTE_CAPS:
        argv += ["--cap-add", cap]
    return [*argv, "--", *command]


@dataclass(frozen=True)
class ZygoteRequest:
    """What one child forked from a zygote applies to itself: the wire form of a `IsolationPlan`'s
    per-kernel stage (the profile's view and everything else fixed come from the zygote itself)."""

    uid: int
    gid: int
    env: dict[str, str]  # exactly the environment variables inside
    network: bool  # share the zygote's network namespace (else a new one, loopback up)
    rlimits: tuple[tuple[str, int], ...]  # prlimit names and values
    scratch: tuple[tuple[str, int, int], ...]  # fresh size-capped tmpfs: (inside, MiB, mode)
    run: str  # where the run dir's mount (the first fd) goes
    binds: tuple[str, ...]  # where each bind's mount goes, read-only (one fd each)
    cgroups: int  # how many cgroup.procs fds follow the status fd
    cwd: str
    args: tuple[str, ...]  # ipykernel's arguments

    def encode(self) -> bytes:
        return json.dumps(asdict(self)).encode()

    @classmethod
    def decode(cls, data: bytes) -> ZygoteRequest:
        """The request `encode` wrote; a missing or unknown key is a TypeError."""
        raw = json.loads(data)
        raw["rlimits"] = tuple((str(name), int(value)) for name, value in raw["rlimits"])
        raw["scratch"] = tuple((str(inside), int(mb), int(mode)) for inside, mb, mode in raw["scratch"])
        raw["binds"], raw["args"] = tuple(raw["binds"]), tuple(raw["args"])
        return cls(**raw)


def zygote_request(plan: IsolationPlan, args: list[str]) -> ZygoteRequest:
    """Stage 2 of `plan`: what the child applies, for a kernel started with ipykernel `args`."""
    p = plan.profile
    require_fixed(p, "start='zygote'", RENDERS)
    if plan.uid is None or plan.gid is None:
        raise SandboxError("a zygote kernel needs a uid of its own (workbench runs as root)")
    return ZygoteRequest(
        uid=plan.uid,
        gid=plan.gid,
        env=plan.environment(),
        network=p.network,
        rlimits=p.rlimits,
        scratch=p.scratch(),
        run=plan.run.inside,
        binds=tuple(b.inside for b in plan.binds),
        cgroups=len(plan.cgroup),
        cwd=p.cwd,
        args=tuple(args),
    )


def request_fds(plan: IsolationPlan) -> list[tuple[str, Path]]:
    """What the host opens for a request, as (kind, host path): the run dir to mount, each cgroup.procs
    to write, each bind to mount. The fds travel in the order run dir, the kernel's log and exit-status
    pipe (the caller's own), cgroups, binds."""
    return [
        ("mount", plan.run.host),
        *(("cgroup", d / "cgroup.procs") for d in plan.cgroup),
        *(("mount", b.host) for b in plan.binds),
    ]


# Which function applies each field of the plan on this path (tests/sandbox/test_plan.py walks them).
# Stage 1 is `zygote_argv`; stage 2 is `zygote_request` on the host and `isolate` in the child.
RENDERS: Renders = {
    "ProfilePlan.namespaces": Rendered(isolate.enter_namespaces),
    "ProfilePlan.network": Rendered(isolate.enter_namespaces),
    "ProfilePlan.hostname": Rendered(zygote_argv),
    "ProfilePlan.mounts": Rendered(zygote_argv),
    "ProfilePlan.env": Rendered(zygote_request),
    "ProfilePlan.cwd": Rendered(zygote_request),
    "ProfilePlan.rlimits": Rendered(isolate.apply_rlimits),
    "ProfilePlan.capabilities": Rendered(
        isolate.become_unprivileged,
        weaker="the kernel's sets are empty as under exec, but the zygote that forks it runs as root with "
        "SYS_ADMIN/SETUID/SETGID/SETPCAP/NET_ADMIN in the host's user namespace for as long as the profile "
        "is in use (no code from a kernel ever runs in it; kernels cannot see or signal it)",
    ),
    "ProfilePlan.no_new_privs": Rendered(isolate.become_unprivileged),
    "ProfilePlan.nested_userns": Rendered(isolate.become_unprivileged),
    "ProfilePlan.new_session": Rendered(zygote_argv),
    "ProfilePlan.die_with_parent": Rendered(die_with_parent),
    "ProfilePlan.fresh_address_space": Unsupported(
        because="children are forks of the zygote and share its address-space layout (ASLR), so one "
        "kernel's leaked pointers predict another's; kernels run only unprivileged code"
    ),
    "IsolationPlan.env": Rendered(zygote_request),
    "IsolationPlan.run": Rendered(isolate.mount_private),
    "IsolationPlan.binds": Rendered(
        isolate.mount_private,
        weaker="mount points for a kernel's binds are made (empty, root-owned) in the zygote's root tmpfs, "
        "so later kernels of that zygote see those empty directories (never the content)",
    ),
    "IsolationPlan.uid": Rendered(isolate.become_unprivileged),
    "IsolationPlan.gid": Rendered(isolate.become_unprivileged),
    "IsolationPlan.cgroup": Rendered(request_fds),
}
