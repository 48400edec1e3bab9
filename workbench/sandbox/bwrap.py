"""Render a kernel's isolation plan (`workbench.sandbox.plan`) as the argv that runs a command in bubblewrap.

    argv = build_argv(plan_for(profile, kernel_dir.run, uid=uid), command)     # start="exec"

Inside the sandbox:

    /usr, /bin, /lib*, /sbin   host system dirs, read-only
    <python prefix>, <venv>    the Python environment, read-only, at their host paths
    <workbench source dir>     the package itself, read-only (so `import workbench.runtime` works)
    /workspace                 private tmpfs (cwd), size-capped
    /tmp                       private tmpfs ($HOME), size-capped
    /run/workbench             the kernel dir's run/: connection file, ipc sockets, gateway.sock

The kernel writes nowhere on the host's disk: /workspace and /tmp live in the sandbox's own
mount namespace, capped together at `limits.disk_mb` (/tmp gets `tmp_size_mb`, /workspace the
rest), and vanish with it. Writing past a cap is an ordinary `OSError` (ENOSPC). tmpfs pages are
memory, so the sandbox's cgroup allows `memory_mb + disk_mb` (see `cgroups.py`); inodes of
empty files take no blocks but are charged there too (~1 KB each). The run dir is a host dir; as
root it is sealed once the kernel has bound its sockets (`KernelDir.seal`).

When workbench runs as root the chain is (with cgroups, a shell that joins the kernel's cgroup first)

    prlimit … -- bwrap(as root: mount/pid/net/ipc/uts/cgroup ns) -- setpriv --reuid=UID … --
        bwrap(unprivileged: user ns, nested user ns disabled) -- COMMAND

The outer bwrap can bind paths that only root may traverse (e.g. a Python under /root); the
command then runs as a plain unprivileged uid with no capabilities, so root-only files stay
unreadable and RLIMIT_NPROC binds. As a normal user, one unprivileged bwrap does it all.
`--die-with-parent` at each level plus exec-only wrappers (prlimit, setpriv) mean the whole
sandbox dies when the host process does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from workbench.errors import SandboxError
from workbench.sandbox.plan import (
    INSIDE_RUN,
    INSIDE_WORK,
    SYSTEM_DIRS,
    Bind,
    IsolationPlan,
    Mount,
    ProfilePlan,
    Rendered,
    Renders,
    plan_for,
    python_paths,
    require_fixed,
)
from workbench.sandbox.profile import SandboxProfile

__all__ = ["INSIDE_RUN", "INSIDE_WORK", "RENDERS", "SandboxSpec", "build_argv", "check_sandbox", "python_paths"]
_JOIN_CGROUPS = 'echo $$ > "$1" && echo $$ > "$2" && shift 2 && exec "$@"'


@dataclass(frozen=True)
class SandboxSpec:
    """The arguments of `plan_for`, kept for callers of `build_argv(spec, command)`."""

    profile: SandboxProfile
    run_dir: Path  # bound read-write at /run/workbench
    work_dir: Path | None = None  # ignored: the sandbox's /workspace is its own capped tmpfs
    uid: int | None = None  # unprivileged uid to run as (root hosts); None = stay as self
    gid: int | None = None
    env: dict[str, str] | None = None  # extra variables (already allow-listed by the caller)
    extra_ro_binds: tuple[str, ...] = ()  # "HOST" or "HOST:INSIDE"

    def plan(self) -> IsolationPlan:
        return plan_for(
            self.profile,
            self.run_dir,
            uid=self.uid,
            gid=self.gid,
            env=self.env,
            extra_ro_binds=self.extra_ro_binds,
        )


def sandbox_python() -> str:
    """The interpreter to run inside (the venv's, reachable at its host path)."""
    return sys.executable


def rlimit_argv(plan: ProfilePlan) -> list[str]:
    """prlimit with the plan's rlimits, then `--`."""
    return [_which("prlimit"), *(f"--{name}={value}" for name, value in plan.rlimits), "--"]


def env_argv(env: dict[str, str]) -> list[str]:
    """`--clearenv`, then `--setenv` for each variable: exactly these inside."""
    argv = ["--clearenv"]
    for k, v in env.items():
        argv += ["--setenv", k, v]
    return argv


def build_argv(plan: IsolationPlan | SandboxSpec, command: list[str]) -> list[str]:
    """The full argv ([cgroup join →] rlimits → bwrap → [setpriv → bwrap] → command)."""
    if isinstance(plan, SandboxSpec):
        plan = plan.plan()
    p = plan.profile
    require_fixed(p, "start='exec'", RENDERS)
    as_root = plan.uid is not None
    # As root, the outer bwrap keeps its pid-1 reaper: it runs as root, so its death signal
    # survives, and its death tears down the whole pid namespace. As a user, the command is pid 1.
    pid1 = [] if as_root else ["--as-pid-1"]
    argv = [
        *rlimit_argv(p),
        _which("bwrap"),
        *namespace_argv(p, as_root),
        "--die-with-parent",
        "--new-session",
        *pid1,
        "--hostname",
        p.hostname,
        *env_argv(plan.environment()),
        *filesystem_argv(p.mounts, plan.binds, plan.run.host),
    ]
    if not as_root:  # (as root the inner bwrap changes dir: the outer has dropped DAC override)
        argv += ["--chdir", p.cwd]
    if as_root:
        argv += _drop_root(plan)
    return [*cgroup_argv(plan.cgroup), *argv, "--", *command]


def cgroup_argv(dirs: tuple[Path, ...]) -> list[str]:
    """A shell that moves itself into each cgroup dir (first and last: v1 memory and pids, or one v2
    dir), then execs the rest; nothing without cgroups."""
    if not dirs:
        return []
    procs = [str(d / "cgroup.procs") for d in dirs]
    return ["/bin/sh", "-c", _JOIN_CGROUPS, "wb-cgroup", procs[0], procs[-1]]


def namespace_argv(plan: ProfilePlan, as_root: bool) -> list[str]:
    """bwrap's namespace flags: as root, the outer (privileged) bwrap lists them (no user namespace: it
    would map to root; the inner one makes it); as a user, one bwrap unshares them all."""
    if as_root:
        ns = ["--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"]
        return ns + ([] if plan.network else ["--unshare-net"])
    ns = ["--unshare-all", "--unshare-user", "--disable-userns"]
    return ns + (["--share-net"] if plan.network else [])


def filesystem_argv(mounts: tuple[Mount, ...], binds: tuple[Bind, ...], run: Path | None) -> list[str]:
    """The mounts in order, the extra read-only binds, then the writable run dir at /run/workbench
    (`run=None`: an empty mount point there, for a zygote's children to fill)."""
    made: set[str] = set()
    argv: list[str] = []
    for m in mounts:
        argv += _mount_argv(m, made)
    for b in binds:
        argv += [*_parents(b.inside, made), "--ro-bind", str(b.host), b.inside]
    argv += _parents(INSIDE_RUN, made)
    argv += ["--bind", str(run), INSIDE_RUN] if run is not None else ["--perms", "0755", "--dir", INSIDE_RUN]
    return argv


def _mount_argv(m: Mount, made: set[str]) -> list[str]:
    if m.kind == "symlink":
        return ["--symlink", m.source, m.target]
    if m.kind == "dir":
        return ["--perms", f"{m.mode:04o}", "--dir", m.target]
    if m.kind in ("proc", "dev"):
        return [f"--{m.kind}", m.target]
    if m.kind == "tmpfs":
        return ["--perms", f"{m.mode:04o}", "--size", str(m.size_mb << 20), "--tmpfs", m.target]
    if m.kind == "ro-bind-try":
        return ["--ro-bind-try", m.source, m.target]
    return [*_parents(m.target, made), "--ro-bind", m.source, m.target]


def _drop_root(plan: IsolationPlan) -> list[str]:
    """As root: drop every capability but those setpriv needs, become the plan's uid, and run an inner,
    unprivileged bwrap in the outer one's filesystem."""
    p = plan.profile
    return [
        "--cap-drop",
        "ALL",
        "--cap-add",
        "CAP_SETUID",
        "--cap-add",
        "CAP_SETGID",
        "--cap-add",
        "CAP_SETPCAP",
        "--",
        _which("setpriv"),
        f"--reuid={plan.uid}",
        f"--regid={plan.gid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--",
        _which("bwrap"),
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--bind",
        "/",
        "/",
        "--chdir",
        p.cwd,
    ]


def _parents(inside: str, made: set[str]) -> list[str]:
    """`--dir` for each missing ancestor, world-traversable (bwrap would make them 0700)."""
    args: list[str] = []
    for parent in reversed(Path(inside).parents):
        d = str(parent)
        if d in ("/", "/tmp") or d in made or any(d == s or d.startswith(s + "/") for s in SYSTEM_DIRS):
            continue
        made.add(d)
        args += ["--perms", "0755", "--dir", d]
    return args


def _which(tool: str) -> str:
    path = shutil.which(tool) or (f"/usr/bin/{tool}" if os.path.exists(f"/usr/bin/{tool}") else None)
    if path is None:
        pkg = {"bwrap": "bubblewrap", "prlimit": "util-linux", "setpriv": "util-linux"}.get(tool, tool)
        raise SandboxError(
            f"`{tool}` is not installed; install it with `sudo apt-get install {pkg}` "
            "(or run `make setup`), or pass isolation='none' to run unsandboxed"
        )
    return path


@lru_cache(maxsize=1)
def check_sandbox() -> None:
    """Raise `SandboxError` naming the fix unless bubblewrap and user namespaces work here."""
    bwrap = _which("bwrap")
    _which("prlimit")
    if os.geteuid() == 0:
        _which("setpriv")
    probe = [bwrap, "--unshare-all", "--unshare-user", "--ro-bind", "/", "/", "--", "/bin/true"]
    try:
        r = subprocess.run(probe, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxError(f"bubblewrap could not run ({exc}); check `bwrap --version`") from exc
    if r.returncode != 0:
        raise SandboxError(
            "bubblewrap cannot create user namespaces here: "
            + r.stderr.strip()
            + ". Enable them (`sysctl -w kernel.unprivileged_userns_clone=1` and "
            "`sysctl -w user.max_user_namespaces=10000`; in Docker run with "
            "`--security-opt seccomp=unconfined --security-opt apparmor=unconfined`), "
            "or pass isolation='none' to run unsandboxed (unsafe)"
        )


# Which function applies each field of the plan on this path (tests/sandbox/test_plan.py walks them).
RENDERS: Renders = {
    "ProfilePlan.namespaces": Rendered(namespace_argv),
    "ProfilePlan.network": Rendered(namespace_argv),
    "ProfilePlan.hostname": Rendered(build_argv),
    "ProfilePlan.mounts": Rendered(filesystem_argv),
    "ProfilePlan.env": Rendered(env_argv),
    "ProfilePlan.cwd": Rendered(build_argv),
    "ProfilePlan.rlimits": Rendered(rlimit_argv),
    "ProfilePlan.capabilities": Rendered(_drop_root),
    "ProfilePlan.no_new_privs": Rendered(_drop_root),
    "ProfilePlan.nested_userns": Rendered(namespace_argv),
    "ProfilePlan.new_session": Rendered(build_argv),
    "ProfilePlan.die_with_parent": Rendered(build_argv),
    "ProfilePlan.fresh_address_space": Rendered(build_argv),
    "IsolationPlan.env": Rendered(env_argv),
    "IsolationPlan.run": Rendered(filesystem_argv),
    "IsolationPlan.binds": Rendered(filesystem_argv),
    "IsolationPlan.uid": Rendered(_drop_root),
    "IsolationPlan.gid": Rendered(_drop_root),
    "IsolationPlan.cgroup": Rendered(cgroup_argv),
}
