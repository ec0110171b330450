"""Reductions (sum/mean/max/min/prod/argmax/argmin) and their broadcast-back helper.

MXNet 1.x semantics: ``axis`` is None, an int or a tuple; ``exclude`` reduces over the
axes *not* listed; a full reduction without keepdims has shape ``(1,)``.
"""
from __future__ import annotations

import torch

from ..attrs import Param
from ..base import ShapeError
from ..sparse import formats
from ..sparse.formats import CSR, RowSparse
from .base import Case, OpDef, Storage, merge_shape, register

_PARAMS = (Param("axis", "axis", None, doc="Axis or axes to reduce (None: all)."),
           Param("keepdims", "bool", False, doc="Keep reduced axes with length 1."),
           Param("exclude", "bool", False, doc="Reduce over the axes not in ``axis``."))


def reduce_axes(p, ndim: int) -> tuple[int, ...]:
    """Normalised, sorted axes a reduction with params ``p`` runs over."""
    axis = p.axis
    if axis is None or axis == ():
        return () if p.exclude else tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    norm = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise ShapeError(f"axis {a} is out of range for an input of {ndim} dimensions")
        norm.append(a % ndim)
    if len(set(norm)) != len(norm):
        raise ShapeError(f"duplicate axes in {axes}")
    if p.exclude:
        return tuple(i for i in range(ndim) if i not in norm)
    return tuple(sorted(norm))


def reduced_shape(p, shape: tuple) -> tuple:
    """Output shape of a reduction of ``shape``."""
    axes = reduce_axes(p, len(shape))
    if p.keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    out = tuple(d for i, d in enumerate(shape) if i not in axes)
    return out or (1,)


def _shape(p, shapes):
    if not shapes[0]:
        return None
    return shapes, [reduced_shape(p, shapes[0])]


def _apply(fn, p, x):
    axes = reduce_axes(p, x.dim())
    if not axes:
        return x.clone()
    out = fn(x, axes, p.keepdims)
    return out.reshape(reduced_shape(p, tuple(x.shape)))


def _bcast(g, p, dy, x):
    return g.op("_reduce_bcast", dy, x, axis=p.axis, keepdims=p.keepdims, exclude=p.exclude)


def _sum_grad(g, p, ins, outs, og):
    return [_bcast(g, p, og[0], ins[0])]


def _mean_grad(g, p, ins, outs, og):
    return [g.op("_mean_bcast", og[0], ins[0], axis=p.axis, keepdims=p.keepdims,
                 exclude=p.exclude)]


def _extreme_grad(g, p, ins, outs, og):
    mask = g.op("_equal", ins[0], _bcast(g, p, outs[0], ins[0]))
    return [g.op("elemwise_mul", _bcast(g, p, og[0], ins[0]), mask)]


def _prod_grad(g, p, ins, outs, og):
    full = _bcast(g, p, g.op("elemwise_mul", og[0], outs[0]), ins[0])
    return [g.op("elemwise_div", full, ins[0])]


def _amax(x, axes, keep):
    return torch.amax(x, dim=axes, keepdim=keep)


def _amin(x, axes, keep):
    return torch.amin(x, dim=axes, keepdim=keep)


def _prod(x, axes, keep):
    # integers stay in their dtype and wrap on overflow, as MXNet's (torch gives int64)
    dtype = None if _floating(x) else x.dtype
    for a in sorted(axes, reverse=True):
        x = torch.prod(x, dim=a, keepdim=keep, dtype=dtype)
    return x


_CASES = (Case(((3, 4, 5),), {}), Case(((3, 4, 5),), {"axis": 1}),
          Case(((3, 4, 5),), {"axis": (0, 2), "keepdims": True}),
          Case(((3, 4, 5),), {"axis": 1, "exclude": True}))


