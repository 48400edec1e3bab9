"""Two roles' LoRA adapters on one SmolLM2: generation through transformers vs one vLLM engine serving both.

    .venv/bin/python bench/bench_adapters.py [--rows 8] [--tokens 64] [--context 600]

What `python -m workbench.demo --model smollm2 --proposer learned` generates with: one frozen
SmolLM2-135M-Instruct (the embedded GGUF, converted once) with a rank-16 adapter per role
(`workbench.train.lora.RoleAdapters`, each role's lora_B drawn at random so the roles differ). The
same batches, `--rows` prompts per role (a chat-formatted NB-Agent question) of `--tokens` sampled tokens
each (temperature 1, seeded, no stop), run through each role's `AdapterPolicy` (transformers, the baseline)
and then each role's `AdapterVLLMPolicy` (one in-process vLLM engine, `workbench.policies.vllm_adapters`).
Figures: tokens per second of each, their ratio (printed as `vllm / transformers tokens/s: X`), and the
cost of serving a stepped adapter (the save plus vLLM's load at the next batch).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import add_smoke_flag, figure, record, smoke_skip

ROLES = ("solver", "proposer")


def role_adapters(base: Path):
    import torch

    from workbench.models.load import load_causal_lm
    from workbench.train.lora import RoleAdapters

    model, tok, _ = load_causal_lm(base, device="cpu", dtype="float32")
    adapters = RoleAdapters(model, ROLES, rank=16, seed=0)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in adapters.model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.01)
    return adapters, tok


def tokens_per_second(policies: dict, prompts: list[list[int]], tokens: int) -> float:
    """Each role's batch in turn (as the demo's roles take turns); generated tokens over the wall time."""
    from workbench.policies import SamplingParams, generate

    params = SamplingParams(max_new_tokens=tokens, temperature=1.0, seed=0)
    t = time.perf_counter()
    made = sum(len(o.token_ids) for role in ROLES for o in generate(policies[role], prompts, params))
    return made / (time.perf_counter() - t)


def prompts_for(tok, rows: int, context: int) -> list[list[int]]:
    """`rows` chat prompts of about `context` tokens: a question and a notebook's earlier output."""
    from workbench.policies import TokenizerCodec

    codec = TokenizerCodec(tok)
    question = "Which river flows through the city where the author of the novel was born? Use search()."
    output = "<output>\n[1] Lyon: a city in France on the Rhone. [2] Rhone: a river of Europe.\n</output>\n"
    words = len(tok(output)["input_ids"])
    history = output * max(0, context // words - 1)
    return [codec.chat([{"role": "user", "content": f"{question} ({i})\n{history}"}]) for i in range(rows)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=8, help="prompts per role and batch")
    ap.add_argument("--tokens", type=int, default=64, help="sampled tokens per row")
    ap.add_argument("--context", type=int, default=600, help="prompt tokens per row (an episode's later turn)")
    add_smoke_flag(ap)
    args = ap.parse_args()
    if args.smoke:
        from workbench.models.tiny import build_tiny_model, sample_texts

        base = build_tiny_model(Path(tempfile.mkdtemp()) / "m", sample_texts(20), vocab_size=300, seed=0)
        args.rows, args.tokens = 2, 4
    else:
        from workbench.models import add_smollm2

        base = add_smollm2()
    adapters, tok = role_adapters(base)
    prompts = prompts_for(tok, args.rows, 40 if args.smoke else args.context)
    size = f"{len(prompts[0])}-token prompts"
    print(f"{args.rows} rows per role x {args.tokens} tokens after {size}, 2 roles, rank-16 adapters on {base.name}")
    hf = tokens_per_second({r: adapters.policy(r, tok) for r in ROLES}, prompts, args.tokens)
    figure("transformers (AdapterPolicy)", hf, "tok/s")
    if args.smoke:
        smoke_skip("the vLLM engine", "its start-up alone takes a minute on a CPU; run without --smoke to time it")
        return
    from workbench.policies.vllm_adapters import AdapterVLLMPolicy, adapter_engine

    t = time.perf_counter()
    llm = adapter_engine(base, rank=16)
    figure("vLLM engine start (LoRA enabled)", time.perf_counter() - t, "s")
    served = {r: AdapterVLLMPolicy(llm, adapters, r, Path(tempfile.mkdtemp())) for r in ROLES}
    tokens_per_second(served, prompts[:1], 2)  # first load of each adapter, outside the timing
    vl = tokens_per_second(served, prompts, args.tokens)
    figure("vLLM, both adapters served", vl, "tok/s", baseline=hf)
    print(f"vllm / transformers tokens/s: {vl / hf:.2f}")
    record("vllm / transformers tokens/s", vl / hf, "x")
    from workbench.policies import SamplingParams, generate

    adapters.versions["solver"] += 1  # as an optimizer step on the solver's adapter does
    t = time.perf_counter()
    generate(served["solver"], prompts[:1], SamplingParams(max_new_tokens=1, temperature=1.0, seed=0))
    figure("re-serve a stepped adapter (save + load + 1 token)", time.perf_counter() - t, "s")


if __name__ == "__main__":
    main()
