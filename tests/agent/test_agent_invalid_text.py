"""Episodes whose text is not valid Unicode, end to end: real kernels, the gateway and the store.

Every episode ends with a stored trajectory; text with lone surrogates is sanitised (U+FFFD) and
flagged; a store that refuses a write never stalls the batch.
"""

from __future__ import annotations

import datetime
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.agent import AgentConfig, NBAgent
from workbench.kernel import AsyncKernelPool
from workbench.kernel.sync import run_sync
from workbench.policies import ScriptedPolicy
from workbench.safetext import REPLACEMENT, has_surrogates, safe_text
from workbench.store import Store
from workbench.trajectory import Task

pytestmark = pytest.mark.slow

any_text = st.lists(st.one_of(st.characters(), st.characters(categories=["Cs"])), max_size=40).map("".join)
SUBMIT = "<think>done</think>\n<code>\nsubmit_final_answer('ok')\n</code>"
FORGE = """<think>forge</think>
<code>
import gc, json, socket
from workbench.runtime.client import GatewayClient
c = next(o for o in gc.get_objects() if isinstance(o, GatewayClient))
line = ('{"id": 1, "op": "call", "tool": "submit_final_answer", "args": ["\\\\ud800 forged"], '
        '"kwargs": {}, "token": %s}\\n') % json.dumps(c.token)
s = socket.socket(socket.AF_UNIX); s.connect(c.socket_path); s.sendall(line.encode()); print(s.recv(65536)); s.close()
</code>"""


@pytest.fixture(scope="module")
def pool():
    p = AsyncKernelPool(2, startup_code="import workbench.runtime")
    run_sync(p.start())
    yield p
    run_sync(p.close())


def task(i: int = 0) -> Task:
    return Task(id=f"t{i}", question=f"question {i}?", golden_answers=["ok"], metadata={"hops": 1})


def agent(turns: list[str], pool, store=None, **config) -> NBAgent:
    cfg = AgentConfig(**{"max_steps": 4, **config})
    return NBAgent(ScriptedPolicy.from_turns(turns), pool=pool, store=store, config=cfg, concurrency=2)


def all_text(traj) -> str:
    return json.dumps(traj.to_dict(), ensure_ascii=False)


# -- a forged final answer with a lone surrogate ---------------------------------------------------
def test_forged_final_answer_through_the_gateway_is_stored(pool, tmp_path):
    with Store(tmp_path / "run") as store:
        [traj] = agent([FORGE, SUBMIT], pool, store).run([task()], progress=False)
        assert traj.termination == "submitted", (traj.termination, traj.error)
        assert traj.final_answer == f"{REPLACEMENT} forged"
        [stored] = list(store.iter_trajectories())
    assert stored.id == traj.id and stored.final_answer == f"{REPLACEMENT} forged"
    assert not has_surrogates(all_text(stored))


# -- kernel output and notepad values with lone surrogates -----------------------------------------
def test_kernel_output_with_surrogates_is_shown_and_tokenized(pool, tmp_path):
    turn = "<think>t</think>\n<code>\nprint('\\udced\\udca0\\udc80 and \\udcff')\n</code>"
    with Store(tmp_path / "run") as store:
        [traj] = agent([turn, SUBMIT], pool, store).run([task()], progress=False)
        assert len(store) == 1
    assert traj.termination == "submitted", (traj.termination, traj.error)
    first = traj.steps[0]
    assert first.observation["stdout"] == f"{REPLACEMENT * 3} and {REPLACEMENT}\n"
    assert f"{REPLACEMENT * 3} and {REPLACEMENT}" in first.observation_text
    assert first.observation_ids  # the observation was encoded for the model


def test_notepad_values_with_surrogates_come_back_safe(pool):
    turn = (
        "<think>t</think>\n<code>\nnotepad.add_fact('fact \\ud800')\nnotepad.add_todo('todo \\udcff')\n"
        "notepad.write_draft('draft \\udced')\nnotepad._facts.append('raw \\udc80')\n</code>"
    )
    [traj] = agent([turn, SUBMIT], pool).run([task()], progress=False)
    assert traj.termination == "submitted", (traj.termination, traj.error)
    pad = traj.steps[0].notepad
    assert pad["facts"] == [f"fact {REPLACEMENT}", f"raw {REPLACEMENT}"]
    assert pad["todos"][0]["text"] == f"todo {REPLACEMENT}" and pad["draft"] == f"draft {REPLACEMENT}"
    assert f"fact {REPLACEMENT}" in traj.steps[0].observation_text
    assert not has_surrogates(all_text(traj))