def _torch_reduced(p, shape: tuple) -> tuple:
    """The shape torch gives a reduction (no MXNet (1,) for full reductions)."""
    axes = reduce_axes(p, len(shape))
    if p.keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _prepared(fn):
    """``prepare`` for a reduction: axes and output view decided once at bind time."""
    def prepare(p, in_shapes, out_shapes, out=None):
        axes, keep = reduce_axes(p, len(in_shapes[0])), p.keepdims
        shape = tuple(out_shapes[0])
        if all(in_shapes[0][a] == 1 for a in axes):  # nothing to reduce (a loss's mean
            if out is None:  # over its one value per sample): the values, reshaped
                return lambda p, ins, aux, rt: (ins[0].reshape(shape).clone(),)
            return lambda p, ins, aux, rt: (out.copy_(ins[0].reshape(shape)),)
        if out is None:
            return lambda p, ins, aux, rt: (fn(ins[0], axes, keep).reshape(shape),)
        if fn is not _sum:
            return None
        view, result = out.view(_torch_reduced(p, tuple(in_shapes[0]))), (out,)

        def sum_into(p, ins, aux, rt):
            torch.sum(ins[0], dim=axes, keepdim=keep, out=view)
            return result
        return sum_into
    return prepare


def _triton_reduction(name, fn):
    def run(p, ins, aux, rt):
        from ..kernels.reduce import reduce
        x = ins[0]
        axes = reduce_axes(p, x.dim())
        if not axes or not x.dtype.is_floating_point or x.numel() == 0:
            return (_apply(fn, p, x),)  # a copy, or data the kernel does not take
        return (reduce(x, axes, name, p.keepdims).reshape(reduced_shape(p, tuple(x.shape))),)
    run.__name__ = f"triton_{name}"
    run.__doc__ = f"Triton kernel for ``{name}`` (``symgraph.kernels.reduce.reduce``)."
    return run


def sparse_sum(value: CSR | RowSparse, p, mean: bool = False) -> torch.Tensor:
    """The dense sum (``mean``: the mean) of a csr or row_sparse ``value`` over the axes of
    ``p`` (``axis``, ``keepdims``, ``exclude``), reading only the stored values.

    >>> import torch
    >>> from symgraph.attrs import Params
    >>> v = formats.from_dense(torch.tensor([[0., 2.], [0., 0.], [1., 3.]]), "csr")
    >>> sparse_sum(v, Params(axis=0, keepdims=False, exclude=False)).tolist()
    [1.0, 5.0]
    """
    shape = tuple(value.shape)
    axes = reduce_axes(p, len(shape))
    if not axes:
        return formats.to_dense(value)
    if isinstance(value, CSR):
        value = RowSparse(*_csr_as_rows(value, axes))
    data = value.data
    inner = tuple(a for a in axes if a > 0)
    total = data.sum(dim=inner, keepdim=True) if inner else data
    if 0 in axes:
        total = total.sum(0, keepdim=True)
    else:
        out = torch.zeros((shape[0], *total.shape[1:]), dtype=total.dtype, device=total.device)
        total = out.index_copy_(0, value.indices, total)
    total = total.reshape(reduced_shape(p, shape))
    if not mean:
        return total
    return (total / _count(p, shape)).to(data.dtype)


def _csr_as_rows(value: CSR, axes: tuple) -> tuple:
    """A csr matrix as (data, row indices, shape) of a row_sparse one, for a reduction over
    ``axes``: rows summed already where the rows are reduced (axis 1)."""
    rows = formats.csr_rows(value)
    first = torch.zeros(1, dtype=rows.dtype, device=rows.device)
    n, m = value.shape
    if axes == (1,):  # per-row sums, stored for the rows that hold values
        uniq, pos = torch.unique(rows, sorted=True, return_inverse=True)
        summed = torch.zeros((uniq.numel(), 1), dtype=value.dtype, device=value.device)
        return summed.index_add_(0, pos, value.data.unsqueeze(1)), uniq, (n, 1)
    if axes == (0,):  # one row of column sums
        cols = torch.zeros((1, m), dtype=value.dtype, device=value.device)
        cols.index_add_(1, value.indices, value.data.unsqueeze(0))
        return cols, first, (1, m)
    return value.data.sum().reshape(1, 1), first, (1, 1)


