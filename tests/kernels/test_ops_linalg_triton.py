"""The linalg ops under ``backend='triton'`` (kernels/linalg.py under Triton's interpreter on
CPU) give the torch backend's outputs and gradients, and no node of the plan runs a torch
reference: the primitives run their own kernels, the composites (sumlogdiag, syrk, trmm,
potri) expand into Triton-backed ops."""
from __future__ import annotations

import numpy as np
import pytest

from symgraph.ops.base import Case, canonical_ops, get_op
from tests.op_harness import assert_backends_agree, draw_inputs

NAMES = sorted(op.name for op in canonical_ops()
               if op.name.startswith("_linalg_") and "gemm" not in op.name)
CASES = [pytest.param(name, i, id=f"{name}-{i}")
         for name in NAMES for i, _ in enumerate(get_op(name).cases)]


def _run(op, case, values):
    exe = assert_backends_agree(op, case, values, 1e-4, 1e-5)
    labels = exe._plan.impl
    assert not [v for v in labels.values() if v.startswith("torch:")], labels
    return labels


@pytest.mark.parametrize("name,index", CASES)
def test_triton_backend_matches_torch(name, index):
    op = get_op(name)
    case = op.cases[index]
    labels = _run(op, case, draw_inputs(case, np.float32))
    if op.kernel is not None:
        assert f"triton:{op.kernel.__name__}" in labels.values(), labels


@pytest.mark.parametrize("lower", [True, False])
def test_triton_potrf_on_positive_definite_matrices(lower):
    """The table's potrf cases are 1 x 1 (uniform draws are not positive definite)."""
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (2, 4, 4))
    spd = (x @ x.transpose(0, 2, 1) + 4 * np.eye(4)).astype(np.float32)
    _run(get_op("_linalg_potrf"), Case(((2, 4, 4),), {"lower": lower}), [spd])
