"""serve-model under hostile and demanding clients: bad token ids, every accepted field honoured
or refused by name, n > 1, top logprobs, limits, and arbitrary bytes (never a 500)."""

import asyncio
import json
import math

import httpx
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.errors import ConfigError, PolicyError
from workbench.policies import ModelServer, OpenAIPolicy, SamplingParams, TransformersPolicy, generate
from workbench.policies.batching import DetailedCompletion
from workbench.policies.completions_wire import ModelLimits
from workbench.policies.sampling import LogitControls

LIMITS = ModelLimits(max_body_bytes=256 << 10, max_choices=16)


@pytest.fixture(scope="module")
def server(tiny_policy):
    with ModelServer(policy=tiny_policy, limits=LIMITS) as srv:
        yield srv


def complete(server, **body):
    return httpx.post(server.url + "/v1/completions", json=body, timeout=120)


def message(r) -> str:
    return r.json()["error"]["message"]


# -- bad token ids ---------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [-1, 406, 10**6, 2**70])
def test_token_id_outside_the_vocabulary_is_a_400_naming_it(server, bad):
    r = complete(server, prompt=[5, 6, bad, 7], max_tokens=2)
    assert r.status_code == 400 and str(bad) in message(r) and "vocabulary" in message(r)
    r = httpx.post(server.url + "/detokenize", json={"tokens": [5, bad]})
    assert r.status_code == 400 and str(bad) in message(r)


def test_a_bad_request_does_not_fail_the_good_ones_sent_with_it(server, chat_prompts):
    async def main():
        async with httpx.AsyncClient(timeout=120) as client:
            good = {"prompt": chat_prompts[0], "max_tokens": 4, "temperature": 0}
            bodies = [good] * 9 + [{"prompt": [5, -3], "max_tokens": 4}, {"prompt": [[5], [999999]], "max_tokens": 4}]
            return await asyncio.gather(*(client.post(server.url + "/v1/completions", json=b) for b in bodies))

    replies = asyncio.run(main())
    assert [r.status_code for r in replies] == [200] * 9 + [400, 400]
    assert len({json.dumps(r.json()["choices"][0]["text"]) for r in replies[:9]}) == 1


def test_a_row_that_fails_inside_a_batch_fails_alone(tiny_policy, chat_prompts):
    class Unchecked(TransformersPolicy):  # the real model with the up-front check switched off
        def _check_row(self, row):
            pass

    policy = Unchecked.from_model(tiny_policy.model, tiny_policy.tokenizer, batch_window_ms=50)
    params = SamplingParams(max_new_tokens=4, temperature=0)

    async def main():
        calls = [policy.generate([p], params) for p in chat_prompts] + [policy.generate([[5, 10**6]], params)]
        return await asyncio.gather(*calls, return_exceptions=True)

    *good, bad = asyncio.run(main())
    assert isinstance(bad, PolicyError)
    assert [g[0].token_ids for g in good] == [c.token_ids for c in generate(tiny_policy, chat_prompts, params)]
    assert policy.stats.max_batch == len(chat_prompts) + 1  # they were batched together, then retried one by one


def test_library_rejects_bad_ids_and_bad_seeds_before_batching(tiny_policy):
    with pytest.raises(PolicyError, match="vocabulary"):
        generate(tiny_policy, [[1, -1]], SamplingParams(max_new_tokens=1))
    with pytest.raises(ConfigError, match="seed"):
        generate(tiny_policy, [[1, 2]], SamplingParams(max_new_tokens=1, seed=2**70))
    with pytest.raises(ConfigError, match="logit_bias"):
        generate(tiny_policy, [[1, 2]], SamplingParams(max_new_tokens=1), controls=LogitControls(logit_bias={999: 1.0}))
    with pytest.raises(ConfigError, match="temperature"):
        generate(tiny_policy, [[1, 2]], SamplingParams(temperature=float("nan")))


# -- every accepted field is honoured, or refused by name -------------------------------------------


@pytest.mark.parametrize(
    "field,value",
    [
        ("min_p", 0.1),
        ("ignore_eos", True),
        ("stop_token_ids", [3]),
        ("stream", True),
        ("echo", True),
        ("suffix", "tail"),
        ("best_of", 3),
        ("spaces_between_special_tokens", True),
        ("logprobs", 21),
        ("presence_penalty", 3.0),
        ("frequency_penalty", -2.5),
        ("repetition_penalty", 0),
        ("logit_bias", {"x": 1}),
        ("logit_bias", {"5": 101}),
        ("logit_bias", {"100000": 1}),
        ("n", 0),
        ("n", 17),
        ("seed", 2**80),
    ],
)
def test_unsupported_or_out_of_range_fields_are_refused_by_name(server, field, value):
    r = complete(server, prompt="hello", max_tokens=2, **{field: value})
    assert r.status_code == 400, r.text
    assert field in message(r), message(r)


