"""The math ops with their own kernels (cumsum, div_sqrt_dim, amp casts, histogram, zeros)
and the composites (softmin, quadratic, allclose, khatri_rao, all_finite, multi_all_finite)
give the same outputs and gradients with ``backend='triton'`` (kernels under Triton's
interpreter on CPU) as with the torch backend, and no node falls back to a torch reference.
gamma's and digamma's Triton expressions are also checked on negative inputs (reflection).
"""
from __future__ import annotations

import numpy as np
import pytest

from symgraph import config
from symgraph.ops.base import Case, get_op
from tests.op_harness import assert_triton_case, bind, draw_inputs, run_forward

KERNEL_OPS = ["cumsum", "_backward_cumsum", "_contrib_div_sqrt_dim", "amp_cast",
              "amp_multicast", "_histogram", "_zeros_without_dtype"]
COMPOSITES = ["softmin", "_contrib_quadratic", "_contrib_allclose", "khatri_rao", "all_finite",
              "multi_all_finite"]
# both branches of the reflection are evaluated; the unused one may take log(-x) (discarded)
REFLECTION_WARNINGS = ("ignore:invalid value:RuntimeWarning",
                       "ignore:divide by zero:RuntimeWarning")
CASES = [pytest.param(name, i, id=f"{name}-{i}")
         for name in KERNEL_OPS + COMPOSITES for i in range(len(get_op(name).cases))]


@pytest.mark.parametrize("name,index", CASES)
def test_triton_backend_matches_torch(name, index):
    op = get_op(name)
    case = op.cases[index]
    assert_triton_case(op, case, 1e-5, 1e-5)


@pytest.mark.filterwarnings(*REFLECTION_WARNINGS)
@pytest.mark.parametrize("name", ["gamma", "_digamma"])
def test_reflected_expressions_on_negative_inputs(name):
    op = get_op(name)
    case = Case(((2, 5),), low=-2.9, high=-0.1)
    values = draw_inputs(case, np.float32)
    outs = {}
    for backend in ("torch", "triton"):
        with config.override(backend=backend):
            _, exe = bind(op, case, values, grad=False)
        outs[backend] = run_forward(exe, False)[0]
    assert any(v.startswith("fused:") for v in exe._plan.impl.values()), exe._plan.impl
    np.testing.assert_allclose(outs["triton"], outs["torch"], rtol=5e-5, atol=1e-5)


def test_cumsum_kernel_keeps_integer_dtype():
    import torch

    from symgraph.kernels.reduce import cumsum
    with config.override(backend="triton"):
        x = torch.arange(12, dtype=torch.int32).reshape(3, 4) - 5
        got = cumsum(x, 1)
    assert got.dtype == torch.int32
    assert torch.equal(got, torch.cumsum(x, 1, dtype=torch.int32))
