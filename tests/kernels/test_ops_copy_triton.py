"""Data-movement, pooling, indexing, dropout and sequence operators: every case of every
hooked op gives the same outputs and gradients with ``backend='triton'`` (kernels under
Triton's interpreter on CPU) as with the default torch backend, and the plan labels the
Triton launches. Dropout is checked for reproducibility and mask properties instead.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from symgraph import config
from symgraph.ndarray import NDArray
from symgraph.ops.base import get_op
from tests.op_harness import assert_backends_agree, bind, draw_inputs, run_forward

HOOKED = [
    "Concat", "_backward_Concat", "stack", "SliceChannel", "slice", "_backward_slice",
    "slice_axis", "_backward_slice_axis", "tile", "_backward_tile", "repeat",
    "_backward_repeat", "transpose", "_transpose_back", "SwapAxis", "reverse",
    "broadcast_to", "broadcast_axis", "broadcast_like", "_sum_like",
    "Pooling", "_backward_Pooling",
    "Embedding", "_backward_Embedding", "take", "_backward_take", "pick", "_backward_pick",
    "one_hot", "where",
    "SequenceMask", "SequenceLast", "_backward_SequenceLast", "SequenceReverse",
]
HOOKED = [n for n in HOOKED if get_op(n).kernel is not None]
CASES = [pytest.param(name, i, id=f"{name}-{i}")
         for name in HOOKED for i in range(len(get_op(name).cases))]


@pytest.mark.parametrize("name,index", CASES)
def test_triton_backend_matches_torch(name, index):
    op = get_op(name)
    case = op.cases[index]
    exe = assert_backends_agree(op, case, draw_inputs(case, np.float32), 1e-5, 1e-6)
    assert f"triton:{op.kernel.__name__}" in exe.debug_str()


@pytest.mark.parametrize("index", range(len(get_op("Dropout").cases)))
def test_triton_dropout_reproduces_and_masks(index):
    """Same generator seed -> same output; mask values 0 or 1/(1-p); kept fraction near
    1-p; the gradient is dy * mask. (Philox streams differ from torch's RNG, so no equality
    with the torch backend.)"""
    op = get_op("Dropout")
    case = op.cases[index]
    values = [np.ones(case.shapes[0], np.float32)]
    with config.override(backend="triton"):
        _, exe = bind(op, case, values, grad=case.grad)
    first = run_forward(exe, case.train, seed=5)[0]
    assert np.array_equal(first, run_forward(exe, case.train, seed=5)[0])
    assert "triton:triton_dropout" in exe.debug_str()
    p = float(case.attrs.get("p", 0.5))
    active = case.train or case.attrs.get("mode") == "always"
    if not active:
        assert np.array_equal(first, values[0])
        return
    assert set(np.unique(first).tolist()) <= {0.0, np.float32(1 / (1 - p))}
    assert not np.array_equal(first, run_forward(exe, case.train, seed=6)[0])
    kept = (first != 0).mean()
    assert abs(kept - (1 - p)) < 5 * np.sqrt(p * (1 - p) / first.size) + 0.05
    if case.grad:
        run_forward(exe, case.train, seed=5)
        exe.backward([NDArray(torch.ones(first.shape))])
        np.testing.assert_array_equal(exe.grad_dict["in0"].asnumpy(), first)
