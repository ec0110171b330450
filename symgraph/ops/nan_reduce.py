"""nansum / nanprod: ``sum`` / ``prod`` treating NaN as 0 / 1 (composites of ``where``).

    nansum(x) = sum(where(x != x, 0, x))    nanprod(x) = prod(where(x != x, 1, x))

so the gradient is zero at the NaN entries, as in MXNet.

>>> import symgraph as mx
>>> x = mx.nd.array([[1, float('nan')], [2, 3]])
>>> mx.nd.nansum(x, axis=1).asnumpy(), mx.nd.nanprod(x).asnumpy()
(array([1., 5.], dtype=float32), array([6.], dtype=float32))
"""
from __future__ import annotations

from .base import Case, OpDef, register
from .reduce import _PARAMS


def _nan_reduce(reduce: str, fill: str):
    def decompose(b, p, ins):
        x = ins[0]
        nan = b.op("_not_equal", x, x, name="isnan")
        clean = b.op("where", nan, b.op(fill, x), x, name="clean")
        return [b.op(reduce, clean, axis=p.axis, keepdims=p.keepdims, exclude=p.exclude)]
    return decompose


for _name, _reduce, _fill, _value in (("nansum", "sum", "zeros_like", "0"),
                                      ("nanprod", "prod", "ones_like", "1")):
    register(OpDef(
        name=_name, decompose=_nan_reduce(_reduce, _fill), params=_PARAMS,
        cases=(Case(((3, 4),), {"axis": 1}), Case(((2, 3, 2),), {}, low=0.5, high=1.5),
               Case(((2, 3, 4),), {"axis": (0, 2), "keepdims": True, "exclude": True})),
        doc=f"The {_reduce} of ``data`` over ``axis``, NaN entries counted as {_value}."))
