"""Indexing: ``take``, ``pick``, ``one_hot``, ``where``, ``Embedding`` and ``gather_nd``.

Index inputs hold integer values in any dtype (MXNet passes them as float32); they are
truncated toward zero, then clipped or wrapped as the op's ``mode`` says. They get no
gradient. Gradients into the indexed array are scatter-adds done by hidden
``_backward_<op>`` ops.

Examples
--------
>>> import symgraph as mx
>>> a, i = mx.sym.Variable('a'), mx.sym.Variable('i')
>>> mx.sym.take(a, i, axis=1).infer_shape(a=(3, 4, 2), i=(5, 2))[1]
[(3, 5, 2, 2)]
>>> mx.sym.take(a, i, axis=2).infer_shape(a=(3, 4), i=(5,))
... # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
ShapeError: Axis should be in the range of [-r, r-1] where r is the rank of input tensor

>>> d, i = mx.sym.Variable('d'), mx.sym.Variable('i')
>>> mx.sym.pick(d, i, axis=1, keepdims=True).infer_shape(d=(3, 4, 2))
([(3, 4, 2), (3, 2)], [(3, 1, 2)], [])

>>> mx.sym.one_hot(mx.sym.Variable('i'), depth=4).infer_shape(i=(2, 3))[1]
[(2, 3, 4)]

>>> c, x, y = mx.sym.Variable('c'), mx.sym.Variable('x'), mx.sym.Variable('y')
>>> mx.sym.where(c, x, y).infer_shape(c=(2,), x=(2, 3), y=(2, 3))[1]
[(2, 3)]

>>> e = mx.sym.Embedding(mx.sym.Variable('i'), input_dim=10, output_dim=4, name='emb')
>>> e.infer_shape(i=(2, 3))
([(2, 3), (10, 4)], [(2, 3, 4)], [])

>>> d, i = mx.sym.Variable('d'), mx.sym.Variable('i')
>>> mx.sym.gather_nd(d, i).infer_shape(d=(2, 3, 4), i=(2, 5, 6))[1]
[(5, 6, 4)]
"""
from __future__ import annotations

import functools

import torch

from ..attrs import Param
from ..base import DeferredError, DTypeError, ShapeError
from ..sparse import formats, rules
from .base import (
    Case,
    OpDef,
    Runtime,
    Storage,
    check,
    grad_rule,
    known,
    merge_shape,
    register,
)

_INDEX_DTYPES = ("bfloat16", "float16", "float32", "float64", "int32", "int64", "int8", "uint8")


def value_type(slots: tuple[int, ...]):
    """Dtype rule: the ``slots`` share one dtype, which the output takes; other inputs
    (indices, lengths) keep whatever dtype they have."""
    def rule(p, types: list):
        known = [(i, types[i]) for i in slots if types[i] is not None]
        if not known:
            return None
        first = known[0][1]
        for i, t in known:
            if t != first:
                raise DTypeError(f"dtype inconsistent: input {i} is {t}, expected {first}")
        return [first if i in slots else t for i, t in enumerate(types)], [first]
    return rule


def as_index(idx: torch.Tensor) -> torch.Tensor:
    """Index values truncated toward zero, as MXNet's ``static_cast<index_t>``."""
    return idx.to(torch.int64)


def bound(idx: torch.Tensor, size: int, mode: str) -> torch.Tensor:
    """Indices made valid for an axis of ``size``: ``clip`` to the ends or ``wrap`` around."""
    if mode == "wrap":
        return torch.remainder(idx, size)
    return idx.clamp(0, size - 1)


# ------------------------------------------------------------------ take

def _take_axis(p, ndim: int) -> int:
    if not -ndim <= p.axis < ndim:
        raise ShapeError(f"Axis should be in the range of [-r, r-1] where r is the rank of input "
                         f"tensor: axis={p.axis}, rank={ndim}")
    return p.axis % ndim


