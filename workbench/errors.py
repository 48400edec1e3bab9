"""The exceptions workbench raises. Every message says what to do about it.

WorkbenchError
├── ConfigError            a config, profile, spec or task file is wrong (names the field / line)
├── SandboxError           bubblewrap or user namespaces are missing or a profile cannot be applied
├── KernelError            a sandboxed kernel failed to start or talk
│   └── KernelDiedError    the kernel process is gone (OOM kill, SIGKILL, os._exit)
├── PoolError              the kernel pool cannot hand out kernels (start failures, closed)
├── ToolError              a host tool failed or was called wrongly
├── PolicyError            a model backend failed to generate
├── StoreError             the trajectory store cannot be read or written
│   └── SchemaVersionError the store was written by a newer workbench
├── RetrievalError         a retriever / index / corpus problem
└── TrainingError          the training engine cannot run as configured
"""

from __future__ import annotations


class WorkbenchError(Exception):
    """Base class of every error workbench raises on purpose."""


class ConfigError(WorkbenchError, ValueError):
    """A config, profile, reward spec or input file is invalid."""


class SandboxError(WorkbenchError):
    """The sandbox cannot be built on this machine."""


class KernelError(WorkbenchError):
    """A kernel failed to start or to answer."""


class KernelDiedError(KernelError):
    """The kernel process died."""


class PoolError(WorkbenchError):
    """The kernel pool cannot hand out a kernel."""


class ToolError(WorkbenchError):
    """A tool call failed."""


class PolicyError(WorkbenchError):
    """A model backend failed."""


class StoreError(WorkbenchError):
    """The trajectory store failed."""


class SchemaVersionError(StoreError):
    """The store or record has a schema newer than this workbench understands."""


class RetrievalError(WorkbenchError):
    """A retriever, index or corpus problem."""


class TrainingError(WorkbenchError):
    """Training cannot run as configured."""


__all__ = [
    "ConfigError",
    "KernelDiedError",
    "KernelError",
    "PolicyError",
    "PoolError",
    "RetrievalError",
    "SandboxError",
    "SchemaVersionError",
    "StoreError",
    "ToolError",
    "TrainingError",
    "WorkbenchError",
]
