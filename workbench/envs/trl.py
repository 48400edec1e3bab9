"""NB-Agent as a TRL `environment_factory` (TRL 1.16 `GRPOTrainer`): one sandboxed kernel per generation.

    ToolEnv = tool_environment(EpisodeHost(tools=registry, reward="em", max_sessions=8))
    trainer = GRPOTrainer(model, reward_funcs=[environment_reward], train_dataset=ds, environment_factory=ToolEnv, ...)
    trainer.train()
    ToolEnv.close_all()                 # every instance's kernel, then the host's pool

TRL makes instances with no arguments and reuses them across batches; before each generation it calls
`reset(**row)` (the dataset row: `question` or the prompt's last user message, `answer`), which starts the
episode in a fresh kernel of the host's pool. Every public method is a tool whose JSON schema TRL reads from
its type hints and its docstring's `Args:` section: `run_code(code)`, one method per host tool of the
host's registry, and `submit_final_answer(answer)`. Each tool call runs one cell in the kernel (a host tool
through the kernel's stub and the gateway, exactly as in workbench's own loop), so the episode is recorded
as a `Trajectory` and scored by the host's reward; an exception goes back to the model as the tool's reply.
`environment_reward` is the reward function reading it: `reward_funcs=[environment_reward]`.
"""

from __future__ import annotations

import inspect
import typing
import weakref
from collections.abc import Callable
from typing import Any, ClassVar

from workbench.envs.session import EpisodeHost, EpisodeSession
from workbench.errors import ConfigError
from workbench.kernel.sync import run_sync
from workbench.tools import Tool
from workbench.trajectory import Task


class NBAgentToolEnv:
    """One rollout slot of TRL's environment pool; see the module docstring. Subclasses made by
    `tool_environment` carry their host and one method per host tool."""

    host: ClassVar[EpisodeHost | None] = None
    _instances: ClassVar[weakref.WeakSet[NBAgentToolEnv]]

    def __init__(self) -> None:
        if type(self).host is None:
            raise ConfigError("use tool_environment(EpisodeHost(...)) as environment_factory, not NBAgentToolEnv")
        self.session: EpisodeSession | None = None
        live, room = len(type(self)._instances) + 1, type(self).host.max_sessions  # type: ignore[union-attr]
        if live > room:  # TRL keeps one instance per rollout of a batch; each needs its own kernel at once
            raise ConfigError(
                f"the trainer wants {live} environments at once but the host has {room} kernels: "
                f"give EpisodeHost(max_sessions=...) at least the generations per batch"
            )
        type(self)._instances.add(self)

    def reset(self, **row: Any) -> str | None:
        """Start a new episode for this dataset row in a fresh sandboxed kernel (the last one goes back)."""
        self._release()
        assert self.host is not None  # checked in __init__
        session = EpisodeSession(self.host, _task_from_row(row))
        try:
            run_sync(session.open())
        except BaseException:
            run_sync(session.aclose())
            raise
        self.session = session
        return None

    def run_code(self, code: str) -> str:
        """Run Python code in your own sandboxed Jupyter kernel and return its output; variables persist.

        Args:
            code: Python source to run in the kernel (the question is in the variable `task`).
        """
        return self._cell(code)

    def submit_final_answer(self, answer: str) -> str:
        """Submit your final answer; this ends the episode.

        Args:
            answer: The final answer, as short as possible.
        """
        return self._cell(f"submit_final_answer({answer!r})")

    @property
    def rewards(self) -> dict[str, float]:
        """The host reward's components of the episode so far (scored now if it has not ended)."""
        session = self.session
        if session is None:
            return {}
        return dict(session.rewards) if session.done else session.score()

    @classmethod
    def close_all(cls) -> None:
        """Give back every instance's kernel and close the host's pool (after training)."""
        for instance in list(cls._instances):
            instance._release()
        if cls.host is not None:
            cls.host.close()

    def _cell(self, code: str) -> str:
        if self.session is None:
            raise ConfigError("no episode: TRL calls reset(**row) before the first tool call")
        step = run_sync(self.session.step(code=code))
        return step.observation_text

    def _release(self) -> None:
        session, self.session = self.session, None
        if session is not None:
            run_sync(session.aclose())


def tool_environment(host: EpisodeHost) -> type[NBAgentToolEnv]:
    """An `NBAgentToolEnv` subclass bound to `host`, with one tool method per host tool (pass the class as
    `environment_factory`)."""
    methods: dict[str, Any] = {"host": host, "_instances": weakref.WeakSet()}
    for tool in host.registry_for(Task(id="probe", question="")):
        if not tool.final:
            methods[tool.name] = _tool_method(tool)
    return type("NBAgentToolEnv", (NBAgentToolEnv,), methods)


def _tool_method(tool: Tool) -> Callable[..., str]:
    """A method calling `tool` from the kernel (so the gateway records it), typed and documented for TRL."""

    def call(self: NBAgentToolEnv, *args: Any, **kwargs: Any) -> str:
        arguments = tool.bind(list(args), kwargs)
        return self._cell(f"{tool.name}(**{arguments!r})")

    hints = typing.get_type_hints(tool.fn)
    params = [p.replace(annotation=hints.get(p.name, str)) for p in tool.signature.parameters.values()]
    self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    call.__signature__ = inspect.Signature([self_param, *params], return_annotation=str)  # type: ignore[attr-defined]
    call.__annotations__ = {**{p.name: p.annotation for p in params}, "return": str}
    call.__name__ = call.__qualname__ = tool.name
    call.__doc__ = _doc_with_args(tool.doc, [p.name for p in params])
    return call


def _doc_with_args(doc: str, names: list[str]) -> str:
    """The tool's doc with an `Args:` section naming every parameter (added where the doc has none)."""
    if "Args:" in doc or not names:
        return doc
    lines = "\n".join(f"    {name}: the {name.replace('_', ' ')}." for name in names)
    return f"{doc.strip() or 'A host tool.'}\n\nArgs:\n{lines}\n"


def _task_from_row(row: dict[str, Any]) -> Task:
    question = row.get("question")
    if question is None:
        prompt = row.get("prompt")
        users = [m.get("content") for m in prompt if m.get("role") == "user"] if isinstance(prompt, list) else []
        question = users[-1] if users else prompt if isinstance(prompt, str) else None
    if not isinstance(question, str):
        raise ConfigError("each dataset row needs a `question` column or a conversational `prompt` with a user turn")
    answers = row.get("golden_answers", row.get("answer", row.get("solution", [])))
    fields: dict[str, Any] = {"question": question, "golden_answers": answers}
    if row.get("id") is not None:
        fields["id"] = row["id"]
    return Task.from_dict(fields)


def environment_reward(environments: list[NBAgentToolEnv], **_: Any) -> list[float]:
    """TRL reward function: each rollout's total under its host's reward (0.0 without one)."""
    return [env.rewards.get("total", 0.0) for env in environments]


__all__ = ["NBAgentToolEnv", "environment_reward", "tool_environment"]