def _take_shape(p, shapes):
    a, idx = shapes
    if not a or not idx:
        return None
    axis = _take_axis(p, len(a))
    return shapes, [tuple(a[:axis]) + tuple(idx) + tuple(a[axis + 1:])]


def _take_index(p, a: torch.Tensor, indices: torch.Tensor, axis: int,
                rt: Runtime | None = None) -> torch.Tensor:
    size = a.shape[axis]
    if p.mode == "raise":
        message = (f"take operator contains indices out of bound: indices must lie in "
                   f"[0, {size - 1}] for axis {p.axis} of an input of shape {tuple(a.shape)}")
        check(rt, ((indices < 0) | (indices > size - 1)).any(),
              lambda: IndexOutOfBoundsError(message), message)
    return bound(as_index(indices), size, p.mode).reshape(-1)


def _take_forward(p, ins, aux, rt):
    a, indices = ins
    axis = _take_axis(p, a.dim())
    out = a.index_select(axis, _take_index(p, a, indices, axis, rt))
    return (out.reshape(_take_shape(p, [tuple(a.shape), tuple(indices.shape)])[1][0]),)


def _backward_take(p, ins, aux, rt):
    g, a, indices = ins
    axis = _take_axis(p, a.dim())
    idx = _take_index(p, a, indices, axis, rt)
    flat = g.reshape(tuple(a.shape[:axis]) + (idx.numel(),) + tuple(a.shape[axis + 1:]))
    return (torch.zeros_like(a, dtype=g.dtype).index_add_(axis, idx, flat),)


def _kernel_mode(p, a: torch.Tensor, indices: torch.Tensor, axis: int, rt) -> str:
    if p.mode == "raise":
        _take_index(p, a, indices, axis, rt)  # the bounds check, as in the reference
    return "wrap" if p.mode == "wrap" else "clip"


def triton_take(p, ins, aux, rt):
    """take as one Triton gather."""
    from ..kernels.index import take
    a, indices = ins
    axis = _take_axis(p, a.dim())
    return (take(a, indices, axis, _kernel_mode(p, a, indices, axis, rt)),)


def triton_backward_take(p, ins, aux, rt):
    """The take gradient: Triton zero fill, then an atomic scatter-add."""
    from ..kernels.index import take_backward
    g, a, indices = ins
    axis = _take_axis(p, a.dim())
    return (take_backward(g, indices, tuple(a.shape), axis, _kernel_mode(p, a, indices, axis, rt)),)


def _take_storage(p, stypes):
    """Rows of a csr matrix stay csr (axis 0, clip or wrap: MXNet's kernel)."""
    if stypes[0] == "csr" and stypes[1] == "default" and p.axis == 0 and p.mode != "raise":
        return ["csr"]
    return None


def _take_csr(p, ins, aux, rt):
    value, indices = ins
    if indices.dim() != 1:
        raise ShapeError(f"take: a csr array takes 1-D indices only, got indices of shape "
                         f"{tuple(indices.shape)} for data of shape {tuple(value.shape)}")
    return (formats.csr_take_rows(value, bound(as_index(indices), value.shape[0], p.mode)),)


_TAKE_PARAMS = (Param("axis", "int", 0, doc="The axis to take from."),
                Param("mode", "str", "clip", ("clip", "raise", "wrap"),
                      doc="Out-of-range indices: clip to the ends, wrap around, or raise."))

