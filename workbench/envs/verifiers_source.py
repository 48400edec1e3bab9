"""`verifiers:NAME`: a verifiers environment (`vf.load_environment(NAME)`) as workbench's episode source.

    source = load_env_source("verifiers:arith-env?scale=2")      # load_environment("arith-env", scale=2)
    trajectories = await EnvEpisodes(source)(env_tasks(8), policy)

verifiers 0.3.1 pins `mcp<2` and `openai<3`, which workbench's own virtualenv cannot hold, so the environment
runs in the verifiers sidecar (`.venv-verifiers` next to `.venv`, made by `make setup`; another python with
WORKBENCH_VERIFIERS_PYTHON): one bridge process per source (`workbench.envs.verifiers_bridge`, JSON lines),
one session per episode. The module NAME (`-` read as `_`) is imported from the working directory, the
PYTHONPATH dirs, or the sidecar's own packages. Arguments after `?` are `load_environment`'s keyword
arguments, each value read as JSON where it parses (`n=3`, `hard=true`), else as a string.

Observations are chat messages (`EnvReply.messages`): the reset's are the dataset example's prompt (system
and user), each step's the environment's reply. The action is the turn's text (`content`). When the
environment's rollout ends, its rubric has scored it: the weighted total is the last step's reward (the `env`
component) and the rubric's scores (`""`: the total; each reward function and metric by name) its `rubric`
(the `env.rubric` component). Reset arguments: `seed` (or `example`) i → dataset row i, `split` "train" or
"eval", or a task's own fields (`question` or `prompt`, `answer`, `info`).
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import threading
import weakref
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from workbench._lazy import moved_names
from workbench.envs.bridge_process import BridgeProcess
from workbench.envs.protocols import EnvEpisode, EnvReply
from workbench.errors import ConfigError
from workbench.safetext import safe_text

VERIFIERS_PREFIX = "verifiers:"
SIDECAR_PYTHON_VAR = "WORKBENCH_VERIFIERS_PYTHON"
CONTENT_FIELD = "content"  # the action's one field: the assistant message's text
BRIDGE_SCRIPT = Path(__file__).with_name("verifiers_bridge.py")


def sidecar_python() -> Path:
    """The verifiers sidecar's python: WORKBENCH_VERIFIERS_PYTHON, else `.venv-verifiers` next to this venv."""
    chosen = os.environ.get(SIDECAR_PYTHON_VAR)
    python = Path(chosen) if chosen else Path(sys.prefix).parent / ".venv-verifiers" / "bin" / "python"
    if not python.is_file():
        where = f"{SIDECAR_PYTHON_VAR}={chosen}" if chosen else str(python)
        raise ConfigError(
            f"no verifiers sidecar at {where}: `make setup` (scripts/setup.sh) creates .venv-verifiers with "
            f"verifiers 0.3.1, or point {SIDECAR_PYTHON_VAR} at a python that has it"
        )
    return python


def parse_verifiers_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """`verifiers:NAME?k=v&k2=v2` → (NAME, {k: v, k2: v2}); values are JSON where they parse."""
    body = spec.strip().removeprefix(VERIFIERS_PREFIX)
    name, _, query = body.partition("?")
    if not name or any(c.isspace() for c in name):
        raise ConfigError(f"--env {spec!r}: write verifiers:NAME or verifiers:NAME?key=value&key=value")
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise ConfigError(f"--env {spec!r}: write the arguments as ?key=value&key=value") from None
    args: dict[str, Any] = {}
    for key, value in pairs:
        try:
            args[key] = json.loads(value)
        except ValueError:
            args[key] = value
    return name, args


