"""Array creation without inputs: ``_zeros``, ``_ones``, ``_full``, ``_arange``, ``_eye``,
``_linspace``."""
from __future__ import annotations

import math

import torch

from ..attrs import MAX_INT, Param
from ..base import ShapeError, to_torch_dtype
from .base import Case, OpDef, PlanHints, register

_COMMON = (Param("shape", "shape", ()), Param("dtype", "dtype", "float32"),
           Param("ctx", "str", ""))


def _fixed_shape(p, shapes):
    # -1 (like legacy 0) is a dimension left to inference: ``ones(shape=(-1, -1)) + x``
    return [], [tuple(max(d, 0) for d in p.shape)]


def _fixed_type(p, types):
    return [], [p.dtype]


def _shape_of(p) -> tuple:
    """The shape to create: inference's completion of ``p.shape`` (0 = inferred) when bound."""
    return p.get("_out_shape") or tuple(p.shape)


def _filled(value_of):
    def forward(p, ins, aux, rt):
        return (torch.full(_shape_of(p), value_of(p), dtype=to_torch_dtype(p.dtype),
                           device=rt.device),)
    return forward


def _triton_fill(value_of):
    def triton_fill(p, ins, aux, rt):
        from ..kernels.elementwise import Program, run
        prog = Program(0, ((f"(offs * 0.0 + {float(value_of(p))!r})", ()),), ("t0",))
        return run(prog, [], _shape_of(p), to_torch_dtype(p.dtype), device=rt.device)
    return triton_fill


def triton_arange(p, ins, aux, rt):
    """arange as one generated kernel over the flat index."""
    from ..kernels.elementwise import Program, run
    start = _arange_start(p)
    expr = f"({start!r} + (offs // {p.repeat}) * {p.step!r})"
    return run(Program(0, ((expr, ()),), ("t0",)), [], (_arange_count(p),),
               to_torch_dtype(p.dtype), device=rt.device)


for _name, _value, _extra in (("_zeros", lambda p: 0.0, ()), ("_ones", lambda p: 1.0, ()),
                              ("_full", lambda p: p.value, (Param("value", "float"),))):
    register(OpDef(
        name=_name, params=_COMMON + _extra, inputs=(), infer_shape=_fixed_shape,
        infer_type=_fixed_type, forward=_filled(_value), kernel=_triton_fill(_value),
        hints=PlanHints(reads_out_shape=True),
        gradient=lambda g, p, ins, outs, og: [],
        cases=(Case((), {"shape": (2, 3), **({"value": 2.5} if _extra else {})}, grad=False),),
        doc=f"An array of the given shape and dtype filled with {_name[1:]}."))


def _arange_len(p) -> int:
    """The number of values (times ``repeat``); MXNet's range checks raise ``ShapeError``."""
    start, stop = (0.0, p.start) if p.stop is None else (p.start, p.stop)
    if p.step == 0:
        raise ShapeError(f"Range does not support step=0, received {p.step:g}")
    finite = all(math.isfinite(v) for v in (start, stop, p.step))
    if not finite or not (start < stop if p.step > 0 else start > stop):
        raise ShapeError(f"Invalid range (start, stop, step) = ({start:g}, {stop:g}, "
                         f"{p.step:g})")
    count = math.ceil((stop - start) / p.step) * p.repeat
    if count > MAX_INT:
        raise ShapeError(f"Range of {count} values is too large (start, stop, step) = "
                         f"({start:g}, {stop:g}, {p.step:g})")
    return count


def _inferred_range(p) -> bool:
    """``infer_range`` without ``stop``: the length comes from the graph (MXNet's rule)."""
    return p.infer_range and p.stop is None


def _arange_start(p) -> float:
    return p.start if p.stop is not None or _inferred_range(p) else 0.0


def _arange_count(p) -> int:
    """The number of values: from the range, or the inferred output shape."""
    return p.get("_out_shape")[0] if _inferred_range(p) else _arange_len(p)


def _arange_forward(p, ins, aux, rt):
    index = torch.arange(_arange_count(p), dtype=torch.float64) // p.repeat
    out = _arange_start(p) + index * p.step
    return (out.to(device=rt.device, dtype=to_torch_dtype(p.dtype)),)