register(OpDef(
    name="take", inputs=("a", "indices"), params=_TAKE_PARAMS, infer_shape=_take_shape,
    infer_type=value_type((0,)), forward=_take_forward, kernel=triton_take,
    storage=Storage(_take_storage, _take_csr),
    gradient=lambda g, p, ins, outs, og: [
        g.op("_backward_take", og[0], ins[0], ins[1], axis=p.axis, mode=p.mode), None],
    cases=(Case(((5, 3), (2, 3)), ints={1: 5}), Case(((3, 4, 2), (5,)), {"axis": 1}, ints={1: 4}),
           Case(((4, 3), (2, 2)), {"axis": -1, "mode": "wrap"}, ints={1: 7}),
           Case(((3, 2), (4,)), {"mode": "clip"}, ints={1: 6}),
           Case(((3, 2), (4,)), {"mode": "raise"}, ints={1: 3})),
    doc="""Take slices of ``a`` along ``axis`` at ``indices``.

    The output shape is ``a.shape[:axis] + indices.shape + a.shape[axis+1:]``. Indices are
    truncated to integers, then clipped (``mode='clip'``), wrapped (``'wrap'``) or checked
    (``'raise'`` raises on any index outside ``[0, n-1]``)."""))

register(OpDef(
    name="_backward_take", inputs=("ograd", "a", "indices"), params=_TAKE_PARAMS, hidden=True,
    infer_shape=grad_rule(_take_shape), infer_type=value_type((0, 1)),
    forward=_backward_take, kernel=triton_backward_take,
    gradient=lambda g, p, ins, outs, og: [
        g.op("take", og[0], ins[2], axis=p.axis, mode=p.mode), None, None],
    cases=(Case(((3, 5, 2), (3, 4, 2), (5,)), {"axis": 1}, ints={2: 4}, no_grad_inputs=(1,)),),
    doc="Gradient of ``take``: output-gradient slices added into zeros at their indices."))


# ------------------------------------------------------------------ pick

def _pick_dims(p, shape: tuple) -> tuple[int, tuple, tuple]:
    """(axis, output shape without the axis, output shape keeping it as 1)."""
    if p.axis is None:
        raise ShapeError("axis=None is not supported by pick yet. Must specify an axis.")
    ndim = len(shape)
    if not -ndim <= p.axis < ndim:
        raise ShapeError(f"axis {p.axis} exceeds the input dimension of {ndim}")
    axis = p.axis % ndim
    keep = tuple(1 if i == axis else d for i, d in enumerate(shape))
    drop = tuple(d for i, d in enumerate(shape) if i != axis) or (1,)
    return axis, drop, keep


def _pick_shape(p, shapes):
    data, index = shapes
    if not data:
        return None
    _, drop, keep = _pick_dims(p, data)
    # MXNet accepts the index with or without the picked axis (as a length-1 axis)
    expected = keep if index and len(index) == len(data) else drop
    index = merge_shape(index, expected, "input 'index'")
    return [data, index], [keep if p.keepdims else drop]


def _pick_index(p, data: torch.Tensor, index: torch.Tensor) -> tuple[int, torch.Tensor]:
    axis, _, keep = _pick_dims(p, tuple(data.shape))
    return axis, bound(as_index(index), data.shape[axis], p.mode).reshape(keep)


def _pick_forward(p, ins, aux, rt):
    data, index = ins
    axis, idx = _pick_index(p, data, index)
    out = torch.gather(data, axis, idx)
    return (out.reshape(_pick_shape(p, [tuple(data.shape), ()])[1][0]),)


def _backward_pick(p, ins, aux, rt):
    g, data, index = ins
    axis, idx = _pick_index(p, data, index)
    out = torch.zeros_like(data, dtype=g.dtype)
    return (out.scatter_add_(axis, idx, g.reshape(idx.shape)),)


def _index_fn(p, n: int, keep: tuple):
    """Bind-time ``index -> int64 positions shaped like keep`` (clip or wrap into n)."""
    keep = tuple(keep)
    wrap = p.mode == "wrap"

    def positions(index: torch.Tensor) -> torch.Tensor:
        idx = index.to(torch.int64)
        if wrap:
            idx = torch.remainder(idx, n)
        else:  # in place only on a fresh tensor: an int64 index is the caller's
            idx = idx.clamp(0, n - 1) if idx is index else idx.clamp_(0, n - 1)
        return idx if idx.shape == keep else idx.reshape(keep)
    return positions


