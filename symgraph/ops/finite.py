"""``all_finite`` and ``multi_all_finite``: 1.0 when no element is NaN or infinite, else 0.0.

Composites: an element is finite when ``x - x == 0`` (``inf - inf`` and NaN give NaN);
``min`` over every element then tells whether all are. The output is float32 of shape
``(1,)``. ``init_output`` (MXNet zeroes or keeps the output buffer before a launch that only
writes on failure) has no effect here: the result is always written. These are optimizer
helpers (loss scaling): they have no gradient in MXNet, and their derived one is zero.

>>> import symgraph as mx
>>> mx.nd.all_finite(mx.nd.array([1, 2])).asnumpy(), mx.nd.all_finite(
...     mx.nd.array([1, float('inf')])).asnumpy()
(array([1.], dtype=float32), array([0.], dtype=float32))
>>> mx.nd.multi_all_finite(mx.nd.array([1]), mx.nd.array([float('nan')]),
...                        num_arrays=2).asnumpy()
array([0.], dtype=float32)
"""
from __future__ import annotations

from ..attrs import MAX_VARIADIC, Param
from .base import Case, OpDef, register

_INIT = Param("init_output", "bool", True, doc="Initialize the output to 1 (no effect here).")


def _finite(b, x, tag: str):
    """1/0 (float32, shape (1,)) whether every element of ``x`` is finite."""
    zero = b.op("elemwise_sub", x, x, name=f"{tag}diff")
    ok = b.op("_equal_scalar", zero, scalar=0.0, name=f"{tag}finite")
    return b.op("Cast", b.op("min", ok, name=f"{tag}all"), dtype="float32", name=f"{tag}cast")


def _all_finite(b, p, ins):
    return [_finite(b, ins[0], "")]


def _multi_all_finite(b, p, ins):
    out = _finite(b, ins[0], "a0_")
    for i, x in enumerate(ins[1:], 1):
        out = b.op("_minimum", out, _finite(b, x, f"a{i}_"), name=f"both{i}")
    return [out]


register(OpDef(
    name="all_finite", decompose=_all_finite, params=(_INIT,),
    cases=(Case(((3, 4),)), Case(((2, 3, 2),), {"init_output": False})),
    doc="1.0 (float32, shape (1,)) when every element of ``data`` is finite, else 0.0."))

register(OpDef(
    name="multi_all_finite", decompose=_multi_all_finite,
    params=(Param("num_arrays", "int", 1, lower=1, upper=MAX_VARIADIC,
                  doc="The number of input arrays."), _INIT),
    inputs=lambda p: [f"array{i}" for i in range(p.num_arrays)],
    key_var_num_args="num_arrays",
    cases=(Case(((3, 4), (5,)), {"num_arrays": 2}), Case(((2, 2),), {"num_arrays": 1})),
    doc="1.0 (float32, shape (1,)) when every element of every input is finite, else 0.0."))
