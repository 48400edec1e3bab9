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
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self, TypeVar, cast

from workbench.configfile import Config, config_field, read_config_file
from workbench.errors import ConfigError

PROFILES_DIR = Path(__file__).resolve().parents[2] / "sandbox" / "profiles"
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
        return cast(Self, profile_from_dict({**data, **overrides}, source=str(path)))

    def replace(self, **changes: Any) -> SandboxProfile:
        """A copy with some fields changed; `limits` may be a dict of just the changed limits."""
        if isinstance(changes.get("limits"), dict):
            merged = {f.name: getattr(self.limits, f.name) for f in dataclasses.fields(Limits)}
            changes["limits"] = {**merged, **changes["limits"]}
        return _build(SandboxProfile, {**_as_dict(self), **changes}, f"sandbox profile '{self.name}'")

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


def _as_dict(p: SandboxProfile) -> dict[str, Any]:
    return {f.name: getattr(p, f.name) for f in dataclasses.fields(p)}


def _check_type(value: Any, expected: type, where: str) -> None:
    ok = isinstance(value, expected) and not (expected is int and isinstance(value, bool))
    if not ok:
        raise ConfigError(f"{where}: expected {expected.__name__}, got {value!r}")


def _validate(p: SandboxProfile) -> None:
    where = f"sandbox profile '{p.name}'"
    for name, typ in (
        ("name", str),
        ("description", str),
        ("network", bool),
        ("etc_network", bool),
        ("tmp_size_mb", int),
    ):
        _check_type(getattr(p, name), typ, f"{where}: field '{name}'")
    if p.tmp_size_mb <= 0:
        raise ConfigError(f"{where}: field 'tmp_size_mb' must be > 0, got {p.tmp_size_mb}")
    for i, spec in enumerate(p.ro_binds):
        _check_type(spec, str, f"{where}: field 'ro_binds[{i}]'")
        host, _, inside = spec.partition(":")
        if not host.startswith("/") or (inside and not inside.startswith("/")):
            raise ConfigError(
                f"{where}: field 'ro_binds[{i}]' = {spec!r} must be an absolute 'HOST' or 'HOST:INSIDE' path"
            )
        if not Path(host).exists():
            raise ConfigError(f"{where}: field 'ro_binds[{i}]': host path {host} does not exist")
    for name in p.pass_env:
        if not isinstance(name, str) or not _ENV_NAME.match(name):
            raise ConfigError(f"{where}: field 'pass_env' holds an invalid variable name {name!r}")
    for name in p.preload:
        if not isinstance(name, str) or not all(part.isidentifier() for part in name.split(".")):
            raise ConfigError(f"{where}: field 'preload' holds an invalid module name {name!r}")
    if not isinstance(p.env, dict):
        raise ConfigError(f"{where}: field 'env' must be a table of NAME = \"value\"")
    for k, v in p.env.items():
        if not _ENV_NAME.match(k) or not isinstance(v, str):
            raise ConfigError(f"{where}: field 'env.{k}' must be a string with a valid name")
    _check_type(p.limits, Limits, f"{where}: field 'limits'")
    for f in dataclasses.fields(Limits):
        value = getattr(p.limits, f.name)
        _check_type(value, int, f"{where}: field 'limits.{f.name}'")
        if value <= 0:
            raise ConfigError(f"{where}: field 'limits.{f.name}' must be > 0, got {value}")
    if p.tmp_size_mb >= p.limits.disk_mb:
        raise ConfigError(
            f"{where}: field 'tmp_size_mb' ({p.tmp_size_mb}) must be smaller than "
            f"'limits.disk_mb' ({p.limits.disk_mb}), the cap for /tmp and /workspace "
            "together; raise limits.disk_mb or lower tmp_size_mb"
        )


_Section = TypeVar("_Section", "SandboxProfile", "Limits")


def _build(cls: type[_Section], data: dict[str, Any], where: str) -> _Section:
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        prefix = "limits." if cls is Limits else ""
        raise ConfigError(f"{where}: unknown field '{prefix}{unknown[0]}'; known fields: {', '.join(sorted(known))}")
    data = dict(data)
    if cls is SandboxProfile:
        if isinstance(data.get("limits"), dict):
            data["limits"] = _build(Limits, data["limits"], where)
        for key in ("ro_binds", "pass_env", "preload"):
            if isinstance(data.get(key), list):
                data[key] = tuple(data[key])
    try:
        return cls._build(data, "SandboxProfile" if cls is SandboxProfile else "SandboxProfile.limits")
    except ConfigError as exc:
        if str(exc).startswith("sandbox profile"):
            raise
        raise ConfigError(f"{where}: {exc}") from None


def profile_from_dict(data: dict[str, Any], *, source: str = "<dict>") -> SandboxProfile:
    """Build a profile from a parsed TOML table; errors name the field and the source."""
    data = dict(data)
    data.setdefault("name", Path(source).stem if source != "<dict>" else "custom")
    return _build(SandboxProfile, data, f"sandbox profile {source}")


def load_profile(profile: str | os.PathLike[str] | SandboxProfile = "default") -> SandboxProfile:
    """A profile by name (`sandbox/profiles/<name>.toml`), by TOML path, or passed through."""
    if isinstance(profile, SandboxProfile):
        return profile
    path = Path(profile)
    if not path.suffix and os.sep not in str(profile):
        path = PROFILES_DIR / f"{profile}.toml"
        if not path.exists():
            if str(profile) == "default":
                return SandboxProfile()
            if str(profile) == "networked":
                return SandboxProfile(name="networked", network=True, etc_network=True)
            names = sorted(p.stem for p in PROFILES_DIR.glob("*.toml"))
            raise ConfigError(
                f"unknown sandbox profile {str(profile)!r}; built in: "
                f"{', '.join(names) or 'default, networked'}; or pass a .toml path"
            )
    if not path.exists():
        raise ConfigError(f"sandbox profile file {path} does not exist")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"sandbox profile {path}: invalid TOML: {exc}") from exc
    return profile_from_dict(data, source=str(path))
