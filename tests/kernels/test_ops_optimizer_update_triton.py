"""The optimizer update ops (symgraph/ops/optimizer_update.py, optimizer_multi.py,
multi_tensor.py): every case gives the same outputs and written states with
``backend='triton'`` (the multi-tensor kernels of kernels/optimizer.py under Triton's
interpreter on CPU) as with the torch backend, and no node of the plan falls back to a torch
reference (``multi_lars`` is a composite of elementwise ops)."""
from __future__ import annotations

import numpy as np
import pytest

from symgraph.ops.base import canonical_ops, get_op
from tests.op_harness import assert_backends_agree, assert_no_torch_step, draw_inputs, run_case

OPS = [op for op in canonical_ops() if op.forward.__module__.startswith(
    ("symgraph.ops.optimizer_update", "symgraph.ops.optimizer_multi",
     "symgraph.ops.multi_tensor"))]
CASES = [pytest.param(op, case, id=f"{op.name}-{i}") for op in OPS
         for i, case in enumerate(op.cases)]


def test_every_update_op_is_covered():
    assert len(OPS) >= 33, [op.name for op in OPS]


@pytest.mark.parametrize("op,case", CASES)
def test_triton_backend_matches_torch(op, case):
    values = draw_inputs(case, np.float32)
    want, _, want_exe = run_case(op, case, values, "torch")
    got, _, exe = run_case(op, case, values, "triton")
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    for name, arr in want_exe.arg_dict.items():  # the states written in place
        np.testing.assert_allclose(exe.arg_dict[name].asnumpy(), arr.asnumpy(), rtol=1e-5,
                                   atol=1e-5, err_msg=name)
    labels = assert_no_torch_step(exe)
    assert f"triton:{op.kernel.__name__}" in labels.values(), labels


def test_multi_lars_composite_has_no_torch_node():
    op = get_op("multi_lars")
    case = op.cases[0]
    exe = assert_backends_agree(op, case, draw_inputs(case, np.float32), 1e-5, 1e-5)
    assert_no_torch_step(exe)
