"""HRPO's batch sampler: every batch is made of whole hop groups, so no question is alone in its hop.

    sampler = HopGroupSampler(hops=[1, 1, 2, 2, 1, 3, 3, 1], group_size=2, batch_size=4, seed=0)
    list(sampler)   # e.g. [0, 4, 5, 6,  2, 3, 1, 7]: groups of 2 same-hop questions, 2 groups per batch

Dr. Zero trains the proposer on 256 prompts per step (one rollout each) and normalises each reward
within its hop group (eq. 3). At a small batch a random draw leaves many questions alone in their hop
group, where verl's rule (mean 0, std 1) gives the raw reward as advantage. This sampler instead fills
each batch with groups of `group_size` distinct questions sharing a hop count; a hop's share of the
groups is its share of the tasks (so the 4:3:2:1 hop ratio of the data is kept). Each batch is yielded
`repeat_count` times in a row, as TRL's `RepeatSampler` does.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Hashable, Iterator, Sequence

from workbench.errors import ConfigError


class HopGroupSampler:
    """Indices of a dataset, batch by batch, each batch whole groups of same-hop questions."""

    def __init__(
        self, hops: Sequence[Hashable], group_size: int, batch_size: int, repeat_count: int = 1, seed: int = 0
    ) -> None:
        if group_size < 1 or batch_size % group_size:
            raise ConfigError(
                f"hrpo: the batch of {batch_size} does not split into hop groups of {group_size}; "
                "make per_device_train_batch_size a multiple of num_generations"
            )
        counts = Counter(hops)
        small = {h: n for h, n in counts.items() if n < group_size}
        if small:
            listed = ", ".join(f"hop {h}: {n}" for h, n in sorted(small.items(), key=str))
            raise ConfigError(
                f"hrpo draws groups of num_generations={group_size} distinct same-hop questions, but "
                f"some hop counts have fewer tasks ({listed}); add tasks or lower num_generations"
            )
        self.hops = list(hops)
        self.group_size, self.batch_size, self.repeat_count = group_size, batch_size, repeat_count
        self.seed = seed
        self._epoch = 0
        if self._batches_per_epoch() == 0:
            raise ConfigError(
                f"hrpo: {len(self.hops)} tasks make fewer than {batch_size // group_size} hop groups "
                f"of {group_size}; add tasks or lower per_device_train_batch_size"
            )

    def _groups(self, rng: random.Random) -> list[list[int]]:
        by_hop: dict[Hashable, list[int]] = {}
        for i, h in enumerate(self.hops):
            by_hop.setdefault(h, []).append(i)
        groups = []
        for idx in by_hop.values():
            rng.shuffle(idx)
            groups += [idx[i : i + self.group_size] for i in range(0, len(idx) - self.group_size + 1, self.group_size)]
        rng.shuffle(groups)
        return groups

    def _batches_per_epoch(self) -> int:
        per_batch = self.batch_size // self.group_size
        n_groups = sum(n // self.group_size for n in Counter(self.hops).values())
        return n_groups // per_batch

    def __iter__(self) -> Iterator[int]:
        rng = random.Random(f"{self.seed}:{self._epoch}")
        self._epoch += 1
        groups = self._groups(rng)
        per_batch = self.batch_size // self.group_size
        for b in range(len(groups) // per_batch):
            chunk = [i for g in groups[b * per_batch : (b + 1) * per_batch] for i in g]
            for _ in range(self.repeat_count):
                yield from chunk

    def __len__(self) -> int:
        return self._batches_per_epoch() * self.batch_size * self.repeat_count


__all__ = ["HopGroupSampler"]
