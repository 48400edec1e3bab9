"""The one way a package's prompt file (`<package>/prompts/<name>`, Jinja2) is loaded.

    prompt_template("workbench.agent", "system.j2", keep_trailing_newline=True).render(tools=...)

Every template is strict: a value the template uses but the caller did not pass is an error, not a blank.
Templates are cached per (package, name, keep_trailing_newline).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import jinja2


@cache
def _environment(package: str, keep_trailing_newline: bool) -> jinja2.Environment:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader(package, "prompts"),
        keep_trailing_newline=keep_trailing_newline,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )


def prompt_template(package: str, name: str, *, keep_trailing_newline: bool = False) -> jinja2.Template:
    """The template `name` (e.g. `"direct.j2"`) in `package`'s `prompts/` folder."""
    return _environment(package, keep_trailing_newline).get_template(name)


__all__ = ["prompt_template"]
