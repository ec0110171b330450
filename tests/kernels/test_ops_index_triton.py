"""Sorting and the indexing/shape primitives of ``ops/sort.py``, ``ops/scatter.py`` and their
neighbours: every case gives the same outputs and gradients with ``backend='triton'``
(kernels under Triton's interpreter on CPU) as with the torch backend, and no node of the
plan falls back to a torch reference. (Composites among them, ``sort`` and ``argsort`` for
example, are run under Triton by ``tests/test_composite.py``.)
"""
from __future__ import annotations

import numpy as np
import pytest

from symgraph.ops.base import get_op
from tests.op_harness import assert_backends_agree, assert_no_torch_step, draw_inputs

HOOKED = ["topk", "_backward_topk", "diag", "_backward_diag", "_ravel_multi_index",
          "_unravel_index", "scatter_nd", "_scatter_set_nd", "_backward_gather_nd", "batch_take"]

CASES = [pytest.param(name, i, id=f"{name}-{i}")
         for name in HOOKED for i, case in enumerate(get_op(name).cases)]


@pytest.mark.parametrize("name,index", CASES)
def test_triton_backend_matches_torch(name, index):
    op = get_op(name)
    case = op.cases[index]
    exe = assert_backends_agree(op, case, draw_inputs(case, np.float32), 1e-5, 1e-5)
    labels = assert_no_torch_step(exe)
    assert f"triton:{op.kernel.__name__}" in labels.values(), labels
