"""GEMM-family ops on the Triton backend (interpreted on CPU) against the torch backend.

For every case of every op whose ``kernel=`` lowers to ``kernels/gemm.py``: the forward
outputs and the gradients of all inputs under ``config.override(backend="triton")`` equal
those of the default torch path (float64, so the comparison is tight), and the plan labels
the op's launches ``triton:<adapter>``.
"""
from __future__ import annotations

import pytest

import symgraph as mx  # noqa: F401 - fills the registry
from symgraph.ops.base import get_op

from ..op_harness import assert_backends_agree, draw_inputs

# a kernel that fails would fall back to the reference with a RuntimeWarning: make it fail
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

# op -> the hidden backward op whose kernel its gradient runs (None: built from other ops)
OPS = {"FullyConnected": None, "dot": "_backward_dot", "batch_dot": None,
       "Convolution": "_backward_Convolution", "Deconvolution": "_backward_Deconvolution"}
CASES = [pytest.param(name, i, id=f"{name}-{i}")
         for name in OPS for i in range(len(get_op(name).cases))]


@pytest.mark.parametrize("name,index", CASES)
def test_triton_backend_matches_torch(name, index):
    op = get_op(name)
    case = op.cases[index]
    text = assert_backends_agree(op, case, draw_inputs(case), 1e-10, 1e-10).debug_str()
    assert f"triton:triton_{_snake(name)}" in text, text
    if OPS[name]:
        assert f"triton:triton_{_snake(OPS[name])}" in text, text


def _snake(name: str) -> str:
    """``FullyConnected`` -> ``fully_connected``; ``_backward_dot`` -> ``backward_dot``."""
    out = "".join("_" + c.lower() if c.isupper() else c for c in name.strip("_"))
    return out.lstrip("_").replace("__", "_")