def _pick_prepare(p, in_shapes, out_shapes, out=None):
    """pick on fixed shapes: axis and shapes decoded once; gather, no per-step checks."""
    if out is not None:
        return None
    axis, drop, keep = _pick_dims(p, tuple(in_shapes[0]))
    positions, shape = _index_fn(p, in_shapes[0][axis], keep), keep if p.keepdims else drop
    return lambda p, ins, aux, rt: (
        torch.gather(ins[0], axis, positions(ins[1])).reshape(shape),)


def _backward_pick_prepare(p, in_shapes, out_shapes, out=None):
    """The pick gradient on fixed shapes: one scatter_add into zeros."""
    if out is not None:
        return None
    data = tuple(in_shapes[1])
    axis, _, keep = _pick_dims(p, data)
    positions = _index_fn(p, data[axis], keep)

    def run(p, ins, aux, rt):
        g = ins[0]
        zeros = torch.zeros(data, dtype=g.dtype, device=g.device)
        return (zeros.scatter_add_(axis, positions(ins[2]), g.reshape(keep)),)
    return run


def triton_pick(p, ins, aux, rt):
    """pick as one Triton gather."""
    from ..kernels.index import pick
    data, index = ins
    axis, drop, keep = _pick_dims(p, tuple(data.shape))
    out = pick(data, index, axis, p.mode)
    return (out.reshape(keep if p.keepdims else drop),)


def triton_backward_pick(p, ins, aux, rt):
    """The pick gradient as one Triton kernel writing every element once."""
    from ..kernels.index import pick_backward
    g, data, index = ins
    axis = _pick_dims(p, tuple(data.shape))[0]
    return (pick_backward(g, index, tuple(data.shape), axis, p.mode),)


_PICK_PARAMS = (Param("axis", "int_or_none", -1, doc="The axis to pick along."),
                Param("keepdims", "bool", False, doc="Keep the picked axis with length 1."),
                Param("mode", "str", "clip", ("clip", "wrap"),
                      doc="Out-of-range indices: clip to the ends or wrap around."))

register(OpDef(
    name="pick", aliases=("choose_element_0index",), inputs=("data", "index"),
    params=_PICK_PARAMS, infer_shape=_pick_shape,
    infer_type=value_type((0,)), forward=_pick_forward, kernel=triton_pick,
    prepare=_pick_prepare,
    gradient=lambda g, p, ins, outs, og: [g.op(
        "_backward_pick", og[0], ins[0], ins[1], axis=p.axis, keepdims=p.keepdims,
        mode=p.mode), None],
    cases=(Case(((4, 5), (4,)), ints={1: 5}),
           Case(((3, 4, 2), (3, 1, 2)), {"axis": 1, "keepdims": True}, ints={1: 4}),
           Case(((3, 4), (4,)), {"axis": 0, "mode": "wrap"}, ints={1: 7}),
           Case(((5,), (1,)), {"axis": 0}, ints={1: 5})),
    doc="""Pick one element per position along ``axis``: ``out[i, j] = data[i, index[i, j], j]``.

    ``index`` has data's shape without ``axis`` (or with it as length 1). Indices are
    truncated to integers, then clipped or wrapped (``mode``)."""))

register(OpDef(
    name="_backward_pick", inputs=("ograd", "data", "index"), params=_PICK_PARAMS,
    hidden=True, infer_shape=grad_rule(_pick_shape),
    infer_type=value_type((0, 1)), forward=_backward_pick, kernel=triton_backward_pick,
    prepare=_backward_pick_prepare,
    gradient=lambda g, p, ins, outs, og: [g.op(
        "pick", og[0], ins[2], axis=p.axis, keepdims=p.keepdims, mode=p.mode), None, None],
    cases=(Case(((3, 2), (3, 4, 2), (3, 2)), {"axis": 1}, ints={2: 4}, no_grad_inputs=(1,)),),
    doc="Gradient of ``pick``: the output gradient added into zeros at the picked positions."))


