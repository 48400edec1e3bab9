"""One config idiom: reading TOML / YAML / JSON files, and the `Config` base every config class shares.

data = read_config_file("train.toml", what="train config", table="train")

@dataclass
class MyConfig(Config):
    steps: int = config_field(10, "Optimizer steps.")
    mode: Literal["a", "b"] = config_field("a", "a: ...; b: ...")

MyConfig.from_file("my.toml", steps=3).with_overrides(["mode=b"]).to_dict()
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import InitVar, field
from functools import partial
from pathlib import Path
from types import UnionType
from typing import Any, ClassVar, Literal, Self, Union, get_args, get_origin, get_type_hints

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


# -- the config base ---------------------------------------------------------------------------
# Every config class (a dataclass, or AgentConfig's pydantic model) mixes in `Config`: help on each field
# (`config_field`), loading from a file or a dict, `--set` overrides, and values checked against the
# field's annotation. Files and keywords are typed, so a value of the wrong type (the text "10" for an
# int included) is a ConfigError naming the field; only `--set` text is parsed, by the field's type
# (kept as text for a str field, else read as JSON: `--set max_steps=10` is the int 10). An int is
# accepted for a float; a list for a tuple; a table for a nested config.

_MUTABLE = (list, dict, set)


def config_field(default: Any, help: str) -> Any:
    """A dataclass field with `help` metadata; a list/dict default is copied for each instance."""
    if isinstance(default, _MUTABLE):
        return field(default_factory=partial(copy.deepcopy, default), metadata={"help": help})
    return field(default=default, metadata={"help": help})


def _unquote(value: Any) -> str:
    """The hint for a number or bool written as text in a file."""
    if not isinstance(value, str):
        return ""
    hint = " (unquoted)"
    if re.fullmatch(r"[-+]?\d+(\.\d*)?[eE][-+]?\d+", value.strip()):
        hint += "; YAML 1.1 reads 1e-6 as text, write 1.0e-6"
    return hint


def _key(key_type: Any, key: Any) -> Any:
    """A table key as `key_type`: TOML and JSON keys are always text, so "1" is read as the int 1."""
    if key_type is int and isinstance(key, str) and re.fullmatch(r"[-+]?\d+", key):
        return int(key)
    return key


def _is_config_class(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, Config)


def _type_name(tp: Any) -> str:
    if isinstance(tp, type):
        return tp.__name__
    return str(tp).replace("typing.", "")


def check_value(tp: Any, value: Any, where: str) -> Any:
    """`value` as annotation `tp` asks (an int as a float, a list as a tuple, a table as a nested config);
    a ConfigError naming `where` when it is not one."""
    origin, args = get_origin(tp), get_args(tp)
    if tp is Any or tp is object:
        return value
    if origin is InitVar or isinstance(tp, InitVar):
        return check_value(getattr(tp, "type", Any), value, where)
    if origin in (Union, UnionType):
        if value is None and type(None) in args:
            return None
        for option in (a for a in args if a is not type(None)):
            try:
                return check_value(option, value, where)
            except ConfigError:
                continue
        raise ConfigError(f"{where}: {value!r} is not a {_type_name(tp)}; give a {_type_name(tp)}")
    if origin is Literal:
        if value in args:
            return value
        raise ConfigError(f"{where}: {value!r} is not one of {', '.join(map(repr, args))}")
    if _is_config_class(tp):
        if isinstance(value, tp):
            return value
        if isinstance(value, Mapping):
            return tp._build(value, where)
        raise ConfigError(f"{where}: {value!r} is not a table of {tp.__name__} fields")
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{where}: {value!r} is not a bool; give true or false{_unquote(value)}")
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ConfigError(f"{where}: {value!r} is not an int; give a whole number{_unquote(value)}")
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise ConfigError(f"{where}: {value!r} is not a float; give a number{_unquote(value)}")
    if tp is str:
        if isinstance(value, str):
            return value
        raise ConfigError(f"{where}: {value!r} is not a str; give text (quoted in TOML/JSON)")
    if tp in (list, tuple) or origin in (list, tuple):
        return _check_sequence(tp is tuple or origin is tuple, args, value, where)
    if tp is dict or origin in (dict, Mapping):
        return _check_mapping(args, value, where)
    if isinstance(tp, type):
        if isinstance(value, tp):
            return value
        raise ConfigError(f"{where}: {value!r} is not a {tp.__name__}")
    return value


def _check_sequence(as_tuple: bool, args: tuple[Any, ...], value: Any, where: str) -> list[Any] | tuple[Any, ...]:
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"{where}: {value!r} is not a list; give a list, e.g. [a, b]")
    item = args[0] if args else Any
    items = [check_value(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
    return tuple(items) if as_tuple else items


def _check_mapping(args: tuple[Any, ...], value: Any, where: str) -> dict[Any, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: {value!r} is not a table; give {{key: value}}")
    key_t, value_t = args if len(args) == 2 else (Any, Any)
    return {
        check_value(key_t, _key(key_t, k), f"{where} (key {k!r})"): check_value(value_t, v, f"{where}.{k}")
        for k, v in value.items()
    }


class Config:
    """The base of workbench's config classes (dataclasses; AgentConfig, a pydantic model, too).

        cfg = TrainConfig.from_file("train.toml", max_steps=3)      # TOML / YAML / JSON, then keywords
        cfg = TrainConfig.from_dict({"max_steps": 3})
        cfg = cfg.with_overrides(["estimator_params.adpo.p_low=0.2"])   # --set, dotted for nested
        TrainConfig.fields_help()   # {"max_steps": "Optimizer steps to run.", ...}
        cfg.to_dict()               # plain values; from_dict(to_dict()) gives the same config

    Subclasses name their file table in `config_table` ("train": a `[train]` table is read if the
    file has one). A dataclass subclass that defines `__post_init__` calls `super().__post_init__()` (or
    `check_types(self)`) first."""

    config_table: ClassVar[str | None] = None
    # Declared, not set: `@dataclass` sets it on each dataclass subclass, and the declaration lets the
    # type checker take a Config where dataclasses.fields/asdict want a dataclass.
    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    def __post_init__(self) -> None:
        check_types(self)  # keywords are checked as a file's values are

    # -- fields --------------------------------------------------------------------------------
    @classmethod
    def config_types(cls) -> dict[str, Any]:
        """Each field's annotation (resolved), by name."""
        model_fields = getattr(cls, "model_fields", None)
        if model_fields is not None:  # pydantic
            return {name: f.annotation for name, f in model_fields.items()}
        return dict(_dataclass_types(cls))

    @classmethod
    def fields_help(cls) -> dict[str, str]:
        """Each field's help text, by name (what `--help-config` prints)."""
        model_fields = getattr(cls, "model_fields", None)
        if model_fields is not None:
            return {name: f.description or "" for name, f in model_fields.items()}
        return {f.name: f.metadata.get("help", "") for f in dataclasses.fields(cls)}

    @classmethod
    def accepted_keys(cls) -> set[str]:
        """Names `from_dict` takes: the fields (a subclass adds aliases)."""
        return set(cls.config_types())

    # -- loading -------------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Mapping[str, Any], **overrides: Any) -> Self:
        """A config from a table of settings, then `overrides`; bad names and values are ConfigErrors."""
        return cls._build({**data, **overrides}, cls.__name__)

    @classmethod
    def _build(cls, data: Mapping[str, Any], where: str) -> Self:
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: {data!r} is not a table of settings")
        check_fields(where, dict(data), cls.accepted_keys(), cls._fields_hint())
        if getattr(cls, "model_fields", None) is not None:
            return cls._build_model(data, where)
        types = cls.config_types()
        values = {k: check_value(types[k], v, f"{where}.{k}") if k in types else v for k, v in data.items()}
        return cls(**values)

    @classmethod
    def _build_model(cls, data: Mapping[str, Any], where: str) -> Self:
        from pydantic import ValidationError

        try:
            return cls(**data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{where}.{'.'.join(map(str, e['loc']))}: {e['msg']}, got {e['input']!r}" for e in exc.errors()
            )
            raise ConfigError(problems) from None

    @classmethod
    def _fields_hint(cls) -> str:
        return ""

    @classmethod
    def from_file(cls, path: str | Path, **overrides: Any) -> Self:
        """Read a TOML, YAML or JSON file (its `[config_table]` table if it has one), then `overrides`."""
        what = f"{cls.__name__} file"
        return cls.from_dict(read_config_file(path, what=what, table=cls.config_table), **overrides)

    @classmethod
    def load(cls, path: str | Path, **overrides: Any) -> Self:
        """`from_file` (the name every config had first)."""
        return cls.from_file(path, **overrides)

    # -- writing and changing ------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Every field as plain data (nested configs as tables): `from_dict` reads it back."""
        if hasattr(self, "model_dump"):
            return dict(self.model_dump())
        return dataclasses.asdict(self)

    def explicit_dict(self) -> dict[str, Any]:
        """The fields to carry into a copy: all of them (AgentConfig: only those set explicitly)."""
        return self.to_dict()

    def with_overrides(self, items: Iterable[str] | Mapping[str, Any]) -> Self:
        """A copy with `--set`-style changes: "FIELD=VALUE" strings (dotted for nested fields and tables,
        `estimator_params.adpo.p_low=0.2`) or a {dotted name: value} mapping; checked again."""
        changes = parse_overrides(type(self), items)
        return type(self).from_dict(merge_nested(self.explicit_dict(), changes))


