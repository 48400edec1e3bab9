"""Rewards of rollouts: the gateway's spec scores a finished rollout's answer (stored with provenance,
reproduced by `rescore`), the harness posts its own, turn-format components refuse, errors are never scored."""

from __future__ import annotations

import httpx
import pytest
from gateway_helpers import echo_policy

from workbench.errors import ConfigError
from workbench.gateway import ModelGateway
from workbench.gateway.scoring import TURN_FORMAT_COMPONENTS


def test_the_spec_scores_the_answer_when_the_rollout_finishes(chatml_codec, tmp_path):
    from workbench.rewards import RewardSpec, rescore
    from workbench.store import Store

    with Store(tmp_path / "run") as store, ModelGateway(echo_policy(chatml_codec), store=store, reward="em") as gw:
        with gw.rollout({"question": "2+2?", "golden_answers": ["4"]}) as r:
            r.sync_client.chat.completions.create(model="m", messages=[{"role": "user", "content": "2+2?"}])
            r.finish("4")
        with gw.rollout({"question": "3+3?", "golden_answers": ["6"]}) as wrong:
            wrong.finish("5")
        assert store.get(r.id).rewards["total"] == 1.0 and store.get(wrong.id).rewards["total"] == 0.0
        [entry] = store.reward_records(r.id)
        assert entry["spec_name"] == "em"
        rescored = rescore(store, RewardSpec(name="em", components=[{"name": "em"}]))
        assert rescored is not None and store.get(r.id).rewards["total"] == 1.0


def test_a_harness_posts_its_own_reward_with_provenance(gateway):
    with gateway.rollout("q") as r:
        r.reward(0.5, source="unit-tests", passed=1.0)
    assert gateway.test_store.get(r.id).rewards == {"passed": 1.0, "total": 0.5}
    with gateway.rollout("q") as other:
        url = f"{gateway.url}/rollouts/{other.id}/reward"
        bad = httpx.post(url, json={"value": "high"}, headers={"authorization": f"Bearer {other.api_key}"})
        assert bad.status_code == 400 and '{"value": NUMBER}' in bad.json()["error"]["message"]
        ok = httpx.post(
            url, json={"value": 1, "reason": "tests passed"}, headers={"authorization": f"Bearer {other.api_key}"}
        )
        assert ok.json()["rewards"] == {"total": 1.0}
    [entry] = gateway.test_store.reward_records(other.id)
    assert entry["provenance"]["source"] == "harness" and entry["reason"] == "tests passed"


@pytest.mark.parametrize("name", sorted(TURN_FORMAT_COMPONENTS))
def test_components_that_read_the_turn_format_refuse_naming_themselves(chatml_codec, name):
    from workbench.rewards import list_rewards

    assert name in list_rewards()  # the list follows the registry's names
    with pytest.raises(ConfigError, match=rf"reward component '{name}' reads NB-Agent's turn format"):
        ModelGateway(echo_policy(chatml_codec), reward=f'{{"name": "x", "components": [{{"name": "{name}"}}]}}')


def test_an_error_rollout_is_kept_and_never_scored(chatml_codec):
    with ModelGateway(echo_policy(chatml_codec), reward="em") as gw:
        with pytest.raises(ValueError), gw.rollout({"question": "q", "golden_answers": ["4"]}) as r:
            raise ValueError("harness bug")
        assert r.trajectory.termination == "error" and r.trajectory.rewards == {}
        with pytest.raises(ConfigError, match="never scored"):
            r.reward(1.0)
