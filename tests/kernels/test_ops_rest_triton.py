"""gather_nd, slice_like, softmax_cross_entropy, _log_softmax_pick, UpSampling and LeakyReLU
(with their hidden backward ops), shape_array, size_array and arange_like: every case gives
the same outputs and gradients with ``backend='triton'`` (kernels under Triton's interpreter
on CPU) as with the torch backend, and no node of the plan falls back to a torch reference.
LeakyReLU's rrelu draws its slopes from Philox, so it is checked for reproducibility and mask
properties instead of equality.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from symgraph import config
from symgraph.ndarray import NDArray
from symgraph.ops.base import canonical_ops, get_op
from tests.op_harness import assert_backends_agree, bind, draw_inputs, run_forward

HOOKED = [
    "gather_nd", "_backward_gather_nd", "slice_like", "_backward_slice_like",
    "softmax_cross_entropy", "_backward_softmax_cross_entropy",
    "_log_softmax_pick", "_backward_log_softmax_pick",
    "UpSampling", "_backward_UpSampling", "LeakyReLU", "_backward_LeakyReLU",
    "shape_array", "size_array", "_contrib_arange_like",
]


def _deterministic(name: str, case) -> bool:
    """Cases whose outputs do not depend on random draws (all but training rrelu)."""
    return not (case.attrs.get("act_type") == "rrelu" and case.train)


CASES = [pytest.param(name, i, id=f"{name}-{i}")
         for name in HOOKED for i, case in enumerate(get_op(name).cases)
         if _deterministic(name, case)]


@pytest.mark.parametrize("name,index", CASES)
def test_triton_backend_matches_torch(name, index):
    op = get_op(name)
    case = op.cases[index]
    exe = assert_backends_agree(op, case, draw_inputs(case, np.float32), 1e-5, 1e-5)
    labels = exe._plan.impl
    assert not [v for v in labels.values() if v.startswith("torch:")], labels
    assert f"triton:{op.kernel.__name__}" in labels.values(), labels


RRELU = [pytest.param(i, id=f"rrelu-{i}") for i, c in enumerate(get_op("LeakyReLU").cases)
         if not _deterministic("LeakyReLU", c)]


@pytest.mark.parametrize("index", RRELU)
def test_triton_rrelu_reproduces_and_masks(index):
    """Same generator seed -> same output and mask; slopes lie in [lower, upper) and vary;
    output = x where x > 0 else x * mask; the gradient is dy * (1 or mask). (Philox streams
    differ from torch's RNG, so no equality with the torch backend.)"""
    op = get_op("LeakyReLU")
    case = op.cases[index]
    lo = float(case.attrs.get("lower_bound", 0.125))
    hi = float(case.attrs.get("upper_bound", 0.334))
    x = np.linspace(-2.0, 1.5, int(np.prod(case.shapes[0])), dtype=np.float32)
    x = x.reshape(case.shapes[0])
    with config.override(backend="triton"):
        _, exe = bind(op, case, [x], grad=True)
    out, mask = run_forward(exe, True, seed=5)
    again = run_forward(exe, True, seed=5)
    assert np.array_equal(out, again[0]) and np.array_equal(mask, again[1])
    assert not np.array_equal(mask, run_forward(exe, True, seed=6)[1])
    assert (mask >= lo).all() and (mask < hi + 1e-6).all() and len(np.unique(mask)) > 1
    np.testing.assert_allclose(out, np.where(x > 0, x, x * mask), rtol=1e-6)
    assert not [v for v in exe._plan.impl.values() if v.startswith("torch:")], exe._plan.impl
    run_forward(exe, True, seed=5)
    exe.backward([NDArray(torch.ones(out.shape)), NDArray(torch.zeros(out.shape))])
    np.testing.assert_allclose(exe.grad_dict["in0"].asnumpy(), np.where(x > 0, 1.0, mask),
                               rtol=1e-6)


def test_every_operator_has_a_triton_path():
    """Every non-view operator has a Triton kernel or a Triton expression, or is a composite
    (expanded into such operators at bind: tests/test_composite.py runs them under Triton)."""
    assert [o.name for o in canonical_ops()
            if o.kernel is None and o.expr is None and not o.hints.view and o.decompose is None
            and o.special.eager is None  # eager: runs registered ops (boolean_mask: take)
            and o.name not in HOST_PYTHON and o.name not in STORAGE_ONLY] == []


# run the user's Python code on the host (tests/test_custom_op.py binds them under Triton)
HOST_PYTHON = {"Custom", "_backward_Custom"}
# operators whose job is sparse storage (rows kept by index, stored values counted): their
# kernels are torch index operations on row_sparse/csr values (docs/architecture.md,
# Decisions); on dense input they are MXNet's storage fallback and run the torch reference
STORAGE_ONLY = {"_sparse_retain", "_backward_sparse_retain", "_contrib_getnnz"}
