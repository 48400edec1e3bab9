"""The tokens tab: ids decoded with the run's own tokenizer (found on disk, never downloaded), and
logprobs that never pass for certainty when they are missing, degenerate or a scripted policy's."""

from __future__ import annotations

import pytest

from workbench.models.tiny import build_tokenizer
from workbench.store import Store
from workbench.trajectory import Step, Task, Trajectory
from workbench.widgets import TrajectoryViewer

HF_POLICY = {"backend": "transformers", "name": "transformers:demo", "model_path": None, "logprobs": "processed (test)"}
TEXT = "<think>capital?</think><code>print(search('capital'))</code>"


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    """A run directory `demo/eval` with the demo's model directory beside it (`demo/final_model`)."""
    root = tmp_path_factory.mktemp("demo")
    tok = build_tokenizer([TEXT, "Doc 1: the capital is Molvad."] * 20, vocab_size=300)
    tok.save_pretrained(root / "final_model")
    return root, tok


def rollout(tok, policy, logprobs, traj_id: str) -> Trajectory:
    ids = tok.encode(TEXT)
    step = Step(0, TEXT, completion_ids=ids, logprobs=logprobs(len(ids)), observation_ids=tok.encode("Doc 1"))
    return Trajectory(
        task=Task("t", "q"), id=traj_id, steps=[step], lineage={"policy": policy}, termination="submitted"
    )


def test_ids_are_decoded_with_the_runs_tokenizer_and_zeros_are_flagged(tokenizer_dir):
    root, tok = tokenizer_dir
    with Store(root / "eval") as store:
        store.write(rollout(tok, HF_POLICY, lambda n: [0.0] * (n - 1) + [-0.5], "a" * 32))
    tokens = TrajectoryViewer(root / "eval").detail["steps"][0]["tokens"]
    assert "".join(tokens["pieces"]) == TEXT + "Doc 1" and tokens["decoded_with"].endswith("final_model")
    n = len(tok.encode(TEXT))
    assert tokens["logprob_kind"] == "processed (test)" and tokens["logprobs"][n - 1] == -0.5
    assert tokens["logprobs"][n:] == [None] * (len(tokens["ids"]) - n)  # observation tokens have none
    assert "exactly 0.0" in tokens["logprob_note"] and "cannot tell" in tokens["logprob_note"]
    assert TrajectoryViewer(root / "eval", decode=False).detail["steps"][0]["tokens"]["pieces"] is None


def test_a_scripted_policys_tokens_have_no_logprobs(tokenizer_dir):
    root, tok = tokenizer_dir
    scripted = {"backend": "scripted", "name": "world-proposer", "fn": "f"}
    with Store(root / "scripted") as store:
        store.write(rollout(tok, scripted, lambda n: [0.0] * n, "b" * 32))
    tokens = TrajectoryViewer(root / "scripted").detail["steps"][0]["tokens"]
    assert tokens["logprob_kind"] == "scripted" and set(tokens["logprobs"]) == {None}
    assert "no model sampled" in tokens["logprob_note"]


def test_missing_logprobs_and_a_tokenizer_too_small_for_the_ids(tokenizer_dir):
    root, tok = tokenizer_dir
    with Store(root / "missing") as store:
        traj = rollout(tok, HF_POLICY, lambda n: None, "c" * 32)
        traj.steps[0].completion_ids.append(len(tok) + 5)  # an id this tokenizer does not have
        store.write(traj)
    tokens = TrajectoryViewer(root / "missing").detail["steps"][0]["tokens"]
    assert set(tokens["logprobs"]) == {None} and tokens["logprob_note"] == "no logprobs stored for this turn"
    assert tokens["pieces"] is None and tokens["decoded_with"] is None  # ids, not wrong words


def test_raw_logprobs_are_shown_when_stored_and_processed_ones_beside_them(tokenizer_dir):
    root, tok = tokenizer_dir
    with Store(root / "raw") as store:
        traj = rollout(tok, HF_POLICY, lambda n: [0.0] * n, "d" * 32)  # a filter left one candidate each time
        n = len(traj.steps[0].completion_ids)
        traj.steps[0].raw_logprobs = [-0.25] * (n - 1) + [0.0]
        store.write(traj)
        store.write(rollout(tok, HF_POLICY, lambda n: [-0.5] * n, "e" * 32))  # an older turn: processed only
    viewer = TrajectoryViewer(root / "raw")
    viewer.select("d" * 32)
    tokens = viewer.detail["steps"][0]["tokens"]
    assert tokens["showing"] == "raw" and tokens["logprob_kind"].startswith("raw (the model's own")
    assert tokens["logprobs"][:n] == [-0.25] * (n - 1) + [0.0] and tokens["logprobs"][n:] == [None] * (
        len(tokens["ids"]) - n
    )
    assert tokens["processed"][:n] == [0.0] * n  # on hover beside the raw ones
    assert "the model itself was certain" in tokens["logprob_note"] and "cannot tell" not in tokens["logprob_note"]
    viewer.select("e" * 32)
    older = viewer.detail["steps"][0]["tokens"]
    assert (
        older["showing"] == "processed" and older["logprob_kind"] == "processed (test)" and older["processed"] is None
    )
