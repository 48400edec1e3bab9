"""The tokenizer a run's token ids are decoded with, found on disk and never downloaded.

    found = find_tokenizer(store, traj)           # a LocalTokenizer, or None: show ids
    found.decode([17, 42]), found.source          # text, and the directory it came from

Where it looks, in order: the policy's `model_path` and the trajectory's `checkpoint` (its
lineage; as written, then against the run directory and its parent), then model directories in
the run (up to three levels down: an evolve run's `iter_0/solver/final`) and beside it (the
demo's `runs/demo/final_model`). A directory counts when it holds `tokenizer.json`, read with the
`tokenizers` library (no network, no transformers import); a tokenizer too small for the ids it is
asked to decode is not used (a view with ids beats one with wrong words).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from workbench.trajectory import Trajectory

if TYPE_CHECKING:
    from workbench.store import Store

_FILE = "tokenizer.json"  # what every fast (Rust) Hugging Face tokenizer saves
_DEPTHS = ("", "*/", "*/*/", "*/*/*/")


class Decoder(Protocol):
    """What decoding needs of a tokenizer (a Hugging Face tokenizer has it)."""

    def decode(self, token_ids: list[int]) -> str: ...

    def __len__(self) -> int: ...


@dataclass(frozen=True)
class LocalTokenizer:
    """A `tokenizer.json` loaded with the `tokenizers` library (fast to import: opening a viewer
    never waits for transformers), from the model directory `source`."""

    tokenizer: Any  # tokenizers.Tokenizer
    source: str

    def decode(self, token_ids: list[int]) -> str:
        text: str = self.tokenizer.decode(token_ids, skip_special_tokens=False)
        return text

    def __len__(self) -> int:
        size: int = self.tokenizer.get_vocab_size(with_added_tokens=True)
        return size

    def covers(self, ids: list[int]) -> bool:
        """Every id is in its vocabulary."""
        return all(0 <= i < len(self) for i in ids)


def _lineage_paths(traj: Trajectory) -> list[str]:
    lineage = traj.lineage or {}
    policy = lineage.get("policy")
    paths = [policy.get("model_path")] if isinstance(policy, dict) else []
    paths.append(lineage.get("checkpoint"))
    return [str(p) for p in paths if isinstance(p, str) and p]


def candidate_dirs(store: Store, traj: Trajectory) -> list[Path]:
    """Directories that may hold the run's tokenizer, most specific first."""
    return _candidates(str(store.run_dir), tuple(_lineage_paths(traj)))


@functools.lru_cache(maxsize=64)
def _candidates(run_dir: str, lineage_paths: tuple[str, ...]) -> list[Path]:
    run = Path(run_dir)
    found = [base / p for p in lineage_paths for base in (Path(), run, run.parent)]
    for root, depths in ((run, _DEPTHS), (run.parent, ("*/",))):
        for depth in depths:
            found += sorted(p.parent for p in root.glob(depth + _FILE))
    return list(dict.fromkeys(p for p in found if (p / _FILE).is_file()))


@functools.lru_cache(maxsize=8)
def _load(directory: str) -> LocalTokenizer | None:
    try:
        from tokenizers import Tokenizer

        return LocalTokenizer(Tokenizer.from_file(str(Path(directory) / _FILE)), directory)
    except Exception:  # not a loadable tokenizer after all: try the next directory
        return None


def find_tokenizer(store: Store, traj: Trajectory) -> LocalTokenizer | None:
    """The first loadable local tokenizer that covers `traj`'s token ids (module docstring)."""
    ids = [i for s in traj.steps for i in (*s.completion_ids, *s.observation_ids)]
    if not ids:
        return None
    for directory in candidate_dirs(store, traj):
        found = _load(str(directory.resolve()))
        if found is not None and found.covers(ids):
            return found
    return None
