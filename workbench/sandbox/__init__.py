"""Isolation: sandbox profiles → bubblewrap argv, rlimits, per-rollout dirs and uids."""

from workbench.sandbox.bwrap import INSIDE_RUN, SandboxSpec, build_argv, check_sandbox
from workbench.sandbox.profile import PROFILES_DIR, Limits, SandboxProfile, load_profile
from workbench.sandbox.rollout import RolloutDir, UidLease, default_root, rollout_base

__all__ = [
    "INSIDE_RUN",
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
    "rollout_base",
]
