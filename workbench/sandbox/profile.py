"""Sandbox profiles: what a kernel may see and use, loaded from TOML or built in code.

    >>> from workbench.sandbox import load_profile
    >>> p = load_profile("default")                 # sandbox/profiles/default.toml
    >>> p.network, p.limits.memory_mb, p.limits.disk_mb
    (False, 4096, 1024)
    >>> p2 = p.replace(ro_binds=["/data/wiki:/data"], limits={"memory_mb": 8192})

A profile file may set any field of `SandboxProfile` (and `[limits]` any field of `Limits`);
an unknown or mistyped field raises `ConfigError` naming it.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

from workbench.configfile import Config, config_field, read_config_file
from workbench.errors import ConfigError
from workbench.shipped import shipped_dir

PROFILES_DIR = shipped_dir("sandbox/profiles")
"""The folder of the shipped sandbox profiles: `sandbox/profiles/*.toml` (in a wheel, its copy: `workbench.shipped`)."""
PROFILES_ENV = "WORKBENCH_PROFILES"
"""Your own profile folders (os.pathsep-separated), searched by name before the shipped ones."""
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Limits(Config):
    """Resource limits: rlimits on every process, plus a per-sandbox cgroup where available."""

    memory_mb: int = config_field(4096, "RLIMIT_AS per process; the cgroup memory limit of the whole sandbox, MiB.")
    processes: int = config_field(256, "RLIMIT_NPROC for the sandbox uid (threads count).")
    cpu_seconds: int = config_field(3600, "RLIMIT_CPU per process, seconds.")
    file_size_mb: int = config_field(1024, "RLIMIT_FSIZE: the largest file a process may write, MiB.")
    open_files: int = config_field(1024, "RLIMIT_NOFILE: open file descriptors per process.")
    disk_mb: int = config_field(
        1024, "The whole writable area (/workspace + /tmp), a tmpfs held in memory, MiB; /tmp takes tmp_size_mb."
    )


@dataclass(frozen=True)
class SandboxProfile(Config):
    """One sandbox configuration. Defaults equal `sandbox/profiles/default.toml`."""

    name: str = config_field("default", "The profile's name (a file's stem when loaded from one).")
    description: str = config_field("", "What the profile is for.")
    network: bool = config_field(False, "Share the host network (weaker isolation; see networked.toml).")
    etc_network: bool = config_field(False, "Bind resolv.conf, hosts and the SSL certificates (useful with network).")
    tmp_size_mb: int = config_field(256, "/tmp's share of limits.disk_mb, MiB; /workspace gets the rest.")
    ro_binds: tuple[str, ...] = config_field((), 'Extra read-only binds: "HOST" or "HOST:INSIDE", absolute paths.')
    pass_env: tuple[str, ...] = config_field(
        ("LANG", "LC_ALL", "TZ"), "Host environment variables passed into the sandbox, by name."
    )
    env: dict[str, str] = config_field(
        {
            "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "MPLBACKEND": "Agg",
            "PYTHONDONTWRITEBYTECODE": "1",
        },
        'Environment variables set inside the sandbox: NAME = "value".',
    )
    preload: tuple[str, ...] = config_field(
        (), "Modules a zygote imports once for every kernel of this profile (e.g. numpy), on top of ipykernel's."
    )
    limits: Limits = field(default_factory=Limits, metadata={"help": "Resource limits (the [limits] table)."})

    def __post_init__(self) -> None:
        super().__post_init__()
        _validate(self)

    @classmethod
    def from_file(cls, path: str | Path, **overrides: Any) -> Self:
        """A profile file (TOML, YAML or JSON), then `overrides`; its name defaults to the file's stem."""
        data = read_config_file(path, what="sandbox profile")
        data.setdefault("name", Path(path).stem)
        return cls._build({**data, **overrides}, f"sandbox profile {path}: SandboxProfile")

    def replace(self, **changes: Any) -> SandboxProfile:
        """A copy with some fields changed; `limits` may be a dict of just the changed limits."""
        if isinstance(changes.get("limits"), dict):
            changes["limits"] = {**self.limits.to_dict(), **changes["limits"]}
        return SandboxProfile._build({**self.to_dict(), **changes}, f"sandbox profile '{self.name}': SandboxProfile")

    @property
    def workspace_size_mb(self) -> int:
        """/workspace's cap: what `limits.disk_mb` leaves after /tmp's `tmp_size_mb`."""
        return self.limits.disk_mb - self.tmp_size_mb

    def bind_pairs(self) -> list[tuple[Path, str]]:
        """The extra read-only binds as (host path, path inside)."""
        pairs = []
        for spec in self.ro_binds:
            host, _, inside = spec.partition(":")
            pairs.append((Path(host), inside or host))
        return pairs


