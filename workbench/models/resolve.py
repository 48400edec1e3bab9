"""`resolve_model(spec)`: what a model spec names, as a local directory every loader can read.

    resolve_model("runs/tiny")                          # a local model directory (config.json)
    resolve_model("Qwen/Qwen2.5-0.5B-Instruct")         # a hub id, through huggingface_hub's cache
    resolve_model("Qwen/Qwen2.5-0.5B-Instruct@main")    # ... at a revision (branch, tag or commit)
    resolve_model("models/SmolLM2.Q4_1.gguf")           # a GGUF file (transformers dequantizes it)
    resolve_model("smollm2")                            # a model `workbench models add` converted

In that order: an existing path, a name in the workbench models folder (`models_dir()`), then a hub id.
A hub id is fetched the way every Hugging Face tool does it (`huggingface_hub.snapshot_download` into
`HF_HOME`); the user's environment decides whether that may reach the network (`HF_HUB_OFFLINE=1`
reads only the cache). Nothing here sets it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError

MODELS_DIR_ENV = "WORKBENCH_MODELS_DIR"
# short names of the models `workbench models add NAME` makes -> their folder in models_dir()
EMBEDDED = {"smollm2": "smollm2-135m-instruct"}
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
# what a hub snapshot needs besides the weights: configs, tokenizer files, chat templates
HUB_CONFIG_FILES = ["*.json", "*.txt", "*.model", "*.jinja", "*.tiktoken"]


@dataclass(frozen=True)
class ModelSource:
    """Where a model lives. `directory` holds its config and tokenizer (a hub snapshot for a hub
    id); `gguf_file` names the GGUF file in it, if the weights are one; `repo_id` and `revision`
    (the snapshot's commit) say which hub repo it came from."""

    spec: str
    directory: Path
    repo_id: str | None = None
    revision: str | None = None
    gguf_file: str | None = None

    @property
    def kind(self) -> str:
        """ "gguf", "hub" or "local"."""
        return "gguf" if self.gguf_file else "hub" if self.repo_id else "local"

    @property
    def name(self) -> str:
        """A short name for logs and policy names: the repo id, the GGUF file or the folder."""
        return self.repo_id or self.gguf_file or self.directory.name

    def pretrained_kwargs(self) -> dict[str, Any]:
        """Keywords `from_pretrained(source.directory, ...)` needs besides the directory."""
        return {"gguf_file": self.gguf_file} if self.gguf_file else {}

    @property
    def weights_path(self) -> Path:
        """The GGUF file, else the directory: what an engine such as vLLM is pointed at."""
        return self.directory / self.gguf_file if self.gguf_file else self.directory


def models_dir() -> Path:
    """Where `workbench models add` puts converted models: `$WORKBENCH_MODELS_DIR`, else
    `~/.cache/workbench/models`."""
    return Path(os.environ.get(MODELS_DIR_ENV) or "~/.cache/workbench/models").expanduser()


def resolve_model(spec: str | Path) -> ModelSource:
    """The model `spec` names (see the module docstring); ConfigError naming each place tried."""
    text = str(spec).strip()
    if not text:
        raise ConfigError("model spec is empty: give a hub id (ORG/NAME[@REV]), a local directory or a GGUF file")
    path = Path(text).expanduser()
    if path.exists():
        return _local(text, path)
    tried = [f"a local path {path} (does not exist)"]
    named = _named(text, tried)
    if named is not None:
        return named
    repo_id, _, revision = text.partition("@")
    if HUB_ID.match(repo_id) and not text.endswith(".gguf"):
        return _from_hub(text, repo_id, revision or None, tried)
    tried.append(f"a hub id {text!r} (not one: write ORG/NAME or ORG/NAME@REVISION)")
    raise _not_found(text, tried)


def _local(text: str, path: Path) -> ModelSource:
    if path.is_file():
        if path.suffix != ".gguf":
            raise ConfigError(f"{text} is a file but not a GGUF model (*.gguf): point at a model directory instead")
        return ModelSource(text, path.parent, gguf_file=path.name)
    if (path / "config.json").is_file():
        return ModelSource(text, path)
    ggufs = sorted(p.name for p in path.glob("*.gguf"))
    if len(ggufs) == 1:
        return ModelSource(text, path, gguf_file=ggufs[0])
    what = f"several GGUF files ({', '.join(ggufs)}): name one" if ggufs else "no config.json and no GGUF file"
    raise ConfigError(
        f"{text} is a directory with {what}. Point at a saved Hugging Face model dir, a GGUF file, "
        "or build one with workbench.models.build_tiny_model(dir, texts)"
    )


def _named(text: str, tried: list[str]) -> ModelSource | None:
    """A model `workbench models add` made, by its short name or its folder's name."""
    if "/" in text or "@" in text:
        return None
    root = models_dir()
    folder = root / EMBEDDED.get(text, text)
    if (folder / "config.json").is_file():
        return ModelSource(text, folder)
    hint = f"; run `workbench models add {text}`" if text in EMBEDDED else ""
    tried.append(f"a model named {text!r} in {root} (none{hint})")
    return None


def _from_hub(text: str, repo_id: str, revision: str | None, tried: list[str]) -> ModelSource:
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

    where = f"a hub id {repo_id!r}" + (f" at revision {revision!r}" if revision else "")
    # offline (the user's HF_HUB_OFFLINE) also for a commit hash, which huggingface_hub would list online
    offline = bool(constants.HF_HUB_OFFLINE)
    try:
        patterns = [*HUB_CONFIG_FILES, "*.safetensors"]
        snapshot = Path(
            snapshot_download(repo_id, revision=revision, allow_patterns=patterns, local_files_only=offline)
        )
        if not any(snapshot.glob("*.safetensors")):  # an older repo: PyTorch pickles only
            snapshot = Path(
                snapshot_download(repo_id, revision=revision, allow_patterns=["*.bin"], local_files_only=offline)
            )
    except (LocalEntryNotFoundError, HFValidationError, OSError) as exc:
        note = " (HF_HUB_OFFLINE is set: only the cache was read)" if offline else ""
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        tried.append(f"{where} in the Hugging Face cache {constants.HF_HUB_CACHE}{note}: {reason}")
        raise _not_found(text, tried) from exc
    if not (snapshot / "config.json").is_file():
        raise ConfigError(
            f"hub repo {repo_id!r} (snapshot {snapshot}) has no config.json: it is not a transformers model"
        )
    return ModelSource(text, snapshot, repo_id=repo_id, revision=snapshot.name)


def _not_found(text: str, tried: list[str]) -> ConfigError:
    lines = "\n".join(f"  - {t}" for t in tried)
    return ConfigError(
        f"no model {text!r}. Tried:\n{lines}\nGive a local model directory (or build one with "
        "workbench.models.build_tiny_model(dir, texts)), a GGUF file, a hub id (ORG/NAME[@REVISION]; online, "
        "or cached for HF_HUB_OFFLINE=1), or a name from `workbench models list`"
    )


def installed_models() -> dict[str, Path]:
    """The models in `models_dir()`, by folder name."""
    root = models_dir()
    if not root.is_dir():
        return {}
    return {p.name: p for p in sorted(root.iterdir()) if (p / "config.json").is_file()}


__all__ = ["EMBEDDED", "MODELS_DIR_ENV", "ModelSource", "installed_models", "models_dir", "resolve_model"]