# ------------------------------------------------------------------ one_hot

def _one_hot_shape(p, shapes):
    if p.depth < 0:  # depth 0 gives an empty array, as in MXNet
        raise ShapeError(f"one_hot: depth must not be negative, got {p.depth}")
    if not shapes[0]:
        return None
    return shapes, [tuple(shapes[0]) + (p.depth,)]


def _one_hot_forward(p, ins, aux, rt):
    from ..base import to_torch_dtype
    idx = as_index(ins[0]).unsqueeze(-1)
    hot = idx == torch.arange(p.depth, device=idx.device)  # out-of-range rows stay all "off"
    dtype = to_torch_dtype(p.dtype)
    on = torch.tensor(p.on_value, dtype=torch.float64).to(dtype)
    off = torch.tensor(p.off_value, dtype=torch.float64).to(dtype)
    return (torch.where(hot, on.to(idx.device), off.to(idx.device)),)


def triton_one_hot(p, ins, aux, rt):
    """one_hot as one Triton kernel."""
    from ..base import to_torch_dtype
    from ..kernels.index import one_hot
    return (one_hot(ins[0], p.depth, p.on_value, p.off_value, to_torch_dtype(p.dtype)),)


register(OpDef(
    name="one_hot", inputs=("indices",),
    params=(Param("depth", "int", doc="Length of the one-hot axis."),
            Param("on_value", "float", 1.0, doc="Value where the index matches."),
            Param("off_value", "float", 0.0, doc="Value everywhere else."),
            Param("dtype", "dtype", "float32", _INDEX_DTYPES, doc="Output dtype.")),
    infer_shape=_one_hot_shape, infer_type=lambda p, t: (list(t), [p.dtype]),
    forward=_one_hot_forward, gradient=lambda g, p, ins, outs, og: [None],
    kernel=triton_one_hot,
    cases=(Case(((2, 3),), {"depth": 4}, ints={0: 5}, grad=False),
           Case(((5,),), {"depth": 3, "on_value": 2.5, "off_value": -1.0, "dtype": "int32"},
                ints={0: 3}, grad=False)),
    doc="""One-hot encode ``indices`` along a new last axis of length ``depth``.

    Out-of-range indices give an all-``off_value`` row."""))


# ------------------------------------------------------------------ where

def _where_shape(p, shapes):
    cond, x, y = shapes
    value = merge_shape(x, y, "inputs 'x' and 'y'")
    if not value or not known(cond):
        return None  # MXNet infers nothing until the condition's shape is fully known
    if cond and len(cond) == len(value):
        cond = merge_shape(cond, value, "input 'condition'")
    elif cond and len(cond) == 1:
        if cond[0] and value[0] and cond[0] != value[0]:
            raise ShapeError(f"where: a 1-D condition must have x's first dimension, got "
                             f"condition {tuple(cond)} for x {tuple(value)}")
    elif cond:
        raise ShapeError(f"where: condition must have x's shape or be 1-D of x's first "
                         f"dimension, got condition {tuple(cond)} for x {tuple(value)}")
    return [cond, value, value], [value]


def _where_forward(p, ins, aux, rt):
    cond, x, y = ins
    if cond.dim() < x.dim():  # 1-D condition selects along the first axis
        cond = cond.reshape((-1,) + (1,) * (x.dim() - 1))
    return (torch.where(cond != 0, x, y),)


def triton_where(p, ins, aux, rt):
    """where as one Triton kernel (1-D conditions select rows)."""
    from ..kernels.index import where
    return (where(*ins),)


def _where_grad(g, p, ins, outs, og):
    zeros = g.op("zeros_like", og[0])
    return [None, g.op("where", ins[0], og[0], zeros), g.op("where", ins[0], zeros, og[0])]