def _arange_shape(p, shapes):
    if _inferred_range(p):
        return None  # completed from the graph: ``arange(0, infer_range=True) + zeros(5)``
    return [], [(_arange_len(p),)]


register(OpDef(
    name="_arange",
    params=(Param("start", "float"), Param("stop", "float_or_none", None),
            Param("step", "float", 1.0), Param("repeat", "int", 1, lower=1),
            Param("infer_range", "bool", False), Param("ctx", "str", ""),
            Param("dtype", "dtype", "float32")),
    inputs=(), infer_shape=_arange_shape, infer_type=_fixed_type,
    hints=PlanHints(reads_out_shape=True),
    forward=_arange_forward, gradient=lambda g, p, ins, outs, og: [], kernel=triton_arange,
    cases=(Case((), {"start": 1, "stop": 7, "step": 2, "repeat": 2}, grad=False),),
    doc="Evenly spaced values in [start, stop) (MXNet's ``arange``)."))


def _eye_forward(p, ins, aux, rt):
    n, m = p.N, p.M or p.N
    out = torch.zeros((n, m), dtype=to_torch_dtype(p.dtype), device=rt.device)
    first = max(0, -p.k)
    rows = torch.arange(first, max(first, min(n, m - p.k)), device=rt.device)
    out[rows, rows + p.k] = 1
    return (out,)


def triton_eye(p, ins, aux, rt):
    """eye as one generated kernel over the flat index."""
    from ..kernels.elementwise import Program, run
    m = p.M or p.N
    expr = f"tl.where((offs % {m}) - (offs // {m}) == {p.k}, 1.0, 0.0)"
    return run(Program(0, ((expr, ()),), ("t0",)), [], (p.N, m), to_torch_dtype(p.dtype),
               device=rt.device)


register(OpDef(
    name="_eye",
    params=(Param("N", "int", lower=0), Param("M", "int", 0, lower=0), Param("k", "int", 0),
            Param("ctx", "str", ""), Param("dtype", "dtype", "float32")),
    inputs=(), infer_shape=lambda p, s: ([], [(p.N, p.M or p.N)]), infer_type=_fixed_type,
    forward=_eye_forward, gradient=lambda g, p, ins, outs, og: [], kernel=triton_eye,
    cases=(Case((), {"N": 4, "M": 5, "k": 1}, grad=False),
           Case((), {"N": 3, "k": -2}, grad=False)),
    doc="An ``N x M`` matrix with ones on diagonal ``k`` (``M`` = 0 means ``N``)."))


def _linspace_forward(p, ins, aux, rt):
    values = torch.linspace(p.start, p.stop, p.num + (0 if p.endpoint else 1),
                            dtype=torch.float64)[:p.num]
    return (values.to(device=rt.device, dtype=to_torch_dtype(p.dtype)),)


def _linspace_step(p) -> float:
    intervals = p.num - 1 if p.endpoint else p.num
    return (p.stop - p.start) / intervals if intervals > 0 else 0.0


def triton_linspace(p, ins, aux, rt):
    """linspace as one generated kernel over the flat index."""
    from ..kernels.elementwise import Program, run
    expr = f"({float(p.start)!r} + offs * {_linspace_step(p)!r})"
    return run(Program(0, ((expr, ()),), ("t0",)), [], (p.num,), to_torch_dtype(p.dtype),
               device=rt.device)


register(OpDef(
    name="_linspace",
    params=(Param("start", "float"), Param("stop", "float"), Param("num", "int", lower=0),
            Param("endpoint", "bool", True), Param("ctx", "str", ""),
            Param("dtype", "dtype", "float32")),
    inputs=(), infer_shape=lambda p, s: ([], [(p.num,)]), infer_type=_fixed_type,
    forward=_linspace_forward, gradient=lambda g, p, ins, outs, og: [], kernel=triton_linspace,
    cases=(Case((), {"start": 0, "stop": 1, "num": 5}, grad=False),
           Case((), {"start": 2, "stop": -1, "num": 4, "endpoint": False}, grad=False)),
    doc="``num`` evenly spaced values from ``start`` to ``stop`` (``endpoint``: included)."))
