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


def test_split_k_only_for_few_output_tiles_and_a_long_k(monkeypatch):
    """Issue #22 item 4: a GEMM whose output fills less than half the SMs with 128x128
    tiles and whose K is long runs slices of K in parallel (at least 512 each, at most 16);
    the interpreter never splits unless asked (the table's ``matmul_split_k`` entry asks)."""
    import torch

    from symgraph.kernels import gemm
    monkeypatch.setattr(gemm, "_sm_count", lambda device: 132)
    cuda = torch.device("cuda")
    assert gemm.split_for(1, 64, 64, 16384, cuda) == 16
    assert gemm.split_for(1, 256, 256, 4096, cuda) == 8  # 4 tiles: K // 512 bounds it
    assert gemm.split_for(2, 1024, 1024, 8192, cuda) == 1  # 128 tiles fill the SMs
    assert gemm.split_for(1, 64, 64, 1024, cuda) == 1  # K too short to pay for the sum
    assert gemm.split_for(1, 64, 64, 16384, torch.device("cpu")) == 1