def _validate(p: SandboxProfile) -> None:
    """What the field types do not say (`Config` checks those): ranges, paths and names."""
    where = f"sandbox profile '{p.name}'"
    if p.tmp_size_mb <= 0:
        raise ConfigError(f"{where}: field 'tmp_size_mb' must be > 0, got {p.tmp_size_mb}")
    for i, spec in enumerate(p.ro_binds):
        host, _, inside = spec.partition(":")
        if not host.startswith("/") or (inside and not inside.startswith("/")):
            raise ConfigError(
                f"{where}: field 'ro_binds[{i}]' = {spec!r} must be an absolute 'HOST' or 'HOST:INSIDE' path"
            )
        if not Path(host).exists():
            raise ConfigError(f"{where}: field 'ro_binds[{i}]': host path {host} does not exist")
    for name in p.pass_env:
        if not _ENV_NAME.match(name):
            raise ConfigError(f"{where}: field 'pass_env' holds an invalid variable name {name!r}")
    for name in p.preload:
        if not all(part.isidentifier() for part in name.split(".")):
            raise ConfigError(f"{where}: field 'preload' holds an invalid module name {name!r}")
    for k in p.env:
        if not _ENV_NAME.match(k):
            raise ConfigError(f"{where}: field 'env.{k}' must be a string with a valid name")
    for f in dataclasses.fields(Limits):
        value = getattr(p.limits, f.name)
        if value <= 0:
            raise ConfigError(f"{where}: field 'limits.{f.name}' must be > 0, got {value}")
    if p.tmp_size_mb >= p.limits.disk_mb:
        raise ConfigError(
            f"{where}: field 'tmp_size_mb' ({p.tmp_size_mb}) must be smaller than "
            f"'limits.disk_mb' ({p.limits.disk_mb}), the cap for /tmp and /workspace "
            "together; raise limits.disk_mb or lower tmp_size_mb"
        )


def profile_dirs() -> list[Path]:
    """Where a profile name is looked up, in order: each folder of `$WORKBENCH_PROFILES`, then the shipped one."""
    own = [Path(p).expanduser() for p in os.environ.get(PROFILES_ENV, "").split(os.pathsep) if p.strip()]
    return [*own, PROFILES_DIR]


def profile_names() -> list[str]:
    """Every profile name `load_profile` finds (your own folders' and the shipped ones)."""
    return sorted({p.stem for folder in profile_dirs() for p in folder.glob("*.toml")})


def load_profile(profile: str | os.PathLike[str] | SandboxProfile = "default") -> SandboxProfile:
    """A profile by name (`<name>.toml` in `profile_dirs()`: `$WORKBENCH_PROFILES`, then the shipped
    `sandbox/profiles`), by file path (TOML, YAML or JSON), or passed through. The one place profiles
    are found and read."""
    if isinstance(profile, SandboxProfile):
        return profile
    path = Path(profile)
    if not path.suffix and os.sep not in str(profile):
        found = [d / f"{profile}.toml" for d in profile_dirs() if (d / f"{profile}.toml").is_file()]
        if not found:
            raise ConfigError(
                f"unknown sandbox profile {str(profile)!r}; known: {', '.join(profile_names()) or 'none'} "
                f"(from {', '.join(map(str, profile_dirs()))}); pass a .toml path, or put <name>.toml in a "
                f"folder named by ${PROFILES_ENV}"
            )
        path = found[0]
    if not path.exists():
        raise ConfigError(f"sandbox profile file {path} does not exist")
    return SandboxProfile.from_file(path)
