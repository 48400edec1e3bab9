"""`import workbench.runtime` runs at every kernel warm-up: stdlib only, and cheap."""

import subprocess
import sys

PROBE = r"""
import sys, time
before = set(sys.modules)
t0 = time.perf_counter()
import workbench.runtime
ms = (time.perf_counter() - t0) * 1e3
from workbench.runtime import Notepad
pad = Notepad(); pad.add_todo("x"); pad.render()
new = sorted(m for m in set(sys.modules) - before
             if m.split(".")[0] not in sys.stdlib_module_names and m.split(".")[0] != "workbench")
wb = sorted(m for m in set(sys.modules) - before if m.startswith("workbench."))
print(repr((new, wb, ms)))
"""


def test_runtime_imports_only_the_stdlib():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    third_party, workbench_modules, ms = eval(out.stdout.strip().splitlines()[-1])
    assert third_party == []
    # safetext, and _lazy (the root package's lazy exports): stdlib only, shared by design
    allowed = ("workbench.runtime", "workbench.safetext", "workbench._lazy")
    assert all(m.startswith(allowed) for m in workbench_modules), workbench_modules
    print(f"import workbench.runtime: {ms:.1f} ms")
