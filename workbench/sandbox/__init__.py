"""Isolation: sandbox profiles → bubblewrap argv, rlimits, per-rollout dirs and uids."""

from workbench.sandbox.bwrap import (
    INSIDE_RUN,
    INSIDE_WORK,
    SandboxSpec,
    build_argv,
    check_sandbox,
    python_paths,
    sandbox_python,
)
from workbench.sandbox.profile import PROFILES_DIR, Limits, SandboxProfile, load_profile
from workbench.sandbox.rollout import RolloutDir, UidLease, default_root

__all__ = [
    "INSIDE_RUN",
    "INSIDE_WORK",
    "PROFILES_DIR",
    "Limits",
    "RolloutDir",
    "SandboxProfile",
    "SandboxSpec",
    "UidLease",
    "build_argv",
    "check_sandbox",
    "default_root",
    "load_profile",
    "python_paths",
    "sandbox_python",
]