class VerifiersEnv:
    """A verifiers environment in the sidecar; `open()` starts one episode's session on its bridge."""

    def __init__(self, env_id: str, env_args: dict[str, Any] | None = None, *, name: str = "") -> None:
        self.env_id, self.env_args = env_id, dict(env_args or {})
        self.name = name or f"{VERIFIERS_PREFIX}{env_id}"
        self._bridge: BridgeProcess | None = None
        self._starting = threading.Lock()
        self._ids = itertools.count(1)

    @classmethod
    def from_spec(cls, spec: str) -> VerifiersEnv:
        env_id, env_args = parse_verifiers_spec(spec)
        return cls(env_id, env_args, name=spec.strip())

    def action_schema(self) -> dict[str, Any]:
        self.bridge()  # a missing sidecar or environment fails here, before any episode
        text = {"type": "string", "description": "the assistant message's text"}
        return {"type": "object", "properties": {CONTENT_FIELD: text}, "required": [CONTENT_FIELD]}

    def bridge(self) -> BridgeProcess:
        """The bridge process, started (and the environment loaded: seconds, blocking) on first use and after
        it died."""
        with self._starting:
            if self._bridge is None or not self._bridge.alive:
                self._bridge = self._start_bridge()
            return self._bridge

    def _start_bridge(self) -> BridgeProcess:
        paths = [os.getcwd(), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        argv = [str(sidecar_python()), "-P", str(BRIDGE_SCRIPT), "--env", self.env_id]
        argv += ["--args", json.dumps(self.env_args), *itertools.chain(*(("--path", p) for p in paths))]
        module = self.env_id.split("/")[-1].replace("-", "_")
        fix = (
            f"; put the module {module} (with a load_environment function) in the working directory or on "
            f"PYTHONPATH, or install it into the sidecar ({argv[0]} -m pip install ...)"
        )
        bridge = BridgeProcess(argv, what=f"{self.name} (verifiers load_environment)", fix=fix)
        weakref.finalize(self, bridge.close)
        return bridge

    async def open(self) -> EnvEpisode:
        return VerifiersEpisode(self.bridge(), f"s{next(self._ids)}")

    def close(self) -> None:
        """Stop the bridge (it also stops when this process exits)."""
        if self._bridge is not None:
            self._bridge.close()


class VerifiersEpisode:
    """One episode on the bridge."""

    def __init__(self, bridge: BridgeProcess, session: str) -> None:
        self.bridge, self.session = bridge, session

    async def reset(self, **kwargs: Any) -> EnvReply:
        return turn_reply(await self.bridge.request("reset", session=self.session, args=kwargs))

    async def step(self, action: dict[str, Any]) -> EnvReply:
        text = action.get(CONTENT_FIELD)
        if not isinstance(text, str):
            got = f"{CONTENT_FIELD!r} as {type(text).__name__}" if CONTENT_FIELD in action else f"keys {sorted(action)}"
            raise ConfigError(f"a verifiers action is {{{CONTENT_FIELD!r}: the turn's text as a string}}, got {got}")
        return turn_reply(await self.bridge.request("step", session=self.session, text=text))

    async def close(self) -> None:
        if self.bridge.alive:
            await self.bridge.request("close", session=self.session)


def turn_reply(result: dict[str, Any]) -> EnvReply:
    """A bridge turn as an `EnvReply`: its messages; when done, the rubric's total and scores."""
    messages = [{"role": str(m["role"]), "content": safe_text(str(m["content"]))} for m in result.get("messages") or []]
    if not result.get("done"):
        return EnvReply({}, messages=messages)
    total = float(result.get("reward") or 0.0)
    scores = {"": total, **{str(k): float(v) for k, v in (result.get("scores") or {}).items()}}
    metadata = {"stop_condition": result.get("stop"), **({"error": result["error"]} if result.get("error") else {})}
    return EnvReply({}, total, True, metadata, rubric=scores, messages=messages)


__all__ = [
    "CONTENT_FIELD",
    "SIDECAR_PYTHON_VAR",
    "VERIFIERS_PREFIX",
    "VerifiersEnv",
    "VerifiersEpisode",
    "parse_verifiers_spec",
    "sidecar_python",
    "turn_reply",
]


# the name before the glossary kept "session" for the outward side
__getattr__ = moved_names(__name__, {"VerifiersSession": "workbench.envs.verifiers_source:VerifiersEpisode"})
