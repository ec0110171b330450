"""GEMM-family ops on the Triton backend (interpreted on CPU) against the torch backend.

For every case of every op whose ``kernel=`` lowers to ``kernels/gemm.py``: the forward
outputs and the gradients of all inputs under ``config.override(backend="triton")`` equal
those of the default torch path (float64, so the comparison is tight), and the plan labels
the op's launches ``triton:<adapter>``.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import symgraph as mx  # noqa: F401 - fills the registry
from symgraph import config
from symgraph.ndarray.ndarray import NDArray
from symgraph.ops.base import get_op

from ..op_harness import bind, draw_inputs

# a kernel that fails would fall back to the reference with a RuntimeWarning: make it fail
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

# op -> the hidden backward op whose kernel its gradient runs (None: built from other ops)
OPS = {"FullyConnected": None, "dot": "_backward_dot", "batch_dot": None,
       "Convolution": "_backward_Convolution", "Deconvolution": "_backward_Deconvolution"}
CASES = [pytest.param(name, i, id=f"{name}-{i}")
         for name in OPS for i in range(len(get_op(name).cases))]


def _run(op, case, values, backend: str):
    """Forward, backward with fixed head gradients; (outputs, grads, debug_str)."""
    with config.override(backend=backend):
        _, exe = bind(op, case, values, grad=True)
    outs = [o.asnumpy().copy() for o in exe.forward(is_train=True)]
    rng = np.random.RandomState(1)
    heads = [rng.uniform(-1, 1, size=o.shape) for o in outs]
    exe.backward([NDArray(torch.from_numpy(h)) for h in heads])
    grads = {n: g.asnumpy().copy() for n, g in exe.grad_dict.items() if g is not None}
    return outs, grads, exe.debug_str()


@pytest.mark.parametrize("name,index", CASES)
def test_triton_backend_matches_torch(name, index):
    op = get_op(name)
    case = op.cases[index]
    values = draw_inputs(case)
    want_outs, want_grads, _ = _run(op, case, values, "torch")
    got_outs, got_grads, text = _run(op, case, values, "triton")
    for got, want in zip(got_outs, want_outs):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
    assert sorted(got_grads) == sorted(want_grads)
    for n in want_grads:
        np.testing.assert_allclose(got_grads[n], want_grads[n], rtol=1e-10, atol=1e-10,
                                   err_msg=f"{name} d/d{n}")
    assert f"triton:triton_{_snake(name)}" in text, text
    if OPS[name]:
        assert f"triton:triton_{_snake(OPS[name])}" in text, text


def _snake(name: str) -> str:
    """``FullyConnected`` -> ``fully_connected``; ``_backward_dot`` -> ``backward_dot``."""
    out = "".join("_" + c.lower() if c.isupper() else c for c in name.strip("_"))
    return out.lstrip("_").replace("__", "_")
