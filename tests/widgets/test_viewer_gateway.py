"""The TrajectoryViewer on real model-gateway rollouts: each call a turn with its model, tool calls and
policy version; the mask (1 exactly on the sampled ids); a forced fork shown at its segment boundary
with its reason and counted in the list; an auxiliary call listed as never trained on. The rollouts
are played by a real `openai` client over loopback against a `ModelGateway` in front of a scripted
policy on the demo's ChatML tokenizer; the last test draws the viewer's own JS in Chromium (the
offline report runs it unchanged)."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.gateway import AUXILIARY_HEADER, ModelGateway
from workbench.policies import ScriptedPolicy
from workbench.policies.base import Completion, SamplingParams
from workbench.policies.codec import TokenizerCodec
from workbench.store import Store
from workbench.trajectory import Step, Task, Trajectory
from workbench.widgets import TrajectoryViewer

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "python",
            "description": "Run Python code and return what it prints.",
            "parameters": {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]},
        },
    }
]
TOOL_REPLY = 'Let me compute it.\n<tool_call>\n{"name": "python", "arguments": {"code": "print(6 * 7)"}}\n</tool_call>'
REPLIES = [TOOL_REPLY, "The answer is 42.", "Still 42.", "Six sevens", TOOL_REPLY, "The answer is 42."]


class VersionedPolicy(ScriptedPolicy):
    """Replies in call order, each stamped with `version` (as a trainer publishing weights would)."""

    version = 0

    def complete(self, prompt, params: SamplingParams) -> Completion:
        out = super().complete(prompt, params)
        out.policy_version = self.version
        return out


@pytest.fixture(scope="module")
def tokenizer():
    from workbench.models import build_tokenizer, sample_texts

    return build_tokenizer(sample_texts(30), vocab_size=320)


def play(gw: ModelGateway, policy: VersionedPolicy, fork: bool) -> str:
    """A harness the way its users write it: a tool call, its result, an answer; with `fork`, an edited
    question re-sent (a new segment) after a weight update, and a title call tagged auxiliary."""
    with gw.rollout({"question": "What is 6 * 7?", "golden_answers": ["42"]}) as r:
        client = r.sync_client
        messages: list[dict] = [{"role": "user", "content": "What is 6 * 7?"}]
        first = client.chat.completions.create(model="my-agent-model", messages=messages, tools=TOOLS)
        call = first.choices[0].message
        messages += [
            call.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.tool_calls[0].id, "content": "42"},
        ]
        second = client.chat.completions.create(model="my-agent-model", messages=messages, tools=TOOLS)
        messages += [{"role": "assistant", "content": second.choices[0].message.content}]
        if fork:
            policy.version = 1
            edited = [{"role": "user", "content": "What is six times seven?"}, *messages[1:]]
            client.chat.completions.create(
                model="my-agent-model", messages=[*edited, {"role": "user", "content": "Sure?"}], tools=TOOLS
            )
            client.chat.completions.create(
                model="title-model",
                messages=[{"role": "user", "content": "A title for: 6 * 7"}],
                extra_headers={AUXILIARY_HEADER: "1"},
            )
        r.finish("42")
    return r.id


def gateway_run(run_dir: Path, tokenizer) -> dict[str, str]:
    """A run of two harness rollouts (one forked) beside an NB-Agent trajectory."""
    replies = list(REPLIES)
    policy = VersionedPolicy(lambda _c, _t: replies.pop(0), codec=TokenizerCodec(tokenizer), name="queue")
    with Store(run_dir) as store:
        agent_turn = Step(0, "<code>print(6 * 7)</code>", code="print(6 * 7)", completion_ids=[1, 2])
        store.write(Trajectory(task=Task("t", "What is 6 * 7?"), role="solver", steps=[agent_turn]))
        with ModelGateway(policy, store=store) as gw:
            return {"forked": play(gw, policy, fork=True), "plain": play(gw, policy, fork=False)}


@pytest.fixture(scope="module")
def run(tmp_path_factory, tokenizer) -> tuple[Path, dict[str, str]]:
    run_dir = tmp_path_factory.mktemp("gateway") / "run"
    tokenizer.save_pretrained(run_dir.parent / "model")  # beside the run, as a trained model's would be
    return run_dir, gateway_run(run_dir, tokenizer)


def test_each_call_is_a_turn_with_its_model_tool_calls_and_version(run, tokenizer):
    run_dir, ids = run
    viewer = TrajectoryViewer(run_dir, tokenizer=tokenizer)
    viewer.select(ids["forked"])
    d = viewer.detail
    g = d["gateway"]
    assert (g["calls"], g["trained_calls"], g["tool_protocol"], g["versions"]) == (4, 3, "text", [0, 1])
    first, second, forked = (s["call"] for s in d["steps"])
    assert first["model"] == "my-agent-model" and first["number"] == 1 and first["version"] == 0
    assert first["tool_calls"] == [{"name": "python", "args": '{"code": "print(6 * 7)"}'}]
    assert "<tool_response>\n42\n</tool_response>" in first["added"]  # the tool result, as the model saw it
    assert second["tool_calls"] == [] and second["parent"] == 0 and not second["segment_start"]
    assert forked["version"] == 1 and d["steps"][2]["version"] == 1
    assert first["delivered"] and first["sampling"]["applied"]["max_tokens"] == 1024
    assert d["steps"][0]["raw"]["text"] == TOOL_REPLY  # the sampled text, tool-call block included


def test_the_mask_is_one_exactly_on_the_sampled_ids(run, tokenizer):
    run_dir, ids = run
    viewer = TrajectoryViewer(run_dir, tokenizer=tokenizer)
    traj = viewer.select(ids["forked"])
    steps = viewer.detail["steps"]
    for s, step in zip(steps, traj.steps, strict=True):
        sampled = [i for i, m in zip(s["tokens"]["ids"], s["tokens"]["mask"], strict=True) if m == 1]
        assert sampled == step.completion_ids and len(sampled) > 0
        assert s["tokens"]["mask"].count(0) == len(step.observation_ids)
    # the viewer's turns, segment by segment, give the rows training gets (the last turn's framing aside)
    rows = traj.segments()
    masks = [[m for s in steps[seg["first_step"] : seg["last_step"] + 1] for m in s["tokens"]["mask"]]
             for seg in viewer.detail["gateway"]["segments"]]  # fmt: skip
    assert [m[: len(r["env_mask"])] for m, r in zip(masks, rows, strict=True)] == [r["env_mask"] for r in rows]


def test_a_fork_shows_its_segment_boundary_and_reason(run, tokenizer):
    run_dir, ids = run
    viewer = TrajectoryViewer(run_dir, tokenizer=tokenizer)
    viewer.select(ids["forked"])
    g = viewer.detail["gateway"]
    assert g["forks"] == {"history_edited": 1} and g["fork_count"] == 1
    assert [(s["first_step"], s["last_step"], s["fork"]) for s in g["segments"]] == [
        (0, 1, None),
        (2, 2, "history_edited"),
    ]
    assert all(s["prompt_tokens"] > 0 and s["sampled_tokens"] > 0 for s in g["segments"])
    first, _, forked = (s["call"] for s in viewer.detail["steps"])
    assert (first["segment_start"], first["segment"], first["fork"]) == (True, 0, None)
    assert (forked["segment_start"], forked["segment"], forked["segments"]) == (True, 1, 2)
    assert forked["fork"] == "history_edited" and "An earlier message differs" in forked["fork_note"]


def test_an_auxiliary_call_is_listed_as_never_trained(run, tokenizer):
    run_dir, ids = run
    viewer = TrajectoryViewer(run_dir)  # decodes with the tokenizer it finds beside the run
    viewer.select(ids["forked"])
    (aux,) = viewer.detail["gateway"]["auxiliary"]
    assert aux["model"] == "title-model" and aux["number"] == 4 and aux["sampled_tokens"] > 0
    assert aux["text"] == "Six sevens<|im_end|>" and aux["prompt_tokens"] > 0  # the sampled ids, decoded
    assert len(viewer.detail["steps"]) == 3  # no turn for it: nothing of it is trained


def test_the_list_counts_forks_per_rollout(run):
    run_dir, ids = run
    viewer = TrajectoryViewer(run_dir)
    forks = dict(zip(viewer.rows.id, viewer.rows.forks, strict=True))
    assert forks[ids["forked"]] == 1 and forks[ids["plain"]] == 0
    assert int(viewer.rows.forks.isna().sum()) == 1  # the NB-Agent trajectory: no gateway, no count
    assert dict(zip(viewer.table["id"], viewer.table["forks"], strict=True))[ids["forked"]] == 1
    viewer.set_filters(sort="-forks")
    assert viewer.rows.id[0] == ids["forked"]
    plain = TrajectoryViewer(run_dir)
    plain.select(ids["plain"])
    assert plain.detail["gateway"]["segments"][0]["fork"] is None and plain.detail["gateway"]["auxiliary"] == []


def test_a_trajectory_without_a_gateway_has_no_calls(run):
    run_dir, _ = run
    viewer = TrajectoryViewer(run_dir)
    viewer.set_filters(role="solver")
    assert viewer.detail["gateway"] is None and viewer.detail["steps"][0]["call"] is None


def run_tokens(run_dir: Path, traj_id: str) -> list[list[int]]:
    """Each step's sampled ids, as stored."""
    return [s.completion_ids for s in Store.open_readonly(run_dir).get(traj_id).steps]


