"""The notepad: the model's memory inside the kernel, re-shown to it on every turn.

Four sections: a plan made of todos (id, text, status), facts, and a draft answer. The model edits
it from code; the host renders it into the context and keeps it through context trims.

    >>> pad = Notepad()
    >>> pad.add_todo(["find the director", "find where they were born"])
    [1, 2]
    >>> pad.update_todo(1, "done")
    >>> pad.add_fact("Film X was directed by Jane Doe")
    >>> print(pad.render())
    ## Notepad
    ### Plan
    [x] 1. find the director
    [ ] 2. find where they were born
    ### Facts
    - Film X was directed by Jane Doe

Stdlib only and cheap to import: this module runs inside every sandboxed kernel. Text that is
not valid Unicode (lone surrogates) is stored with U+FFFD in their place (`workbench.safetext`),
so every snapshot can be sent, stored and tokenized.
"""

from __future__ import annotations

from workbench.safetext import safe_json, safe_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

SNAPSHOT_VERSION = 1
STATUSES = ("pending", "in_progress", "done", "blocked")
_MARKS = {"pending": "[ ]", "in_progress": "[>]", "done": "[x]", "blocked": "[!]"}
_ALIASES = {
    "todo": "pending",
    "open": "pending",
    "in progress": "in_progress",
    "doing": "in_progress",
    "active": "in_progress",
    "started": "in_progress",
    "complete": "done",
    "completed": "done",
    "finished": "done",
    "stuck": "blocked",
}
MAX_ITEMS = 200  # per section
MAX_ITEM_CHARS = 2_000
MAX_DRAFT_CHARS = 100_000

NOTEPAD_API = """\
notepad: your memory. It is shown to you every turn and survives context trimming.
  notepad.add_todo(text_or_list) -> id or [ids]      add plan steps (status "pending")
  notepad.update_todo(id_or_text, status, text=None)  status: pending | in_progress | done | blocked
  notepad.add_fact(text) / notepad.add_facts([...])  record facts you have verified
  notepad.write_draft(text) / notepad.append_draft(text)  keep a draft of the answer
  notepad.clear()                                     empty every section
  print(notepad.render())                             see the notepad as you are shown it"""
"""The notepad's API as the system prompt shows it to the model."""


class NotepadError(ValueError):
    """A notepad method was called wrongly; the message says how to call it."""


class Todo:
    """One plan step. Read-only: change it with `notepad.update_todo`."""

    __slots__ = ("id", "status", "text")
    id: int
    text: str
    status: str

    def __init__(self, id: int, text: str, status: str = "pending") -> None:
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "status", status)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"todos are read-only; use notepad.update_todo({self.id}, status, text=...)")

    def __repr__(self) -> str:
        return f"Todo(id={self.id}, text={self.text!r}, status={self.status!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Todo) and (self.id, self.text, self.status) == (other.id, other.text, other.status)


def _text(value: object, what: str, limit: int = MAX_ITEM_CHARS) -> str:
    if not isinstance(value, str):
        raise NotepadError(f"{what} must be a str, got {type(value).__name__}: {value!r:.80}")
    text = safe_text(value).strip()
    if not text:
        raise NotepadError(f"{what} is empty; pass some text")
    if len(text) > limit:
        raise NotepadError(f"{what} has {len(text)} characters (limit {limit}); shorten it")
    return text


def _status(value: object) -> str:
    key = str(value).strip().lower().replace("-", "_")
    key = _ALIASES.get(key.replace("_", " "), _ALIASES.get(key, key))
    if key not in STATUSES:
        raise NotepadError(f"unknown todo status {value!r}; use one of: {', '.join(STATUSES)}")
    return key


