"""The verifiers bridge: a verifiers environment played a turn at a time over JSON lines (stdin → stdout).

It runs in the verifiers sidecar (`.venv-verifiers`, made by `make setup`: verifiers 0.3.1 pins `mcp<2` and
`openai<3`, which workbench's own virtualenv cannot hold), started by `workbench.envs.verifiers_source`:

    .venv-verifiers/bin/python -P workbench/envs/verifiers_bridge.py --env NAME --args '{"k": 1}' --path DIR

It is stdlib-only apart from verifiers itself and never imports workbench. It loads the environment with
`vf.load_environment(NAME, **args)` (the module NAME, `-` read as `_`, found on `--path` dirs or installed
in the sidecar), prints a hello line, then answers one request per line, several sessions at once:

    {"id": 1, "op": "reset", "session": "s1", "args": {"seed": 3}}
        → {"id": 1, "ok": true, "result": {"messages": [{"role": "system", ..}, {"role": "user", ..}], "done": false}}
    {"id": 2, "op": "step", "session": "s1", "text": "my answer"}
        → {"id": 2, "ok": true, "result": {"messages": [the env's reply], "done": true, "reward": 1.0,
           "scores": {"correct": 1.0, "brief": 0.5, "num_turns": 2.0}, "stop": "...", "error": null}}
    {"id": 3, "op": "close", "session": "s1"}            → {"id": 3, "ok": true, "result": {}}
    a failure                                          → {"id": N, "ok": false, "error": "what went wrong"}

Each session runs the environment's own `rollout` (setup_state, env_response, stop conditions, cleanup) with a
client that hands each prompt to workbench and waits for the turn's text; when the rollout ends, its rubric
has scored it (`reward`: the weighted total; `scores`: each reward function and metric). Lines are ASCII JSON
(`encode_line`), so any text, lone surrogates included, crosses intact; the environment itself gets the text
with lone surrogates replaced (U+FFFD), as verifiers' pydantic messages cannot hold them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from typing import Any, BinaryIO

PLAYER_MODEL = "workbench"  # the model name the environment's state records


def encode_line(message: dict[str, Any]) -> bytes:
    """`message` as one ASCII JSON line (non-ASCII and lone surrogates escaped, so no raw newline inside)."""
    return json.dumps(message, ensure_ascii=True, separators=(",", ":"), default=str).encode("ascii") + b"\n"


def decode_line(line: bytes) -> dict[str, Any]:
    """One line back as a dict; bytes that are not UTF-8 are replaced, a line that is not an object fails."""
    found = json.loads(line.decode("utf-8", errors="replace"))
    if not isinstance(found, dict):
        raise ValueError(f"expected a JSON object per line, got {type(found).__name__}")
    return found


def surrogate_free(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD, pairs joined (workbench.safetext's rule, which this
    stdlib-only script cannot import): what UTF-8, Arrow and pydantic can hold."""
    if not any("\ud800" <= c <= "\udfff" for c in text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def message_dict(message: Any) -> dict[str, str]:
    """A verifiers message (pydantic or dict) as {"role", "content"}; content parts keep their text only."""
    get = message.get if isinstance(message, dict) else (lambda key, default=None: getattr(message, key, default))
    content = get("content")
    if isinstance(content, list):
        parts = [p.get("text") if isinstance(p, dict) else getattr(p, "text", None) for p in content]
        content = "\n".join(p for p in parts if isinstance(p, str))
    return {"role": str(get("role") or "user"), "content": "" if content is None else str(content)}


def player_client(vf: Any, turns: TurnHandoff) -> Any:
    """A `vf.Client` whose model is workbench: each prompt goes out through `turns`, the turn's text comes back."""
    from verifiers.legacy.clients.client import Client

    class PlayerClient(Client):  # type: ignore[misc]
        def setup_client(self, config: Any) -> Any:
            return turns

        async def to_native_tool(self, tool: Any) -> Any:
            return tool

        async def to_native_prompt(self, messages: Any) -> tuple[Any, dict[str, Any]]:
            return messages, {}

        async def get_native_response(
            self, prompt: Any, model: str, sampling_args: Any, tools: Any = None, **_: Any
        ) -> str:
            await turns.asked.put(list(prompt))
            return await turns.answers.get()

        async def raise_from_native_response(self, response: Any) -> None:
            return None

        async def from_native_response(self, response: str) -> Any:
            message = vf.ResponseMessage(content=response, finish_reason="stop", is_truncated=False)
            return vf.Response(
                id=f"workbench-{time.time_ns()}", created=int(time.time()), model=PLAYER_MODEL, message=message
            )

        async def close(self) -> None:
            return None

    return PlayerClient(turns)


class TurnHandoff:
    """One rollout's hand-off: the environment asks (its prompt messages), workbench answers (the turn's text)."""

    def __init__(self) -> None:
        self.asked: asyncio.Queue[list[Any]] = asyncio.Queue()
        self.answers: asyncio.Queue[str] = asyncio.Queue()


class RolloutSession:
    """One episode: the environment's own `run_rollout` (scored by its rubric) against the player client."""

    def __init__(self, vf: Any, env: Any, row: dict[str, Any]) -> None:
        self.turns = TurnHandoff()
        client = player_client(vf, self.turns)
        self.rollout = asyncio.ensure_future(env.run_rollout(row, client, PLAYER_MODEL, {}))
        self.seen = 0  # messages workbench has seen: the prompt through its own last turn
        self.lock = asyncio.Lock()  # one turn at a time

    async def start(self) -> dict[str, Any]:
        async with self.lock:
            return await self.advance()

    async def step(self, text: str) -> dict[str, Any]:
        async with self.lock:
            if self.rollout.done():
                failed = not self.rollout.cancelled() and self.rollout.exception() is not None
                why = "it failed, as its last answer said" if failed else "the environment said done"
                raise RuntimeError(f"this episode is over ({why}); reset a new one")
            await self.turns.answers.put(surrogate_free(text))
            return await self.advance()

    async def advance(self) -> dict[str, Any]:
        """Run the rollout until it asks for the next turn (its new messages) or ends (scored)."""
        asked = asyncio.ensure_future(self.turns.asked.get())
        await asyncio.wait({asked, self.rollout}, return_when=asyncio.FIRST_COMPLETED)
        if asked.done():
            prompt = asked.result()
            if len(prompt) < self.seen:
                raise RuntimeError("the environment's prompt dropped earlier messages; only linear chats are played")
            new, self.seen = prompt[self.seen :], len(prompt) + 1
            return {"messages": [message_dict(m) for m in new], "done": False}
        asked.cancel()
        out = self.rollout.result()
        full = list(out.get("prompt") or []) + list(out.get("completion") or [])
        error = out.get("error")
        return {
            "messages": [message_dict(m) for m in full[self.seen :]],
            "done": True,
            "reward": float(out.get("reward") or 0.0),
            "scores": {str(k): float(v) for k, v in (out.get("metrics") or {}).items() if v is not None},
            "stop": out.get("stop_condition"),
            "error": None if error is None else str(error),
        }

    def close(self) -> None:
        self.rollout.cancel()


RESET_KEYS = "seed (or example) and split ('train' or 'eval'), or a task's own fields: prompt or question, answer, info"


def rollout_input(env: Any, args: dict[str, Any]) -> dict[str, Any]:
    """The dataset row a reset names: `seed`/`example` i → row i (mod the size) of `split`; or the task's own
    fields (`prompt` messages or a `question`, framed as the environment frames its dataset's)."""
    args = dict(args)
    prompt = args.get("prompt")
    for i, message in enumerate(prompt if isinstance(prompt, list) else ()):
        if not (isinstance(message, dict) and "role" in message and "content" in message):
            raise ValueError(
                f"reset(prompt=...): message {i} is {str(message)[:80]}; each is "
                '{"role": "system", "user" or "assistant", "content": "the text"}'
            )
    if "prompt" in args or "question" in args:
        question = args.pop("question", None)
        if "prompt" not in args:
            system = [{"role": "system", "content": env.system_prompt}] if env.system_prompt else []
            args["prompt"] = [*system, {"role": "user", "content": str(question)}]
        args.setdefault("example_id", 0)
        return args
    split = args.pop("split", "train")
    index = args.pop("example", args.pop("seed", 0))
    if args:
        raise ValueError(f"reset got {', '.join(sorted(args))}; it takes {RESET_KEYS}")
    if split not in ("train", "eval") or isinstance(index, bool) or not isinstance(index, int):
        raise ValueError(f"reset(seed={index!r}, split={split!r}): the seed is an int, the split 'train' or 'eval'")
    dataset = env.get_dataset() if split == "train" else env.get_eval_dataset()
    return dict(dataset[index % len(dataset)])


class VerifiersBridge:
    """The loaded environment and its live sessions, answering requests."""

    def __init__(self, vf: Any, env: Any) -> None:
        self.vf, self.env = vf, env
        self.sessions: dict[str, RolloutSession] = {}

    async def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        op, name = request.get("op"), str(request.get("session", ""))
        if op == "reset":
            args = request.get("args") or {}
            if not isinstance(args, dict):
                raise ValueError(f"reset's args are a JSON object ({RESET_KEYS}), got {type(args).__name__}")
            self.close(name)
            session = self.sessions[name] = RolloutSession(self.vf, self.env, rollout_input(self.env, args))
            try:
                return await session.start()
            except BaseException:
                self.close(name)  # a failed reset leaves no episode: a step then says to reset
                raise
        if op == "step":
            if name not in self.sessions:
                raise ValueError(f"no session {name!r}: reset it first")
            return await self.sessions[name].step(str(request.get("text", "")))
        if op == "close":
            self.close(name)
            return {}
        raise ValueError(f"unknown op {op!r}: reset, step or close")

    def close(self, name: str) -> None:
        session = self.sessions.pop(name, None)
        if session is not None:
            session.close()


async def answer_line(bridge: VerifiersBridge, request: dict[str, Any], out: BinaryIO) -> None:
    try:
        reply = {"id": request.get("id"), "ok": True, "result": await bridge.handle(request)}
    except Exception as exc:  # every failure goes back as an answer; the bridge keeps serving
        reply = {"id": request.get("id"), "ok": False, "error": f"{type(exc).__name__}: {exc}"}
    out.write(encode_line(reply))
    out.flush()


async def serve_lines(bridge: VerifiersBridge, out: BinaryIO) -> None:
    """Answer each request line as its own task until stdin closes."""
    loop, pending = asyncio.get_running_loop(), set()
    while line := await loop.run_in_executor(None, sys.stdin.buffer.readline):
        try:
            request = decode_line(line)
        except ValueError as exc:
            out.write(encode_line({"id": None, "ok": False, "error": f"not a request line: {exc}"}))
            out.flush()
            continue
        task = asyncio.ensure_future(answer_line(bridge, request, out))
        pending.add(task)
        task.add_done_callback(pending.discard)
    for session in list(bridge.sessions.values()):
        session.close()


def load_verifiers_env(name: str, env_args: dict[str, Any]) -> tuple[Any, Any]:
    """verifiers and the environment `name` built with `env_args`."""
    try:
        import verifiers as vf
    except ImportError as exc:
        raise RuntimeError(f"{sys.executable} has no verifiers; `make setup` installs it in .venv-verifiers") from exc

    return vf, vf.load_environment(name, **env_args)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="a verifiers environment over JSON lines")
    parser.add_argument("--env", required=True, help="the environment's load_environment name")
    parser.add_argument("--args", default="{}", help="load_environment's keyword arguments as a JSON object")
    parser.add_argument("--path", action="append", default=[], help="a directory to import environments from")
    options = parser.parse_args(argv)
    out = os.fdopen(os.dup(1), "wb")  # the protocol's own stdout; prints of the environment go to stderr
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    sys.path[:0] = options.path
    try:
        vf, env = load_verifiers_env(options.env, json.loads(options.args))
    except Exception as exc:
        cause = exc.__cause__ or exc
        out.write(encode_line({"id": 0, "ok": False, "error": f"{type(exc).__name__}: {exc} ({cause})"}))
        out.flush()
        return 1
    hello = {"env": type(env).__name__, "verifiers": vf.__version__, "examples": len(env.get_eval_dataset())}
    out.write(encode_line({"id": 0, "ok": True, "result": hello}))
    out.flush()
    asyncio.run(serve_lines(VerifiersBridge(vf, env), out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
