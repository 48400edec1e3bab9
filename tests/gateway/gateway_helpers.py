"""Helpers the gateway tests share (fixtures live in conftest.py)."""

from __future__ import annotations

import time

from workbench.policies import ScriptedPolicy


def echo_policy(codec) -> ScriptedPolicy:
    """Answers "turn N" (N = how many of its own replies the prompt holds), so a test can see the turn."""
    return ScriptedPolicy(lambda _context, turn: f"turn {turn}", codec=codec, name="echo")


def eventually(check, timeout: float = 5.0):
    """`check()`'s value once it is truthy (a reply is marked delivered just after it is sent)."""
    deadline = time.monotonic() + timeout
    while not (value := check()) and time.monotonic() < deadline:
        time.sleep(0.01)
    return value


LLAMA3_TEMPLATE = (
    "{{- bos_token }}{% for message in messages %}"
    "{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' "
    "+ message['content'] | trim + '<|eot_id|>' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}"
)
SMOLLM2_TEMPLATE = (  # ChatML with a default system prompt, as SmolLM2-135M-Instruct's
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\\n' }}"
    "{% endif %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
TOOL_ROLE_TEMPLATE = (  # ChatML that gives tool results their own role
    "{% for message in messages %}{% if message['role'] == 'tool' %}"
    "{{ '<|im_start|>tool\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% else %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
HERMES_TEMPLATE = (  # Qwen2.5's shape: tools in the system message, <tool_call> JSON, tool results as user turns
    "{%- if tools %}{{ '<|im_start|>system\\n' }}{% if messages[0]['role'] == 'system' %}"
    "{{ messages[0]['content'] }}{% else %}You are a helpful assistant.{% endif %}"
    "{{ '\\n\\n# Tools\\n\\n<tools>' }}{% for tool in tools %}{{ '\\n' }}{{ tool | tojson }}{% endfor %}"
    "{{ '\\n</tools>\\n\\nCall a function with <tool_call>' }}"
    '{{ \'{"name": ..., "arguments": ...}</tool_call><|im_end|>\\n\' }}'
    "{%- elif messages[0]['role'] == 'system' %}"
    "{{ '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'user' or (message.role == 'system' and not loop.first)"
    " or (message.role == 'assistant' and not message.tool_calls) %}"
    "{{ '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- elif message.role == 'assistant' %}{{ '<|im_start|>assistant' }}"
    "{% if message.content %}{{ '\\n' + message.content }}{% endif %}"
    "{% for call in message.tool_calls %}{% set call = call.function %}"
    '{{ \'\\n<tool_call>\\n{"name": "\' + call.name + \'", "arguments": \' }}{{ call.arguments | tojson }}'
    "{{ '}\\n</tool_call>' }}{% endfor %}{{ '<|im_end|>\\n' }}"
    "{%- elif message.role == 'tool' %}"
    "{% if loop.index0 == 0 or messages[loop.index0 - 1].role != 'tool' %}{{ '<|im_start|>user' }}{% endif %}"
    "{{ '\\n<tool_response>\\n' + message.content + '\\n</tool_response>' }}"
    "{% if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{ '<|im_end|>\\n' }}{% endif %}"
    "{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
LLAMA31_TEMPLATE = (  # Llama 3.1's shape: tools in the first user message, JSON calls, results in an ipython turn
    "{{- bos_token }}{%- if messages[0]['role'] == 'system' %}{%- set system_message = messages[0]['content'] %}"
    "{%- set messages = messages[1:] %}{%- else %}{%- set system_message = '' %}{%- endif %}"
    "{{- '<|start_header_id|>system<|end_header_id|>\\n\\n' + system_message + '<|eot_id|>' }}"
    "{%- if tools %}{%- set first = messages[0]['content'] %}{%- set messages = messages[1:] %}"
    '{{- \'<|start_header_id|>user<|end_header_id|>\\n\\nRespond with {"name": function name, '
    '"parameters": dictionary of arguments}.\\n\\n\' }}'
    "{%- for t in tools %}{{- t | tojson }}{{- '\\n\\n' }}{%- endfor %}{{- first + '<|eot_id|>' }}{%- endif %}"
    "{%- for message in messages %}"
    "{%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] + '<|eot_id|>' }}"
    "{%- elif 'tool_calls' in message %}{%- set call = message.tool_calls[0].function %}"
    '{{- \'<|start_header_id|>assistant<|end_header_id|>\\n\\n{"name": "\' + call.name + \'", "parameters": \' }}'
    "{{- call.arguments | tojson }}{{- '}<|eot_id|>' }}"
    "{%- else %}{{- '<|start_header_id|>ipython<|end_header_id|>\\n\\n' + message.content + '<|eot_id|>' }}"
    "{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}"
)
TEMPLATES = {
    "hermes": HERMES_TEMPLATE,
    "chatml": None,
    "smollm2": SMOLLM2_TEMPLATE,
    "llama3": LLAMA3_TEMPLATE,
    "tool_role": TOOL_ROLE_TEMPLATE,
}


def tokenizer_for(name: str):
    """A tiny byte-level tokenizer speaking template `name` (its special tokens added, EOS = its end of turn)."""
    from tokenizers import AddedToken

    from workbench.models import build_tokenizer, sample_texts

    tok = build_tokenizer(sample_texts(30), vocab_size=320)
    if name == "llama31":
        tok.chat_template = LLAMA31_TEMPLATE
        name = "llama3"
    if name == "llama3":
        specials = ["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
        tok.add_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
        tok.bos_token, tok.eos_token = "<|begin_of_text|>", "<|eot_id|>"
    if TEMPLATES.get(name) is not None and tok.chat_template != LLAMA31_TEMPLATE:
        tok.chat_template = TEMPLATES[name]
    return tok


def queue_policy(codec, replies: list[str]):
    """A policy that answers with `replies` in call order."""
    return ScriptedPolicy(lambda _context, _turn: replies.pop(0), codec=codec, name="queue")


def create(base_url: str, api_key: str, **kwargs):
    """One chat call through a real `openai` client (no retries), closed after it."""
    import openai

    with openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0) as client:
        return client.chat.completions.create(**kwargs)


def spread_reward(traj) -> dict[str, float]:
    """Rewards that differ between rollouts: the share of distinct tokens the model sampled."""
    ids = [t for s in traj.steps for t in s.completion_ids]
    return {"total": len(set(ids)) / max(len(ids), 1)}


def one_grpo_step(tmp_path, runner, tasks, **changes) -> int:
    """One real GRPO step of the tiny model on `runner`'s rollouts of `tasks` (2 per task), the TrainConfig
    `changes` applied (an estimator, LoRA); asserts the step ran with a finite loss and changed the weights
    (with LoRA: the adapter's, which start at 0). Returns num_generations. The runner is closed after."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from workbench.models import build_tiny_model, sample_texts
    from workbench.train.config import TrainConfig
    from workbench.train.trainer import WorkbenchGRPOTrainer

    path = build_tiny_model(tmp_path / "tiny", sample_texts(), vocab_size=400, seed=0)
    torch.manual_seed(0)
    cfg = TrainConfig(output_dir=str(tmp_path / "run"), num_generations=2, per_device_train_batch_size=4,
                      max_steps=1, learning_rate=1e-2, max_completion_length=96, **changes)  # fmt: skip
    model, tok = AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    try:
        trainer = WorkbenchGRPOTrainer(model, tok, tasks, episodes=runner, config=cfg, reward=spread_reward)
        result = trainer.train()
    finally:
        runner.close()
    assert trainer.state.global_step == 1 and torch.isfinite(torch.tensor(result.training_loss))
    if cfg.lora_r:
        assert any("lora_B" in k and v.abs().sum() > 0 for k, v in trainer.model.named_parameters())
    else:
        assert any(not torch.equal(before[k], v) for k, v in model.named_parameters())
    return cfg.num_generations