register(OpDef(
    name="where", inputs=("condition", "x", "y"), infer_shape=_where_shape,
    infer_type=value_type((1, 2)), forward=_where_forward, gradient=_where_grad,
    kernel=triton_where, storage=rules.WHERE,
    cases=(Case(((3, 4), (3, 4), (3, 4)), ints={0: 2}), Case(((3,), (3, 2, 2), (3, 2, 2)),
                                                             ints={0: 2})),
    doc="""Elements of ``x`` where ``condition`` is non-zero, else of ``y``.

    ``condition`` has x's shape, or is 1-D with x's first dimension (whole rows are chosen)."""))


# ------------------------------------------------------------------ Embedding

def _embedding_shape(p, shapes):
    data, weight = shapes
    weight = merge_shape(weight, (p.input_dim, p.output_dim), "input 'weight'")
    out = tuple(data) + (p.output_dim,) if data else ()
    return [data, weight], [out]


def _embedding_type(p, types):
    weight = types[1] if types[1] is not None else p.dtype
    return [types[0], weight], [weight]


def _embedding_rows(p, data: torch.Tensor) -> torch.Tensor:
    return as_index(data).clamp(0, p.input_dim - 1)


def _embedding_forward(p, ins, aux, rt):
    data, weight = ins
    rows = _embedding_rows(p, data)  # index_select: a quarter of advanced indexing's time
    return (weight.index_select(0, rows.reshape(-1)).reshape(*rows.shape, weight.shape[1]),)


def _backward_embedding(p, ins, aux, rt):
    g, data = ins
    rows = _embedding_rows(p, data).reshape(-1)
    out = torch.zeros((p.input_dim, p.output_dim), dtype=g.dtype, device=g.device)
    return (out.index_add_(0, rows, g.reshape(-1, p.output_dim)),)


def _backward_embedding_rows(p, ins, aux, rt):
    """The weight gradient as row_sparse: only the rows the batch looked up (sparse_grad)."""
    g, data = ins
    rows = _embedding_rows(p, data).reshape(-1)
    return (formats.row_sparse(g.reshape(-1, p.output_dim), rows, (p.input_dim, p.output_dim)),)


def _embedding_storage(p, stypes):
    """A row_sparse weight gradient with ``sparse_grad`` (dense inputs), as MXNet."""
    if p.sparse_grad and stypes[0] == "default" and stypes[1] == "default":
        return ["row_sparse"]
    return None


def _embedding_rows_storage(p, stypes):
    """A row_sparse weight is read row by row (never densified); the output is dense."""
    return ["default"] if stypes[0] == "default" and stypes[1] == "row_sparse" else None


def _embedding_from_rows(p, ins, aux, rt):
    data, weight = ins
    rows = _embedding_rows(p, data)
    held = formats.gather_rows(weight, rows)  # the looked-up rows, zeros where not stored
    pos = torch.searchsorted(held.indices, rows.reshape(-1))
    return (held.data[pos].reshape(tuple(data.shape) + (p.output_dim,)),)


def triton_embedding(p, ins, aux, rt):
    """Embedding as one Triton row gather."""
    from ..kernels.index import take
    return (take(ins[1], ins[0], 0, "clip"),)


def triton_backward_embedding(p, ins, aux, rt):
    """The Embedding weight gradient: Triton zero fill, then an atomic row scatter-add."""
    from ..kernels.index import take_backward
    return (take_backward(ins[0], ins[1], (p.input_dim, p.output_dim), 0, "clip"),)


_EMBED_PARAMS = (Param("input_dim", "int", doc="Vocabulary size: rows of the weight."),
                 Param("output_dim", "int", doc="Embedding size: columns of the weight."),
                 Param("dtype", "dtype", "float32", _INDEX_DTYPES,
                       doc="Weight dtype when not given."),
                 Param("sparse_grad", "bool", False,
                       doc="Compute the weight gradient as row_sparse (only the looked-up "
                           "rows)."))