def _sparse_reduction(mean: bool) -> Storage:
    """sum/mean of a csr or row_sparse array: a dense result from the stored values."""
    def infer(p, stypes):
        return ["default"] if stypes[0] != "default" else None

    def forward(p, ins, aux, rt):
        return (sparse_sum(ins[0], p, mean),)
    return Storage(infer, forward)


def _reduction(name, fn, grad, aliases=(), low=-1.0, high=1.0, storage=None):
    cases = tuple(Case(c.shapes, c.attrs, low=low, high=high) for c in _CASES)
    register(OpDef(name=name, params=_PARAMS, infer_shape=_shape, gradient=grad,
                   prepare=_prepared(fn), kernel=_triton_reduction(name, fn),
                   aliases=aliases, cases=cases, storage=storage,
                   forward=lambda p, ins, aux, rt: (_apply(fn, p, ins[0]),),
                   doc=f"``{name}`` over the given axes (MXNet 1.x reduce semantics)."))


def _sum(x, axes, keep):
    # integers stay in their dtype, as MXNet's sum (torch would give int64)
    return torch.sum(x, dim=axes, keepdim=keep, dtype=None if _floating(x) else x.dtype)


def _mean(x, axes, keep):
    if _floating(x):
        return torch.mean(x, dim=axes, keepdim=keep)
    total = torch.sum(x, dim=axes, keepdim=keep, dtype=torch.int64)
    count = x.numel() // max(total.numel(), 1)
    return torch.div(total, count, rounding_mode="trunc").to(x.dtype)  # MXNet's int mean


def _floating(x: torch.Tensor) -> bool:
    return x.dtype.is_floating_point or x.dtype.is_complex


_reduction("sum", _sum, _sum_grad, ("sum_axis",), storage=_sparse_reduction(False))
_reduction("mean", _mean, _mean_grad, storage=_sparse_reduction(True))
_reduction("max", _amax, _extreme_grad, ("max_axis",))
_reduction("min", _amin, _extreme_grad, ("min_axis",))
_reduction("prod", _prod, _prod_grad, low=0.5, high=1.5)


def _bcast_forward(p, ins, aux, rt):
    dy, x = ins
    keep = reduced_shape(_keep(p), tuple(x.shape))
    return (dy.reshape(keep).expand(x.shape),)


def _bcast_prepare(scale_by_count: bool):
    """``prepare`` for ``_reduce_bcast``/``_mean_bcast``: the kept shape (and the count)
    decided at bind time."""
    def prepare(p, in_shapes, out_shapes, out=None):
        if out is not None:
            return None
        shape = tuple(in_shapes[1])
        keep = reduced_shape(_keep(p), shape)
        if not scale_by_count:
            return lambda p, ins, aux, rt: (ins[0].reshape(keep).expand(shape),)
        count = _count(p, shape)
        if count == 1:  # a mean over length-1 axes: the gradient is a view of the output's
            return lambda p, ins, aux, rt: (ins[0].reshape(keep).expand(shape),)
        return lambda p, ins, aux, rt: (ins[0].reshape(keep).expand(shape) / count,)
    return prepare


def _keep(p):
    q = type(p)(p)
    q["keepdims"] = True
    return q


def _triton_bcast(scale_by_count: bool):
    """The broadcast-back as a generated kernel (dy viewed with the reduced axes kept)."""
    def triton_reduce_bcast(p, ins, aux, rt):
        from ..kernels.elementwise import Program, run
        dy, x = ins
        keep = reduced_shape(_keep(p), tuple(x.shape))
        scale = 1.0 / _count(p, tuple(x.shape)) if scale_by_count else 1.0
        prog = Program(1, ((f"({{0}} * {scale!r})", ("x0",)),), ("t0",))
        return run(prog, [dy.reshape(keep)], tuple(x.shape), dy.dtype)
    return triton_reduce_bcast


def _bcast_shape(p, shapes):
    if not shapes[1]:
        return None
    ograd = merge_shape(shapes[0], reduced_shape(p, shapes[1]), "input 'ograd'")
    return [ograd, shapes[1]], [shapes[1]]


