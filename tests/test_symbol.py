"""``symbol/symbol.py``: Symbol arithmetic and composition as MXNet 1.9.1 has them."""
from __future__ import annotations

import numpy as np

import symgraph as mx


def test_numpy_scalars_defer_to_symbols():
    """Regression (MXNet's ONNX test_onnx_export_scalar_op): ``np.float64 - Symbol`` is a
    Symbol (``__array_priority__``, as MXNet's), not numpy iterating the symbol."""
    s = np.float64(3.5) - mx.sym.var("x")
    assert isinstance(s, mx.sym.Symbol)
    assert s.eval(x=mx.nd.array([1.0]))[0].asnumpy().tolist() == [2.5]


def test_compose_by_name_replaces_an_auxiliary_state():
    """By name any input may be replaced, auxiliary states included (a block's input feeding
    BatchNorm's moving mean, recorded under autograd, composes so)."""
    bn = mx.sym.BatchNorm(mx.sym.var("x"), name="bn")
    out = bn(bn_moving_mean=mx.sym.var("m"))
    assert "m" in out.list_auxiliary_states()
