"""Env sources are an open registry: a prefix of your own resolves `--env PREFIX...`, the longest prefix wins,
the built-in forms stay, and a bad prefix or an unknown spec names the fix."""

from __future__ import annotations

import pytest

from workbench.envs.source import (
    ServedOpenEnv,
    env_source_prefixes,
    load_env_source,
    register_env_source,
)
from workbench.errors import ConfigError


class Named:
    """Stands in for an `EnvSource`: what the factory was given."""

    def __init__(self, spec: str) -> None:
        self.name = spec


def test_a_registered_prefix_resolves_and_the_longest_wins() -> None:
    register_env_source("labgames:", Named)
    register_env_source("labgames:maze/", lambda spec: Named("maze " + spec))
    assert load_env_source(" labgames:tag?players=2 ").name == "labgames:tag?players=2"
    assert load_env_source("labgames:maze/level1").name == "maze labgames:maze/level1"
    assert {"openenv:", "openenv+http://", "verifiers:", "labgames:"} <= set(env_source_prefixes())
    served = load_env_source("openenv+http://127.0.0.1:9")  # a built-in form, still there (no server needed)
    assert isinstance(served, ServedOpenEnv) and served.url == "http://127.0.0.1:9"
    with pytest.raises(ConfigError, match=r"registered: .*labgames:.*register_env_source\(prefix, factory\)"):
        load_env_source("gym:CartPole")


def test_bad_prefixes_and_duplicates_are_refused() -> None:
    for bad in ("labgames", "x", "two words:", ""):
        with pytest.raises(ConfigError, match="end it with ':'"):
            register_env_source(bad, Named)
    with pytest.raises(ConfigError, match="callable"):
        register_env_source("labgames2:", "not a factory")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="already registered"):
        register_env_source("openenv:", Named, replace=False)
