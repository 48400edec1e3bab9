"""What one episode runs against: the `EpisodeSandbox` protocol (a kernel plus the tools its stubs reach;
not an RL environment, see docs/glossary.md), and its local implementation.

`run_episode` needs four things from the sandbox and its tools, and gets them in one call per turn:

    result = await env.step(code, timeout)   # StepResult(observation, host_calls, notepad, final_answer)

- `observation`: the kernel's `Observation` of `code` (None when the turn wrote no code),
- `host_calls`: the host calls the tool gateway recorded during this step (taken: the next step starts empty),
- `notepad`: a snapshot of the in-kernel notepad after the step,
- `final_answer`: the answer a final tool (`submit_final_answer`, ...) received, once one has.

and, before the first turn, the text the system prompt shows (`env.prompt`: the tools' signatures and
docs, their names, the notepad API). Everything crossing this boundary is plain picklable data, so
the kernel may be local (`LocalEpisodeSandbox`) or on another machine behind the same protocol.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from workbench.kernel.observation import Observation
from workbench.trajectory import HostCall

if TYPE_CHECKING:
    from workbench.tools import ToolGateway


@dataclass(frozen=True)
class ToolPrompt:
    """What the system prompt says about the environment (plain text)."""

    tools_text: str  # tool signatures and docs, rendered for the full prompt
    tool_names: tuple[str, ...]  # for the compact prompt
    notepad_api: str


@dataclass
class StepResult:
    """Everything one step of the sandbox returns to the episode loop."""

    observation: Observation | None  # None: no code ran this turn
    host_calls: list[HostCall] = field(default_factory=list)
    notepad: dict[str, Any] = field(default_factory=dict)
    final_answer: str | None = None


@runtime_checkable
class EpisodeSandbox(Protocol):
    """The sandbox one episode runs in (one kernel, its rollout's tools)."""

    @property
    def prompt(self) -> ToolPrompt:
        """The tools' and notepad's text for the system prompt."""
        ...

    async def step(self, code: str | None, timeout: float) -> StepResult:
        """Execute `code` (None: nothing to run) within `timeout` s and report the step.

        Never raises for the code's own failure (an exception, a timeout, a dead kernel: all are in
        the observation); raises only when the environment itself is gone."""
        ...


@runtime_checkable
class CodeKernel(Protocol):
    """What a `LocalEpisodeSandbox` needs of its kernel (`workbench.kernel.AsyncKernel` is one)."""

    async def execute(self, code: str, timeout: float | None = None) -> Observation:
        """Run `code`; its failure (an exception, a timeout, a dead kernel) is in the `Observation`."""
        ...


class LocalEpisodeSandbox:
    """An `EpisodeSandbox` over a started kernel in this process and its rollout's `ToolGateway`."""

    def __init__(self, kernel: CodeKernel, gateway: ToolGateway, tools_text: str, notepad_api: str) -> None:
        self.kernel = kernel
        self.gateway = gateway
        self.tools_text = tools_text
        self.notepad_api = notepad_api

    @property
    def prompt(self) -> ToolPrompt:
        return ToolPrompt(self.tools_text, tuple(self.gateway.registry.names), self.notepad_api)

    async def step(self, code: str | None, timeout: float) -> StepResult:
        obs = None if code is None else await self.kernel.execute(code, timeout=timeout)
        return StepResult(obs, self.gateway.take_calls(), dict(self.gateway.notepad or {}), self.gateway.final_answer)


__all__ = ["CodeKernel", "EpisodeSandbox", "LocalEpisodeSandbox", "StepResult", "ToolPrompt"]
