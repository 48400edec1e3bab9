"""Models by name: a hub id (with a revision), a local directory, a GGUF file or a converted model's short
name, each loaded by every place that takes a model. Hub ids are read from a hub-layout cache laid out
here in a temp HF_HOME, with HF_HUB_OFFLINE=1 set by the test: nothing is downloaded."""

from __future__ import annotations

import asyncio
import json
import shutil

import huggingface_hub.constants
import pytest

from workbench.errors import ConfigError
from workbench.models import ModelSource, resolve_model
from workbench.policies import SamplingParams, load_policy
from workbench.policies.sampling import WORKBENCH_SAMPLING, LogitControls, SamplingChoice, SamplingDefaults
from workbench.train import TrainConfig
from workbench.train.run import load_model

REV = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def hub(tiny_model_dir, tmp_path, monkeypatch):
    """A Hugging Face cache holding `org/tiny` at commit REV (refs/main -> REV), read offline."""
    home = tmp_path / "hf"
    repo = home / "hub" / "models--org--tiny"
    shutil.copytree(tiny_model_dir, repo / "snapshots" / REV)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(REV)
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # huggingface_hub reads both once, at import: the test's values must reach an already imported one
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(home / "hub"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("WORKBENCH_MODELS_DIR", str(tmp_path / "models"))
    return repo / "snapshots" / REV


@pytest.mark.parametrize("spec", ["org/tiny", "org/tiny@main", f"org/tiny@{REV}"])
def test_a_hub_id_resolves_to_its_cached_snapshot(hub, spec):
    source = resolve_model(spec)
    assert source == ModelSource(spec, hub, repo_id="org/tiny", revision=REV)
    assert (source.kind, source.name) == ("hub", "org/tiny")


def test_transformers_policy_loads_a_hub_id_and_generates(hub):
    policy = load_policy("transformers:org/tiny@main", device="cpu")
    assert policy.name == "transformers:org/tiny"
    prompt = policy.codec.chat([{"role": "user", "content": "hi"}])
    [out] = asyncio.run(policy.generate([prompt], SamplingParams(max_new_tokens=4, temperature=0)))
    assert 1 <= len(out.token_ids) <= 4


def test_train_config_model_path_takes_a_hub_id(hub, tiny_model_dir):
    model, tokenizer = load_model(TrainConfig(model_path="org/tiny").model_path)
    assert model.name_or_path == str(hub)  # a local snapshot: vLLM's colocated engine can load it too
    assert tokenizer.eos_token == "<|im_end|>"


def test_a_missing_name_says_what_was_tried(hub):
    with pytest.raises(ConfigError) as err:
        resolve_model("org/absent@v1")
    text = str(err.value)
    assert "org/absent@v1" in text and "revision 'v1'" in text
    assert str(hub.parents[2]) in text  # the cache it looked in
    assert "HF_HUB_OFFLINE" in text and "local path" in text


def test_an_embedded_model_not_added_yet_names_the_command(hub):
    with pytest.raises(ConfigError, match="workbench models add smollm2"):
        load_policy("transformers:smollm2")


def test_a_short_name_finds_a_model_in_the_models_dir(hub, tiny_model_dir, tmp_path):
    shutil.copytree(tiny_model_dir, tmp_path / "models" / "mine")
    policy = load_policy("transformers:mine", device="cpu")
    assert policy.model_path == str(tmp_path / "models" / "mine")
    assert load_model("mine")[0].name_or_path == str(tmp_path / "models" / "mine")


def test_local_paths_and_gguf_files(tiny_model_dir, tmp_path):
    assert resolve_model(tiny_model_dir).kind == "local"
    gguf = tmp_path / "m.Q4_1.gguf"
    gguf.write_bytes(b"GGUF")
    for spec in (gguf, tmp_path):  # the file, or a folder holding exactly one
        source = resolve_model(spec)
        assert (source.kind, source.directory, source.gguf_file) == ("gguf", tmp_path, gguf.name)
        assert source.pretrained_kwargs() == {"gguf_file": gguf.name} and source.weights_path == gguf
    (tmp_path / "b.gguf").write_bytes(b"GGUF")
    with pytest.raises(ConfigError, match="several GGUF files"):
        resolve_model(tmp_path)
    with pytest.raises(ConfigError, match="not a GGUF"):
        resolve_model(tiny_model_dir / "config.json")


def _with_generation_config(src, dst, **entries):
    shutil.copytree(src, dst)
    path = dst / "generation_config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **entries}))
    return dst


def test_generation_config_sampling_defaults_apply_unless_set(tiny_model_dir, tmp_path):
    folder = _with_generation_config(tiny_model_dir, tmp_path / "m", temperature=0.0, top_k=7)
    policy = load_policy(f"transformers:{folder}", device="cpu")
    assert policy.sampling_defaults == SamplingDefaults(
        temperature=0.0, top_k=7, eos_token_ids=(policy.codec.eos_token_id,)
    )
    prompt = policy.codec.chat([{"role": "user", "content": "hi"}])
    outs = asyncio.run(policy.generate([prompt, prompt], SamplingParams(max_new_tokens=6, seed=1)))
    greedy = asyncio.run(policy.generate([prompt], SamplingParams(max_new_tokens=6, temperature=0)))
    assert outs[0].token_ids == outs[1].token_ids == greedy[0].token_ids  # the model's temperature 0: greedy
    mine = SamplingParams(temperature=0.7, top_k=3)
    assert policy.sampling_defaults.choose(mine) == SamplingChoice(0.7, 1.0, 3)  # what the caller set wins
    assert policy.sampling_defaults.choose(SamplingParams(top_p=0.5)) == SamplingChoice(0.0, 0.5, 7)


def test_an_explicit_value_equal_to_workbench_s_default_beats_the_generation_config(tiny_model_dir, tmp_path):
    folder = _with_generation_config(tiny_model_dir, tmp_path / "m", temperature=0.2, top_p=0.5, top_k=7)
    defaults = SamplingDefaults.read(folder)
    explicit = SamplingParams(temperature=1.0, top_p=1.0, top_k=0)
    assert defaults.choose(explicit) == SamplingChoice(temperature=1.0, top_p=1.0, top_k=0)
    assert defaults.choose(SamplingParams()) == SamplingChoice(temperature=0.2, top_p=0.5, top_k=7)  # unset
    assert SamplingDefaults().choose(SamplingParams()) == WORKBENCH_SAMPLING == SamplingChoice(1.0, 1.0, 0)
    filled = defaults.apply(SamplingParams(temperature=1.0, stop=["</code>"]))
    assert (filled.temperature, filled.top_p, filled.top_k, filled.stop) == (1.0, 0.5, 7, ["</code>"])


def test_explicit_temperature_one_samples_at_one_on_a_model_whose_default_is_greedy(tiny_model_dir, tmp_path):
    folder = _with_generation_config(tiny_model_dir, tmp_path / "m", temperature=0.0)
    policy = load_policy(f"transformers:{folder}", device="cpu")
    prompt = policy.codec.chat([{"role": "user", "content": "hi"}])
    unset, explicit = (
        SamplingParams(max_new_tokens=12, seed=0),
        SamplingParams(max_new_tokens=12, seed=0, temperature=1.0),
    )
    greedy = {tuple(o.token_ids) for o in asyncio.run(policy.generate([prompt] * 4, unset))}  # rows seeded 0..3
    sampled = {tuple(o.token_ids) for o in asyncio.run(policy.generate([prompt] * 4, explicit))}
    assert len(greedy) == 1 and len(sampled) > 1  # the model's temperature 0 unless the caller says 1.0


def test_generation_stops_at_the_generation_configs_end_of_turn_ids(tiny_model_dir, tmp_path):
    from transformers import AutoTokenizer

    end = AutoTokenizer.from_pretrained(tiny_model_dir).convert_tokens_to_ids("</think>")
    folder = _with_generation_config(tiny_model_dir, tmp_path / "m", eos_token_id=[2, end])
    policy = load_policy(f"transformers:{folder}", device="cpu")
    prompt = policy.codec.chat([{"role": "user", "content": "hi"}])
    forced = LogitControls(logit_bias={end: 100})  # the model's first token is `</think>`
    [out] = asyncio.run(policy.generate([prompt], SamplingParams(max_new_tokens=8, temperature=0), controls=forced))
    assert (out.token_ids, out.finish_reason, out.text) == ([end], "eos", "")
