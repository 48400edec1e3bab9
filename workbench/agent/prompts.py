"""Render the agent's prompt files (`prompts/*.j2`)."""

from __future__ import annotations

from workbench.templates import prompt_template


def render(name: str, **values: object) -> str:
    """Render `prompts/<name>.j2` with `values`; a missing value is an error, not a blank."""
    return prompt_template("workbench.agent", f"{name}.j2", keep_trailing_newline=True).render(**values)


__all__ = ["render"]