class Notepad:
    """Plan (todos), facts and a draft. `on_change(snapshot)` is called after every edit."""

    def __init__(self, on_change: Callable[[dict[str, Any]], None] | None = None) -> None:
        self._todos: list[Todo] = []
        self._facts: list[str] = []
        self._draft = ""
        self._next_id = 1
        self._on_change = on_change

    # -- read-only views ------------------------------------------------------------------------
    @property
    def todos(self) -> tuple[Todo, ...]:
        return tuple(self._todos)

    @property
    def facts(self) -> tuple[str, ...]:
        return tuple(self._facts)

    @property
    def draft(self) -> str:
        return self._draft

    @draft.setter
    def draft(self, text: str) -> None:
        self.write_draft(text)

    # -- plan -----------------------------------------------------------------------------------
    def add_todo(self, text_or_list: str | list[str]) -> int | list[int]:
        """Add one todo (returns its id) or a list of todos (returns their ids)."""
        if isinstance(text_or_list, (list, tuple)):
            texts = [_text(t, f"todo #{i + 1}") for i, t in enumerate(text_or_list)]
        else:
            texts = [_text(text_or_list, "todo")]
        if len(self._todos) + len(texts) > MAX_ITEMS:
            raise NotepadError(f"the plan is limited to {MAX_ITEMS} todos; mark or clear old ones")
        ids = []
        for text in texts:
            self._todos.append(Todo(self._next_id, text))
            ids.append(self._next_id)
            self._next_id += 1
        self._changed()
        return ids if isinstance(text_or_list, (list, tuple)) else ids[0]

    def update_todo(self, id_or_text: int | str, status: str, text: str | None = None) -> None:
        """Set a todo's status (pending/in_progress/done/blocked) and optionally its text."""
        index = self._find(id_or_text)
        old = self._todos[index]
        new_text = old.text if text is None else _text(text, "todo text")
        self._todos[index] = Todo(old.id, new_text, _status(status))
        self._changed()

    def _find(self, key: int | str) -> int:
        valid = ", ".join(f"{t.id} ({t.text[:40]!r})" for t in self._todos) or "none yet"
        if isinstance(key, bool) or not isinstance(key, (int, str)):
            raise NotepadError(f"pass a todo id (int) or its text, got {type(key).__name__}")
        if isinstance(key, str) and key.strip().isdigit():
            key = int(key.strip())
        if isinstance(key, int):
            for i, todo in enumerate(self._todos):
                if todo.id == key:
                    return i
            raise NotepadError(f"no todo with id {key}; valid todos: {valid}")
        needle = key.strip().lower()
        exact = [i for i, t in enumerate(self._todos) if t.text.lower() == needle]
        matches = exact or [i for i, t in enumerate(self._todos) if needle and needle in t.text.lower()]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise NotepadError(f"no todo matches {key!r}; valid todos: {valid}")
        ids = ", ".join(str(self._todos[i].id) for i in matches)
        raise NotepadError(f"{key!r} matches todos {ids}; pass the id instead")

    # -- facts and draft ------------------------------------------------------------------------
    def add_fact(self, text: str) -> None:
        """Record one fact."""
        self.add_facts([text])

    def add_facts(self, texts: list[str]) -> None:
        """Record several facts."""
        if isinstance(texts, str):
            raise NotepadError("add_facts takes a list of str; for one fact use add_fact(text)")
        if not isinstance(texts, (list, tuple)):
            raise NotepadError(f"add_facts takes a list of str, got {type(texts).__name__}")
        clean = [_text(t, f"fact #{i + 1}") for i, t in enumerate(texts)]
        if len(self._facts) + len(clean) > MAX_ITEMS:
            raise NotepadError(f"facts are limited to {MAX_ITEMS}; merge some into the draft")
        self._facts.extend(clean)
        self._changed()

    def write_draft(self, text: str) -> None:
        """Replace the draft."""
        if not isinstance(text, str):
            raise NotepadError(f"the draft must be a str, got {type(text).__name__}")
        if len(text) > MAX_DRAFT_CHARS:
            raise NotepadError(f"the draft is limited to {MAX_DRAFT_CHARS} characters; shorten it")
        self._draft = safe_text(text)
        self._changed()

    def append_draft(self, text: str) -> None:
        """Append to the draft (a newline is inserted between non-empty parts)."""
        if not isinstance(text, str):
            raise NotepadError(f"append_draft takes a str, got {type(text).__name__}")
        self.write_draft(f"{self._draft}\n{text}" if self._draft and text else self._draft + text)

    def clear(self) -> None:
        """Empty every section (todo ids keep counting up)."""
        self._todos, self._facts, self._draft = [], [], ""
        self._changed()

    # -- views ----------------------------------------------------------------------------------
    def render(self, max_draft_chars: int | None = None) -> str:
        """The compact text the model is shown each turn."""
        if not (self._todos or self._facts or self._draft):
            return "## Notepad\n(empty: plan with notepad.add_todo([...]))"
        lines = ["## Notepad"]
        if self._todos:
            lines.append("### Plan")
            lines += [f"{_MARKS[t.status]} {t.id}. {t.text}" for t in self._todos]
        if self._facts:
            lines.append("### Facts")
            lines += [f"- {f}" for f in self._facts]
        if self._draft:
            draft = self._draft
            if max_draft_chars is not None and len(draft) > max_draft_chars:
                draft = draft[:max_draft_chars] + f" … [{len(draft) - max_draft_chars} more chars]"
            lines += ["### Draft", draft]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.render()

    def snapshot(self) -> dict[str, Any]:
        """A JSON-able copy, valid Unicode throughout; `Notepad.from_snapshot` rebuilds it."""
        return safe_json(
            {
                "version": SNAPSHOT_VERSION,
                "todos": [{"id": t.id, "text": t.text, "status": t.status} for t in self._todos],
                "facts": list(self._facts),
                "draft": self._draft,
                "next_id": self._next_id,
            }
        )

    @classmethod
    def from_snapshot(cls, data: dict[str, Any], on_change: Callable[[dict[str, Any]], None] | None = None) -> Notepad:
        if not isinstance(data, dict):
            raise NotepadError(f"a notepad snapshot is a dict, got {type(data).__name__}")
        if int(data.get("version", SNAPSHOT_VERSION)) > SNAPSHOT_VERSION:
            raise NotepadError(
                f"snapshot version {data['version']} is newer than this workbench "
                f"(v{SNAPSHOT_VERSION}); upgrade workbench to read it"
            )
        pad = cls(on_change=on_change)
        try:
            pad._todos = [
                Todo(int(t["id"]), safe_text(str(t["text"])), _status(t["status"])) for t in data.get("todos", [])
            ]
            pad._facts = [safe_text(str(f)) for f in data.get("facts", [])]
            pad._draft = safe_text(str(data.get("draft", "")))
        except (KeyError, TypeError, ValueError) as exc:
            raise NotepadError(f"malformed notepad snapshot ({exc!r}); todos need id, text, status") from None
        pad._next_id = int(data.get("next_id", max((t.id for t in pad._todos), default=0) + 1))
        return pad

    def _take_contents(self, other: Notepad) -> None:
        """Become a copy of `other`'s contents (a forked kernel's notepad; see `workbench.runtime.fork`)."""
        self._todos, self._facts, self._draft = list(other._todos), list(other._facts), other._draft
        self._next_id = other._next_id
        self._changed()

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change(self.snapshot())
