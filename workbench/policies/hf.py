"""`TransformersPolicy`: a Hugging Face causal LM as a policy.

    policy = TransformersPolicy("runs/tiny", device="auto")          # a local model dir
    policy = TransformersPolicy("Qwen/Qwen2.5-0.5B-Instruct@main")   # a hub id (workbench.models.resolve_model)
    policy = TransformersPolicy("smollm2")                           # after `workbench models add smollm2`
    ids = policy.codec.chat([{"role": "user", "content": "What is 2+2?"}])
    [out] = await policy.generate([ids], SamplingParams(max_new_tokens=64, stop=["</code>"], temperature=0))

    policy = TransformersPolicy.from_model(trainer.model, tokenizer)   # a live, in-memory model

Concurrent `generate` calls share one batch, decoded token by token with a KV cache and batched
continuously (`hf_batch.py`): a row leaves the batch the step it ends and new calls join between
steps. A finished row's KV cache is kept (`prefix_cache_mb`, 0 to turn it off; `prefix_cache.py`),
so an episode's next turn, whose context starts with this one's, prefills only the new tokens.
A model directory's `generation_config.json` gives the sampling defaults (temperature, top_p,
top_k) a caller leaves unset and the end-of-turn ids generation stops at (see `SamplingDefaults`),
besides the tokenizer's EOS and any stop string. Every completion carries the sampled ids, their
logprobs (processed: see `sampling.py`) and the model's raw logprobs (`raw_logprobs`: log-softmax of
its own logits, before controls and sampling filters).
`text == codec.decode(token_ids)`, except that a final EOS token is not rendered into `text`.
A stop string ends generation at the token that completes it; if that token runs past the stop
string (possible with merged tokens, never with the tiny models' single-token tags), `text`
keeps those extra characters so it always matches the ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import PolicyError
from workbench.policies.base import Completion, model_agent_settings
from workbench.policies.batching import BatchingBackend, DetailedCompletion, FixedFeed, Row, RowFeed
from workbench.policies.codec import TokenizerCodec
from workbench.policies.hf_batch import Generated, Member, RunningBatch
from workbench.policies.prefix_cache import PrefixCache
from workbench.policies.sampling import RowSampler, SamplingDefaults, StopWatcher

if TYPE_CHECKING:
    import torch

UNSET_MAX_LENGTH = 10**8  # tokenizers without a limit report a huge model_max_length (2**30, 1e30)


def context_size_of(config: Any, tokenizer: Any = None) -> int | None:
    """The most tokens (prompt + completion) the model takes: its position embeddings or the
    tokenizer's `model_max_length`, whichever is smaller; None when neither says."""
    sizes = [getattr(config, "max_position_embeddings", None), getattr(tokenizer, "model_max_length", None)]
    known = [int(n) for n in sizes if isinstance(n, int) and 0 < n < UNSET_MAX_LENGTH]
    return min(known) if known else None