register(OpDef(
    name="Embedding", inputs=("data", "weight"), params=_EMBED_PARAMS,
    infer_shape=_embedding_shape, infer_type=_embedding_type, forward=_embedding_forward,
    kernel=triton_embedding, storage=Storage(_embedding_rows_storage, _embedding_from_rows),
    gradient=lambda g, p, ins, outs, og: [None, g.op(
        "_backward_Embedding", og[0], ins[0], input_dim=p.input_dim, output_dim=p.output_dim,
        sparse_grad=p.sparse_grad)],
    cases=(Case(((2, 3), (5, 4)), {"input_dim": 5, "output_dim": 4}, ints={0: 5}),
           Case(((7,), (3, 2)), {"input_dim": 3, "output_dim": 2}, ints={0: 3}),
           Case(((4,), (3, 2)), {"input_dim": 3, "output_dim": 2}, ints={0: 6})),
    doc="""Map integer indices to rows of ``weight`` (shape ``(input_dim, output_dim)``).

    Indices are truncated and clipped to ``[0, input_dim-1]``. The weight gradient adds
    every output-gradient row into the row it came from; ``data`` gets no gradient."""))

register(OpDef(
    name="_backward_Embedding", inputs=("ograd", "data"), params=_EMBED_PARAMS, hidden=True,
    infer_shape=lambda p, s: (s, [(p.input_dim, p.output_dim)]),
    infer_type=value_type((0,)), forward=_backward_embedding, kernel=triton_backward_embedding,
    storage=Storage(_embedding_storage, _backward_embedding_rows),
    gradient=lambda g, p, ins, outs, og: [g.op(
        "Embedding", ins[1], og[0], input_dim=p.input_dim, output_dim=p.output_dim), None],
    cases=(Case(((2, 3, 4), (2, 3)), {"input_dim": 5, "output_dim": 4}, ints={1: 5}),),
    doc="Gradient of ``Embedding`` for its weight: output-gradient rows summed per index."))


# ------------------------------------------------------------------ gather_nd

def _gather_nd_shape(p, shapes):
    data, index = shapes
    if not data or not index:
        return None
    if len(index) < 2:
        raise ShapeError(f"gather_nd requires index tensor to have at least 2 dimensions, got "
                         f"indices of shape {tuple(index)}")
    if index[0] > len(data):
        raise ShapeError(f"Number of indices exceeds data dimension: indices {tuple(index)} "
                         f"for data {tuple(data)}")
    return shapes, [tuple(index[1:]) + tuple(data[index[0]:])]


class IndexOutOfBoundsError(DeferredError, IndexError):
    """An index outside the axis (MXNet raises ``IndexError``, where the result is read)."""


def _check_nd_bounds(data: torch.Tensor, indices: torch.Tensor,
                     rt: Runtime | None = None) -> None:
    """gather_nd's bound check: MXNet's message for the first index outside its axis."""
    idx = as_index(indices)
    for axis in range(idx.shape[0]):
        size, row = data.shape[axis], idx[axis]
        bad = (row < -size) | (row >= size)
        check(rt, bad.any(), functools.partial(_nd_error, row, bad, axis, size),
              f"gather_nd: an index is out of bounds for axis {axis} with size {size}")


def _nd_error(row: torch.Tensor, bad: torch.Tensor, axis: int, size: int) -> Exception:
    value = int(row[bad].reshape(-1)[0])
    return IndexOutOfBoundsError(f"index {value} is out of bounds for axis {axis} with "
                                 f"size {size}")


def _gather_nd(p, ins, aux, rt):
    _check_nd_bounds(ins[0], ins[1], rt)
    return (ins[0][_nd_index(ins[0], ins[1])].contiguous(),)


def _nd_index(data: torch.Tensor, indices: torch.Tensor) -> tuple:
    idx = as_index(indices)
    return tuple(torch.remainder(idx[i], data.shape[i]) for i in range(idx.shape[0]))


