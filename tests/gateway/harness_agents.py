"""Harnesses that tests name from a shell: `harness_agents:agent` (MODULE:FUNCTION) and, once a `--plugin
harness_agents` ran `register()`, the name `cli_agent`. Each rollout makes two calls asking for sampling
(`ASKED`) that training overrides, and notes its task and rank in `$HARNESS_LOG/rank<RANK>.jsonl` when set."""

from __future__ import annotations

import json
import os
from pathlib import Path

ASKED = {"temperature": 1.5, "top_p": 0.5, "max_tokens": 50}
not_an_agent = 3  # an attribute that is not callable: `--harness harness_agents:not_an_agent` is refused


async def agent(r) -> str:
    note(r.task.id)
    messages = [{"role": "user", "content": r.task.question}]
    first = await r.client.chat.completions.create(model="any", messages=messages, **ASKED)
    messages += [first.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": "Again."}]
    second = await r.client.chat.completions.create(model="any", messages=messages, **ASKED)
    return second.choices[0].message.content or ""


def note(task_id: str) -> None:
    where = os.environ.get("HARNESS_LOG")
    if where:
        rank = os.environ.get("RANK", "0")
        with (Path(where) / f"rank{rank}.jsonl").open("a") as f:
            f.write(json.dumps({"task": task_id}) + "\n")


def register() -> None:
    """`--plugin harness_agents`: registers `agent` as `cli_agent`."""
    from workbench.gateway import register_harness

    register_harness("cli_agent", agent)
