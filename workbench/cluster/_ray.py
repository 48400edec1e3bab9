"""Ray, imported only when a cluster path is used: `import workbench` never imports it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from workbench.errors import ConfigError

INSTALL = "pip install 'workbench[ray]'"


def require_ray() -> Any:
    """The `ray` module, or a ConfigError that names the extra to install."""
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(
            f"executor='ray' needs Ray, which is not installed here ({exc}); install the extra: {INSTALL}"
        ) from None
    return ray


def actor_died_errors() -> tuple[type[BaseException], ...]:
    """The exceptions a call raises when the actor behind it is gone."""
    from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError

    return (RayActorError, ActorDiedError, ActorUnavailableError)


@contextlib.contextmanager
def startup_share(nice: int = -10) -> Iterator[None]:
    """A larger CPU share for this session while Ray starts a node here, then the old one back.

    The raylet gives its agents a fixed 15 s to start; on a loaded machine their Python start-up
    takes longer and the node dies. Ray's processes start in this process's scheduling autogroup,
    so raising its weight for the start (Linux autogroups, root) lets them make it. Elsewhere a no-op."""
    path = "/proc/self/autogroup"
    try:
        with open(path) as f:
            old = int(f.read().rsplit("nice", 1)[1])
        with open(path, "w") as f:
            f.write(str(nice))
    except (OSError, ValueError, IndexError):
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(OSError), open(path, "w") as f:
            f.write(str(old))
