"""Every entry of the kernel table against its torch reference, on CPU under Triton's
interpreter (GPU runs use the same table with larger shapes in benchmarks/bench_kernels.py).

Outputs are poisoned (NaN for floats, a sentinel for integers) so an element the kernel
does not write fails the comparison.
"""
from __future__ import annotations

import pytest
import torch

from symgraph.kernels.table import all_kernels
from tests import device

SPECS = all_kernels()
CASES = [pytest.param(spec, shape, dtype, id=f"{name}-{'x'.join(map(str, shape))}-{dtype}"[:90])
         for name, spec in SPECS.items() for shape in spec.shapes for dtype in spec.dtypes]


def _poisoned(t: torch.Tensor) -> torch.Tensor:
    if t.dtype.is_floating_point:
        return torch.full_like(t, float("nan"))
    return torch.full_like(t, -12345 if t.dtype != torch.bool else 1)


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _clone(args):
    return tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)


@pytest.mark.parametrize("spec,shape,dtype", CASES)
def test_kernel_matches_reference(spec, shape, dtype):
    args, kwargs = spec.make(dtype, device.TORCH, shape)
    want = _as_tuple(spec.ref(*_clone(args), **kwargs))
    outs = tuple(_poisoned(w) for w in want)
    got = _as_tuple(spec.fn(*args, out=outs if len(outs) > 1 else outs[0], **kwargs))
    rtol, atol = spec.tol.get(dtype, (1e-5, 1e-5))
    assert len(got) == len(want)
    for i, (g, w, o) in enumerate(zip(got, want, outs)):
        assert g.data_ptr() == o.data_ptr(), f"output {i} was not written into out="
        assert g.shape == w.shape and g.dtype == w.dtype, (i, g.shape, w.shape, g.dtype)
        torch.testing.assert_close(g.float() if g.dtype.is_floating_point else g,
                                   w.float() if w.dtype.is_floating_point else w,
                                   rtol=rtol, atol=atol, msg=lambda m, i=i: f"output {i}: {m}")


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_kernel_has_reference_cases_and_benchmark(name):
    spec = SPECS[name]
    assert spec.ref is not None and spec.shapes, name
    assert spec.bench_shapes and (spec.bytes or spec.flops), f"{name} has no benchmark entry"
