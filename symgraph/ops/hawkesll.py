"""_contrib_hawkesll: log-likelihood of marked Hawkes processes (MXNet's contrib op).

Inputs ``lda`` (N, K) background intensities, ``alpha`` (K,) branching ratios, ``beta`` (K,)
decays, ``state`` (N, K) the processes' states, ``lags`` (N, T) inter-arrival times,
``marks`` (N, T) int32 mark ids, ``valid_length`` (N,) and ``max_time`` (N,); outputs the
log-likelihood (N,) and the states at ``max_time`` (N, K). The recursion is written out in
``kernels/hawkes.py``. Gradients flow to ``lda``, ``alpha`` and ``beta`` only (the times,
marks and input state are data; the output states get none), as in MXNet.

>>> import symgraph as mx
>>> ll, states = mx.nd.contrib.hawkesll(
...     mx.nd.array([[1.5, 2.0]]), mx.nd.array([0.2, 0.3]), mx.nd.array([1.0, 2.0]),
...     mx.nd.zeros((1, 2)), mx.nd.array([[6, 7]]), mx.nd.array([[0, 1]], dtype='int32'),
...     mx.nd.array([2]), mx.nd.array([100.0]))
>>> round(float(ll.asscalar()), 4), states.shape
(-349.4014, (1, 2))
"""
from __future__ import annotations

from ..base import DTypeError, ShapeError
from .base import Case, OpDef, register

_INPUTS = ("lda", "alpha", "beta", "state", "lags", "marks", "valid_length", "max_time")


def _check(what: str, got, want) -> None:
    if got and tuple(got) != tuple(want):
        raise ShapeError(f"_contrib_hawkesll: {what} must have shape {tuple(want)}, got "
                         f"{tuple(got)}")


def _shape(p, shapes):
    lda, lags = shapes[0], shapes[4]
    if not lda or not lags:
        return None
    if len(lda) != 2 or len(lags) != 2:
        raise ShapeError(f"_contrib_hawkesll: lda (N, K) and lags (N, T) must be 2-D, got "
                         f"{tuple(lda)} and {tuple(lags)}")
    (n, k), t = lda, lags[1]
    want = [(n, k), (k,), (k,), (n, k), (n, t), (n, t), (n,), (n,)]
    for name, got, exp in zip(_INPUTS, shapes, want):
        _check(name, got, exp)
    return want, [(n,), (n, k)]


def _type(p, types):
    data = types[0]
    if data is None:
        return None
    if data not in ("float16", "float32", "float64"):
        raise DTypeError(f"_contrib_hawkesll: lda must be a floating point type, got {data}")
    marks = types[5] or "int32"
    return [data] * 5 + [marks, data, data], [data, data]


def _forward(p, ins, aux, rt):
    from ..kernels.hawkes import hawkesll_ref
    return hawkesll_ref(*ins)


def triton_hawkesll(p, ins, aux, rt):
    """Triton kernel (``symgraph.kernels.hawkes.hawkesll``): one program per sample."""
    from ..kernels.hawkes import hawkesll
    return hawkesll(*ins)


def _backward(p, ins, aux, rt):
    from ..kernels.hawkes import hawkesll_backward_ref
    return tuple(g.to(x.dtype) for g, x in zip(hawkesll_backward_ref(*ins), ins[1:4]))


def triton_backward_hawkesll(p, ins, aux, rt):
    """Triton kernel (``kernels.hawkes.hawkesll_backward``): the recursion's derivatives."""
    from ..kernels.hawkes import hawkesll_backward
    return hawkesll_backward(*ins)


def _gradient(g, p, ins, outs, og):
    grads = g.multi("_backward_contrib_hawkesll", og[0], *ins)
    return grads + [None] * 5  # data inputs: zero gradients, as in MXNet


def _backward_shape(p, shapes):
    inner = _shape(p, shapes[1:])
    if inner is None:
        return None
    ins, outs = inner
    return [outs[0]] + ins, ins[:3]


register(OpDef(
    name="_contrib_hawkesll", inputs=_INPUTS, outputs=("output0", "output1"),
    infer_shape=_shape, infer_type=_type, forward=_forward, kernel=triton_hawkesll,
    gradient=_gradient,
    cases=(Case(((3, 2), (2,), (2,), (3, 2), (3, 4), (3, 4), (3,), (3,)), low=0.2, high=1.0,
                ints={5: 2, 6: 5}, grad=False),
           Case(((2, 1), (1,), (1,), (2, 1), (2, 3), (2, 3), (2,), (2,)), low=0.3, high=1.2,
                ints={5: 1, 6: 4}, grad=False)),  # MXNet's gradient ignores the states
    # output, so finite differences of both outputs cannot check it: the MXNet fixtures do
    doc="Log-likelihood (N,) of marked Hawkes processes and their states at ``max_time``."))

register(OpDef(
    name="_backward_contrib_hawkesll", hidden=True, inputs=("ograd",) + _INPUTS,
    outputs=("lda", "alpha", "beta"), infer_shape=_backward_shape,
    infer_type=lambda p, t: None if t[1] is None else
    ([t[1]] + _type(p, t[1:])[0], [t[1]] * 3),
    forward=_backward, kernel=triton_backward_hawkesll,
    doc="The gradients of ``sum(ograd * loglik)`` for lda, alpha and beta."))
