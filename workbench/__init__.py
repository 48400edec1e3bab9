"""workbench: a notebook-first workbench for agentic RL.

    import workbench as wb
    with wb.Kernel() as k:                       # one sandboxed Jupyter kernel
        print(k.execute("1 + 1").text)
    agent = wb.NBAgent(policy, config=wb.AgentConfig(max_steps=6), store=wb.Store("runs/demo"))
    trajectories = agent.run(tasks)

Names are imported lazily, so `import workbench` stays fast and pulls in no torch. Everything else is
public in its own package (`workbench.search`, `workbench.rewards`, ...).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench._lazy import lazy_exports

__version__ = "0.1.0"

if TYPE_CHECKING:
    from workbench.agent import AgentConfig, NBAgent
    from workbench.kernel import Kernel
    from workbench.rewards import RewardSpec
    from workbench.store import Store
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "workbench.agent": ["AgentConfig", "NBAgent"],
            "workbench.kernel": ["Kernel"],
            "workbench.rewards": ["RewardSpec"],
            "workbench.store": ["Store"],
        },
    )

__all__ = ["AgentConfig", "Kernel", "NBAgent", "RewardSpec", "Store"]
