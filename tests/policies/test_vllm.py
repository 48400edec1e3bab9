"""vLLM inference paths on a tiny local model: a `VLLMPolicy` over the in-process engine, vLLM's
own OpenAI server (`workbench serve-model --engine vllm`, a real `vllm serve` on loopback) through
`OpenAIPolicy`, and greedy agreement of both with `TransformersPolicy`.

One engine per session (`vllm_engine`, tests/vllm_fixtures.py: the one trainers on the model dir
share, so tests/train/test_vllm_training.py reuses it) plus one server process; every test here
is marked `vllm` and runs on one xdist worker. Logprob tolerance: 1e-4 absolute
(fp32 on both sides; measured differences are about 1e-6).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest
from vllm_fixtures import env_without_engine, require_vllm

from workbench.agent import AgentConfig, NBAgent
from workbench.policies import SamplingParams, generate

pytestmark = [pytest.mark.vllm, pytest.mark.slow, pytest.mark.timeout(1800)]  # engine start-up counts in the first test

LOGPROB_TOL = 1e-4
TIE_GAP = 1e-4  # two tokens whose fp32 logits differ by less than this may swap between backends
SAMPLED = AgentConfig(
    max_steps=3, max_new_tokens=200, max_context_tokens=2048, prompt="compact", temperature=1.0, seed=0
)
GREEDY = SAMPLED.model_copy(update={"temperature": 0.0})


@pytest.fixture(scope="module")
def hf_model(vllm_model_dir):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(vllm_model_dir, dtype="float32").eval()


@pytest.fixture(scope="module")
def hf_policy(vllm_model_dir):
    from workbench.policies import TransformersPolicy

    return TransformersPolicy(vllm_model_dir, device="cpu", dtype="float32", batch_window_ms=20)


@pytest.fixture(scope="module")
def vllm_server(vllm_model_dir, tmp_path_factory):
    """`workbench serve-model PATH --engine vllm` on a free loopback port; its log goes to a file."""
    require_vllm()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path_factory.mktemp("vllm-serve") / "serve.log"
    cmd = [
        sys.executable,
        "-m",
        "workbench.cli",
        "serve-model",
        str(vllm_model_dir),
        "--engine",
        "vllm",
        "--port",
        str(port),
        "--kv-cache-gib",
        "0.5",
        "--vllm-args",
        "--seed 0",
    ]
    with open(log, "wb") as out:  # as from a shell: without the in-process engine's settings
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env_without_engine()
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 900
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"vllm serve exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"vllm serve did not come up in 900 s:\n{log.read_text()[-4000:]}")
            time.sleep(1)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _episodes(policy, tools, tasks, config):
    return NBAgent(policy, tools=tools, config=config, concurrency=len(tasks)).run(tasks, progress=False)


def _assert_token_exact(codec, trajectories):
    for traj in trajectories:
        assert traj.termination in ("max_steps", "submitted", "no_code", "token_budget"), traj.error
        assert traj.steps
        for step in traj.steps:
            assert codec.decode(step.completion_ids) == step.raw or (
                step.finish_reason == "eos" and codec.decode(step.completion_ids[:-1]) == step.raw
            )
            assert step.logprobs is not None and len(step.logprobs) == len(step.completion_ids)
            assert all(lp <= 1e-6 for lp in step.logprobs)
            if step.observation_ids:
                assert codec.decode(step.observation_ids) == step.observation_text
        seg = traj.segments()[0]
        assert len(seg["completion_ids"]) == len(seg["env_mask"]) == len(seg["logprobs"])


def _ran_code(trajectories) -> int:
    return sum(step.observation is not None for t in trajectories for step in t.steps)


def _recomputed_logprobs(model, prompt, completion, temperature):
    """The fp32 model's logprobs of `completion` after `prompt`, from the distribution sampled
    (logits / temperature; raw for greedy), as vLLM's processed logprobs."""
    import torch

    ids = torch.tensor([prompt + completion])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0, len(prompt) - 1 : -1].float()
    if temperature > 0:
        logits = logits / temperature
    lps = torch.log_softmax(logits, dim=-1)
    return lps[torch.arange(len(completion)), torch.tensor(completion)].tolist()


def test_vllm_policy_runs_sandboxed_episodes_token_exact(vllm_policy, vllm_tools, vllm_tasks):
    assert vllm_policy.describe()["backend"] == "vllm-colocate"
    trajectories = _episodes(vllm_policy, vllm_tools, vllm_tasks, SAMPLED)
    _assert_token_exact(vllm_policy.codec, trajectories)
    assert _ran_code(trajectories) > 0, "the model's code never reached a kernel"


