"""ONNX translations of the regression loss heads at inference: ``LinearRegressionOutput``
and ``MAERegressionOutput`` pass ``data`` through, ``LogisticRegressionOutput`` is its
sigmoid. The label only feeds the gradient, so it is not read."""
from __future__ import annotations

from ..emitter import Emitter, NodeCtx, converts


@converts("LinearRegressionOutput", "MAERegressionOutput")
def regression_identity(e: Emitter, n: NodeCtx):
    return [n.ins[0]]


@converts("LogisticRegressionOutput")
def logistic_regression(e: Emitter, n: NodeCtx):
    dtype = n.in_dtypes[0]
    if dtype not in ("float16", "float32", "float64"):
        raise n.fail(f"LogisticRegressionOutput of {dtype} data")
    return [e.one("Sigmoid", [n.ins[0]], n.outs[0])]
