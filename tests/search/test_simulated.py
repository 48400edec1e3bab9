import asyncio

import pytest

from workbench.errors import ConfigError, PolicyError
from workbench.policies.base import ByteCodec, Completion, SamplingParams
from workbench.search import SimulatedSearch, format_hits, noise_probability, parse_documents

try:
    from workbench.policies import ScriptedPolicy
except ImportError:  # the policies package is optional for these tests
    ScriptedPolicy = None


class EchoPolicy:
    """A scripted backend: reads the prompt, writes five short documents saying which kind."""

    name = "echo"

    def __init__(self, fn):
        self.codec = ByteCodec()
        self.fn = fn

    async def generate(self, prompts, params):
        texts = [self.fn(self.codec.decode(p), 0) for p in prompts]
        return [Completion(text=t, token_ids=self.codec.encode(t)) for t in texts]

    def describe(self):
        return {"backend": "echo"}


def simulator(context: str, turn: int) -> str:
    kind = "noisy" if "Noisy Output:" in context else "useful"
    query = context.split("Query: ")[1].split("\n")[0]
    return "\n".join(f"Doc {i}: (Title: {query} {i}) A {kind} passage." for i in range(1, 6))


def make_policy(fn=simulator):
    return ScriptedPolicy(fn) if ScriptedPolicy is not None else EchoPolicy(fn)


def test_curriculum_formula_values():
    ps, pe, m = 0.1, 0.9, 200
    assert noise_probability(0, m, ps, pe) == pytest.approx(0.1)
    assert noise_probability(m // 2, m, ps, pe) == pytest.approx(ps + (4**0.5 - 1) / 3 * (pe - ps))  # 0.3667
    assert noise_probability(m, m, ps, pe) == pytest.approx(0.9)
    assert noise_probability(5 * m, m, ps, pe) == pytest.approx(0.9)  # held at p_e past the end
    assert noise_probability(50, 100, 0.0, 1.0, b=1) == pytest.approx(0.5)  # linear limit
    with pytest.raises(ConfigError):
        noise_probability(0, 0, 0, 1)
    with pytest.raises(ConfigError, match="probability"):
        SimulatedSearch(make_policy(), p_start=1.5, total_steps=10)


def test_prompt_carries_question_answer_and_kind():
    sim = SimulatedSearch(make_policy(), total_steps=10)
    pr = sim.prompt("Krege founding", "When was Krege Society founded?", "2008", noisy=True, top_k=5)
    assert pr.startswith("You are the Google search engine.\nGiven a query, you need to generate five noisy documents")
    assert 'question: "When was Krege Society founded?" whose answer is 2008.' in pr
    assert pr.endswith("Query: Krege founding\nNoisy Output:")
    assert "useful information" in sim.prompt("q", "Q", "A", noisy=False, top_k=3)


@pytest.mark.parametrize("step,expected", [(0, 0.1), (50, 0.1 + (2 - 1) / 3 * 0.8), (100, 0.9)])
def test_noisy_fraction_follows_curriculum(step, expected):
    sim = SimulatedSearch(make_policy(), p_start=0.1, p_end=0.9, total_steps=100, seed=1)
    sim.step = step
    results = sim.retrieve([f"query {i}" for i in range(800)], question="Q?", answer="A")
    assert sim.calls[-1].p == pytest.approx(expected)
    frac = sim.noisy_fraction()
    assert abs(frac - expected) < 0.05, (frac, expected)
    # The flag matches what the model was asked for and what came back.
    for hits, call in zip(results, sim.calls, strict=True):
        assert len(hits) == 5 and all(h.noisy == call.noisy for h in hits)
        assert all(("noisy" in h.text) == call.noisy for h in hits)
        assert call.parsed_ok and hits[0].title == f"{call.query} 1"


def test_extremes_and_seeded_reproducibility():
    sim = SimulatedSearch(make_policy(), p_start=0.0, p_end=1.0, total_steps=10, seed=3)
    assert not any(h.noisy for h in sim.search("q", question="Q", answer="A"))
    sim.step = 10
    assert all(h.noisy for h in sim.search("q", question="Q", answer="A"))
    a = SimulatedSearch(make_policy(), p_start=0.5, p_end=0.5, total_steps=10, seed=7)
    b = SimulatedSearch(make_policy(), p_start=0.5, p_end=0.5, total_steps=10, seed=7)
    qs = [str(i) for i in range(50)]
    assert [h[0].noisy for h in a.retrieve(qs)] == [h[0].noisy for h in b.retrieve(qs)]


def test_for_task_view_and_formatting():
    sim = SimulatedSearch(make_policy(), total_steps=10)
    tool = sim.for_task("Who founded Varnholt?", "Ada Brell")
    hits = tool.search("Varnholt founder", top_k=2)
    assert len(hits) == 2 and sim.calls[-1].question == "Who founded Varnholt?"
    assert format_hits(hits).startswith("Doc 1 (Title: Varnholt founder 1)\nA useful passage.")
    assert asyncio.run(tool.aretrieve(["x"], top_k=1))[0][0].id.startswith("sim-")


def test_sync_wrapper_works_inside_a_running_loop():
    sim = SimulatedSearch(make_policy(), total_steps=10)

    async def inside():
        return sim.search("q", question="Q", answer="A")

    assert len(asyncio.run(inside())) == 5


def test_parse_documents_formats_and_fallbacks():
    docs, ok = parse_documents("**Doc 1:** alpha beta\n\n\n**Doc 2:** gamma\nDoc 3. delta", 5)
    assert ok and docs == [("", "alpha beta"), ("", "gamma"), ("", "delta")]
    docs, ok = parse_documents("1. Title: T1\nbody one\n2) body two\n3. three", 2)
    assert ok and docs == [("T1", "body one"), ("", "body two")]
    docs, ok = parse_documents("first paragraph\n\nsecond paragraph", 5)
    assert not ok and [d[1] for d in docs] == ["first paragraph", "second paragraph"]
    docs, ok = parse_documents("just one rambling answer", 5)
    assert not ok and docs == [("", "just one rambling answer")]
    assert parse_documents("   ", 5) == ([("", "No results found.")], False)


def test_malformed_model_output_is_logged_and_falls_back():
    sim = SimulatedSearch(make_policy(lambda c, t: ""), total_steps=10)
    hits = sim.search("q", question="Q", answer="A")
    assert [h.text for h in hits] == ["No results found."] and not sim.calls[-1].parsed_ok


def test_policy_returning_wrong_count_is_a_policy_error():
    class Short(EchoPolicy):
        async def generate(self, prompts, params):
            return []

    sim = SimulatedSearch(Short(simulator), total_steps=10, sampling=SamplingParams(max_new_tokens=50))
    with pytest.raises(PolicyError, match="0 completions for 1"):
        sim.search("q")
