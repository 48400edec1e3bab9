"""ipykernel's app, half-built in the zygote: the steps that touch no socket, thread or event loop.

    app = prepare(args)      # in the zygote, before any fork: argv, profile, config files, the shell
    ...fork, isolate...
    run_prepared(app)        # in a child: connection file, sockets, threads, the kernel; then run

`IPKernelApp.initialize()` is `BaseIPythonApplication.initialize` (argument parsing, crash handler,
profile dir, config files) followed by ipykernel's own steps (`_CHILD_STEPS`, in its order). The
first part, and the `ZMQInteractiveShell` (magics, formatters, traceback handlers, user namespace:
the bulk of `init_kernel`), depend only on the arguments, which every zygote child shares, so the
zygote does them once. The shell is a singleton: `IPythonKernel.__init__` asks for
`shell_class.instance(...)` and adopts the one already built, wiring its displayhook and display
publisher to the child's session and iopub socket as it always does; `run_prepared` then gives the
shell its kernel, and redoes what belongs to the child alone: the environment `init_environment` sets
(the child's is replaced after the fork), the profile directory (the child has a fresh /tmp) and
ipykernel's crash handler (the zygote keeps Python's own). History must be off, as rollout kernels
have it: with it on, its database and saving thread would belong to the zygote, so `prepare` returns
None and each child runs ipykernel's whole start (`run_unprepared`).
"""

from __future__ import annotations

import os
import sys
from typing import Protocol

from ipykernel.compiler import XCachingCompiler
from ipykernel.ipkernel import IPythonKernel
from ipykernel.kernelapp import IPKernelApp
from ipykernel.zmqshell import ZMQInteractiveShell
from IPython.core.application import BaseIPythonApplication

# IPKernelApp.initialize after `super().initialize(argv)`, in its order (tests/kernel/test_zygote_app.py
# checks this against the installed ipykernel); `init_kernel` is followed by the shell's adoption.
_CHILD_STEPS = (
    "init_pdb",
    "init_blackhole",
    "init_connection_file",
    "init_poller",
    "init_sockets",
    "init_heartbeat",
    "write_connection_file",
    "log_connection_info",
    "init_io",
    "init_signal",
    "init_kernel",
    "init_path",
    "init_shell",
)
_SHELL_STEPS = ("init_gui_pylab", "init_extensions", "init_code")


class PreparedApp(Protocol):
    """What `run_prepared` needs of the zygote's half-built `IPKernelApp`."""

    kernel: IPythonKernel
    shell: ZMQInteractiveShell | None

    def init_crash_handler(self) -> None: ...

    def start(self) -> None: ...


def prepare(args: list[str]) -> PreparedApp | None:
    """The zygote's half of `IPKernelApp.initialize(args)`, or None where it cannot be split here
    (another kernel class, or history on: its sqlite file and saving thread belong to the child)."""
    app = IPKernelApp.instance()
    BaseIPythonApplication.initialize(app, args)  # type: ignore[no-untyped-call]
    if app.subapp is None and app.kernel_class is IPythonKernel:
        shell = ZMQInteractiveShell.instance(parent=app, profile_dir=app.profile_dir, compiler_class=XCachingCompiler)
        if shell.history_manager is not None and not shell.history_manager.enabled:
            _warm(shell)
            sys.excepthook = sys.__excepthook__  # the zygote's own errors stay plain tracebacks
            return app
    ZMQInteractiveShell.clear_instance()
    IPKernelApp.clear_instance()
    return None


def _warm(shell: ZMQInteractiveShell) -> None:
    """Do once what every kernel's first cell would pay for: compiling the tokenizer's and the input
    transformers' regular expressions, the formatters' type look-ups (pure calls: no output, no state)."""
    shell.transform_cell("1+1\n")  # type: ignore[no-untyped-call]
    if shell.display_formatter is not None:
        shell.display_formatter.format(2)  # type: ignore[no-untyped-call]


def run_prepared(app: PreparedApp) -> None:
    """In a forked child (its environment and working directory already its own): finish the app
    the zygote prepared, then run the kernel until it shuts down."""
    app.init_crash_handler()  # the hook the zygote took back
    shell = ZMQInteractiveShell.instance()
    shell.init_environment()  # type: ignore[no-untyped-call]
    profile = shell.profile_dir
    assert profile is not None  # prepare() gave it the app's
    os.makedirs(profile.location, exist_ok=True)
    profile.check_dirs()
    for step in _CHILD_STEPS:
        getattr(app, step)()
        if step == "init_kernel":
            shell.kernel = shell.parent = app.kernel
    if app.shell is not None:
        for step in _SHELL_STEPS:
            getattr(app, step)()
    sys.stdout.flush()
    sys.stderr.flush()
    app.start()


def run_unprepared() -> None:
    """In a forked child whose request has other arguments than the zygote prepared: ipykernel's
    whole start from `sys.argv`, as an exec'd kernel does (the prepared singletons dropped)."""
    ZMQInteractiveShell.clear_instance()
    IPKernelApp.clear_instance()
    IPKernelApp.launch_instance()
