"""Where environment episodes come from: an OpenEnv `Environment` in this process, one served by URL, or a
verifiers environment (`verifiers:NAME`, `workbench.envs.verifiers_source`).

    source = load_env_source("openenv:my_envs.games:GuessEnv")     # a class (or factory) on sys.path
    source = load_env_source("openenv+http://127.0.0.1:8010")       # a served one, through OpenEnv's client
    source = load_env_source("verifiers:arith-env?scale=2")         # vf.load_environment("arith-env", scale=2)
    register_env_source("mygames:", lambda spec: MySource(spec))    # your own prefix: load_env_source("mygames:x")
    session = await source.open()                                   # one episode's environment
    first = await session.reset(seed=0)                             # EnvReply(observation, reward, done, metadata)
    reply = await session.step({"message": "hello"})
    await session.close()

OpenEnv sources speak plain dicts: an action is the action model's fields, an observation its fields without `done`,
`reward` and `metadata` (as OpenEnv's server sends them). An in-process environment's blocking `reset` /
`step` run in a worker thread (its own `reset_async` / `step_async` when it overrides them), so episodes
run side by side; a served one gets one WebSocket session per episode (`GenericEnvClient`).

Env sources are an open registry, like policy backends and tool sets: `register_env_source(prefix, factory)`
makes every spec that starts with `prefix` resolve to `factory(spec)` (the longest matching prefix wins);
the built-in prefixes are registered on the first lookup, so importing this module registers nothing.
"""

from __future__ import annotations

import asyncio
import dataclasses
import typing
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation
from openenv.core.generic_client import GenericEnvClient

from workbench.envs.protocols import EnvEpisode, EnvReply, EnvSource
from workbench.errors import ConfigError
from workbench.registrations import missing, record, why_missing

OPENENV_CLASS = "openenv:"
OPENENV_URLS = ("openenv+http://", "openenv+https://")
_T = TypeVar("_T")
ENV_SPEC_HELP = (
    "openenv:package.module:ClassName (an Environment on sys.path), openenv+http://HOST:PORT, or verifiers:NAME "
    "(a verifiers load_environment name, arguments as verifiers:NAME?key=value&key=value)"
)


class EnvSourceFactory(Protocol):
    """Builds the source a whole spec names (the prefix included), e.g. `factory("mygames:maze?size=4")`."""

    def __call__(self, spec: str) -> EnvSource: ...


_SOURCES: dict[str, EnvSourceFactory] = {}
_BUILTINS_ADDED = False


def register_env_source(prefix: str, factory: EnvSourceFactory, *, replace: bool = True) -> None:
    """Make `load_env_source(spec)` (and `--env spec`) return `factory(spec)` for a spec starting with `prefix`,
    which ends with ':' or '/' (e.g. "mygames:"); the longest matching prefix wins."""
    if not isinstance(prefix, str) or len(prefix) < 2 or not prefix.endswith((":", "/")) or " " in prefix:
        raise ConfigError(f"env source prefix {prefix!r}: end it with ':' (e.g. 'mygames:') and use no spaces")
    if not callable(factory):
        raise ConfigError(f"env source {prefix!r} must be callable as factory(spec) -> EnvSource")
    builtin_env_sources()
    if not replace and prefix in _SOURCES:
        raise ConfigError(f"an env source with prefix {prefix!r} is already registered")
    _SOURCES[prefix] = factory
    record("env source", prefix, factory, register_env_source)


def env_source_prefixes() -> list[str]:
    """The registered prefixes (the built-ins included)."""
    builtin_env_sources()
    return sorted(_SOURCES)


def load_env_source(spec: str) -> EnvSource:
    """The source `spec` names (see the module docstring); anything else is an error naming the known forms."""
    text = spec.strip()
    builtin_env_sources()
    matching = [prefix for prefix in _SOURCES if text.startswith(prefix)]
    if not matching:
        own = [p for p in _SOURCES if p not in _BUILTIN_PREFIXES]
        more = f"; registered: {', '.join(sorted(own))}" if own else ""
        lost = [key.removeprefix("env source ") for key in missing() if key.startswith("env source ")]
        why = "".join(why_missing("env source", p) for p in lost if text.startswith(p))
        raise ConfigError(
            f"--env {spec!r}: give {ENV_SPEC_HELP}{more} (or register your own prefix with "
            f"workbench.envs.source.register_env_source(prefix, factory)){why}"
        )
    return _SOURCES[max(matching, key=len)](text)


