"""The kernel table: every kernel's wrapper, torch reference, test cases and benchmark.

Each family module (``kernels/<family>.py``) ends with ``KERNELS = [KernelSpec(...), ...]``;
:func:`all_kernels` gathers them. Tests run every case of every entry against its reference
(under the interpreter on CPU); ``benchmarks/bench_kernels.py`` times every entry's ``bench``
sizes against torch eager and ``torch.compile``.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

# modules under kernels/ that define KERNELS
FAMILIES = ("elementwise", "gemm", "conv", "reduce", "softmax",
            "copy", "pool", "index", "dropout", "sequence", "optimizer", "norm", "rnn",
            "random", "random_pdf", "sort", "sampling", "detection", "ctc",
            "linalg", "image", "roi", "multibox", "proposal", "hawkes", "psroi",
            "deformable", "correlation",
            "im2col")

# make(dtype, device, shape) -> (args, kwargs) for the wrapper and the reference alike
Maker = Callable[[torch.dtype, torch.device, tuple], tuple[tuple, dict]]


@dataclass(frozen=True)
class KernelSpec:
    """One kernel entry.

    ``fn`` is the launch wrapper and ``ref`` its torch reference; both take the arguments
    ``make`` builds and return a tensor or a tuple of tensors. ``fn`` also accepts ``out=``
    (a tensor or tuple) to write into, which tests fill with NaN/sentinels so unwritten
    elements fail. ``shapes`` are small irregular test shapes; ``bench_shapes`` are the
    benchmark sizes; ``bytes``/``flops`` give the traffic of one call (for GB/s, TFLOP/s).
    """

    name: str
    fn: Callable
    ref: Callable
    make: Maker
    shapes: tuple[tuple, ...]
    bench_shapes: tuple[tuple, ...] = ()
    dtypes: tuple[torch.dtype, ...] = (torch.float32,)
    tol: dict = field(default_factory=lambda: {torch.float32: (1e-5, 1e-5),
                                               torch.float16: (1e-2, 1e-2),
                                               torch.bfloat16: (2e-2, 2e-2)})
    bytes: Callable[..., int] | None = None
    flops: Callable[..., int] | None = None
    family: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def all_kernels() -> dict[str, KernelSpec]:
    """Every kernel entry of every family, by name."""
    out: dict[str, KernelSpec] = {}
    for family in FAMILIES:
        module = importlib.import_module(f"symgraph.kernels.{family}")
        for spec in module.KERNELS:
            assert spec.name not in out, f"kernel {spec.name} listed twice"
            out[spec.name] = spec
    return out


def tensor_bytes(*tensors: torch.Tensor) -> int:
    """Bytes of the given tensors (for the ``bytes`` entry: inputs read + outputs written)."""
    return sum(t.numel() * t.element_size() for t in tensors)
