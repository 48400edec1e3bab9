"""One real GRPO step on a harness's rollouts: `HarnessEpisodes` as the trainer's episode runner, the
harness an `openai` client loop, the policy the trainer's live tiny model behind the gateway."""

from __future__ import annotations

import pytest
from gateway_helpers import one_grpo_step

from workbench.gateway import HarnessEpisodes
from workbench.trajectory import Task


async def agent(r) -> str:
    messages = [{"role": "user", "content": r.task.question}]
    first = await r.client.chat.completions.create(model="tiny", messages=messages, max_tokens=12)
    messages += [first.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": "Again."}]
    second = await r.client.chat.completions.create(model="tiny", messages=messages, max_tokens=12)
    return second.choices[0].message.content


@pytest.mark.slow
@pytest.mark.parametrize(
    "changes",
    [{}, {"estimator": "reinforce_pp"}, {"lora_r": 4, "lora_alpha": 8}],
    ids=["grpo", "reinforce_pp", "lora"],
)
def test_a_training_step_on_a_harness_s_rollouts(tmp_path, changes):
    """Any estimator and LoRA apply to a harness's rollouts as to any episode runner's."""
    one_grpo_step(tmp_path, HarnessEpisodes(agent), [Task(f"t{i}", f"Question {i}?") for i in range(4)], **changes)
