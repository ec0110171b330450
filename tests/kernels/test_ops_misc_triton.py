"""Cast and norm on Triton kernels equal their torch references (interpreted on CPU)."""
from __future__ import annotations

import numpy as np
import pytest

from symgraph import config
from symgraph.ops.base import get_op
from tests.op_harness import bind, draw_inputs, run_forward

pytestmark = pytest.mark.filterwarnings("error:Triton kernel")
CASES = [pytest.param(get_op(name), case, id=f"{name}-{i}")
         for name in ("Cast", "_backward_Cast", "norm")
         for i, case in enumerate(get_op(name).cases)]


@pytest.mark.parametrize("op,case", CASES)
def test_matches_torch_backend(op, case):
    values = draw_inputs(case, np.float32)
    results = []
    for backend in ("triton", "torch"):
        with config.override(backend=backend):
            _, exe = bind(op, case, values, grad=False)
        results.append(run_forward(exe, case.train))
        if backend == "triton":
            assert all(label.startswith("triton:") for label in exe._plan.impl.values())
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