HUB_REVISION = "0123456789abcdef0123456789abcdef01234567"
HUB_SCRIPT = """
import asyncio, json, sys
from workbench.policies import SamplingParams, VLLMPolicy

if __name__ == "__main__":  # vLLM starts its engine with multiprocessing spawn
    policy = VLLMPolicy(sys.argv[1], kv_cache_memory_bytes=1 << 29, seed=0)
    prompt = json.loads(sys.argv[2])
    [out] = asyncio.run(policy.generate([prompt], SamplingParams(max_new_tokens=12, temperature=0)))
    policy.close()
    print("RESULT " + json.dumps({"name": policy.name, "model_path": policy.model_path, "ids": out.token_ids}))
"""


def test_vllm_policy_loads_a_hub_id_from_the_cache_offline(vllm_policy, vllm_model_dir, tmp_path):
    """`VLLMPolicy("org/agent@main")` in a fresh process, as a user's script builds one (its own engine: the
    session's runs in this process), reads the session's model from a hub-layout cache in a temp HF_HOME with
    HF_HUB_OFFLINE=1, and says greedily what the session's engine on the model dir says."""
    home = tmp_path / "hf"
    repo = home / "hub" / "models--org--agent"
    shutil.copytree(vllm_model_dir, repo / "snapshots" / HUB_REVISION)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(HUB_REVISION)
    script = tmp_path / "hub_policy.py"
    script.write_text(HUB_SCRIPT)
    prompt = vllm_policy.codec.chat([{"role": "user", "content": "What is the capital of France?"}])
    env = {k: v for k, v in env_without_engine().items() if k not in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE")}
    env.update(HF_HOME=str(home), HF_HUB_OFFLINE="1")
    cmd = [sys.executable, str(script), "org/agent@main", json.dumps(prompt)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    [line] = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    got = json.loads(line.removeprefix("RESULT "))
    assert (got["name"], got["model_path"]) == ("vllm:org/agent", str(repo / "snapshots" / HUB_REVISION))
    [here] = generate(vllm_policy, [prompt], SamplingParams(max_new_tokens=12, temperature=0))
    assert got["ids"] == here.token_ids and got["ids"]


@pytest.mark.parametrize("temperature", [1.0, 0.7, 0.0])
def test_vllm_logprobs_are_the_sampled_tokens_logprobs(vllm_policy, hf_model, temperature):
    codec = vllm_policy.codec
    prompts = [
        codec.chat([{"role": "user", "content": q}])
        for q in ("Who directed the film?", "hi", "What is the capital of the country where X was born?")
    ]
    outs = generate(vllm_policy, prompts, SamplingParams(max_new_tokens=40, temperature=temperature, seed=5))
    for prompt, out in zip(prompts, outs, strict=True):
        assert out.token_ids and len(out.logprobs) == len(out.token_ids)
        shown = out.token_ids[:-1] if out.finish_reason == "eos" else out.token_ids
        assert codec.decode(shown) == out.text
        expected = _recomputed_logprobs(hf_model, prompt, out.token_ids, temperature)
        assert max(abs(a - b) for a, b in zip(out.logprobs, expected, strict=True)) < LOGPROB_TOL


def test_seeded_prompts_beyond_one_step_s_budget_are_prefilled_whole(vllm_policy):
    """Seeded prompts with more tokens than one engine step holds (`max_num_batched_tokens`). Chunked, a
    prompt split over steps samples a token it discards, and vLLM rewinds the seeded generator by its
    offset, which a CPU generator has not: the engine died ("CPU Generator does not use offset"). Prompts
    are prefilled whole (`whole_prompt_prefill`), and the same seeded batch samples the same tokens again."""
    scheduler = vllm_policy.llm.llm_engine.vllm_config.scheduler_config
    assert not scheduler.enable_chunked_prefill and scheduler.max_num_batched_tokens >= vllm_policy.max_model_len
    long = vllm_policy.codec.encode(" ".join(["Paris is the capital of France."] * 400))[
        : vllm_policy.max_model_len // 2
    ]
    prompts = [long[i:] for i in range(6)]
    assert sum(map(len, prompts)) > scheduler.max_num_batched_tokens
    params = SamplingParams(max_new_tokens=6, temperature=1.0, seed=11)
    first = [o.token_ids for o in generate(vllm_policy, prompts, params)]
    assert all(first) and first == [o.token_ids for o in generate(vllm_policy, prompts, params)]


def test_vllm_policy_refuses_prompts_it_cannot_run(vllm_policy):
    from workbench.errors import PolicyError

    with pytest.raises(PolicyError, match="vocabulary"):
        generate(vllm_policy, [[vllm_policy.vocab_size + 5]], SamplingParams(max_new_tokens=2))
    with pytest.raises(PolicyError, match="max_model_len"):
        generate(vllm_policy, [[1] * vllm_policy.max_model_len], SamplingParams(max_new_tokens=2))
    with pytest.raises(PolicyError, match="empty prompt"):
        generate(vllm_policy, [[]], SamplingParams(max_new_tokens=2))


def test_a_generation_that_fails_midway_leaves_the_engine_usable(vllm_policy, monkeypatch):
    """An error inside `vllm.LLM.generate` (here the engine's second step raises) leaves its request
    in the engine; the next call would step it along with its own and spin or mix outputs. The
    policy aborts what the failed call left, so the next call answers its own prompt alone."""
    engine = vllm_policy.llm.llm_engine
    real_step, steps = engine.step, []

    def failing_step():
        steps.append(1)
        if len(steps) == 2:
            raise RuntimeError("engine step failed")
        return real_step()

    prompt = vllm_policy.codec.chat([{"role": "user", "content": "Name a colour."}])
    params = SamplingParams(max_new_tokens=8, temperature=0)
    monkeypatch.setattr(engine, "step", failing_step)
    with pytest.raises(RuntimeError, match="engine step failed"):
        generate(vllm_policy, [prompt], params)
    monkeypatch.undo()
    assert not engine.has_unfinished_requests()
    [again] = generate(vllm_policy, [prompt], params)
    [once_more] = generate(vllm_policy, [prompt], params)
    assert again.token_ids and again.token_ids == once_more.token_ids


def test_vllm_server_runs_episodes_with_token_ids_and_logprobs(
    vllm_server, vllm_model_dir, vllm_policy, vllm_tools, vllm_tasks
):
    from workbench.policies import OpenAIPolicy

    remote = OpenAIPolicy(vllm_server + "/v1")  # the server's /tokenize: token space without a local tokenizer
    assert remote.token_space
    msgs = [{"role": "user", "content": "hi <code>x</code>"}]
    assert remote.codec.chat(msgs) == vllm_policy.codec.chat(msgs)
    policy = OpenAIPolicy(vllm_server + "/v1", tokenizer=str(vllm_model_dir))
    trajectories = _episodes(policy, vllm_tools, vllm_tasks, SAMPLED)
    _assert_token_exact(policy.codec, trajectories)
    assert _ran_code(trajectories) > 0
    # the server's logprobs are the sampled tokens' logprobs too: compare one turn with the engine's
    prompt = vllm_policy.codec.chat(msgs)
    params = SamplingParams(max_new_tokens=24, temperature=0)
    [mine] = asyncio.run(policy.generate([prompt], params))
    [ref] = generate(vllm_policy, [prompt], params)
    assert mine.token_ids == ref.token_ids and mine.text == ref.text
    assert max(abs(a - b) for a, b in zip(mine.logprobs, ref.logprobs, strict=True)) < LOGPROB_TOL


def _first_divergence(a, b):
    """(step index, token index) of the first differing completion token of two trajectories, or None."""
    for i, (sa, sb) in enumerate(zip(a.steps, b.steps, strict=False)):
        if sa.completion_ids != sb.completion_ids:
            j = next(
                (k for k, (x, y) in enumerate(zip(sa.completion_ids, sb.completion_ids, strict=False)) if x != y),
                min(len(sa.completion_ids), len(sb.completion_ids)),
            )
            return i, j
    return None if len(a.steps) == len(b.steps) else (min(len(a.steps), len(b.steps)), 0)


def _is_fp32_tie(model, traj_a, traj_b, where) -> bool:
    """Whether the two backends' greedy choices at `where` are within TIE_GAP of each other."""
    import torch

    i, j = where
    if i >= len(traj_a.steps) or i >= len(traj_b.steps):
        return False
    sa, sb = traj_a.steps[i], traj_b.steps[i]
    if j >= len(sa.completion_ids) or j >= len(sb.completion_ids) or sa.prompt_ids != sb.prompt_ids:
        return False
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([sa.prompt_ids + sa.completion_ids[:j]])).logits[0, -1]
    return abs(float(logits[sa.completion_ids[j]] - logits[sb.completion_ids[j]])) < TIE_GAP


def test_greedy_answers_agree_across_transformers_vllm_and_server(
    hf_policy, vllm_policy, vllm_server, vllm_model_dir, hf_model, vllm_tools, vllm_tasks
):
    from workbench.policies import OpenAIPolicy

    server = OpenAIPolicy(vllm_server + "/v1", tokenizer=str(vllm_model_dir))
    runs = {
        name: _episodes(policy, vllm_tools, vllm_tasks, GREEDY)
        for name, policy in (("transformers", hf_policy), ("vllm", vllm_policy), ("server", server))
    }
    ref = runs["transformers"]
    assert _ran_code(ref) > 0
    for name in ("vllm", "server"):
        for task, want, got in zip(vllm_tasks, ref, runs[name], strict=True):
            where = _first_divergence(want, got)
            if where is None:
                assert (got.final_answer, got.termination) == (want.final_answer, want.termination), task.question
                continue
            # the only divergence allowed: an fp32 near-tie between the top two tokens
            assert _is_fp32_tie(hf_model, want, got, where), (
                f"{name} diverges from transformers on {task.question!r} at step/token {where} without a tie"
            )
