"""NB-Agent episodes in the model's own chat format, token-faithful, for several chat templates.

Random episodes (hypothesis) run through the real episode loop with a policy that plays drawn turns
through a real tokenizer (byte-level BPE trained here) carrying one of these templates, written here
as Jinja strings: ChatML as SmolLM2 ships it, ChatML with Qwen2.5's `tool` role, Llama-3 headers
(contents trimmed), a Qwen3-style template that strips `<think>` from past assistant turns, and no
template at all. The environment is a scripted stand-in for the kernel (outputs, notepads, an
answer), so each example runs in milliseconds; `test_a_real_kernel_episode_in_chatml` runs one real
sandboxed episode too. For every episode:

(a) the ids decode to the template's own rendering of the episode's messages (for the Qwen3-style
    template, which rewrites history, to the rendering without the rewrite: what was sampled stays);
(b) each turn's context is the previous one plus that turn's sampled ids plus the observation with
    its framing (a notepad block, when one moved, is the only thing taken out);
(c) the training rows' env mask marks exactly the sampled ids.
"""

from __future__ import annotations

import asyncio
import copy
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import AddedToken

from workbench.agent import AgentConfig
from workbench.agent.episode import opening_messages, run_episode
from workbench.agent.episode_sandbox import StepResult, ToolPrompt
from workbench.kernel.observation import Observation
from workbench.models import build_tokenizer, sample_texts
from workbench.policies.base import Completion, SamplingParams, truncate_at_stop
from workbench.policies.chat_framing import CONTINUATION, resolve_framing
from workbench.policies.codec import TokenizerCodec, plain_chat_text
from workbench.runtime import Notepad
from workbench.train.rollout import trajectory_samples
from workbench.trajectory import Task

