"""A text environment's two conversions: the model's turn into an action, an observation into text.

field = choose_action_field(schema)               # the action model's one required str field
action = {field: turn_text}
observation_text({"prompt": "Guess 1-100"})        # "Guess 1-100": a single str field as it is
observation_text({"echoed": "hi", "length": 2})    # '{"echoed":"hi","length":2}': compact JSON
messages_text([{"role": "user", "content": "Now add 6."}])   # "Now add 6.": a chat environment's messages
"""

from __future__ import annotations

import json
from typing import Any

from workbench.errors import ConfigError

BASE_ACTION_FIELDS = ("metadata",)  # OpenEnv's Action base class field, never the model's text


def _is_str(prop: dict[str, Any]) -> bool:
    if prop.get("type") == "string":
        return True
    options = prop.get("anyOf") or []
    return any(o.get("type") == "string" for o in options) and all(o.get("type") in ("string", "null") for o in options)


def choose_action_field(schema: dict[str, Any], chosen: str | None = None, *, where: str = "the environment") -> str:
    """The field of the action model (JSON `schema`) that gets the model's text: `chosen` when given
    (checked), else its one required str field, else its one str field. The others must be optional."""
    props = {k: v for k, v in (schema.get("properties") or {}).items() if k not in BASE_ACTION_FIELDS}
    required = [k for k in schema.get("required") or [] if k not in BASE_ACTION_FIELDS]
    listed = ", ".join(f"{k} ({v.get('type', 'any')})" for k, v in props.items()) or "none"
    if chosen is not None:
        if chosen not in props or not _is_str(props[chosen]):
            raise ConfigError(
                f"action_field={chosen!r}: {where}'s action has no str field by that name; its fields: {listed}"
            )
        field = chosen
    else:
        strings = [k for k in required if _is_str(props.get(k, {}))] or [k for k in props if _is_str(props[k])]
        if len(strings) != 1:
            raise ConfigError(
                f"{where}'s action has {'no' if not strings else 'several'} str field(s) for the model's text "
                f"(fields: {listed}); name one with action_field= (--action-field NAME)"
            )
        field = strings[0]
    others = [k for k in required if k != field]
    if others:
        raise ConfigError(
            f"{where}'s action also requires {', '.join(others)}, which a model's text cannot fill; "
            "wrap the environment so one str field carries the whole action"
        )
    return field


def observation_text(fields: dict[str, Any]) -> str:
    """An observation's fields (without done / reward / metadata) as the text the model reads."""
    if len(fields) == 1:
        (value,) = fields.values()
        if isinstance(value, str):
            return value
    return json.dumps(fields, ensure_ascii=False, separators=(",", ":"), default=str)


def messages_text(messages: list[dict[str, str]]) -> str:
    """A chat environment's messages as the text the model reads: their contents, a blank line apart."""
    return "\n\n".join(m["content"] for m in messages)


__all__ = ["BASE_ACTION_FIELDS", "choose_action_field", "messages_text", "observation_text"]
