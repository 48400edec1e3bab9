"""`AgentConfig.kernel_start` picks how an episode's kernels start, for every path that builds its pool."""

from __future__ import annotations

import pytest
from kernel_starts import STARTS
from pydantic import ValidationError

from workbench.agent.config import AgentConfig
from workbench.agent.local import kernel_pool_for
from workbench.kernel.async_kernel import start_method


@pytest.mark.parametrize("start", STARTS)
def test_the_pool_starts_kernels_as_the_config_says(start):
    assert kernel_pool_for(AgentConfig(kernel_start=start), 1).start_method == start
    assert kernel_pool_for(AgentConfig(), 1).start_method == start_method(None, "bwrap")  # auto: the machine's default
    with pytest.raises(ValidationError, match="kernel_start"):
        AgentConfig(kernel_start="fork")