_TYPES: dict[type, dict[str, Any]] = {}


def _dataclass_types(cls: type) -> dict[str, Any]:
    """A dataclass's field annotations, resolved once per class (construction checks them every time)."""
    if cls not in _TYPES:
        hints = get_type_hints(cls)
        _TYPES[cls] = {f.name: hints.get(f.name, Any) for f in dataclasses.fields(cls)}
    return _TYPES[cls]


def check_types(config: Any) -> None:
    """Check (and coerce in place) every field of a dataclass config against its annotation."""
    cls = type(config)
    types = cls.config_types()
    for name, tp in types.items():
        value = getattr(config, name)
        checked = check_value(tp, value, f"{cls.__name__}.{name}")
        if checked is not value:
            object.__setattr__(config, name, checked)  # frozen dataclasses too


def merge_nested(base: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `changes` merged in, table into table (a change's table replaces no sibling keys)."""
    out = dict(base)
    for key, value in changes.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge_nested(out[key], value)
        else:
            out[key] = value
    return out


def field_type(cls: type[Config], path: list[str]) -> Any:
    """The annotation at a dotted path (nested configs, then dict values); Any when unknown."""
    tp: Any = cls
    for part in path:
        if _is_config_class(tp):
            tp = tp.config_types().get(part, Any)
        elif get_origin(tp) in (dict, Mapping) and len(get_args(tp)) == 2:
            tp = get_args(tp)[1]
        else:
            return Any
        while get_origin(tp) in (Union, UnionType) and type(None) in get_args(tp):
            tp = next(a for a in get_args(tp) if a is not type(None))
    return tp


def parse_value(text: str, tp: Any = Any) -> Any:
    """An override's text as a value: kept as text for a str field, else JSON when it parses."""
    if tp is str:
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_overrides(cls: type[Config], items: Iterable[str] | Mapping[str, Any]) -> dict[str, Any]:
    """`--set` items ("a.b=1") or a {dotted name: value} mapping as a nested table for `from_dict`."""
    pairs: list[tuple[str, Any]] = []
    if isinstance(items, Mapping):
        pairs = list(items.items())
    else:
        for item in items:
            key, sep, text = item.partition("=")
            if not sep or not key.strip():
                raise ConfigError(f"--set {item!r}: write FIELD=VALUE (dotted for nested: limits.memory_mb=2048)")
            key = key.strip()
            pairs.append((key, parse_value(text, field_type(cls, key.split(".")))))
    out: dict[str, Any] = {}
    for key, value in pairs:
        *parents, leaf = key.split(".")
        table = out
        for part in parents:
            table = table.setdefault(part, {})
            if not isinstance(table, dict):
                raise ConfigError(f"--set {key}: {part} is set to a value and a table at once")
        table[leaf] = value
    return out


def format_fields_help(cls: type[Config], prefix: str = "") -> str:
    """`--help-config`'s text: per field its (dotted) name, type and default, then its help."""
    lines = []
    types, defaults = cls.config_types(), _defaults(cls)
    for name, text in cls.fields_help().items():
        tp = types.get(name, Any)
        nested = _is_config_class(tp)
        default = f" = {defaults[name]!r}" if name in defaults and not nested else ""
        lines.append(f"{prefix}{name}: {_type_name(tp)}{default}\n    {text}")
        if nested:
            lines.append(format_fields_help(tp, prefix=f"{prefix}{name}."))
    return "\n".join(lines)


def _defaults(cls: type[Config]) -> dict[str, Any]:
    model_fields = getattr(cls, "model_fields", None)
    if model_fields is not None:
        return {n: f.default for n, f in model_fields.items()}
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


def to_toml(data: Mapping[str, Any]) -> str:
    """`data` as TOML text (tables inline; None values are left out, as TOML has no null)."""
    return "".join(f"{_toml_key(k)} = {_toml_value(v)}\n" for k, v in data.items() if v is not None)


def _toml_key(key: Any) -> str:
    text = str(key)
    return text if re.fullmatch(r"[A-Za-z0-9_-]+", text) else json.dumps(text)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items() if v is not None) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, Path):
        return json.dumps(str(value))
    raise ConfigError(f"{value!r} ({type(value).__name__}) has no TOML form")


__all__ = [
    "SUFFIXES",
    "Config",
    "check_fields",
    "check_types",
    "check_value",
    "config_field",
    "field_type",
    "format_fields_help",
    "merge_nested",
    "parse_overrides",
    "parse_value",
    "read_config_file",
    "to_toml",
]