def _count(p, shape) -> int:
    n = 1
    for a in reduce_axes(p, len(shape)):
        n *= shape[a]
    return n


register(OpDef(
    name="_reduce_bcast", params=_PARAMS, inputs=("ograd", "data"), hidden=True,
    infer_shape=_bcast_shape, forward=_bcast_forward, kernel=_triton_bcast(False),
    prepare=_bcast_prepare(False),
    gradient=lambda g, p, ins, outs, og: [
        g.op("sum", og[0], axis=p.axis, keepdims=p.keepdims, exclude=p.exclude), None],
    cases=(Case(((4,), (3, 4, 5)), {"axis": (0, 2)}, no_grad_inputs=(1,)),),
    doc="Broadcast a reduction's output gradient back to the reduced input's shape."))
register(OpDef(
    name="_mean_bcast", params=_PARAMS, inputs=("ograd", "data"), hidden=True,
    infer_shape=_bcast_shape, kernel=_triton_bcast(True), prepare=_bcast_prepare(True),
    forward=lambda p, ins, aux, rt: (
        _bcast_forward(p, ins, aux, rt)[0] / _count(p, tuple(ins[1].shape)),),
    gradient=lambda g, p, ins, outs, og: [
        g.op("mean", og[0], axis=p.axis, keepdims=p.keepdims, exclude=p.exclude), None],
    cases=(Case(((3, 1, 5), (3, 4, 5)), {"axis": 1, "keepdims": True}, no_grad_inputs=(1,)),),
    doc="Broadcast a mean's output gradient back, divided by the reduced count."))


# ------------------------------------------------------------------ argmax / argmin

_ARG_PARAMS = (Param("axis", "int_or_none", None), Param("keepdims", "bool", False))


def _arg_shape(p, shapes):
    if not shapes[0]:
        return None
    shape = shapes[0]
    if p.axis is None:
        return shapes, [(1,) * len(shape) if p.keepdims else (1,)]
    if not -len(shape) <= p.axis < len(shape):
        raise ShapeError(f"axis {p.axis} exceeds the input dimension of {len(shape)}")
    axis = p.axis % len(shape)
    if p.keepdims:
        return shapes, [tuple(1 if i == axis else d for i, d in enumerate(shape))]
    return shapes, [tuple(d for i, d in enumerate(shape) if i != axis) or (1,)]


def _arg(fn):
    def forward(p, ins, aux, rt):
        x = ins[0]
        if p.axis is None:
            out = fn(x.reshape(-1), 0).reshape(_arg_shape(p, [tuple(x.shape)])[1][0])
        else:
            out = fn(x, p.axis, p.keepdims)
            if out.dim() == 0:
                out = out.reshape(1)
        return (out.to(x.dtype),)
    return forward


def _triton_arg(largest: bool):
    def run(p, ins, aux, rt):
        from ..kernels.reduce import arg_reduce
        x = ins[0]
        out = arg_reduce(x, p.axis, largest=largest, keepdims=p.keepdims)
        return (out.reshape(_arg_shape(p, [tuple(x.shape)])[1][0]),)
    run.__name__ = f"triton_arg{'max' if largest else 'min'}"
    run.__doc__ = f"Triton kernel for arg{'max' if largest else 'min'} (``kernels.reduce``)."
    return run


for _name, _fn in (("argmax", lambda x, a, k=False: torch.argmax(x, dim=a, keepdim=k)),
                   ("argmin", lambda x, a, k=False: torch.argmin(x, dim=a, keepdim=k))):
    register(OpDef(
        name=_name, params=_ARG_PARAMS, infer_shape=_arg_shape, forward=_arg(_fn),
        kernel=_triton_arg(_name == "argmax"),
        gradient=lambda g, p, ins, outs, og: [g.zeros(ins[0])],
        cases=(Case(((3, 4),), {"axis": 1}), Case(((3, 4),), {}),
               Case(((3, 4, 2),), {"axis": 0, "keepdims": True})),
        doc=f"Indices (in the input's dtype, as MXNet) of the {_name[3:]}imum along ``axis``."))