def _served_openenv(spec: str) -> EnvSource:
    return ServedOpenEnv(spec[len("openenv+") :], name=spec)


def _in_process_openenv(spec: str) -> EnvSource:
    return InProcessOpenEnv(_import_factory(spec[len(OPENENV_CLASS) :]), name=spec)


def _verifiers(spec: str) -> EnvSource:
    from workbench.envs.verifiers_source import VerifiersEnv

    return VerifiersEnv.from_spec(spec)


_BUILTIN_PREFIXES = (*OPENENV_URLS, OPENENV_CLASS, "verifiers:")


def builtin_env_sources() -> None:
    """Register openenv+http(s)://, openenv: and verifiers: (a prefix registered before keeps its own); runs
    once, from the first lookup or registration."""
    global _BUILTINS_ADDED
    if _BUILTINS_ADDED:
        return
    _BUILTINS_ADDED = True
    factories: tuple[EnvSourceFactory, ...] = (_served_openenv, _served_openenv, _in_process_openenv, _verifiers)
    for prefix, factory in zip(_BUILTIN_PREFIXES, factories, strict=True):
        _SOURCES.setdefault(prefix, factory)


def _import_factory(target: str) -> Callable[[], Environment]:
    from workbench.importing import import_target

    found = import_target(
        target,
        where=f"openenv:{target}",
        wants="an Environment class or factory",
        form="openenv:package.module:ClassName",
        example="openenv:my_envs.games:Guess",
    )
    return typing.cast(Callable[[], Environment], found)


def environment_action_type(env_type: type) -> type[Action]:
    """The `Action` subclass an `Environment` subclass declares: its `Environment[ActT, ...]` base, else
    the annotation of its `step`'s `action`."""
    for klass in env_type.__mro__:
        for base in getattr(klass, "__orig_bases__", ()):
            if typing.get_origin(base) is Environment:
                found = typing.get_args(base)[0]
                if isinstance(found, type) and issubclass(found, Action):
                    return found
    try:
        hinted = typing.get_type_hints(getattr(env_type, "step")).get("action")  # noqa: B009
    except Exception:
        hinted = None
    if isinstance(hinted, type) and issubclass(hinted, Action) and hinted is not Action:
        return hinted
    raise ConfigError(
        f"{env_type.__name__} does not say which Action it takes: subclass Environment[MyAction, MyObservation, "
        "State], annotate step(self, action: MyAction), or pass action_type= to InProcessOpenEnv"
    )


def observation_reply(observation: Observation) -> EnvReply:
    """An OpenEnv observation as the server would send it, plus its metadata."""
    fields = observation.model_dump(mode="json", exclude={"reward", "done"})
    metadata = fields.pop("metadata", None) or {}
    reward = None if observation.reward is None else float(observation.reward)
    return EnvReply(fields, reward, bool(observation.done), dict(metadata))


def rubric_scores(env: Environment) -> dict[str, float]:
    """The last score of `env.rubric` (key "") and of each of its named sub-rubrics ("format", "code.syntax"),
    where they scored; {} without a rubric. A served environment's rubric stays on its server."""
    rubric = getattr(env, "rubric", None)
    if rubric is None:
        return {}
    pairs = [("", rubric), *rubric.named_rubrics()]
    return {name: float(r.last_score) for name, r in pairs if r.last_score is not None}


class InProcessOpenEnv:
    """An OpenEnv `Environment` built in this process per episode by `factory` (the class itself, or a function
    annotated to return one; `action_type=` when neither says which Action it takes)."""

    def __init__(
        self, factory: Callable[[], Environment], *, action_type: type[Action] | None = None, name: str = ""
    ) -> None:
        self.factory = factory
        self.name = name or f"openenv:{factory.__module__}:{getattr(factory, '__qualname__', factory)}"
        self.action_type = action_type or environment_action_type(_environment_type(factory))

    def action_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = self.action_type.model_json_schema()
        return schema

    async def open(self) -> EnvEpisode:
        env = self.factory()
        if not isinstance(env, Environment):
            raise ConfigError(f"{self.name} built a {type(env).__name__}, not an openenv Environment")
        return _InProcessEpisode(env, self.action_type)


