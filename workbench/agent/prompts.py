"""Render the agent's prompt files (`prompts/*.j2`)."""

from __future__ import annotations

from functools import lru_cache

import jinja2


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("workbench.agent", "prompts"),
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )


def render(name: str, **values: object) -> str:
    """Render `prompts/<name>.j2` with `values`; a missing value is an error, not a blank."""
    return _env().get_template(f"{name}.j2").render(**values)


__all__ = ["render"]
