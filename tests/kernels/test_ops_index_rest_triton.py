"""The remaining indexing/shape ops (``_split_v2``, ``index_array``, ``_slice_assign``,
``_slice_assign_scalar``, ``_set_value``, ``im2col``, its gradient, ``col2im``): every case
gives the same outputs and gradients with ``backend='triton'`` (kernels under Triton's
interpreter on CPU) as with the torch backend, and no node of the plan falls back to a torch
reference. ``boolean_mask`` runs imperatively as ``take`` and is checked recorded under
autograd on the Triton backend.
"""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as mx
from symgraph import config
from symgraph.ops.base import get_op
from tests.op_harness import assert_backends_agree, assert_no_torch_step, draw_inputs

HOOKED = ["_split_v2", "_contrib_index_array", "_slice_assign", "_slice_assign_scalar",
          "_set_value", "im2col", "_backward_im2col", "col2im"]

CASES = [pytest.param(name, i, id=f"{name}-{i}")
         for name in HOOKED for i, case in enumerate(get_op(name).cases)]


@pytest.mark.parametrize("name,index", CASES)
def test_triton_backend_matches_torch(name, index):
    op = get_op(name)
    case = op.cases[index]
    exe = assert_backends_agree(op, case, draw_inputs(case, np.float32), 1e-5, 1e-5)
    labels = assert_no_torch_step(exe)
    assert any(v.startswith("triton:") for v in labels.values()), labels


def test_boolean_mask_recorded_on_the_triton_backend():
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    head = np.arange(6, dtype=np.float32).reshape(2, 3) + 1
    with config.override(backend="triton"):
        x = mx.nd.array(data)
        x.attach_grad()
        with mx.autograd.record():
            y = mx.nd.contrib.boolean_mask(x, mx.nd.array([0, 1, 0, 1]))
        y.backward(mx.nd.array(head))
    np.testing.assert_array_equal(y.asnumpy(), data[[1, 3]])
    want = np.zeros_like(data)
    want[[1, 3]] = head
    np.testing.assert_array_equal(x.grad.asnumpy(), want)
