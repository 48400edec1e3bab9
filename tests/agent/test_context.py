"""The context watcher trims to fit, keeps task and notepad, and never exceeds the window."""

from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.agent.context import ContextWatcher

TASK_AND_NOTEPAD = [7, 7, 7]


def _hard_opening():
    return list(TASK_AND_NOTEPAD)


@settings(max_examples=200, deadline=None)
@given(
    mode=st.sampled_from(["hard", "soft"]),
    turns=st.lists(st.tuples(st.integers(1, 60), st.integers(0, 60)), min_size=1, max_size=30),
)
def test_never_exceeds_window_and_keeps_notepad(mode, turns):
    ctx = ContextWatcher([1] * 20, max_context_tokens=200, max_new_tokens=40, trim=mode)
    for completion, observation in turns:
        if ctx.needs_trim(16):
            assert ctx.trim_to_fit(16, _hard_opening)
            if ctx.opening_ids == TASK_AND_NOTEPAD:
                assert ctx.turns == []  # hard trim: only task + notepad remain
            else:
                assert ctx.turns  # soft trim keeps at least the newest turn (it carries the notepad)
        room = ctx.room_for_generation()
        assert room >= 16
        completion = min(completion, room)
        ctx.append([2] * completion, [3] * observation)
        # generation is capped by room, so only the observation may push past the window; it is trimmed
        # before the next turn
        assert len(ctx) - observation <= ctx.max_context_tokens


def test_soft_drops_oldest_first():
    ctx = ContextWatcher([1] * 10, max_context_tokens=90, max_new_tokens=30, trim="soft")
    for marker in (4, 5, 6):
        ctx.append([marker] * 10, [marker] * 10)
    assert ctx.needs_trim(30)
    assert ctx.trim_to_fit(30, _hard_opening)
    ids = ctx.context_ids
    assert 4 not in ids and 6 in ids and ids[:10] == [1] * 10


def test_none_mode_refuses_to_trim():
    ctx = ContextWatcher([1] * 90, max_context_tokens=100, max_new_tokens=30, trim="none")
    assert ctx.needs_trim(16) and not ctx.trim_to_fit(16, _hard_opening)


def test_hard_trim_fails_when_notepad_alone_overflows():
    ctx = ContextWatcher([1] * 90, max_context_tokens=100, max_new_tokens=30, trim="hard")
    assert not ctx.trim_to_fit(16, lambda: [9] * 95)


# -- the notepad block: one tail segment, replaced each turn ---------------------------------------


def test_the_notepad_tail_is_replaced_not_stacked():
    ctx = ContextWatcher([1] * 5, max_context_tokens=1000, max_new_tokens=30)
    assert ctx.prompt_to_record() == [1] * 5 and ctx.prompt_to_record() is None
    ctx.append([2], [3], [40])
    assert ctx.context_ids == [1] * 5 + [2, 3, 40] and len(ctx) == 8
    assert ctx.prompt_to_record() is None  # the first notepad only extends the context
    ctx.append([4], [5], [41])
    assert ctx.context_ids == [1] * 5 + [2, 3, 4, 5, 41]  # the old block left, the new one ends it
    assert ctx.prompt_to_record() == ctx.context_ids  # so the next turn's prompt is recorded whole
    ctx.append([6], [7])
    assert ctx.context_ids[-2:] == [6, 7] and ctx.prompt_to_record() is not None
    ctx.append([8], [9])
    assert ctx.prompt_to_record() is None  # no notepad moved: the context only grew


def test_kept_notepads_stay_where_they_were_shown():
    """keep_notepads: each block stays in its observation, so the context only grows and only the first
    turn records a prompt."""
    ctx = ContextWatcher([1] * 5, max_context_tokens=1000, max_new_tokens=30, keep_notepads=True)
    assert ctx.prompt_to_record() == [1] * 5
    ctx.append([2], [3], [40], [9])
    ctx.append([4], [5], [41], [9])
    assert ctx.context_ids == [1] * 5 + [2, 3, 40, 9, 4, 5, 41, 9] and len(ctx) == 13
    assert ctx.prompt_to_record() is None  # nothing left the context
    hard = ContextWatcher([1] * 10, max_context_tokens=60, max_new_tokens=30, keep_notepads=True)
    hard.append([4] * 30, [4] * 5, [44] * 3)
    assert hard.trim_to_fit(20, _hard_opening) and hard.context_ids == TASK_AND_NOTEPAD + [44] * 3
    hard.append([5], [5], [45] * 3)  # the block shown with the fresh opening stays in it
    assert hard.context_ids == TASK_AND_NOTEPAD + [44] * 3 + [5, 5] + [45] * 3


