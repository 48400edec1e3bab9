"""Pieces shared by the local backends: per-row sampling of next tokens and stop detection.

Logprobs are those of the distribution actually sampled from ("processed", as vLLM's
`logprobs_mode="processed_logprobs"` that TRL uses): log-softmax after the `LogitControls`
(logit bias, then repetition / frequency / presence penalties, vLLM's order), temperature, top-k
and top-p. Greedy rows (temperature 0) report the log-softmax of the controlled logits, unscaled
and unfiltered. Top logprobs, when asked for, come from the same distribution. Beside them each
token's raw logprob: the log-softmax of the model's own logits, before any of that processing, so a
processed 0.0 (a filter left one candidate) can be told from a certain model.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from workbench.errors import ConfigError
from workbench.policies.base import SamplingParams

if TYPE_CHECKING:
    import torch

MAX_TOP_LOGPROBS = 20


@dataclass(frozen=True)
class LogitControls:
    """OpenAI / vLLM sampling controls beyond `SamplingParams` (all off by default).

    logit_bias: token id → value added to its logit (OpenAI's range, -100..100).
    presence_penalty: subtracted once from the logit of every token already generated (-2..2).
    frequency_penalty: subtracted once per earlier occurrence in the generated tokens (-2..2).
    repetition_penalty: for tokens in the prompt or generated, a positive logit is divided by it
        and a negative one multiplied (Hugging Face / vLLM; 1 = off, > 0).
    top_logprobs: report the k most likely tokens at each step (0..20).
    """

    logit_bias: Mapping[int, float] = field(default_factory=dict)
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    repetition_penalty: float = 1.0
    top_logprobs: int = 0

    def __post_init__(self) -> None:
        for name, lo, hi in (("presence_penalty", -2, 2), ("frequency_penalty", -2, 2)):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and lo <= v <= hi):
                raise ConfigError(f"{name} must be a number between {lo} and {hi}, got {v!r}")
        rp = self.repetition_penalty
        if not (isinstance(rp, (int, float)) and math.isfinite(rp) and rp > 0):
            raise ConfigError(f"repetition_penalty must be a finite number > 0 (1 = off), got {rp!r}")
        if not (isinstance(self.top_logprobs, int) and 0 <= self.top_logprobs <= MAX_TOP_LOGPROBS):
            raise ConfigError(
                f"top_logprobs must be an integer between 0 and {MAX_TOP_LOGPROBS}, got {self.top_logprobs!r}"
            )
        for tok, bias in self.logit_bias.items():
            if not isinstance(tok, int) or isinstance(tok, bool):
                raise ConfigError(f"logit_bias keys must be token ids (integers), got {tok!r}")
            if not (isinstance(bias, (int, float)) and -100 <= bias <= 100):
                raise ConfigError(f"logit_bias[{tok}] must be a number between -100 and 100, got {bias!r}")

    @property
    def adjusts_logits(self) -> bool:
        return (
            bool(self.logit_bias)
            or self.presence_penalty != 0
            or self.frequency_penalty != 0
            or self.repetition_penalty != 1
        )

    def check_vocab(self, vocab_size: int) -> None:
        bad = [t for t in self.logit_bias if not 0 <= t < vocab_size]
        if bad:
            raise ConfigError(
                f"logit_bias names token id {bad[0]}, outside this model's vocabulary (0..{vocab_size - 1})"
            )


class SamplingChoice(NamedTuple):
    """The temperature, top_p and top_k a row samples with: the caller's, else the model's, else workbench's
    (`SamplingDefaults.choose`)."""

    temperature: float
    top_p: float
    top_k: int


WORKBENCH_SAMPLING = SamplingChoice(temperature=1.0, top_p=1.0, top_k=0)
"""What a row samples with when neither the caller nor the model's generation config says."""


@dataclass
class RowSampler:
    """How one row samples: its chosen temperature / top_p / top_k and its own RNG, so a seeded row gives
    the same tokens whether it runs alone or merged into a batch. With `controls` that penalise
    repeats it keeps the counts of the tokens it has seen (`prompt`, then each one sampled)."""

    params: SamplingChoice
    generator: torch.Generator | None
    controls: LogitControls | None = None
    prompt: Sequence[int] = ()
    _counts: torch.Tensor | None = None  # (V,) float: times each token was generated
    _seen: torch.Tensor | None = None  # (V,) bool: in the prompt or generated

    def adjust(self, row: torch.Tensor) -> torch.Tensor:
        """`row` (V,) with the logit bias and penalties applied (a new tensor; `row` is untouched)."""
        import torch

        c = self.controls
        if c is None or not c.adjusts_logits:
            return row
        counts, seen = self._counts, self._seen
        if counts is None or seen is None:  # set together, on the first row
            counts = self._counts = torch.zeros_like(row)
            seen = self._seen = torch.zeros(row.shape, dtype=torch.bool, device=row.device)
            if self.prompt:
                seen[torch.tensor(list(self.prompt), device=row.device)] = True
        row = row.clone()
        if c.logit_bias:
            ids = torch.tensor(list(c.logit_bias), device=row.device)
            row.index_add_(0, ids, torch.tensor(list(c.logit_bias.values()), dtype=row.dtype, device=row.device))
        if c.repetition_penalty != 1:
            penalised = torch.where(row > 0, row / c.repetition_penalty, row * c.repetition_penalty)
            row = torch.where(seen, penalised, row)
        if c.frequency_penalty or c.presence_penalty:
            row = row - counts * c.frequency_penalty - (counts > 0).to(row.dtype) * c.presence_penalty
        return row

    def observe(self, token: int) -> None:
        if self._counts is not None and self._seen is not None:
            self._counts[token] += 1
            self._seen[token] = True


class NextTokens(NamedTuple):
    """One token per row (`sample_next`): the ids (B,), their processed logprobs (B,), their raw
    logprobs (B,) and, per row, None or the top [(token id, logprob), ...] best first."""

    tokens: torch.Tensor
    logprobs: torch.Tensor
    raw_logprobs: torch.Tensor
    tops: list[list[tuple[int, float]] | None]


def sample_next(logits: torch.Tensor, samplers: Sequence[RowSampler]) -> NextTokens:
    """Pick one token per row from `logits` (B, V), the model's own: each row's `RowSampler`
    applies its controls, temperature, top-k and top-p. Tops come when the row asks for
    `top_logprobs`."""
    import torch

    logits = logits.float()
    tokens = torch.empty(len(samplers), dtype=torch.long, device=logits.device)
    logprobs = torch.empty(len(samplers), dtype=torch.float32, device=logits.device)
    tops: list[list[tuple[int, float]] | None] = [None] * len(samplers)
    for i, s in enumerate(samplers):
        row = s.adjust(logits[i])
        p = s.params
        if p.temperature <= 0:
            lp = torch.log_softmax(row, dim=-1)
            tok = torch.argmax(row)
        else:
            row = _filter_top_k_top_p(row / p.temperature, p.top_k, p.top_p)
            lp = torch.log_softmax(row, dim=-1)
            tok = torch.multinomial(lp.exp(), 1, generator=s.generator)[0]
        tokens[i] = tok
        logprobs[i] = lp[tok]
        if s.controls is not None and s.controls.top_logprobs:
            best = torch.topk(lp, min(s.controls.top_logprobs, lp.numel()))
            tops[i] = list(zip(best.indices.tolist(), best.values.tolist(), strict=True))
        if s._counts is not None:
            s.observe(int(tok))
    raw = torch.log_softmax(logits, dim=-1).gather(1, tokens[:, None])[:, 0]
    return NextTokens(tokens, logprobs, raw, tops)


def _filter_top_k_top_p(row: torch.Tensor, top_k: int, top_p: float) -> torch.Tensor:
    import torch

    if top_k and 0 < top_k < row.numel():
        kth = torch.topk(row, top_k).values[-1]
        row = row.masked_fill(row < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits, order = torch.sort(row, descending=True)
        probs = torch.softmax(sorted_logits, dim=-1)
        # drop a token when the mass before it already reaches top_p (the first is always kept)
        drop = (probs.cumsum(-1) - probs) >= top_p
        sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
        row = torch.empty_like(row).scatter_(0, order, sorted_logits)
    return row


class StopWatcher:
    """Says when generated ids first contain a stop string, decoding only a tail window.

    A stop string of n characters spans at most 4n byte-level tokens, so decoding the last
    4n + 4 ids after every step finds it at the exact step that completes it.
    """

    def __init__(self, stop: Sequence[str], decode: Callable[[Sequence[int]], str]) -> None:
        self.stop = [s for s in stop if s]
        self.decode = decode
        self.window = 4 * max((len(s) for s in self.stop), default=0) + 4

    def hit(self, ids: Sequence[int]) -> bool:
        if not self.stop:
            return False
        tail = self.decode(ids[-self.window :])
        return any(s in tail for s in self.stop)


@dataclass(frozen=True)
class SamplingDefaults:
    """A model's own sampling defaults (its `generation_config.json`: temperature, top_p, top_k) and
    the token ids that end its turn (`eos_token_id` there, e.g. `<|im_end|>`).

    `choose(params)` takes each of temperature / top_p / top_k from the caller when set (not None), else
    from the model, else workbench's (`WORKBENCH_SAMPLING`), as vLLM does with a model's generation
    config: an explicit temperature=1.0 beats a generation config's 0.2."""

    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    eos_token_ids: tuple[int, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SamplingDefaults:
        """From a generation config's entries (only those present count)."""
        eos = data.get("eos_token_id")
        eos_ids = (eos,) if isinstance(eos, int) else tuple(int(t) for t in eos or ())
        temperature, top_p, top_k = data.get("temperature"), data.get("top_p"), data.get("top_k")
        return cls(
            temperature=float(temperature) if isinstance(temperature, (int, float)) else None,
            top_p=float(top_p) if isinstance(top_p, (int, float)) else None,
            top_k=int(top_k) if isinstance(top_k, int) else None,
            eos_token_ids=eos_ids,
        )

    @classmethod
    def read(cls, directory: str | Path) -> SamplingDefaults:
        """From `directory/generation_config.json`; no defaults when it has none."""
        path = Path(directory) / "generation_config.json"
        if not path.is_file():
            return cls()
        try:
            data = json.loads(path.read_text())
        except ValueError as exc:
            raise ConfigError(f"{path} is not valid JSON ({exc}); fix or remove it") from None
        return cls.from_dict(data if isinstance(data, dict) else {})

    def choose(self, params: SamplingParams) -> SamplingChoice:
        """The temperature / top_p / top_k `params` samples with: the caller's, else the model's, else workbench's."""
        temperature, top_p, top_k = (
            next(v for v in (getattr(params, name), getattr(self, name), fallback) if v is not None)
            for name, fallback in WORKBENCH_SAMPLING._asdict().items()
        )
        return SamplingChoice(float(temperature), float(top_p), int(top_k))

    def apply(self, params: SamplingParams) -> SamplingParams:
        """`params` with every unset temperature / top_p / top_k filled in (`choose`)."""
        return dataclasses.replace(params, **self.choose(params)._asdict())


def validate_params(params: SamplingParams) -> None:
    if params.max_new_tokens < 1:
        raise ConfigError(f"max_new_tokens must be >= 1, got {params.max_new_tokens}")
    t, top_p, top_k = params.temperature, params.top_p, params.top_k  # None: the model's default, else workbench's
    if t is not None and not (t >= 0 and math.isfinite(t)):
        raise ConfigError(f"temperature must be a finite number >= 0 (0 = greedy) or None (the default), got {t}")
    if top_p is not None and not 0 < top_p <= 1:
        raise ConfigError(f"top_p must be in (0, 1] or None (the default), got {top_p}")
    if top_k is not None and top_k < 0:
        raise ConfigError(f"top_k must be >= 0 (0 = off) or None (the default), got {top_k}")
    if isinstance(params.stop, str):
        raise ConfigError(f"stop must be a list of strings, got the string {params.stop!r}: use stop=[{params.stop!r}]")


__all__ = [
    "MAX_TOP_LOGPROBS",
    "WORKBENCH_SAMPLING",
    "LogitControls",
    "NextTokens",
    "RowSampler",
    "SamplingChoice",
    "SamplingDefaults",
    "StopWatcher",
    "sample_next",
    "validate_params",
]
