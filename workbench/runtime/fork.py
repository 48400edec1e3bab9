"""The kernel side of `AsyncKernel.fork`: a state copy, written by one kernel, read by fresh ones.

    save("/run/workbench/fork-ab12.snap", "/workspace", cap)   # in the parent (a silent cell)
    load("/run/workbench/fork.snap", "/workspace")             # in each child (a silent cell)

`save` writes the user namespace and the parent's /workspace into one file (layout below): the
namespace as one pickle (protocol 5, cloudpickle: functions and classes defined in cells by value,
modules by reference), large buffers such as numpy arrays out-of-band at page-aligned offsets,
/workspace as a tar. `load` maps the file copy-on-write (MAP_PRIVATE) and rebuilds the arrays on
its pages: siblings share those pages until one writes, and no write reaches the file.

Names that cannot be copied (open files, sockets, generators, threads, ...) are listed with their
types in the footer's `skipped` (the host reports them) and, in each child, in `_fork_skipped`.
Objects `install` made (the notepad, tool stubs) are not copied as objects: references to them
resolve to the child's own (its notepad takes the parent's contents; its stubs call its gateway).
Functions defined in cells get the child's namespace as their globals.

    [pickle][buffer 0]...[buffer k-1][workspace tar][footer JSON][footer length: 8][MAGIC: 8]

The host reads only the footer (JSON), never the pickle. Stdlib only until `save` runs
(cloudpickle is imported then).
"""

from __future__ import annotations

import io
import json
import mmap
import os
import pickle
import re
import sys
import tarfile
from collections import ChainMap

from workbench.runtime import bridge
from workbench.runtime.client import ToolCallError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar

MAGIC = b"WBFORK01"
MAX_FOOTER = 1 << 20
OUT_OF_BAND_MIN = 1 << 16  # smaller buffers stay in the pickle (no page padding)
SKIPPED_NAME = "_fork_skipped"
_SHELL_NAMES = ("get_ipython", "exit", "quit", "In", "Out", "_ih", "_oh", "_dh")  # objects, never shared constants
_IPYTHON_NAME = re.compile(r"_+|_i+|_i?\d+|_[ido]h|__\w+__")  # output caches, inputs, dunders


def _shell() -> Any:
    shell = bridge._ipython_shell()
    if shell is None:
        raise RuntimeError("fork runs inside an IPython kernel")
    return shell


def user_names(shell: Any) -> list[str]:
    """The names the user (or the model) defined: not IPython's own, not its caches."""
    hidden = shell.user_ns_hidden
    return [
        name
        for name, value in shell.user_ns.items()
        if not (name in hidden and hidden[name] is value) and not _IPYTHON_NAME.fullmatch(name) and name != SKIPPED_NAME
    ]


def _runtime_ids(shell: Any) -> dict[int, tuple[str, str]]:
    """id → persistent id of the objects the child has its own of (never pickled): those `install`
    made, and the shell with its own names (`get_ipython`, `In`, `Out`, ...)."""
    ids: dict[int, tuple[str, str]] = {id(stub): ("stub", name) for name, stub in bridge.installed_stubs().items()}
    if bridge.current_notepad() is not None:
        ids[id(bridge.current_notepad())] = ("notepad", "")
    ids[id(shell)] = ("ipython", "")
    for name in _SHELL_NAMES:
        if name in shell.user_ns_hidden:
            ids[id(shell.user_ns_hidden[name])] = ("ipython", name)
    return ids


def _dumps(names: dict[str, Any], namespace: dict[str, Any], buffers: list[Any] | None) -> bytes:
    import cloudpickle

    runtime = _runtime_ids(_shell())
    home: dict[str, Any] = {}  # stands for the namespace: cells' functions get the child's as globals

    class Pickler(cloudpickle.Pickler):  # type: ignore[misc]
        dispatch_table: ClassVar[ChainMap[Any, Any]] = ChainMap(
            {io.TextIOWrapper: _refuse_file}, cloudpickle.Pickler.dispatch_table
        )

        def persistent_id(self, obj: Any) -> Any:
            if obj is home:
                return ("namespace", "")
            return runtime.get(id(obj))

    def keep(buffer: pickle.PickleBuffer) -> bool:
        if buffers is None or buffer.raw().nbytes < OUT_OF_BAND_MIN:
            return buffers is not None  # a trial pickle (None) keeps nothing
        buffers.append(buffer)
        return False

    out = io.BytesIO()
    pickler = Pickler(out, protocol=5, buffer_callback=keep)
    pickler.globals_ref[id(namespace)] = home
    pickler.dump(names)
    return out.getvalue()


def _refuse_file(obj: Any) -> Any:
    raise TypeError("an open file is not copied (cloudpickle would turn it into a StringIO of its text)")


