"""`ScriptedPolicy`: deterministic turns from a function or a list. The demo and test backend.

    policy = ScriptedPolicy.from_turns([
        "<think>look it up</think><code>print(search('capital of France'))</code>",
        "<think>found it</think><code>answer('Paris')</code>",
    ])
    policy = ScriptedPolicy(lambda context, turn: "<code>print(1)</code>")

`fn(context_text, turn)` gets the decoded prompt and the turn number: how many of this
policy's own completions the prompt already contains (0 for a fresh episode). The turn is
found from the prompt ids themselves (a prompt that extends an earlier prompt + completion is
its next turn), so one policy serves many concurrent episodes with no per-episode state. The
agent keeps one notepad block at the end of the context (before a chat template's closing) and
replaces it each turn; a prompt that ends with one is also remembered without it, so the turn count
survives the block moving.

The text is tokenized with the codec (`ByteCodec` unless given), cut after the first stop
string (finish "stop"), else at `max_new_tokens` ("length"), else ended with EOS ("eos").
Logprobs are 0.0: a script is certain.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Self

from workbench.errors import ConfigError
from workbench.policies.base import ByteCodec, Codec, Completion, GenerateSync, SamplingParams, truncate_at_stop
from workbench.policies.batching import make_rows

ScriptFn = Callable[[str, int], str]

_MOD = (1 << 61) - 1
_BASE = 1_000_003


def _extend(h: int, ids: Sequence[int]) -> int:
    """Rolling hash of a sequence, continued from `h` (the hash of what came before)."""
    for t in ids:
        h = (h * _BASE + t + 1) % _MOD
    return h


class ScriptedPolicy(GenerateSync):
    """Turns from `fn(context_text, turn) -> str`, tokenized exactly by `codec`."""

    context_size: int | None = None  # a script has no window
    MOVABLE_TAIL = "<notepad>\n"  # how the agent's replaceable context tail (the notepad block) opens
    TAIL_END = "</notepad>"  # and how it ends (a newline, then a chat template's closing, may follow)

    def __init__(self, fn: ScriptFn, *, codec: Codec | None = None, name: str = "scripted", memory: int = 65536):
        if not callable(fn):
            raise ConfigError(f"ScriptedPolicy needs a callable fn(context_text, turn) -> str, got {fn!r}")
        self.fn = fn
        self.codec: Codec = codec if codec is not None else ByteCodec()
        self.name = name
        self._memory = memory
        self._seen: OrderedDict[tuple[int, int], int] = OrderedDict()  # (len, hash) of prompt+completion -> turns done

    @classmethod
    def from_turns(
        cls, turns: Sequence[str], *, codec: Codec | None = None, name: str = "scripted", repeat_last: bool = True
    ) -> Self:
        """Play `turns` in order. Past the end, repeat the last turn (or, with
        `repeat_last=False`, return an empty completion that ends with EOS)."""
        turns = list(turns)
        if not turns or not all(isinstance(t, str) for t in turns):
            raise ConfigError("from_turns needs a non-empty list of strings")

        def fn(_context: str, turn: int) -> str:
            if turn < len(turns):
                return turns[turn]
            return turns[-1] if repeat_last else ""

        return cls(fn, codec=codec, name=name)

    def describe(self) -> dict[str, Any]:
        fn_name = getattr(self.fn, "__qualname__", type(self.fn).__name__)
        return {"backend": "scripted", "name": self.name, "fn": f"{getattr(self.fn, '__module__', '?')}.{fn_name}"}

    def turn_of(self, prompt: Sequence[int]) -> int:
        """How many of this policy's completions `prompt` already contains."""
        return self._scan(prompt)[0]

    def _scan(self, prompt: Sequence[int]) -> tuple[int, int]:
        turn, h, seen = 0, 0, self._seen
        for n, t in enumerate(prompt, 1):
            h = (h * _BASE + t + 1) % _MOD
            done = seen.get((n, h))
            if done is not None:
                turn = done
        return turn, h

    def _remember(self, key: tuple[int, int], turns_done: int) -> None:
        self._seen[key] = turns_done
        self._seen.move_to_end(key)
        while len(self._seen) > self._memory:
            self._seen.popitem(last=False)

    def _without_tail(self, prompt: Sequence[int], context: str) -> list[list[int]]:
        """`prompt` without its notepad block (which the agent moves next turn), for each way the block
        may be cut: it ends the prompt, or a chat template's closing follows it (`workbench.agent.turns`)."""
        i = context.rfind(self.MOVABLE_TAIL)
        j = context.find(self.TAIL_END, i) + len(self.TAIL_END) if i >= 0 else -1
        if i < 0 or j < len(self.TAIL_END):
            return []
        out = []
        for start in {i, i - 1} if context[i - 1 : i] == "\n" else {i}:
            for end in {j, j + 1} if context[j : j + 1] == "\n" else {j}:
                block, rest = (
                    self.codec.encode(context[start:end]),
                    self.codec.encode(context[end:]) if end < len(context) else [],
                )
                n = len(block) + len(rest)
                if block and n < len(prompt) and list(prompt[len(prompt) - n :]) == block + rest:
                    out.append(list(prompt[: len(prompt) - n]) + rest)
        return out

    def complete(self, prompt: Sequence[int], params: SamplingParams) -> Completion:
        turn, h = self._scan(prompt)
        context = self.codec.decode(prompt)
        text = self.fn(context, turn)
        if not isinstance(text, str):
            raise ConfigError(f"the script returned {type(text).__name__} for turn {turn}; it must return a str")
        text, stopped = truncate_at_stop(text, params.stop)
        ids = self.codec.encode(text)
        eos = [] if stopped or self.codec.eos_token_id is None else [self.codec.eos_token_id]
        if len(ids) + len(eos) > params.max_new_tokens:
            ids, finish = ids[: params.max_new_tokens], "length"
            text = self.codec.decode(ids)
        else:
            ids, finish = ids + eos, "stop" if stopped else "eos"
        self._remember((len(prompt) + len(ids), _extend(h, ids)), turn + 1)
        for kept in self._without_tail(prompt, context):  # the same turn, seen again once the block moved
            self._remember((len(kept) + len(ids), _extend(_extend(0, kept), ids)), turn + 1)
        return Completion(text=text, token_ids=ids, logprobs=[0.0] * len(ids), finish_reason=finish)

    def _generate_blocking(self, prompts: Sequence[list[int]], params: SamplingParams) -> list[Completion]:
        return [self.complete(r.prompt, params) for r in make_rows(prompts, params)]

    async def generate(self, prompts: Sequence[list[int]], params: SamplingParams) -> list[Completion]:
        return self._generate_blocking(prompts, params)


__all__ = ["ScriptFn", "ScriptedPolicy"]