def triton_gather_nd(p, ins, aux, rt):
    """gather_nd as one Triton gather."""
    from ..kernels.index import gather_nd
    _check_nd_bounds(ins[0], ins[1], rt)
    return (gather_nd(ins[0], ins[1]),)


register(OpDef(
    name="gather_nd", inputs=("data", "indices"), infer_shape=_gather_nd_shape,
    infer_type=value_type((0,)), kernel=triton_gather_nd,
    forward=_gather_nd,
    gradient=lambda g, p, ins, outs, og: [
        g.op("_backward_gather_nd", og[0], ins[0], ins[1]), None],
    cases=(Case(((3, 4, 2), (2, 5)), ints={1: 3}), Case(((3, 4), (2, 3, 2)), ints={1: 3}),
           Case(((2, 3), (1, 4)), ints={1: 2})),
    doc="""Gather elements or slices: ``out[y] = data[indices[0, y], ..., indices[M-1, y]]``.

    ``indices`` has shape ``(M, Y...)`` with ``M <= data.ndim``; the output has shape
    ``Y... + data.shape[M:]``. Negative indices wrap around; an index outside
    ``[-size, size)`` raises ``IndexError``."""))


def _mxnet_form(p) -> bool:
    """``_backward_gather_nd(data, indices, shape=...)``, as MXNet's scripts call it, rather
    than the gradient rule's ``(ograd, data, indices)``."""
    return bool(p.shape)


def _backward_gather_nd(p, ins, aux, rt):
    g, indices = (ins[0], ins[1]) if _mxnet_form(p) else (ins[0], ins[2])
    shape = tuple(p.shape) if _mxnet_form(p) else tuple(ins[1].shape)
    out = torch.zeros(shape, dtype=g.dtype, device=g.device)
    at = tuple(torch.remainder(as_index(indices)[i], shape[i]) for i in range(indices.shape[0]))
    return (out.index_put_(at, g, accumulate=True),)


def triton_backward_gather_nd(p, ins, aux, rt):
    """The gather_nd gradient: Triton zero fill, then an atomic scatter-add."""
    from ..kernels.index import gather_nd_backward
    if _mxnet_form(p):
        return (gather_nd_backward(ins[0], ins[1], tuple(p.shape)),)
    g, data, indices = ins
    return (gather_nd_backward(g, indices, tuple(data.shape)),)


def _backward_gather_nd_shape(p, shapes):
    if not _mxnet_form(p):
        return grad_rule(_gather_nd_shape)(p, shapes)
    g, indices = shapes
    if not indices:
        return None
    want = tuple(indices[1:]) + tuple(p.shape[indices[0]:])
    return [merge_shape(g, want, "input 'data'"), indices], [tuple(p.shape)]


def _backward_gather_nd_grad(g, p, ins, outs, og):
    if _mxnet_form(p):
        return [g.op("gather_nd", og[0], ins[1]), None]
    return [g.op("gather_nd", og[0], ins[2]), None, None]


register(OpDef(
    name="_backward_gather_nd",
    inputs=lambda p: ["data", "indices"] if _mxnet_form(p) else ["ograd", "data", "indices"],
    params=(Param("shape", "shape", (), doc="Output shape (MXNet's two-input form)."),),
    infer_shape=_backward_gather_nd_shape,
    infer_type=lambda p, t: value_type((0,) if _mxnet_form(p) else (0, 1))(p, t),
    forward=_backward_gather_nd, kernel=triton_backward_gather_nd,
    gradient=_backward_gather_nd_grad,
    cases=(Case(((5, 2), (3, 4, 2), (2, 5)), ints={2: 3}, no_grad_inputs=(1,)),
           Case(((5, 2), (2, 5)), {"shape": (3, 4, 2)}, ints={1: 3})),
    doc="""Gradient of ``gather_nd``: ``data`` added into zeros at the indices (repeated
    indices sum). Called as MXNet does, ``(data, indices)`` with the output ``shape``;
    the gradient rule passes ``(ograd, data, indices)``, the forward input for its shape."""))
