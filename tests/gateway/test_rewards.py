"""Rewards of rollouts: the gateway's spec scores a finished rollout's answer (stored with provenance,
reproduced by `rescore`), the harness posts its own, turn-format components refuse, errors are never scored."""

from __future__ import annotations

import httpx
import pytest
from gateway_helpers import echo_policy

from workbench.errors import ConfigError
from workbench.gateway import ModelGateway
from workbench.gateway.scoring import reads_turn_format


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


TURN_FORMAT = ["l0.format", "l0.code", "asearcher.format", "asearcher.reward", "agent0.format", "agent0.tool"]


@pytest.mark.parametrize("name", [*TURN_FORMAT, "drzero.format"])
def test_components_that_read_the_turn_format_refuse_naming_themselves(chatml_codec, name):
    assert reads_turn_format(name)
    with pytest.raises(ConfigError, match=rf"reward component '{name}' reads NB-Agent's turn format"):
        ModelGateway(echo_policy(chatml_codec), reward=f'{{"name": "x", "components": [{{"name": "{name}"}}]}}')


def test_your_own_component_says_whether_it_reads_the_turn_format(chatml_codec):
    from workbench.rewards import reward

    @reward("test_gateway.tags", reads_turn_format=True)
    def tags(traj, ctx) -> float:
        return float(all("<code>" in (s.raw or "") for s in traj.steps))

    @reward("test_gateway.short_answer")
    def short_answer(traj, ctx) -> float:
        return float(len(traj.final_answer or "") < 10)

    with pytest.raises(ConfigError, match=r"'test_gateway\.tags' reads NB-Agent's turn format"):
        ModelGateway(echo_policy(chatml_codec), reward='{"name": "x", "components": [{"name": "test_gateway.tags"}]}')
    spec = '{"name": "y", "components": [{"name": "test_gateway.short_answer"}, {"name": "em"}]}'
    with ModelGateway(echo_policy(chatml_codec), reward=spec) as gw:
        with gw.rollout({"question": "q", "golden_answers": ["4"]}) as r:
            r.finish("4")
        assert gw.trajectory(r.id).rewards["total"] > 0


def test_an_error_rollout_is_kept_and_never_scored(chatml_codec):
    with ModelGateway(echo_policy(chatml_codec), reward="em") as gw:
        with pytest.raises(ValueError), gw.rollout({"question": "q", "golden_answers": ["4"]}) as r:
            raise ValueError("harness bug")
        assert r.trajectory.termination == "error" and r.trajectory.rewards == {}
        with pytest.raises(ConfigError, match="never scored"):
            r.reward(1.0)
