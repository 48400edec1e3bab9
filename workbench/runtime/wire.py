"""The Jupyter message packer of workbench kernels: valid UTF-8 on the wire, whatever code prints.

jupyter_client's default packer encodes with ``surrogateescape``: ``print('\\udcff')`` puts a raw
0xFF byte (invalid UTF-8) on the wire, and ``print('\\ud800')`` cannot be packed at all, so that
output is lost. Kernels started by workbench pack with `pack` instead
(``--Session.packer=workbench.runtime.wire.pack``) and so does the host's client: a lone
surrogate becomes U+FFFD (the `workbench.safetext` rule) and every message is valid UTF-8 JSON.

Imported by the kernel's `Session` at start-up (jupyter_client is there); not by the runtime.
"""

from __future__ import annotations

import json
from typing import Any

from jupyter_client.jsonutil import json_clean, json_default

from workbench.safetext import safe_text

PACKER = "workbench.runtime.wire.pack"  # the dotted name `Session.packer` takes


def pack(obj: Any) -> bytes:
    """`obj` as UTF-8 JSON (jupyter_client's `json_packer`, with lone surrogates made U+FFFD)."""
    try:
        text = json.dumps(obj, default=json_default, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):  # what json_packer falls back to for unclean messages
        text = json.dumps(json_clean(obj), default=json_default, ensure_ascii=False, allow_nan=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a surrogate inside a JSON string: replacing it keeps the JSON valid
        return safe_text(text).encode("utf-8")


__all__ = ["PACKER", "pack"]
