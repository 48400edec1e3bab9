"""The context watcher trims to fit, keeps task and notepad, and never exceeds the window."""

from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.agent.context import ContextWatcher

TASK_AND_NOTEPAD = [7, 7, 7]


def _hard_opening():
    return list(TASK_AND_NOTEPAD)


@settings(max_examples=200, deadline=None)
@given(mode=st.sampled_from(["hard", "soft"]),
       turns=st.lists(st.tuples(st.integers(1, 60), st.integers(0, 60)), min_size=1, max_size=30))
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
