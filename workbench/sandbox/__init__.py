"""Isolation: sandbox profiles → one isolation plan per kernel, rendered for each start method (bubblewrap
argv for exec, a zygote request for forks); kernel dirs and uids."""

from workbench.sandbox.bwrap import INSIDE_RUN, SandboxSpec, build_argv, check_sandbox
from workbench.sandbox.kernel_dirs import KernelDir, UidLease, default_root, kernel_dir_base
from workbench.sandbox.kernel_dirs import RolloutDir as RolloutDir  # deprecated name of KernelDir
from workbench.sandbox.kernel_dirs import rollout_base as rollout_base  # deprecated name of kernel_dir_base
from workbench.sandbox.plan import IsolationPlan, ProfilePlan, plan_for, profile_plan
from workbench.sandbox.profile import PROFILES_DIR, PROFILES_ENV, Limits, SandboxProfile, load_profile, profile_names

__all__ = [
    "INSIDE_RUN",
    "PROFILES_DIR",
    "PROFILES_ENV",
    "IsolationPlan",
    "KernelDir",
    "Limits",
    "ProfilePlan",
    "SandboxProfile",
    "SandboxSpec",
    "UidLease",
    "build_argv",
    "check_sandbox",
    "default_root",
    "kernel_dir_base",
    "load_profile",
    "plan_for",
    "profile_names",
    "profile_plan",
]