SMOLLM2 = (  # SmolLM2-Instruct's template, as shipped
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\\n' }}"
    "{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
QWEN25_TOOL = (  # ChatML with Qwen2.5's tool messages (consecutive ones share one user turn)
    "{%- for message in messages %}{%- if message.role == 'tool' %}"
    "{%- if loop.index0 == 0 or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}"
    "{{- '\\n<tool_response>\\n' + message.content + '\\n</tool_response>' }}"
    "{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- else %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}{%- endif %}"
    "{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
LLAMA3 = (
    "{{- bos_token }}{%- for message in messages %}{{- '<|start_header_id|>' + message['role'] + "
    "'<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}"
)
LLAMA3_KEEPS_TURNS = LLAMA3.replace(  # Llama-3 without trimming what the model sampled
    "message['content'] | trim", "(message['content'] if message['role'] == 'assistant' else message['content'] | trim)"
)
QWEN3_STRIPS_THINKING = (  # past assistant turns (before the last user turn) lose their <think> part
    "{%- set ns = namespace(last_user=-1) %}{%- for m in messages %}{%- if m.role == 'user' %}"
    "{%- set ns.last_user = loop.index0 %}{%- endif %}{%- endfor %}"
    "{%- for message in messages %}{%- set content = message.content %}"
    "{%- if message.role == 'assistant' and loop.index0 < ns.last_user and '</think>' in content %}"
    "{%- set content = content.split('</think>')[-1].lstrip('\\n') %}{%- endif %}"
    "{{- '<|im_start|>' + message.role + '\\n' + content + '<|im_end|>\\n' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
CHATML = (  # Qwen3-style without the rewrite: what its episodes' ids must decode to
    "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
TEMPLATES = {
    "smollm2": SMOLLM2,
    "qwen2.5-tool": QWEN25_TOOL,
    "llama3": LLAMA3,
    "qwen3": QWEN3_STRIPS_THINKING,
    "none": None,
}
LLAMA_TOKENS = ("<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>")


@pytest.fixture(scope="module")
def codecs() -> dict[str, TokenizerCodec]:
    base = build_tokenizer(sample_texts(40), vocab_size=320)
    out = {}
    for name, template in TEMPLATES.items():
        tok = copy.deepcopy(base)
        if name == "llama3":
            tok.add_tokens([AddedToken(t, special=True, normalized=False) for t in LLAMA_TOKENS])
            tok.bos_token, tok.eos_token = "<|begin_of_text|>", "<|eot_id|>"
        tok.chat_template = template
        out[name] = TokenizerCodec(tok)
    return out


# -- the policy and the environment: drawn turns, drawn outputs ----------------------------------------


@dataclass
class DrawnPolicy:
    """Plays drawn turns, tokenized by the codec, and keeps every prompt it was given. A turn drawn with
    `ends_turn` ends with the template's end-of-turn token (finish "eos"), as a model's would; code
    closed in such a turn runs, so its observation's framing must not repeat that token."""

    codec: TokenizerCodec
    turns: list[tuple[str, bool]]
    prompts: list[list[int]] = field(default_factory=list)
    name: str = "drawn"
    context_size: int | None = None

    async def generate(self, prompts: Any, params: SamplingParams) -> list[Completion]:
        [prompt] = prompts
        self.prompts.append(list(prompt))
        text, ends_turn = self.turns[min(len(self.prompts), len(self.turns)) - 1]
        if ends_turn and self.codec.end_of_turn_ids:  # the turn ends with its own token, past any stop string
            ids = [*self.codec.encode(text), self.codec.end_of_turn_ids[0]]
            return [Completion(text, ids, [0.0] * len(ids), "eos")]
        text, stopped = truncate_at_stop(text, params.stop)
        ids = self.codec.encode(text)
        return [Completion(text, ids, [0.0] * len(ids), "stop" if stopped else "length")]

    def describe(self) -> dict[str, Any]:
        return {"backend": "drawn"}


@dataclass
class DrawnEnvironment:
    """Each step prints a drawn output; drawn steps add a notepad fact; the last one submits."""

    outputs: list[str]
    facts: list[bool]
    prompt: ToolPrompt = field(
        default_factory=lambda: ToolPrompt("search(q): find", ("search",), "notepad.add_fact(text)")
    )
    notepad: Notepad = field(default_factory=Notepad)
    steps: int = 0

    async def step(self, code: str | None, timeout: float) -> StepResult:
        k, self.steps = self.steps, self.steps + 1
        if code is None:
            return StepResult(None, notepad=self.notepad.snapshot())
        if k >= len(self.outputs):
            return StepResult(Observation(stdout="done\n"), notepad=self.notepad.snapshot(), final_answer="x")
        if self.facts[k]:
            self.notepad.add_fact(f"fact {k}: {self.outputs[k][:20]}")
        return StepResult(Observation(stdout=self.outputs[k]), notepad=self.notepad.snapshot())


TEXT = st.lists(st.sampled_from([*"abc xyz=()'\n\t:é€", "</think>", "<think>", "print(1)"]), max_size=12).map("".join)
SHAPES = (
    "<think>{}</think>\n<code>\n{}\n</code>",  # stops at </code>
    "<think>{}</think>\n<code>\n{}\n</code>\n{}",  # text after </code>: only a turn that ended itself has it
    "<think>{}</think> {}.",  # no code
)
TURN = st.tuples(st.tuples(st.sampled_from(SHAPES), TEXT, TEXT, TEXT).map(lambda t: t[0].format(*t[1:])), st.booleans())
EPISODE = st.fixed_dictionaries(
    {
        "turns": st.lists(TURN, min_size=1, max_size=5),
        "outputs": st.lists(TEXT.map(lambda s: s + "\n"), min_size=0, max_size=5),
        "facts": st.lists(st.booleans(), min_size=5, max_size=5),
        "show_notepad": st.booleans(),
    }
)


TASK = Task(id="t", question="Where was Ada born?")


def run_drawn(codec: TokenizerCodec, episode: dict, framing: str = "auto") -> tuple[DrawnPolicy, Any]:
    policy = DrawnPolicy(codec, episode["turns"])
    env = DrawnEnvironment(episode["outputs"], episode["facts"])
    config = AgentConfig(max_steps=6, max_context_tokens=1 << 16, show_notepad=episode["show_notepad"], framing=framing)
    traj = asyncio.run(run_episode(TASK, policy, env, config, seed=0))
    assert traj.termination in ("submitted", "no_code", "max_steps"), (traj.termination, traj.error)
    traj.metadata["opening"] = opening_messages(TASK, env, config)
    return policy, traj


# -- (a) the template's own rendering --------------------------------------------------------------------


def observation_content(text: str, trims: bool) -> str:
    """The observation message's content, read back from what the step recorded."""
    end = text.rindex("</notepad>") + len("</notepad>") if "<notepad>" in text else text.rindex("left]") + len("left]")
    return text[text.index("<output>") : end] + ("" if trims else "\n")


def rendered_messages(codec: TokenizerCodec, policy: DrawnPolicy, traj: Any, upto: int) -> list[dict[str, str]]:
    """The messages behind turn `upto`'s context: opening, then each earlier turn and its observation
    (only the newest observation still holds its notepad)."""
    framing = resolve_framing(codec, "auto")
    messages = list(traj.metadata["opening"])
    for k, step in enumerate(traj.steps[:upto]):
        ids = step.completion_ids[:-1] if step.finish_reason == "eos" else step.completion_ids
        content = observation_content(step.observation_text, framing.trims_content)
        if k < upto - 1 and "<notepad>" in content:
            content = content[: content.index("<notepad>")].rstrip("\n") + ("" if framing.trims_content else "\n")
        messages += [
            {"role": "assistant", "content": codec.decode(ids)},
            {"role": framing.observation_role, "content": content},
        ]
    return messages


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(episode=EPISODE, name=st.sampled_from(["smollm2", "qwen2.5-tool", "llama3", "qwen3"]))
def test_a_the_ids_decode_to_the_templates_rendering(codecs, episode, name):
    codec = codecs[name]
    policy, traj = run_drawn(codec, episode)
    oracle = copy.deepcopy(codec.tokenizer)  # the template's rendering without its rewrite of past turns:
    oracle.chat_template = {"qwen3": CHATML, "llama3": LLAMA3_KEEPS_TURNS}.get(name, oracle.chat_template)
    for k in range(1, len(policy.prompts)):
        messages = rendered_messages(codec, policy, traj, k)
        want = oracle.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        assert codec.decode(policy.prompts[k]) == want
    if name == "qwen3" and len(policy.prompts) > 1:  # the sampled thinking of every past turn is still there
        seen = codec.decode(policy.prompts[-1])
        for step in traj.steps[:-1]:
            assert (
                codec.decode(step.completion_ids[:-1] if step.finish_reason == "eos" else step.completion_ids) in seen
            )


# -- (b) each context extends the previous one; (c) the mask marks exactly the sampled ids -------------


def check_extends(policy: DrawnPolicy, traj: Any, closing: list[int]) -> None:
    for k in range(1, len(policy.prompts)):
        before, now, prev = policy.prompts[k - 1], policy.prompts[k], traj.steps[k - 1]
        grown = prev.completion_ids + prev.observation_ids
        if traj.steps[k].prompt_ids is None:  # nothing moved: exactly the last context, the turn, the observation
            assert now == before + grown
            continue
        assert traj.steps[k].prompt_ids == now
        kept = len(now) - len(closing) - len(grown)  # the notepad block left the middle: the only change
        assert now[:kept] == before[:kept] and now[kept:] == closing + grown
        assert before[len(before) - len(closing) :] == closing
        moved = policy.codec.decode(before[kept : len(before) - len(closing)]).strip()
        assert moved.startswith("<notepad>") and moved.endswith("</notepad>") and moved.count("<notepad>") == 1


def check_mask(policy: DrawnPolicy, traj: Any) -> None:
    samples = trajectory_samples(traj, eos_token_id=policy.codec.eos_token_id, max_completion_length=10**6)
    trained = 0
    for sample in samples:
        marked = [t for t, m in zip(sample["completion_ids"], sample["env_mask"], strict=True) if m]
        turns = sorted({t for t in sample["step_index"] if t >= 0})
        assert marked == [t for k in turns for t in traj.steps[k].completion_ids]
        for k in turns:
            start = sample["step_index"].index(k)
            assert sample["prompt_ids"] + sample["completion_ids"][:start] == policy.prompts[k]
        trained += len(marked)
    assert trained == sum(len(s.completion_ids) for s in traj.steps)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(episode=EPISODE, name=st.sampled_from(sorted(TEMPLATES)))
def test_b_c_contexts_extend_and_the_mask_marks_the_sampled_ids(codecs, episode, name):
    codec = codecs[name]
    policy, traj = run_drawn(codec, episode)
    framing = resolve_framing(codec, "auto")
    closing = codec.encode(framing.after_observation) if framing.after_observation else []
    check_extends(policy, traj, closing)
    check_mask(policy, traj)
    for step in traj.steps[:-1]:  # each observation opens with the template's framing and closes with it
        if step.observation_ids:
            assert codec.decode(step.observation_ids) == step.observation_text
            ended = step.finish_reason == "eos"
            assert step.observation_text.startswith(framing.lead(ended))
            assert step.observation_text.endswith(framing.after_observation)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(episode=EPISODE)
def test_without_a_template_the_plain_format_is_unchanged(codecs, episode):
    codec = codecs["none"]
    assert codec.framing is None and resolve_framing(codec, "auto") == CONTINUATION
    policy, traj = run_drawn(codec, episode)
    text = codec.decode(policy.prompts[0])
    assert text.startswith("<|system|>\n") and text.endswith("<|assistant|>\n")
    for k in range(1, len(policy.prompts)):  # the observation continues the model's text, no framing
        if traj.steps[k].prompt_ids is None:
            prev = traj.steps[k - 1]
            assert codec.decode(policy.prompts[k]).endswith(codec.decode(prev.completion_ids) + prev.observation_text)
            assert prev.observation_text.startswith("\n<output>")
    assert policy.prompts[0] == codec.encode(plain_chat_text(traj.metadata["opening"]))


# -- trimming and the notepad under a template's framing ---------------------------------------------------


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    trim=st.sampled_from(["hard", "soft"]),
    name=st.sampled_from(["smollm2", "qwen2.5-tool", "llama3"]),
    outputs=st.lists(st.integers(40, 200), min_size=4, max_size=6),
)
def test_trims_keep_the_window_one_notepad_and_the_framing(codecs, trim, name, outputs):
    codec = codecs[name]
    framing = resolve_framing(codec, "auto")
    turns = [(f"<think>t{k}</think>\n<code>\nprint({k})\n</code>", False) for k in range(len(outputs) + 1)]
    policy = DrawnPolicy(codec, turns)
    env = DrawnEnvironment([f"seen-{k} " + "w" * n + "\n" for k, n in enumerate(outputs)], [True] * 6)
    config = AgentConfig(max_steps=8, max_context_tokens=800, max_new_tokens=40, prompt="compact", trim=trim)
    traj = asyncio.run(run_episode(TASK, policy, env, config, seed=0))
    assert traj.termination == "submitted", (traj.termination, traj.error)
    assert any("Earlier steps were removed" in codec.decode(p) for p in policy.prompts) or trim == "soft"
    assert any(s.prompt_ids is not None for s in traj.steps[1:])  # something was trimmed or moved
    for k, prompt in enumerate(policy.prompts):
        text = codec.decode(prompt)
        assert len(prompt) + 40 <= 800
        closing = framing.after_observation if text.endswith(framing.after_observation) else framing.after_task
        assert text.endswith(closing) and text.count("<notepad>") == (1 if k else 0)
        if k:  # the notepad is inside the newest message (an observation, or the task after a hard trim)
            block_end = text.rindex("</notepad>") + len("</notepad>")
            assert text[block_end:] == ("" if framing.trims_content else "\n") + closing
        assert f"seen-{k - 1}" in text or k == 0  # the newest output is always kept
    check_mask(policy, traj)


def test_a_scripted_teacher_counts_its_turns_under_a_templates_framing(codecs):
    from workbench.policies import ScriptedPolicy

    for name in ("smollm2", "qwen2.5-tool", "llama3"):
        policy = ScriptedPolicy(lambda _context, turn: f"<think>turn {turn}</think><code>x</code>", codec=codecs[name])
        env = DrawnEnvironment(["out\n"] * 4, [True] * 5)
        traj = asyncio.run(run_episode(TASK, policy, env, AgentConfig(max_steps=6, framing="template")))
        assert [s.think for s in traj.steps] == [f"turn {k}" for k in range(5)]  # the moved notepad keeps the count


def test_a_real_kernel_episode_in_chatml(codecs, pick, world_tools):
    """One real sandboxed episode (kernel, gateway, BM25 search) framed by SmolLM2's template."""
    from workbench.agent import NBAgent
    from workbench.policies import ScriptedPolicy

    class Recording(ScriptedPolicy):
        prompts: list[list[int]]

        def complete(self, prompt, params):
            self.prompts.append(list(prompt))
            return super().complete(prompt, params)

    turns = [
        "<think>look</think>\n<code>\nhits = search(task)\nnotepad.add_fact(str(hits)[:40])\nprint(hits[:80])\n</code>",
        "<think>note</think>\n<code>\nprint('again')\n</code>",
        "<think>done</think>\n<code>\nsubmit_final_answer('x')\n</code>",
    ]
    policy = Recording(lambda _c, turn: turns[min(turn, 2)], codec=codecs["smollm2"])
    policy.prompts = []
    [traj] = NBAgent(policy, tools=world_tools, config=AgentConfig(max_steps=4, framing="template")).run(
        pick(1, 1), progress=False
    )
    assert traj.termination == "submitted", (traj.termination, traj.error)
    framing = resolve_framing(policy.codec, "template")
    check_extends(policy, traj, policy.codec.encode(framing.after_observation))
    check_mask(policy, traj)
    last = policy.codec.decode(policy.prompts[-1])
    assert last.count("<|im_start|>user\n<output>") == 2 and last.count("<notepad>") == 1
    assert last.endswith("</notepad>\n<|im_end|>\n<|im_start|>assistant\n")
