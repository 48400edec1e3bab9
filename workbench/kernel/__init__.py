"""Kernels: one sandboxed ipykernel per rollout, `Observation`s, and a warm pool.

from workbench.kernel import Kernel
with Kernel() as k:                       # sandboxed: no network, unprivileged, limited
    print(k.execute("2 ** 10").text)      # 1024
"""

from workbench.kernel.async_kernel import AsyncKernel
from workbench.kernel.fork import ForkResult
from workbench.kernel.observation import Observation
from workbench.kernel.pool import AsyncKernelPool, KernelPool
from workbench.kernel.pool import BlockingKernelPool as BlockingKernelPool  # deprecated name of KernelPool
from workbench.kernel.sync import Kernel

__all__ = ["AsyncKernel", "AsyncKernelPool", "ForkResult", "Kernel", "KernelPool", "Observation"]
