"""``amp_cast`` and ``amp_multicast``: the casts automatic mixed precision inserts.

Both cast only the low-precision float types and float32 (float16, bfloat16, float32);
other dtypes (float64, integers) pass unchanged. ``amp_multicast`` gives all such inputs
one dtype: float32 when any input is float32 (else the first input's dtype, as MXNet
1.9.1 decides), or with ``cast_narrow`` float16/bfloat16 when any input is one (else
float32). Gradients are cast back to each input's dtype (``_backward_Cast``).

>>> import symgraph as mx
>>> a, b = mx.sym.Variable('a'), mx.sym.Variable('b')
>>> mx.sym.amp_cast(a, dtype='float16').infer_type(a='float32')[1]
[<class 'numpy.float16'>]
>>> mx.sym.amp_cast(a, dtype='float16').infer_type(a='int32')[1]
[<class 'numpy.int32'>]
>>> mx.sym.amp_multicast(a, b, num_outputs=2).infer_type(a='float16', b='float32')[1]
[<class 'numpy.float32'>, <class 'numpy.float32'>]
"""
from __future__ import annotations

from ..attrs import MAX_VARIADIC, Param
from ..base import ShapeError, to_torch_dtype
from .base import Case, OpDef, merge_shape, register, unary_shape
from .cast_clip import _CAST_DTYPES, cast_to

_AMP = ("float16", "bfloat16", "float32")


def _cast_or_keep(x, dtype: str):
    """``x`` cast to ``dtype`` when both are AMP types (a copy otherwise)."""
    import torch
    name = str(x.dtype).replace("torch.", "")
    return cast_to(x, to_torch_dtype(dtype)) if name in _AMP else torch.clone(x)


def _triton_cast_or_keep(x, dtype: str):
    from .cast_clip import triton_cast_to
    name = str(x.dtype).replace("torch.", "")
    if name not in _AMP or name == dtype:
        return x.clone()  # a copy of the input, as MXNet's out-of-place cast of the same type
    return triton_cast_to(x, to_torch_dtype(dtype))


def _amp_type(p, types):
    if types[0] is None:
        return None
    return list(types), [p.dtype if types[0] in _AMP else types[0]]


def triton_amp_cast(p, ins, aux, rt):
    """amp_cast as one generated cast kernel (``cast_clip.triton_cast_to``)."""
    return (_triton_cast_or_keep(ins[0], p.dtype),)


register(OpDef(
    name="amp_cast", kernel=triton_amp_cast,
    params=(Param("dtype", "dtype", choices=_CAST_DTYPES, doc="Output dtype."),),
    infer_shape=unary_shape, infer_type=_amp_type,
    forward=lambda p, ins, aux, rt: (_cast_or_keep(ins[0], p.dtype),),
    gradient=lambda g, p, ins, outs, og: [g.op("_backward_Cast", og[0], ins[0])],
    cases=(Case(((3, 4),), {"dtype": "float32"}), Case(((2, 5),), {"dtype": "float16"},
                                                        grad=False)),
    doc="Cast float16/bfloat16/float32 data to ``dtype``; other dtypes pass unchanged."))


def _multicast_dtype(p, types: list) -> str:
    """MXNet's choice of the common dtype (unknown input dtypes count as not AMP types)."""
    if p.cast_narrow:
        narrow = [t for t in types if t in ("float16", "bfloat16")]
        return narrow[-1] if narrow else "float32"
    return "float32" if "float32" in types else types[0]


def _multicast_type(p, types):
    if any(t is None for t in types):
        return None
    common = _multicast_dtype(p, types)
    return list(types), [common if t in _AMP else t for t in types]


def _multicast_shape(p, shapes):
    if len(shapes) != p.num_outputs:
        raise ShapeError(f"amp_multicast: num_outputs={p.num_outputs} but {len(shapes)} inputs")
    if not all(shapes):
        return None
    return shapes, [merge_shape((), s, f"input {i}") for i, s in enumerate(shapes)]


def _dtype_names(ins) -> list[str]:
    return [str(x.dtype).replace("torch.", "") for x in ins]


def _multicast_forward(p, ins, aux, rt):
    common = _multicast_dtype(p, _dtype_names(ins))
    return [_cast_or_keep(x, common) for x in ins]


def triton_amp_multicast(p, ins, aux, rt):
    """One generated cast kernel per input that changes dtype."""
    common = _multicast_dtype(p, _dtype_names(ins))
    return [_triton_cast_or_keep(x, common) for x in ins]


register(OpDef(
    name="amp_multicast", kernel=triton_amp_multicast,
    params=(Param("num_outputs", "int", lower=1, upper=MAX_VARIADIC,
                  doc="The number of inputs (and outputs)."),
            Param("cast_narrow", "bool", False,
                  doc="Cast to the narrowest AMP type present instead of the widest.")),
    inputs=lambda p: [f"data{i}" for i in range(p.num_outputs)],
    outputs=lambda p: [f"output{i}" for i in range(p.num_outputs)],
    key_var_num_args="num_outputs",
    infer_shape=_multicast_shape, infer_type=_multicast_type, forward=_multicast_forward,
    gradient=lambda g, p, ins, outs, og: [g.op("_backward_Cast", d, x) for d, x in zip(og, ins)],
    cases=(Case(((3, 4), (2, 3)), {"num_outputs": 2}),
           Case(((3, 4), (5,)), {"num_outputs": 2, "cast_narrow": True})),
    doc="Cast all float16/bfloat16/float32 inputs to one common float type; other inputs "
        "pass unchanged."))