def _picklable(namespace: dict[str, Any], names: list[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The names that pickle, and {name: type} of those that do not (tried one by one)."""
    chosen = {n: namespace[n] for n in names}
    try:
        _dumps(chosen, namespace, None)
        return chosen, {}
    except Exception:
        pass
    skipped = {}
    for name in names:
        try:
            _dumps({name: namespace[name]}, namespace, None)
        except Exception:
            skipped[name] = type(namespace[name]).__qualname__
            del chosen[name]
    return chosen, skipped


def _pad(f: Any) -> None:
    f.write(b"\0" * (-f.tell() % mmap.PAGESIZE))


def _workspace_tar(f: Any, workspace: str, cap_bytes: int) -> None:
    total = sum(os.lstat(os.path.join(d, n)).st_size for d, _, files in os.walk(workspace) for n in files)
    if total > cap_bytes:
        raise OSError(
            f"/workspace holds {total >> 20} MiB, over the children's cap of {cap_bytes >> 20} MiB "
            "(the profile's limits.disk_mb - tmp_size_mb): delete files before forking or raise limits.disk_mb"
        )
    with tarfile.open(fileobj=f, mode="w|") as tar:
        for entry in sorted(os.listdir(workspace)):
            tar.add(os.path.join(workspace, entry), arcname=entry)


def save(path: str, workspace: str, workspace_cap_bytes: int) -> None:
    """Write this kernel's namespace and `workspace` to `path` (an empty file the host made)."""
    shell = _shell()
    namespace = shell.user_ns
    names, skipped = _picklable(namespace, user_names(shell))
    buffers: list[pickle.PickleBuffer] = []
    data = _dumps(names, namespace, buffers)
    pad = bridge.current_notepad()
    footer: dict[str, Any] = {"skipped": skipped, "names": len(names), "buffers": []}
    footer["notepad"] = pad.snapshot() if pad is not None else None
    try:
        with open(path, "r+b") as f:
            f.write(data)
            footer["pickle"] = [0, len(data)]
            for buffer in buffers:
                _pad(f)
                footer["buffers"].append([f.tell(), buffer.raw().nbytes])
                f.write(buffer.raw())
            start = f.tell()
            _workspace_tar(f, workspace, workspace_cap_bytes)
            footer["tar"] = [start, f.tell() - start]
            text = json.dumps(footer).encode()
            f.write(text + len(text).to_bytes(8, "little") + MAGIC)
    except OSError as exc:
        if exc.errno == 27:  # EFBIG: RLIMIT_FSIZE
            raise OSError(exc.errno, "the fork snapshot is larger than limits.file_size_mb allows; raise it") from None
        raise


def read_footer(f: Any) -> dict[str, Any]:
    """The footer of a snapshot file (JSON; checked for shape, not trusted further)."""
    f.seek(-16, os.SEEK_END)
    tail = f.read(16)
    size = int.from_bytes(tail[:8], "little")
    if tail[8:] != MAGIC or not 0 < size <= MAX_FOOTER:
        raise ValueError("not a workbench fork snapshot (bad footer)")
    f.seek(-16 - size, os.SEEK_END)
    footer = json.loads(f.read(size))
    if not isinstance(footer, dict) or not isinstance(footer.get("skipped"), dict):
        raise ValueError("not a workbench fork snapshot (bad footer)")
    return footer


def load(path: str, workspace: str) -> None:
    """Rebuild the namespace and /workspace `save` wrote; report what could not come (see module doc)."""
    shell = _shell()
    with open(path, "rb") as f:
        footer = read_footer(f)
        view = memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY))  # MAP_PRIVATE: writes stay here
        f.seek(footer["tar"][0])
        with tarfile.open(fileobj=f, mode="r|") as tar:
            tar.extractall(workspace, filter="tar")
    skipped: dict[str, str] = dict(footer["skipped"])
    if footer["notepad"] is not None:
        bridge.restore_notepad(footer["notepad"])  # before the names: they may refer to it
    start, size = footer["pickle"]
    buffers = [view[o : o + n] for o, n in footer["buffers"]]
    unpickler = _Unpickler(io.BytesIO(view[start : start + size]), shell.user_ns, skipped, buffers)
    builtins = shell.user_ns.get("__builtins__")
    names = unpickler.load()
    shell.user_ns.update(names)
    if builtins is not None:
        shell.user_ns["__builtins__"] = builtins  # cloudpickle sets its own on the globals it fills
    shell.user_ns[SKIPPED_NAME] = skipped
    if skipped:
        print(f"fork: not copied from the parent kernel: {skipped}", file=sys.stderr)


class _Unpickler(pickle.Unpickler):
    """Resolves `_dumps`'s persistent ids to this kernel's own objects."""

    def __init__(self, data: Any, namespace: dict[str, Any], skipped: dict[str, str], buffers: list[Any]) -> None:
        super().__init__(data, buffers=buffers)
        self.namespace, self.skipped = namespace, skipped

    def persistent_load(self, pid: Any) -> Any:
        kind, name = pid
        if kind == "namespace":
            return self.namespace
        if kind == "notepad":
            return bridge.current_notepad()
        if kind == "ipython":
            shell = _shell()
            return shell.user_ns_hidden.get(name) if name else shell
        stub = bridge.installed_stubs().get(name)
        if stub is None:
            self.skipped[name] = "tool stub (run the setup cell in this kernel)"
            return _missing_tool(name)
        return stub


def _missing_tool(name: str) -> Any:
    def missing(*args: Any, **kwargs: Any) -> Any:
        raise ToolCallError(f"tool {name!r} is not installed in this forked kernel; run the setup cell", name)

    missing.__name__ = name
    return missing