def manual_greedy(model, prompt, steps, *, bias=None, rep=1.0, freq=0.0, pres=0.0, eos=()):
    """Greedy decoding by the published formulas, the whole sequence re-run every step (no cache)."""
    ids, out = list(prompt), []
    vocab = model.get_input_embeddings().num_embeddings
    counts, seen = torch.zeros(vocab), torch.zeros(vocab, dtype=torch.bool)
    seen[torch.tensor(prompt)] = True
    with torch.no_grad():
        for _ in range(steps):
            row = model(torch.tensor([ids])).logits[0, -1].float().clone()
            for t, b in (bias or {}).items():
                row[t] += b
            row = torch.where(seen, torch.where(row > 0, row / rep, row * rep), row)
            row = row - counts * freq - (counts > 0).float() * pres
            tok = int(torch.argmax(row))
            out.append(tok)
            if tok in eos:
                break
            counts[tok] += 1
            seen[tok] = True
            ids.append(tok)
    return out


def test_logit_bias_and_penalties_follow_the_openai_and_hf_formulas(server, tiny_policy, chat_prompts):
    prompt = chat_prompts[1]
    plain = complete(server, prompt=prompt, max_tokens=12, temperature=0, return_token_ids=True).json()["choices"][0]
    first = plain["token_ids"][0]
    bias = {first: -100.0, 7: 3.0}
    knobs = {"bias": bias, "rep": 1.8, "freq": 0.7, "pres": 0.5}
    body = {
        "logit_bias": {str(k): v for k, v in bias.items()},
        "repetition_penalty": 1.8,
        "frequency_penalty": 0.7,
        "presence_penalty": 0.5,
    }
    got = complete(server, prompt=prompt, max_tokens=12, temperature=0, return_token_ids=True, **body).json()[
        "choices"
    ][0]
    want = manual_greedy(tiny_policy.model, prompt, 12, eos=tiny_policy.eos_ids, **knobs)
    assert got["token_ids"] == want
    assert got["token_ids"] != plain["token_ids"] and got["token_ids"][0] != first


def test_a_large_positive_bias_forces_a_token(server, chat_prompts):
    r = complete(
        server,
        prompt=chat_prompts[0],
        max_tokens=6,
        temperature=1.0,
        seed=3,
        logit_bias={"42": 100},
        return_token_ids=True,
    )
    assert r.json()["choices"][0]["token_ids"] == [42] * 6


def test_skip_special_tokens_is_honoured(server, tiny_policy, chat_prompts):
    special = next(t for t in tiny_policy.tokenizer.all_special_ids if t not in tiny_policy.eos_ids)
    body = {"prompt": chat_prompts[0], "max_tokens": 3, "temperature": 0, "logit_bias": {str(special): 100}}
    kept = complete(server, **body).json()["choices"][0]["text"]
    skipped = complete(server, skip_special_tokens=True, **body).json()["choices"][0]["text"]
    assert kept == tiny_policy.codec.decode([special] * 3) and skipped == ""


# -- top logprobs and n ----------------------------------------------------------------------------


def test_logprobs_5_returns_top_logprobs_in_openai_shape(server, tiny_policy, chat_prompts):
    for temperature in (0, 0.8):
        r = complete(
            server,
            prompt=chat_prompts[2],
            max_tokens=8,
            temperature=temperature,
            seed=1,
            logprobs=5,
            return_token_ids=True,
        )
        choice = r.json()["choices"][0]
        lp = choice["logprobs"]
        assert len(lp["tokens"]) == len(lp["token_logprobs"]) == len(lp["top_logprobs"]) == len(choice["token_ids"])
        for tok, sampled, top in zip(choice["token_ids"], lp["token_logprobs"], lp["top_logprobs"], strict=True):
            assert 1 <= len(top) <= 6 and all(v <= 0 for v in top.values())
            assert top[tiny_policy.codec.decode([tok])] == pytest.approx(sampled)
            assert math.log(sum(math.exp(v) for v in top.values())) <= 1e-5
            if temperature == 0:
                assert sampled == pytest.approx(max(top.values()))
    [local] = generate(
        tiny_policy,
        [chat_prompts[2]],
        SamplingParams(max_new_tokens=8, temperature=0),
        controls=LogitControls(top_logprobs=5),
    )
    assert isinstance(local, DetailedCompletion) and all(len(t) == 5 for t in local.top_logprobs)
    r0 = complete(server, prompt=chat_prompts[2], max_tokens=4, temperature=0, logprobs=0).json()["choices"][0]
    assert [len(t) for t in r0["logprobs"]["top_logprobs"]] == [1] * len(r0["logprobs"]["tokens"])


def test_n_choices_per_prompt_match_seeded_library_rows(server, tiny_policy, chat_prompts):
    prompts = chat_prompts[:2]
    r = complete(server, prompt=prompts, n=3, max_tokens=10, temperature=1.0, seed=5, return_token_ids=True)
    choices = r.json()["choices"]
    assert [c["index"] for c in choices] == list(range(6))
    assert [c["prompt_token_ids"] for c in choices] == [p for p in prompts for _ in range(3)]
    rows = [p for p in prompts for _ in range(3)]
    local = generate(tiny_policy, rows, SamplingParams(max_new_tokens=10, temperature=1.0, seed=5))
    assert [c["token_ids"] for c in choices] == [c.token_ids for c in local]
    assert len({tuple(c["token_ids"]) for c in choices[:3]}) > 1  # the n samples differ
    assert r.json()["usage"]["completion_tokens"] == sum(len(c["token_ids"]) for c in choices)


