"""Reduction, softmax and normalisation ops: the Triton backend equals the torch backend.

Every case of every op listed below is bound twice (default torch backend, then
``backend="triton"``, kernels under Triton's interpreter on CPU); forward outputs, aux
states after the forward, and gradients for random head gradients must agree, and the
bound plan must label the op's launches (including its hidden backward ops) ``triton:``.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import symgraph as mx
from symgraph import config
from symgraph.ndarray.ndarray import NDArray
from symgraph.ops.base import get_op

from ..op_harness import bind, draw_inputs

# op name -> the hidden backward ops whose kernels its gradient also runs
OPS = {
    "softmax": ("_backward_softmax",), "log_softmax": ("_backward_log_softmax",),
    "SoftmaxActivation": ("_backward_softmax",),
    "SoftmaxOutput": ("_backward_SoftmaxOutput",),
    "LayerNorm": ("_backward_LayerNorm",), "L2Normalization": (),
    "BatchNorm": ("_backward_BatchNorm",),
    "sum": (), "mean": (), "max": (), "min": (), "prod": (), "argmax": (), "argmin": (),
    "_square_sum": ("_backward_square_sum",),
}
CASES = [pytest.param(name, case, id=f"{name}-{i}")
         for name in OPS for i, case in enumerate(get_op(name).cases)]


def _run(name, case, values, backend):
    op = get_op(name)
    with config.override(backend=backend):
        _, exe = bind(op, case, values, grad=op.gradient is not None and (case.grad or op.loss))
    exe._rt.generator.manual_seed(0)
    outs = [o.asnumpy().copy() for o in exe.forward(is_train=case.train)]
    aux = {k: v.asnumpy().copy() for k, v in exe.aux_dict.items()}
    grads = {}
    if op.gradient is not None and case.train and (case.grad or op.loss):
        rng = np.random.RandomState(1)
        heads = [NDArray(torch.from_numpy(rng.uniform(-1, 1, size=o.shape).astype(o.dtype)))
                 for o in outs]
        exe.backward(heads)
        grads = {k: g.asnumpy().copy() for k, g in exe.grad_dict.items() if g is not None}
    args = {k: v.asnumpy().copy() for k, v in exe.arg_dict.items()}
    return exe, outs, aux, grads, args


def _close(got, want, what, rtol=2e-5, atol=2e-6):
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)


@pytest.mark.parametrize("name,case", CASES)
def test_triton_backend_matches_torch(name, case):
    values = draw_inputs(case, np.float32)
    _, outs, aux, grads, args = _run(name, case, values, "torch")
    exe, touts, taux, tgrads, targs = _run(name, case, values, "triton")
    for i, (g, w) in enumerate(zip(touts, outs)):
        _close(g, w, f"{name} output {i}")
    for k in aux:
        _close(taux[k], aux[k], f"{name} aux {k}")
    for k in args:  # ops may write their arguments (BatchNorm's fixed gamma)
        _close(targs[k], args[k], f"{name} argument {k}")
    assert grads.keys() == tgrads.keys()
    for k in grads:
        _close(tgrads[k], grads[k], f"{name} gradient {k}")
    labels = exe.debug_str()
    for op_name in (name,) + (OPS[name] if grads else ()):
        kernel = get_op(op_name).kernel
        assert f"triton:{kernel.__name__}" in labels, (op_name, labels)


def test_torch_backend_keeps_references():
    case = get_op("softmax").cases[0]
    with config.override(backend="torch"):
        _, exe = bind(get_op("softmax"), case, draw_inputs(case, np.float32), grad=True)
    assert "triton:" not in exe.debug_str()
    assert mx is not None
