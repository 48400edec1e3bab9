"""`run.json`: a small manifest beside the store naming the run and the config that made it.

manifest = RunManifest.create("runs/demo", config={"lr": 1e-6, "group_size": 8})
RunManifest.load("runs/demo").run_id   # -> "demo-20250101-120000-ab12"
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError, StoreError

MANIFEST_NAME = "run.json"


@dataclass
class RunManifest:
    """Who a run is: id, creation time, config (JSON-able) and free-form notes."""

    run_id: str
    created: float = field(default_factory=time.time)
    config: dict[str, Any] = field(default_factory=dict)
    notes: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def create(
        cls, run_dir: str | os.PathLike[str], config: Any = None, run_id: str | None = None, **notes: Any
    ) -> RunManifest:
        """Write `<run_dir>/run.json` (atomically) and return it. `config` may be a dict, a
        dataclass or a pydantic model. Refuses to overwrite an existing manifest."""
        path = Path(run_dir) / MANIFEST_NAME
        if path.exists():
            raise StoreError(f"{path} already exists; use RunManifest.load() to read it or pick a new run directory")
        if run_id is None:
            stamp = time.strftime("%Y%m%d-%H%M%S")
            run_id = f"{Path(run_dir).resolve().name}-{stamp}-{uuid.uuid4().hex[:4]}"
        manifest = cls(run_id=run_id, config=_jsonable_config(config), notes=dict(notes))
        manifest.save(run_dir)
        return manifest

    @classmethod
    def load(cls, run_dir: str | os.PathLike[str]) -> RunManifest:
        path = Path(run_dir) / MANIFEST_NAME
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise StoreError(
                f"no {MANIFEST_NAME} in {run_dir}; create one with RunManifest.create(run_dir, config=...)"
            ) from None
        except json.JSONDecodeError as exc:
            raise StoreError(f"{path} is not valid JSON ({exc}); fix or delete it") from exc
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def save(self, run_dir: str | os.PathLike[str]) -> Path:
        """Write atomically (temp file + rename), so a reader never sees half a manifest."""
        path = Path(run_dir) / MANIFEST_NAME
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(dataclasses.asdict(self), indent=2, default=str) + "\n")
        os.replace(tmp, path)
        return path


def _jsonable_config(config: Any) -> dict[str, Any]:
    if config is None:
        return {}
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        config = dataclasses.asdict(config)
    elif hasattr(config, "model_dump"):
        config = config.model_dump(mode="json")
    if not isinstance(config, dict):
        raise ConfigError(f"run config must be a dict, dataclass or pydantic model, not {type(config).__name__}")
    plain: dict[str, Any] = json.loads(json.dumps(config, default=str))
    return plain