class TransformersPolicy(BatchingBackend):
    """A transformers model: `model_path` is a hub id (ORG/NAME[@REV]), a local dir, a GGUF file or
    a name from `workbench models list`. `device`: "cpu", "cuda", "cuda:N" or "auto"; `dtype`:
    "auto" (bf16 on a GPU that has it, else float32) or a torch dtype / its name.
    `sampling_defaults`: the model's generation config unless given. Supports
    `controls=LogitControls(...)` (logit bias, penalties, top logprobs)."""

    streams = True  # continuous batching: see hf_batch.py

    supports_controls = True

    def __init__(
        self,
        model_path: str | Path,
        *,
        device: str = "auto",
        dtype: Any = "auto",
        batch_window_ms: float = 5.0,
        max_batch_size: int = 32,
        name: str | None = None,
        sampling_defaults: SamplingDefaults | None = None,
        prefix_cache_mb: int = 1024,
    ) -> None:
        from workbench.models.load import load_causal_lm

        model, tokenizer, source = load_causal_lm(model_path, device=device, dtype=dtype)
        defaults = sampling_defaults if sampling_defaults is not None else SamplingDefaults.read(source.directory)
        path = str(source.weights_path)
        self._init(model, tokenizer, name or source.name, path, batch_window_ms, max_batch_size, None, prefix_cache_mb)
        self.sampling_defaults = defaults
        self.eos_ids |= set(defaults.eos_token_ids)

    @classmethod
    def from_model(
        cls,
        model: Any,
        tokenizer: Any,
        *,
        batch_window_ms: float = 5.0,
        max_batch_size: int = 32,
        name: str = "in-memory",
        seed: int | None = None,
        prefix_cache_mb: int = 1024,
    ) -> TransformersPolicy:
        """Wrap a live model (e.g. the one being trained). Generation uses its current weights,
        in eval mode and without gradients; its train/eval mode is restored after each forward pass. Unseeded
        rows sample from `seed` (default: a draw from the global RNG)."""
        self = cls.__new__(cls)
        self._init(model, tokenizer, name, None, batch_window_ms, max_batch_size, seed, prefix_cache_mb)
        return self

    def _init(
        self,
        model: Any,
        tokenizer: Any,
        name: str,
        path: str | None,
        batch_window_ms: float,
        max_batch_size: int,
        seed: int | None = None,
        prefix_cache_mb: int = 1024,
    ) -> None:
        import torch

        super().__init__(batch_window_ms=batch_window_ms, max_batch_size=max_batch_size)
        self.model = model
        self.tokenizer = tokenizer
        self.codec = TokenizerCodec(tokenizer)
        self.name = f"transformers:{name}"
        self.model_path = path
        self.sampling_defaults = SamplingDefaults()  # a live model samples as asked
        eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
        eos = [eos] if isinstance(eos, int) else list(eos or [])
        if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in eos:
            eos.append(tokenizer.eos_token_id)
        self.eos_ids = set(eos)
        pad = tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else (eos[0] if eos else 0)
        self.max_positions = getattr(model.config, "max_position_embeddings", None)
        self.context_size = context_size_of(model.config, tokenizer)
        self.agent_settings = model_agent_settings(model)  # the agent settings it was trained with, if any
        self.vocab_size = model.get_input_embeddings().num_embeddings  # valid ids: 0 .. vocab_size - 1
        # the prefill needs the last position's logits only: (B, L, V) floats are GBs at a 49k vocabulary
        self.last_logits = {"logits_to_keep": 1} if _takes(model, "logits_to_keep") else {}
        # draw from the global RNG (never reseed it): torch.manual_seed(n) makes unseeded sampling reproducible
        seed = int(torch.randint(0, 1 << 62, (1,))) if seed is None else seed
        self._rng = torch.Generator(device="cpu").manual_seed(seed)
        self.prefix_cache = PrefixCache(prefix_cache_mb << 20) if prefix_cache_mb > 0 else None

    @property
    def device(self) -> torch.device:
        device: torch.device = next(self.model.parameters()).device
        return device

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "transformers",
            "name": self.name,
            "model_path": self.model_path,
            "model_type": getattr(self.model.config, "model_type", None),
            "device": str(self.device),
            "dtype": str(next(self.model.parameters()).dtype),
            "logprobs": "processed (after temperature/top-k/top-p; raw for greedy)",
            "raw_logprobs": "the model's own (log-softmax of its logits before any processing)",
        }

    def _check_row(self, row: Row) -> None:
        if not row.prompt:
            raise PolicyError("empty prompt: encode at least one token (policy.codec.chat(messages))")
        if self.context_size and len(row.prompt) >= self.context_size:
            raise PolicyError(
                f"prompt of {len(row.prompt)} tokens does not fit the model's context of "
                f"{self.context_size}: trim the history or use a model with more positions"
            )
        bad = next((t for t in row.prompt if not 0 <= t < self.vocab_size), None)
        if bad is not None:
            raise PolicyError(
                f"token id {bad} is outside this model's vocabulary (0..{self.vocab_size - 1}): "
                "encode prompts with this model's tokenizer (policy.codec.encode)"
            )
        if row.controls is not None:
            row.controls.check_vocab(self.vocab_size)

    def _generator(self, row: Row) -> torch.Generator:
        import torch

        dev = self.device
        g = torch.Generator(device=dev)
        seed = row.seed if row.seed is not None else int(torch.randint(0, 1 << 62, (1,), generator=self._rng))
        return g.manual_seed(seed)

    def _run_rows(self, rows: list[Row]) -> list[Completion]:
        feed = FixedFeed(rows)
        self._run_stream(feed)
        return feed.completions()

    def _run_stream(self, feed: RowFeed) -> None:
        import torch

        with torch.inference_mode():
            self._decode(feed)

    def forward(self, **inputs: Any) -> Any:
        """One forward pass of the model in eval mode. The model's own mode is back before any
        row's completion is handed back: a trainer that reads `model.training` once its episodes
        end (TRL files the step's metrics by it) never sees the policy's eval mode."""
        training = self.model.training
        if training:
            self.model.eval()
        try:
            return self.model(**inputs)
        finally:
            if training:
                self.model.train()

    def _decode(self, feed: RowFeed) -> None:
        """Decode until no row runs and `feed` has none left (see `hf_batch`)."""
        batch = RunningBatch(self, lambda m: feed.finish(m.key, self._completion(m)))
        while True:
            room = self.max_batch_size - len(batch)
            new = feed.take(room) if room > 0 and batch.can_admit() else []
            if new and self.prefix_cache is not None:
                self.prefix_cache.check(self.model)  # keys from other weights are no use
            if new:
                feed.admitted(len(new), len(batch) + len(new))
                batch.admit(new)
            if not len(batch):
                if new:
                    continue  # every new row ended at its first token: look for more
                return
            if self._cancelled():
                raise PolicyError("generation cancelled: the model server is stopping")
            batch.step()

    def member(self, key: int, row: Row) -> Member:
        """A row's place in the running batch: its sampler (controls, RNG) and stop rules."""
        sampler = RowSampler(self.sampling_defaults.choose(row.params), self._generator(row), row.controls, row.prompt)
        return Member(
            key, row, sampler, Generated(self._limit(row), StopWatcher(row.params.stop, self.codec.decode).hit)
        )

    def _limit(self, row: Row) -> int:
        """The most tokens `row` may generate: its max_new_tokens, within the model's context."""
        if self.context_size:
            return min(row.params.max_new_tokens, self.context_size - len(row.prompt))
        return row.params.max_new_tokens

    def left_padded(self, rows: Sequence[Row]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The prompts as one left-padded batch on the device: (input ids, attention mask, position ids)."""
        import torch

        width = max(len(r.prompt) for r in rows)
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, width - len(r.prompt) :] = torch.tensor(r.prompt)
            mask[i, width - len(r.prompt) :] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        return ids, mask, (mask.cumsum(-1) - 1).clamp(min=0)

    def _completion(self, m: Member) -> Completion:
        g = m.generated
        assert g.finish is not None  # handed back the step it finishes
        text = self.codec.decode(g.ids[:-1] if g.finish == "eos" else g.ids)
        done = Completion(text, g.ids, g.logprobs, g.finish, raw_logprobs=g.raw_logprobs)
        if not (m.row.controls and m.row.controls.top_logprobs):
            return done
        return DetailedCompletion(**vars(done), top_logprobs=g.tops)


def _takes(model: Any, argument: str) -> bool:
    """Whether `model`'s forward takes `argument` by name (a PEFT wrapper passes it to its base model)."""
    import inspect

    if argument in inspect.signature(model.forward).parameters:
        return True
    base = getattr(model, "get_base_model", None)
    return callable(base) and argument in inspect.signature(base().forward).parameters


__all__ = ["TransformersPolicy"]