# -- model-written code with a lone surrogate ------------------------------------------------------
def test_model_code_with_a_lone_surrogate_is_sent_and_recorded_as_sent(pool, tmp_path):
    turn = "<think>t \ud800</think>\n<code>\nprint('\ud800 sent')\n</code>"  # real surrogates
    with Store(tmp_path / "run") as store:
        [traj] = agent([turn, SUBMIT], pool, store).run([task()], progress=False)
        [stored] = list(store.iter_trajectories())
    assert traj.termination == "submitted", (traj.termination, traj.error)
    for t in (traj, stored):
        assert t.steps[0].code.strip() == f"print('{REPLACEMENT} sent')"  # what the kernel ran
        assert t.steps[0].observation["stdout"] == f"{REPLACEMENT} sent\n"
        assert t.steps[0].think == f"t {REPLACEMENT}"
        assert t.metadata["sanitized"] is True
        assert not has_surrogates(all_text(t))


# -- store failures never stall the batch ----------------------------------------------------------
def test_a_trajectory_the_store_refuses_is_recorded_as_an_error_and_stored_reduced(pool, tmp_path):
    odd = Task(id="odd", question="q?", metadata={"hops": 1, "when": datetime.date(2024, 1, 2)})
    with Store(tmp_path / "run") as store:
        trajs = agent([SUBMIT], pool, store).run([odd, task(1)], progress=False)
        stored = {t.id: t for t in store.iter_trajectories()}
    assert len(trajs) == 2 and set(stored) == {t.id for t in trajs}
    bad, good = trajs
    assert bad.termination == "error" and "JSON cannot represent" in bad.error
    assert bad.metadata["termination_before_store_error"] == "submitted"
    assert stored[bad.id].termination == "error" and stored[bad.id].final_answer == "ok"
    assert stored[bad.id].task.metadata["when"] == repr(datetime.date(2024, 1, 2))
    assert good.termination == "submitted" and stored[good.id].termination == "submitted"


def test_a_store_that_fails_every_write_still_lets_the_run_finish(pool, tmp_path):
    store = Store(tmp_path / "run")
    store.close()  # every write now raises StoreError
    trajs = agent([SUBMIT], pool, store).run([task(i) for i in range(3)], progress=False)
    assert [t.task.id for t in trajs] == ["t0", "t1", "t2"]
    for traj in trajs:
        assert traj.termination == "error" and "closed" in traj.metadata["store_error"]
        assert traj.final_answer == "ok"


def test_run_one_records_a_pool_that_cannot_start_instead_of_raising(tmp_path):
    config = AgentConfig(profile=str(tmp_path / "missing.toml"))  # no such sandbox profile
    with Store(tmp_path / "run") as store:
        agent_ = NBAgent(ScriptedPolicy.from_turns([SUBMIT]), store=store, config=config)
        traj = run_sync(agent_.run_one(task(0)))
        assert traj.termination == "error" and "missing.toml" in traj.error
        assert store.get(traj.id).termination == "error"


# -- property: arbitrary model output --------------------------------------------------------------
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=any_text)
def test_any_model_output_ends_in_a_stored_safe_trajectory(pool, tmp_path_factory, text):
    line = "".join(c for c in text if c != "\0" and len(f"a{c}a".splitlines()) == 1)
    turn = (
        f"<think>{text}</think>\n<code>\n_t = {text!a}  # {line}\nprint(_t)\n"
        f"if _t.strip(): notepad.add_fact(_t)\nsubmit_final_answer(_t)\n</code>"
    )
    with Store(tmp_path_factory.mktemp("run")) as store:
        [traj] = agent([turn], pool, store, max_steps=2).run([task()], progress=False)
        [stored] = list(store.iter_trajectories())
    assert stored.to_dict() == traj.to_dict()
    assert not has_surrogates(all_text(stored))
    assert stored.steps[0].raw == safe_text(turn)
    assert traj.termination == "submitted", (traj.termination, traj.error)
    assert stored.steps[0].observation["stdout"].startswith(safe_text(text) + "\n")
    assert stored.final_answer == safe_text(text)
    if safe_text(text).strip():
        assert stored.steps[0].notepad["facts"] == [safe_text(text).strip()]