def test_openai_policy_still_reads_the_responses(server, tiny_policy, tiny_model_dir, chat_prompts):
    remote = OpenAIPolicy(server.url + "/v1", tokenizer=str(tiny_model_dir))
    params = SamplingParams(max_new_tokens=8, temperature=0)
    got = asyncio.run(remote.generate(chat_prompts, params))
    want = generate(tiny_policy, chat_prompts, params)
    assert [g.token_ids for g in got] == [w.token_ids for w in want]


# -- limits and arbitrary text ----------------------------------------------------------------------


def test_limits_413_and_too_many_choices(server):
    r = httpx.post(server.url + "/v1/completions", content=b" " * (LIMITS.max_body_bytes + 1))
    assert r.status_code == 413 and "--max-body-bytes" in message(r)
    r = complete(server, prompt=["a", "b", "c"], n=6, max_tokens=1)
    assert r.status_code == 400 and "16" in message(r)


def test_lone_surrogates_and_invalid_utf8_become_replacement_characters(server, tiny_policy):
    want = complete(server, prompt="say \ufffd now", max_tokens=4, temperature=0, return_token_ids=True).json()
    for raw in (b'"say \\ud800 now"', b'"say \xff now"'):
        body = b'{"prompt": ' + raw + b', "max_tokens": 4, "temperature": 0, "return_token_ids": true}'
        r = httpx.post(server.url + "/v1/completions", content=body, timeout=60)
        assert r.status_code == 200
        assert r.json()["choices"][0]["prompt_token_ids"] == want["choices"][0]["prompt_token_ids"]
    r = httpx.post(server.url + "/tokenize", content=b'{"messages": [{"role": "user", "content": "\\udfff\xfe"}]}')
    assert r.status_code == 200
    assert r.json()["tokens"] == tiny_policy.codec.chat([{"role": "user", "content": "\ufffd\ufffd"}])


text = st.text(st.characters(blacklist_categories=()), max_size=20)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | text,
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(text, kids, max_size=3),
    max_leaves=8,
)
completion_bodies = st.fixed_dictionaries(
    {"prompt": text | st.lists(st.integers(-5, 500), max_size=6), "max_tokens": st.integers(-1, 3)},
    optional={
        "temperature": json_values,
        "logprobs": st.integers(-1, 22),
        "n": st.integers(-1, 3),
        "stop": json_values,
        "logit_bias": st.dictionaries(text, st.floats(), max_size=2),
        "seed": st.integers(),
        "top_k": json_values,
        "presence_penalty": st.floats(),
    },
)
bodies = st.one_of(st.binary(max_size=200), json_values.map(json.dumps), completion_bodies.map(json.dumps))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(["/v1/completions", "/tokenize", "/detokenize"]), body=bodies)
def test_any_body_gets_a_json_answer_never_a_500(server, path, body):
    raw = body if isinstance(body, bytes) else body.encode()
    r = httpx.post(server.url + path, content=raw, timeout=120)
    assert r.status_code in (200, 400, 404, 413), (r.status_code, r.text[:300])
    if r.status_code != 200:
        assert message(r)


CLI = (
    "import argparse, sys; from workbench.cli import policies as cli; p = argparse.ArgumentParser(); "
    "cli.register(p.add_subparsers()); a = p.parse_args(sys.argv[1:]); sys.exit(a.func(a))"
)


@pytest.mark.slow
def test_sigterm_stops_a_busy_model_server_promptly(tiny_model_dir):
    import os
    import signal
    import socket
    import subprocess
    import sys
    import threading
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-c", CLI, "serve-model", str(tiny_model_dir), "--port", str(port), "--device", "cpu"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(url + "/health", timeout=5)
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read().decode()
                time.sleep(0.3)
        # 16 completions that fill the 2048-token context (EOS banned): minutes of work, not seconds
        from transformers import AutoTokenizer

        eos = AutoTokenizer.from_pretrained(tiny_model_dir).eos_token_id
        body = {
            "prompt": "hello",
            "n": 16,
            "max_tokens": None,
            "temperature": 1.0,
            "seed": 0,
            "logit_bias": {str(eos): -100},
        }

        def busy() -> None:
            try:
                httpx.post(url + "/v1/completions", json=body, timeout=300)
            except httpx.HTTPError:
                pass

        threading.Thread(target=busy, daemon=True).start()
        time.sleep(1.5)
        assert proc.poll() is None
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
        print(f"serve-model exited {time.monotonic() - sent:.2f} s after SIGTERM")
        assert proc.returncode in (0, -signal.SIGTERM), proc.stdout.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
