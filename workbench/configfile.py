"""Reading config files: one place for TOML / YAML / JSON, the optional table, and clear errors.

data = read_config_file("train.toml", what="train config", table="train")
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError

SUFFIXES = (".toml", ".yaml", ".yml", ".json")


def read_config_file(path: str | Path, *, what: str, table: str | None = None) -> dict[str, Any]:
    """The settings in `path` (under `[table]` if the file has one). `what` names it in errors."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{what} {path} does not exist")
    if path.suffix not in SUFFIXES:
        raise ConfigError(f"{what} {path}: use a .toml, .yaml or .json file")
    text = path.read_text()
    try:
        if path.suffix == ".toml":
            data = tomllib.loads(text)
        elif path.suffix == ".json":
            data = json.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text) or {}
    except (tomllib.TOMLDecodeError, ValueError) as exc:
        raise ConfigError(f"{what} {path} is not valid {path.suffix[1:].upper()}: {exc}") from exc
    except Exception as exc:  # yaml.YAMLError without importing yaml up front
        raise ConfigError(f"{what} {path} is not valid {path.suffix[1:].upper()}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{what} {path} must hold a table of settings")
    if table and isinstance(data.get(table), dict):
        data = data[table]
    return dict(data)


def check_fields(name: str, given: dict[str, Any], known: set[str], hint: str = "") -> None:
    """Raise a ConfigError naming unknown fields (and where to find the known ones)."""
    unknown = sorted(set(given) - known)
    if unknown:
        raise ConfigError(
            f"{name}: unknown field(s) {', '.join(unknown)}; " + (hint or f"known: {', '.join(sorted(known))}")
        )


__all__ = ["SUFFIXES", "check_fields", "read_config_file"]