def test_trims_keep_one_notepad():
    soft = ContextWatcher([1] * 10, max_context_tokens=60, max_new_tokens=30, trim="soft")
    for marker in (4, 5):
        soft.append([marker] * 10, [marker] * 5, [40 + marker] * 3)
    assert soft.trim_to_fit(20, _hard_opening)
    assert soft.context_ids == [1] * 10 + [5] * 15 + [45] * 3
    hard = ContextWatcher([1] * 10, max_context_tokens=60, max_new_tokens=30, trim="hard")
    hard.append([4] * 30, [4] * 5, [44] * 3)
    assert hard.trim_to_fit(20, _hard_opening)
    assert hard.context_ids == TASK_AND_NOTEPAD + [44] * 3  # a fresh opening, then the notepad block


@settings(max_examples=300, deadline=None)
@given(
    mode=st.sampled_from(["hard", "soft", "none"]),
    turns=st.lists(st.tuples(st.integers(1, 40), st.integers(0, 30), st.integers(0, 12)), min_size=1, max_size=25),
    keep=st.booleans(),
)
def test_recorded_steps_rebuild_every_context_the_model_saw(mode, turns, keep):
    """Token bookkeeping: each training sample's prompt plus the tokens before a turn is exactly that
    turn's context, the turn's own tokens carry mask 1, and a context holds only the newest notepad
    (with keep_notepads: an untrimmed episode is one sample)."""
    from workbench.train.rollout import trajectory_samples
    from workbench.trajectory import Step, Task, Trajectory

    ctx = ContextWatcher([1] * 20, max_context_tokens=240, max_new_tokens=40, trim=mode, keep_notepads=keep)
    traj, seen = Trajectory(task=Task(id="t", question="q")), []
    for i, (completion, observation, notepad) in enumerate(turns):
        if ctx.needs_trim(16) and not ctx.trim_to_fit(16, _hard_opening):
            break
        prompt = ctx.prompt_to_record()
        seen.append(ctx.context_ids)
        notepads = {t for t in seen[-1] if t >= 3000}
        assert keep or (len(notepads) <= 1 and notepads <= {3000 + i - 1})  # only the previous turn's notepad
        c = [1000 + i] * min(completion, ctx.room_for_generation())
        o, n = [2000 + i] * observation, [3000 + i] * notepad
        traj.steps.append(
            Step(index=i, raw="", prompt_ids=prompt, completion_ids=c, logprobs=[0.0] * len(c), observation_ids=o + n)
        )  # the step records what followed its turn
        ctx.append(c, o, n)
    for sample in trajectory_samples(traj, eos_token_id=None, max_completion_length=10**6):
        ids, turn_of = sample["completion_ids"], sample["step_index"]
        for k in sorted({t for t in turn_of if t >= 0}):
            start = turn_of.index(k)
            assert sample["prompt_ids"] + ids[:start] == seen[k]
            n = len(traj.steps[k].completion_ids)
            assert (
                ids[start : start + n] == traj.steps[k].completion_ids
                and sample["env_mask"][start : start + n] == [1] * n
            )
        assert all((m == 1) == (t >= 0) for m, t in zip(sample["env_mask"], turn_of, strict=True))
    trained = {t for s in trajectory_samples(traj, None, 10**6) for t in s["step_index"] if t >= 0}
    if keep and ctx.trims == 0:
        assert len(trajectory_samples(traj, None, 10**6)) == 1
    assert trained == {k for k, s in enumerate(traj.steps) if s.completion_ids}  # every turn is trained