@pytest.mark.browser
@pytest.mark.slow
def test_the_viewer_draws_calls_forks_and_auxiliary_calls_in_chromium(run, tokenizer, tmp_path):
    from browser.browser_lab import CHROMIUM, CHROMIUM_ARGS, require_chromium
    from playwright.sync_api import sync_playwright

    from workbench.widgets import write_report

    require_chromium()
    run_dir, ids = run
    page_path = write_report(run_dir, tmp_path / "report.html")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(page_path.as_uri())
            viewer = page.locator(".wb-viewer")
            viewer.locator(".wb-row").first.wait_for(timeout=30_000)
            assert viewer.locator(".wb-list-head [data-sort=forks]").count() == 1
            row = viewer.locator(f".wb-row[data-id='{ids['forked']}']")
            assert row.locator(".wb-c-forks").inner_text() == "1"
            row.click()
            page.wait_for_function(
                "id => document.querySelector('.wb-viewer').dataset.renderedId === id", arg=ids["forked"]
            )
            header = viewer.locator(".wb-gateway-line").inner_text()
            assert "4 calls: 3 trained, 1 auxiliary (not trained)" in header and "2 segments" in header
            assert "1 fork (history_edited 1)" in header and "policy versions: 0, 1" in header
            cards = viewer.locator(".wb-turn.wb-call")
            assert cards.count() == 3
            first = cards.nth(0).inner_text()
            assert "segment 1 of 2 begins" in first and "model my-agent-model" in first and "policy v0" in first
            assert 'python({"code": "print(6 * 7)"})' in first and "<tool_response>" in first
            assert "mask: " in first and "sampled ids trained (1)" in first
            fork = cards.nth(2).locator(".wb-fork")
            assert fork.get_attribute("data-fork") == "history_edited"
            assert "segment 2 of 2 begins here" in fork.inner_text() and "policy v1" in cards.nth(2).inner_text()
            assert viewer.locator(".wb-strip-btn.wb-strip-fork").count() == 1
            cards.nth(2).locator(".wb-turn-head").click()  # picks the turn
            viewer.locator(".wb-tab[data-tab=tokens]").click()
            tokens = viewer.locator(".wb-tokens-view")
            assert "segment 2 of 2 starts here (fork: history_edited)" in tokens.locator(".wb-call-mask").inner_text()
            sampled = run_tokens(run_dir, ids["forked"])[2]
            shown = tokens.locator(".wb-token-ids .wb-tok-trained")  # mask 1: the sampled ids, in order
            assert [int(i) for i in shown.evaluate_all("els => els.map(e => e.dataset.id)")] == sampled
            viewer.locator(".wb-tab[data-tab=turns]").click()
            aux = viewer.locator(".wb-auxiliary").inner_text()
            assert "auxiliary calls (1): recorded, never trained on" in aux and "model title-model" in aux
            assert "Six sevens" in aux and "not trained" in aux
        finally:
            browser.close()
