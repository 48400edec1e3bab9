"""The bwrap argv of a profile's zygote: the profile's filesystem view and env, no kernel yet.

A zygote (`workbench.kernel.zygote`) runs as root inside this bwrap, keeping only the
capabilities its children need to isolate themselves (see `isolate.py`): SYS_ADMIN (namespaces,
mounts), SETUID/SETGID/SETPCAP (becoming the sandbox uid, dropping capabilities), NET_ADMIN
(bringing up a child's loopback). It shares the host's PID namespace (so the host sees its
children's pids) and has no network (unless the profile shares it) and its own IPC/UTS namespaces.
/run/workbench is an empty mount point and /tmp, /workspace are placeholders: every child mounts
its own.
"""

from __future__ import annotations

from pathlib import Path

from workbench.sandbox.bwrap import INSIDE_WORK, SandboxSpec, _filesystem, _which, base_env
from workbench.sandbox.profile import SandboxProfile

ZYGOTE_CAPS = ("CAP_SYS_ADMIN", "CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_NET_ADMIN")


def zygote_argv(profile: SandboxProfile, command: list[str]) -> list[str]:
    """bwrap … -- COMMAND, for a zygote of `profile` (run as root)."""
    spec = SandboxSpec(profile, run_dir=Path("/nonexistent"))
    argv = [_which("bwrap"), "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session"]
    argv += [] if profile.network else ["--unshare-net"]
    argv += ["--hostname", "sandbox", "--clearenv"]
    for k, v in base_env(spec).items():
        argv += ["--setenv", k, v]
    argv += [*_filesystem(spec, run_bind=False), "--chdir", INSIDE_WORK, "--cap-drop", "ALL"]
    for cap in ZYGOTE_CAPS:
        argv += ["--cap-add", cap]
    return [*argv, "--", *command]
