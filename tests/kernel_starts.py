"""Both ways a sandboxed kernel starts, for tests that must hold on each: `@pytest.mark.parametrize("start",
STARTS)`. A zygote needs root; where it cannot run, its case is skipped with the reason."""

from __future__ import annotations

import pytest

from workbench.kernel.zygote import zygote_unsupported

_WHY = zygote_unsupported()
STARTS = [pytest.param("zygote", marks=pytest.mark.skipif(_WHY is not None, reason=f"no zygotes here: {_WHY}")), "exec"]