def _environment_type(factory: Callable[[], Environment]) -> type:
    if isinstance(factory, type):
        if not issubclass(factory, Environment):
            raise ConfigError(f"{factory.__name__} is not an openenv Environment subclass")
        return factory
    returned = typing.get_type_hints(factory).get("return")
    if isinstance(returned, type) and issubclass(returned, Environment):
        return returned
    raise ConfigError(
        f"{getattr(factory, '__qualname__', factory)}: annotate the factory's return type with its Environment "
        "subclass, or pass action_type= to InProcessOpenEnv"
    )


class _InProcessEpisode:
    def __init__(self, env: Environment, action_type: type[Action]) -> None:
        self.env, self.action_type = env, action_type
        own = type(env)
        self._own_reset_async = own.reset_async is not Environment.reset_async
        self._own_step_async = own.step_async is not Environment.step_async
        self._inline = bool(getattr(env, "REQUIRES_SINGLE_THREAD_EXECUTOR", False))

    async def _call(self, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        if self._inline:
            return fn(*args, **kwargs)
        return await asyncio.to_thread(fn, *args, **kwargs)

    async def reset(self, **kwargs: Any) -> EnvReply:
        if self._own_reset_async:
            return observation_reply(await self.env.reset_async(**kwargs))
        return observation_reply(await self._call(self.env.reset, **kwargs))

    async def step(self, action: dict[str, Any]) -> EnvReply:
        act = self.action_type.model_validate(action)
        if self._own_step_async:
            observation = await self.env.step_async(act)
        else:
            observation = await self._call(self.env.step, act)
        return dataclasses.replace(observation_reply(observation), rubric=rubric_scores(self.env))

    async def close(self) -> None:
        await self._call(self.env.close)


class ServedOpenEnv:
    """An OpenEnv server at `url`: its action schema from `/schema`, one `GenericEnvClient` session per episode."""

    def __init__(self, url: str, *, name: str = "", timeout_s: float = 60.0) -> None:
        self.url = url.rstrip("/")
        self.name = name or f"openenv+{self.url}"
        self.timeout_s = timeout_s
        self._schema: dict[str, Any] | None = None

    def action_schema(self) -> dict[str, Any]:
        if self._schema is None:
            import httpx

            loopback = any(host in self.url for host in ("//127.0.0.1", "//localhost", "//[::1]"))
            try:
                response = httpx.get(f"{self.url}/schema", timeout=self.timeout_s, trust_env=not loopback)
                response.raise_for_status()
                self._schema = dict(response.json()["action"])
            except (httpx.HTTPError, KeyError, ValueError) as exc:
                raise ConfigError(
                    f"no OpenEnv server answers at {self.url} (GET /schema: {exc}); start it first "
                    "(e.g. `workbench serve-env --port 8010`) or check the URL"
                ) from exc
        return self._schema

    async def open(self) -> EnvEpisode:
        client = GenericEnvClient(self.url, message_timeout_s=self.timeout_s)
        await client.connect()
        return _ServedEpisode(client)


class _ServedEpisode:
    def __init__(self, client: GenericEnvClient) -> None:
        self.client = client

    async def reset(self, **kwargs: Any) -> EnvReply:
        result = await self.client.reset(**kwargs)
        return _result_reply(result.observation, result.reward, result.done)

    async def step(self, action: dict[str, Any]) -> EnvReply:
        result = await self.client.step(action)
        return _result_reply(result.observation, result.reward, result.done)

    async def close(self) -> None:
        await self.client.close()


def _result_reply(observation: dict[str, Any], reward: Any, done: bool) -> EnvReply:
    return EnvReply(dict(observation), None if reward is None else float(reward), bool(done))


__all__ = [
    "ENV_SPEC_HELP",
    "EnvEpisode",
    "EnvReply",
    "EnvSource",
    "EnvSourceFactory",
    "InProcessOpenEnv",
    "ServedOpenEnv",
    "builtin_env_sources",
    "env_source_prefixes",
    "environment_action_type",
    "load_env_source",
    "observation_reply",
    "register_env_source",
    "rubric_scores",
]
