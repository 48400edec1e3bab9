"""workbench: a notebook-first workbench for agentic RL.

    import workbench as wb
    with wb.Kernel() as k:                       # one sandboxed Jupyter kernel
        print(k.execute("1 + 1").text)
    agent = wb.NBAgent(policy, config=wb.AgentConfig(max_steps=6), store=wb.Store("runs/demo"))
    trajectories = agent.run(tasks)

Names are imported lazily, so `import workbench` stays fast and pulls in no torch.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS = {
    "AgentConfig": "workbench.agent",
    "AsyncKernel": "workbench.kernel",
    "Kernel": "workbench.kernel",
    "KernelPool": "workbench.kernel",
    "NBAgent": "workbench.agent",
    "Observation": "workbench.kernel",
    "RewardSpec": "workbench.rewards",
    "ScriptedPolicy": "workbench.policies",
    "Step": "workbench.trajectory",
    "Store": "workbench.store",
    "Task": "workbench.trajectory",
    "ToolCall": "workbench.trajectory",
    "Trajectory": "workbench.trajectory",
    "TransformersPolicy": "workbench.policies",
    "OpenAIPolicy": "workbench.policies",
    "load_policy": "workbench.policies",
    "rescore": "workbench.rewards",
    "tool": "workbench.tools",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'workbench' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
