"""RNN and its hidden backward under ``backend='triton'`` (``kernels.rnn`` recurrences, GEMM
input projections, copies and Philox dropout, under Triton's interpreter on CPU) give the
same outputs and gradients as the torch backend (torch's fused RNN kernels), and no node of
the plan falls back to a torch reference. Dropout draws from Philox streams there (torch's
generator in the reference), so training with ``p > 0`` is checked for reproducibility and
for a gradient consistent with the forward's masks instead of equality.
"""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as mx
from symgraph import config
from symgraph.ops.base import get_op
from symgraph.ops.rnn import _case
from tests.op_harness import assert_backends_agree, bind, draw_inputs, run_forward

OP = get_op("RNN")
# tiny shapes: the interpreter runs every step of every layer and direction as a launch
CASES = [
    _case("rnn_tanh", (3, 2, 3), 2),
    _case("rnn_relu", (2, 2, 3), 2, 2, True, state_outputs=True),
    _case("lstm", (3, 2, 2), 2, 2, True, state_outputs=True),
    _case("gru", (3, 1, 3), 3, 2, state_outputs=True),
    _case("gru", (2, 2, 2), 2, 1, True),
    _case("lstm", (2, 2, 3), 2, 2, p=0.5, train=False),
]


def _labels(exe) -> list[str]:
    return list(exe._plan.impl.values())


@pytest.mark.parametrize("index", range(len(CASES)))
def test_triton_backend_matches_torch(index):
    case = CASES[index]
    exe = assert_backends_agree(OP, case, draw_inputs(case, np.float32), 1e-4, 1e-5)
    labels = _labels(exe)
    assert not [v for v in labels if v.startswith("torch:")], labels
    assert "triton:triton_rnn" in labels, labels
    assert "triton:triton_backward_rnn" in labels, labels


def test_triton_dropout_reproduces_and_matches_its_gradient():
    """Same generator seed -> same output; a directional derivative of sum(out * head)
    under that seed equals the analytic parameter gradient (same masks in the backward)."""
    case = _case("gru", (3, 2, 2), 2, 2, p=0.5)
    values = draw_inputs(case, np.float64)
    with config.override(backend="triton"):
        _, exe = bind(OP, case, values, grad=True)
    out = run_forward(exe, True, seed=4)[0]
    assert np.array_equal(out, run_forward(exe, True, seed=4)[0])
    assert not np.array_equal(out, run_forward(exe, True, seed=5)[0])
    assert not np.allclose(out, run_forward(exe, False)[0])
    head = np.random.RandomState(1).uniform(-1, 1, out.shape)
    run_forward(exe, True, seed=4)
    exe.backward([mx.nd.array(head, dtype="float64")])
    grad = exe.grad_dict["in1"].asnumpy().copy()
    w = values[1]
    direction = np.random.RandomState(2).uniform(-1, 1, w.shape)

    def loss(v):
        exe.arg_dict["in1"][:] = v
        return float((run_forward(exe, True, seed=4)[0] * head).sum())
    # symgraph.kernels.dropout rounds the masked values to float32: a wide step keeps that noise
    # small; masks differing between forward and backward would be off by O(|numeric|)
    eps = 1e-2
    numeric = (loss(w + eps * direction) - loss(w - eps * direction)) / (2 * eps)
    assert abs(numeric - float((grad * direction).sum())) < 2e-3 * max(0.1, abs(numeric))
    assert not [v for v in _labels(exe) if v.startswith("torch:")], _labels(exe)


def test_triton_backward_reuses_the_forward_record(monkeypatch):
    """A training forward keeps its layers' record for the backward (no second run of the
    recurrence); with the record gone the backward recomputes it and gets the same grads."""
    from symgraph.ops import rnn
    case = _case("lstm", (3, 2, 2), 2, 2, True, state_outputs=True, p=0.5)
    values = draw_inputs(case, np.float32)
    calls = []
    layers = rnn._triton_layers
    monkeypatch.setattr(rnn, "_triton_layers", lambda *a: calls.append(1) or layers(*a))
    with config.override(backend="triton"):
        _, exe = bind(OP, case, values, grad=True)
    heads = [mx.nd.array(np.random.RandomState(3).uniform(-1, 1, o.shape)) for o in
             run_forward(exe, True, seed=7)]

    reserved = rnn._reserved

    def grads(drop_record: bool) -> dict:
        calls.clear()
        run_forward(exe, True, seed=7)
        monkeypatch.setattr(rnn, "_reserved", (lambda *a: None) if drop_record else reserved)
        exe.backward(heads)
        return {n: g.asnumpy().copy() for n, g in exe.grad_dict.items() if g is not None}
    kept = grads(False)
    assert len(calls) == 1, "the backward ran the layers again"
    recomputed = grads(True)
    assert len(calls) == 2
    assert kept.keys() == recomputed.keys() and kept
    for name in kept:
        np.testing.assert_allclose(kept[name], recomputed[name], rtol=1e-6, atol=1e-7)
