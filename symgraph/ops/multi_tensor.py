"""MXNet's multi-tensor helpers of the LARS and LAMB optimizers: ``multi_sum_sq`` (the sums of
squares of ``num_arrays`` arrays, one float32 vector), ``multi_lars`` (LARS learning rates
from those sums) and ``reset_arrays`` (zeroes ``num_arrays`` arrays in place; no output;
imperative only).

``multi_sum_sq`` runs :mod:`symgraph.kernels.optimizer`'s multi-tensor kernel (every array in one
launch); ``multi_lars`` is a composite of elementwise ops::

    lr_i * eta * |w_i| / (|g_i| * rescale_grad + wd_i * |w_i| + eps)  where |w_i|, |g_i| > 0
    lr_i                                                              elsewhere

with ``|w_i| = sqrt(weights_sum_sq_i)``, ``|g_i| = sqrt(grads_sum_sq_i)``.

>>> import symgraph as mx
>>> a, b = mx.nd.array([[1, 2], [3, 4]]), mx.nd.array([2, 0, 1])
>>> mx.nd.multi_sum_sq(a, b, num_arrays=2).asnumpy()
array([30.,  5.], dtype=float32)
>>> mx.nd.reset_arrays(a, b, num_arrays=2)
[]
>>> b.asnumpy()
array([0., 0., 0.], dtype=float32)
>>> mx.nd.multi_sum_sq(a, mx.nd.ones((2,), dtype="float16"), num_arrays=2)
Traceback (most recent call last):
...
symgraph.base.DTypeError: Error in operator multi_sum_sq: array_1 has dtype float16, ...
"""
from __future__ import annotations

from ..attrs import MAX_VARIADIC, Param
from ..base import DTypeError
from .base import Case, OpDef, PlanHints, Special, register

_NUM = Param("num_arrays", "int", lower=1, upper=MAX_VARIADIC, doc="Number of input arrays.")


def _array_names(p) -> list[str]:
    return [f"array_{i}" for i in range(p.num_arrays)]


def _check_one_type(op_name: str, types: list) -> None:
    """MXNet's check that every array has array_0's dtype."""
    for i, t in enumerate(types):
        if t is not None and t != types[0]:
            raise DTypeError(f"Error in operator {op_name}: array_{i} has dtype {t}, "
                             f"array_0 has {types[0]}")


def _sum_sq_type(p, types):
    if types[0] is None:
        return None
    _check_one_type("multi_sum_sq", types)
    return [types[0]] * len(types), ["float32"]


def _sum_sq_shape(p, shapes):
    if any(not s for s in shapes):
        return None
    return list(shapes), [(p.num_arrays,)]


def _sum_sq(triton: bool):
    def forward(p, ins, aux, rt):
        from ..kernels import optimizer as kops
        arrays = [x.contiguous() for x in ins]
        _check_one_type("multi_sum_sq", [str(x.dtype).replace("torch.", "") for x in arrays])
        return (kops.multi_sum_sq(arrays) if triton else kops.multi_sum_sq_ref(arrays),)
    forward.__name__ = ("triton_" if triton else "") + "multi_sum_sq"
    return forward


register(OpDef(
    name="multi_sum_sq", params=(_NUM,), inputs=_array_names, infer_shape=_sum_sq_shape,
    infer_type=_sum_sq_type, forward=_sum_sq(False), kernel=_sum_sq(True),
    differentiable=False,
    cases=(Case(((3, 5), (7,), (2, 1, 3)), {"num_arrays": 3}, grad=False),
           Case(((4, 3),), {"num_arrays": 1}, grad=False)),
    doc="The sum of squares of each of ``num_arrays`` arrays: a float32 ``(num_arrays,)`` "
        "vector (accumulated in float32)."))


def _reset(triton: bool):
    def forward(p, ins, aux, rt):
        from ..kernels import optimizer as kops
        if triton:
            kops.reset_arrays([x for x in ins])
        else:
            for x in ins:
                x.zero_()
        return ()
    forward.__name__ = ("triton_" if triton else "") + "reset_arrays"
    return forward


def _reset_eager(b, p, ins):
    for x in ins:
        b.value(x).zero_()
    return []


register(OpDef(
    name="reset_arrays", params=(_NUM,), inputs=_array_names, outputs=(),
    infer_shape=lambda p, shapes: (list(shapes), []) if all(shapes) else None,
    infer_type=lambda p, types: (list(types), []) if all(types) else None,
    forward=_reset(False), kernel=_reset(True), special=Special(eager=_reset_eager),
    hints=PlanHints(mutates=lambda p: tuple(range(p.num_arrays))), differentiable=False,
    doc="Sets each of ``num_arrays`` arrays to zero in place; no output (MXNet returns an "
        "empty list). Imperative only: a symbol without outputs has nothing to bind (MXNet "
        "1.9.1 crashes on one)."))


def _lars_decompose(b, p, ins):
    lrs, w_sq, g_sq, wds = ins
    w_norm, g_norm = b.op("sqrt", w_sq), b.op("sqrt", g_sq)
    denom = b.op("elemwise_add", b.op("_mul_scalar", g_norm, scalar=p.rescale_grad),
                 b.op("elemwise_mul", wds, w_norm))
    ratio = b.op("elemwise_div", b.op("_mul_scalar", w_norm, scalar=p.eta),
                 b.op("_plus_scalar", denom, scalar=p.eps))
    valid = b.op("elemwise_mul", b.op("_greater_scalar", w_sq, scalar=0.0),
                 b.op("_greater_scalar", g_sq, scalar=0.0))
    return [b.op("where", valid, b.op("elemwise_mul", lrs, ratio), lrs)]


register(OpDef(
    name="multi_lars", inputs=("lrs", "weights_sum_sq", "grads_sum_sq", "wds"),
    params=(Param("eta", "float", doc="LARS eta."), Param("eps", "float", doc="LARS eps."),
            Param("rescale_grad", "float", 1.0, doc="Gradient rescaling factor.")),
    decompose=_lars_decompose, differentiable=False,
    cases=(Case(((5,), (5,), (5,), (5,)), {"eta": 0.5, "eps": 0.01, "rescale_grad": 0.7},
                low=0.1, high=2.0, grad=False),),
    doc="LARS learning rates ``lr*eta*|w|/(|g|*rescale_grad + wd*|w| + eps)`` from the sums "
        "of squares of weights and gradients (``lr`` where either sum is 0)."))
