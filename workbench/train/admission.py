"""Staleness by admission (AReaL, SkyRL, verl): when an asynchronous producer may start a group.

The producer runs episode groups (all rollouts of one prompt, started on one policy version) while
the trainer trains. With B groups per optimizer step, k the largest staleness allowed and v the
trainer's version (optimizer steps done), a new group may start only while

    started + 1 ≤ (k + v + 1)·B           (started: every group ever admitted, running or done)

and the trainer consumes groups in the order they were admitted (FIFO): step v takes admission
tickets vB … (v+1)B − 1, waiting for any still running. Together these bound staleness without
dropping anything: ticket i was admitted at some version v_s with i < (k + v_s + 1)·B, and is
consumed at version ⌊i / B⌋ ≤ k + v_s, so `consumed version − admitted version ≤ k`. With k = 0
the producer starts a step's groups only once the previous step is done: the synchronous trainer.

    gate = Admission(max_staleness=2, groups_per_step=4)
    while gate.may_start(trainer.version):
        ticket = gate.admit(trainer.version)       # Ticket(index, version)
        launch(ticket)
    gate.step_tickets(v)                            # range of the ticket indices step v trains on
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.errors import ConfigError


@dataclass(frozen=True)
class Ticket:
    """One admitted group: its FIFO position and the policy version it starts on."""

    index: int
    version: int

    def staleness(self, consumed_at: int) -> int:
        """Optimizer steps between the group's start and the step that trains on it."""
        return consumed_at - self.version


class Admission:
    """The admission rule above; holds only the count of groups admitted so far."""

    def __init__(self, max_staleness: int, groups_per_step: int) -> None:
        if max_staleness < 0:
            raise ConfigError(f"max_staleness must be >= 0 (0: synchronous), got {max_staleness}")
        if groups_per_step < 1:
            raise ConfigError(f"groups per optimizer step must be >= 1, got {groups_per_step}")
        self.max_staleness = max_staleness
        self.groups_per_step = groups_per_step
        self.started = 0

    def capacity(self, version: int) -> int:
        """How many more groups may start while the trainer is at `version`."""
        return max(0, (self.max_staleness + version + 1) * self.groups_per_step - self.started)

    def may_start(self, version: int) -> bool:
        return self.capacity(version) > 0

    def admit(self, version: int) -> Ticket:
        """Admit one group at `version`; a RuntimeError if the rule forbids it (call `may_start`)."""
        if not self.may_start(version):
            raise RuntimeError(
                f"admission refused at version {version}: {self.started} groups started, bound "
                f"{(self.max_staleness + version + 1) * self.groups_per_step}"
            )
        ticket = Ticket(self.started, version)
        self.started += 1
        return ticket

    def step_tickets(self, version: int) -> range:
        """The ticket indices the optimizer step at `version` trains on (FIFO)."""
        return range(version * self.groups_per_step, (version + 1) * self.groups_per_step)

    def state(self) -> dict[str, int]:
        """What a checkpoint keeps (with the trainer's version) to resume admission where it was."""
        return {"started": self.started, "max_staleness": self.max_staleness, "groups_per_step": self.groups_per_step}


__all__ = ["Admission", "Ticket"]
