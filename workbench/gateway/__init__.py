"""The model gateway: an OpenAI-compatible server on loopback between an agent harness and a
workbench policy, recording every call token-faithfully (prompt ids, sampled ids, logprobs, the
policy version) as steps of its rollout's trajectory.

    from workbench.gateway import ModelGateway
    with ModelGateway(policy, store="runs/mine") as gw:
        with gw.rollout("What is 2+2?") as r:
            r.sync_client.chat.completions.create(model="any", messages=[{"role": "user", "content": "2+2?"}])

Your own agent by name: `@harness("my_agent")` / `register_harness(name, agent)`, then `resolve_harness(spec)`
("MODULE:FUNCTION" or a name) for `TrainConfig.harness` and `--harness` (`workbench.gateway.harnesses`).

`docs`: the token-faithful multi-turn rule is in `workbench.gateway.history` and `.state`; tools in
`.render` (the text protocol) and `.replies`; streaming in `.stream`.
"""

from workbench.gateway.config import AUXILIARY_HEADER, GatewayConfig, HistoryMode, TrainingSampling
from workbench.gateway.episodes import HarnessAgent, HarnessEpisodes
from workbench.gateway.gateway import ModelGateway, Rollout
from workbench.gateway.harnesses import harness, harness_names, register_harness, resolve_harness
from workbench.gateway.history import FORK_REASONS, ForkReason
from workbench.gateway.render import ChatRenderer, ToolProtocol
from workbench.gateway.replies import ChatReply, ChatToolCall, parse_reply
from workbench.gateway.state import CallRecord

__all__ = [
    "AUXILIARY_HEADER",
    "FORK_REASONS",
    "CallRecord",
    "ChatRenderer",
    "ChatReply",
    "ChatToolCall",
    "ForkReason",
    "GatewayConfig",
    "HarnessAgent",
    "HarnessEpisodes",
    "HistoryMode",
    "ModelGateway",
    "Rollout",
    "ToolProtocol",
    "TrainingSampling",
    "harness",
    "harness_names",
    "parse_reply",
    "register_harness",
    "resolve_harness",
]
