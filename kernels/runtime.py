"""Launching Triton kernels: compiled on CUDA tensors, interpreted on CPU tensors.

``@kernel`` replaces ``@triton.jit``. The decorated object launches like a JIT function
(``k[grid](*args, **meta)``) and picks, per launch, the compiled kernel for CUDA tensors or
Triton's interpreter for CPU tensors, so one process can test on CPU and run on GPU without
setting ``TRITON_INTERPRET`` before import. Nothing is compiled until the first launch.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


class Kernel:
    """A Triton kernel function, jitted lazily for the device of its first tensor argument."""

    def __init__(self, fn: Callable, **jit_options: Any):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self._jit_options = jit_options
        self._compiled = None
        self._interpreted = None

    def _impl(self, device: torch.device):
        if device.type == "cuda":
            if self._compiled is None:
                import triton
                self._compiled = triton.jit(self.fn, **self._jit_options)
            return self._compiled
        if self._interpreted is None:
            from triton.runtime.interpreter import InterpretedFunction
            self._interpreted = InterpretedFunction(self.fn)
        return self._interpreted

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            device = next((a.device for a in args if isinstance(a, torch.Tensor)),
                          torch.device("cpu"))
            return self._impl(device)[grid](*args, **kwargs)
        return launch

    def __repr__(self) -> str:
        return f"<triton kernel {self.__name__}>"


def kernel(fn: Callable | None = None, **jit_options: Any):
    """Decorator: ``@kernel`` or ``@kernel(do_not_specialize=...)`` in place of ``@triton.jit``."""
    if fn is None:
        return lambda f: Kernel(f, **jit_options)
    return Kernel(fn, **jit_options)


def cdiv(a: int, b: int) -> int:
    """Ceiling division (grid sizes)."""
    return -(-a // b)


def block_for(n: int, cap: int = 1024, floor: int = 16) -> int:
    """The power of two >= n, within [floor, cap]: a block size for a row of length n."""
    b = floor
    while b < n and b < cap:
        b *= 2
    return b


def on_cpu(*tensors: torch.Tensor) -> bool:
    """Whether the launch will be interpreted (tests keep grids small there)."""
    return all(t.device.type != "cuda" for t in tensors)
