"""Joining and splitting along an axis: ``Concat``, ``stack`` and ``SliceChannel`` (``split``).

Each is the other's gradient: ``SliceChannel`` back-propagates with ``Concat`` (or
``stack`` when it squeezes the axis), ``stack`` with a squeezing ``SliceChannel``, and
``Concat`` with the hidden multi-output ``_backward_Concat``, which needs the inputs'
sizes along the axis.

Examples
--------
>>> import symgraph as mx
>>> a, b = mx.sym.Variable('a'), mx.sym.Variable('b')
>>> mx.sym.Concat(a, b, dim=1).infer_shape(a=(2, 3), b=(2, 5))[1]
[(2, 8)]
>>> mx.sym.Concat(a, b).infer_shape(a=(2, 3), b=(4, 5))  # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
ShapeError: Incompatible input shape: expected (2, -1), got (4, 5) for input 1

>>> mx.sym.stack(a, b, axis=-1).infer_shape(a=(2, 3), b=(2, 3))[1]
[(2, 3, 2)]

>>> parts = mx.sym.SliceChannel(mx.sym.Variable('x'), num_outputs=2, name='sc')
>>> parts.list_outputs()
['sc_output0', 'sc_output1']
>>> parts.infer_shape(x=(2, 6))[1]
[(2, 3), (2, 3)]
"""
from __future__ import annotations

import torch

from ..attrs import MAX_VARIADIC, Param
from ..base import DTypeError, ShapeError
from ..sparse import formats
from .base import Case, OpDef, Special, Storage, merge_shape, register


def norm_axis(axis: int, ndim: int, what: str) -> int:
    """``axis`` in ``[-ndim, ndim)`` made non-negative; MXNet's wording when out of range."""
    if not -ndim <= axis < ndim:
        raise ShapeError(f"{what}: axis {axis} exceeds the input dimension of {ndim}")
    return axis % ndim


def shared_type(p, types: list):
    """Dtype rule: every input and output share one dtype; MXNet's Concat wording on conflict."""
    known = [(i, t) for i, t in enumerate(types) if t is not None]
    if not known:
        return None
    first = known[0][1]
    for i, t in known:
        if t != first:
            raise DTypeError(f"Non-uniform data type, expected data type {first}, got data type "
                             f"{t} for input {i}")
    return [first] * len(types), [first]


def _args(p) -> list[str]:
    return [f"arg{i}" for i in range(p.num_args)]


# ------------------------------------------------------------------ Concat

def _merge_except(shapes: list, axis: int, ndim: int) -> list[int]:
    """Unify every dimension but ``axis`` across the known input shapes."""
    out = [0] * ndim
    for i, s in enumerate(shapes):
        if not s:
            continue
        expected = tuple(-1 if d == axis else out[d] or -1 for d in range(ndim))
        if len(s) != ndim:
            raise ShapeError(f"Incompatible input shape: expected {expected}, got {tuple(s)} "
                             f"for input {i}")
        for d in range(ndim):
            if d == axis:
                continue
            if out[d] and s[d] and out[d] != s[d]:
                raise ShapeError(f"Incompatible input shape: expected {expected}, got "
                                 f"{tuple(s)} for input {i}")
            out[d] = out[d] or s[d]
    return out


def _concat_shape(p, shapes):
    first = next((s for s in shapes if s), None)
    if first is None:
        return None
    ndim = len(first)
    axis = norm_axis(p.dim, ndim, "Concat")
    common = _merge_except(shapes, axis, ndim)
    sizes = [s[axis] if s else 0 for s in shapes]
    ins = [tuple(sz if d == axis else common[d] for d in range(ndim)) for sz in sizes]
    total = sum(sizes) if all(sizes) else 0
    return ins, [tuple(total if d == axis else common[d] for d in range(ndim))]


def _backward_concat_shape(p, shapes):
    """ograd has the Concat output's shape; each gradient its input's."""
    ograd, ins = shapes[0], list(shapes[1:])
    if not all(ins):
        return None
    ins, (out,) = _concat_shape(p, ins)
    return [merge_shape(ograd, out, "input 'ograd'")] + ins, ins


def _concat_forward(p, ins, aux, rt):
    return (torch.cat(list(ins), dim=norm_axis(p.dim, ins[0].dim(), "Concat")),)


def triton_concat(p, ins, aux, rt):
    """Concat as one Triton launch over all inputs."""
    from ..kernels.copy import concat
    return (concat(ins, norm_axis(p.dim, ins[0].dim(), "Concat")),)


def triton_backward_concat(p, ins, aux, rt):
    """Split the Concat gradient into every input's part in one Triton launch."""
    from ..kernels.copy import split
    axis = norm_axis(p.dim, ins[0].dim(), "Concat")
    return split(ins[0], [x.shape[axis] for x in ins[1:]], axis)


_CONCAT_PARAMS = (
    Param("num_args", "int", doc="Number of inputs to join.", lower=1, upper=MAX_VARIADIC),
    Param("dim", "int", 1, doc="The axis to join along (negative counts from the end)."))


def _concat_grad(g, p, ins, outs, og):
    return g.multi("_backward_Concat", og[0], *ins, num_args=len(ins), dim=p.dim)


def _concat_inputs_from_output(p, shapes, outs):
    """MXNet's ConcatShape run backwards: every input shares the output's other dims, and a
    single input whose size along ``dim`` is unknown gets what the others leave."""
    out = outs[0] if outs else ()
    if not out:
        return None
    ax = p.dim % len(out)
    new = []
    for s in shapes:
        s = s or (0,) * len(out)
        if len(s) != len(out):
            return None
        new.append(tuple(d if k == ax else (d or out[k]) for k, d in enumerate(s)))
    unknown = [i for i, s in enumerate(new) if s[ax] == 0]
    if len(unknown) == 1 and out[ax]:
        rest = out[ax] - sum(s[ax] for s in new)
        if rest > 0:
            i = unknown[0]
            new[i] = new[i][:ax] + (rest,) + new[i][ax + 1:]
    return new


def _concat_storage(p, stypes):
    """csr inputs joined row-wise stay csr (MXNet's kernel); anything else is dense."""
    if p.dim == 0 and all(s == "csr" for s in stypes):
        return ["csr"]
    return None


def _csr_rows_joined(p, ins, aux, rt):
    """csr matrices of one column count stacked row-wise: values and columns concatenated,
    each matrix's row pointers shifted by the values before it."""
    offsets = [0]
    for v in ins[:-1]:
        offsets.append(offsets[-1] + v.data.numel())
    indptr = torch.cat([ins[0].indptr[:1]] + [v.indptr[1:] + off
                                              for v, off in zip(ins, offsets)])
    shape = (sum(v.shape[0] for v in ins), ins[0].shape[1])
    return (formats.CSR(torch.cat([v.data for v in ins]), torch.cat([v.indices for v in ins]),
                        indptr, shape),)


register(OpDef(
    name="Concat", aliases=("concat",), key_var_num_args="num_args", params=_CONCAT_PARAMS,
    inputs=_args, infer_shape=_concat_shape, infer_type=shared_type, forward=_concat_forward,
    kernel=triton_concat, gradient=_concat_grad,
    storage=Storage(_concat_storage, _csr_rows_joined),
    special=Special(infer_inputs_from_outputs=_concat_inputs_from_output),
    cases=(Case(((2, 3, 4), (2, 1, 4), (2, 2, 4))), Case(((3, 2), (1, 2)), {"dim": 0}),
           Case(((2, 3, 1), (2, 3, 2)), {"dim": -1}), Case(((2, 3),))),
    doc="Join arrays along an existing axis ``dim``; every other dimension must agree."))


def _inputs_from_concat(p, shapes, outs):
    """The unknown inputs' sizes along ``dim`` from the output's, shared equally (MXNet's
    rule: they are the first layer's input weights of each direction)."""
    out = outs[0] if outs else ()
    if not out or 0 in out:
        return None
    ax = p.dim % len(out)
    unknown = [i for i, s in enumerate(shapes) if not s or s[ax] == 0]
    if not unknown:
        return None
    rest = sum(s[ax] for j, s in enumerate(shapes) if j not in unknown)
    share, left = divmod(out[ax] - rest, len(unknown))
    if share <= 0 or left:
        return None
    new = list(shapes)
    for i in unknown:
        like = shapes[i] or out
        new[i] = tuple(share if k == ax else (d or out[k]) for k, d in enumerate(like))
    return new


register(OpDef(
    name="_rnn_param_concat", key_var_num_args="num_args", params=_CONCAT_PARAMS,
    inputs=_args, infer_shape=_concat_shape, infer_type=shared_type, forward=_concat_forward,
    kernel=triton_concat, gradient=_concat_grad,
    special=Special(infer_inputs_from_outputs=_inputs_from_concat),
    cases=(Case(((6,), (4,), (2,)), {"dim": 0}),),
    doc="Concat for the RNN layers' packed parameters (MXNet's ``_rnn_param_concat``): one "
        "input's size may also be inferred from the output's."))


def _backward_concat(p, ins, aux, rt):
    axis = norm_axis(p.dim, ins[0].dim(), "Concat")
    return tuple(torch.split(ins[0], [x.shape[axis] for x in ins[1:]], dim=axis))


register(OpDef(
    name="_backward_Concat", hidden=True,
    params=(Param("num_args", "int", lower=1, upper=MAX_VARIADIC), Param("dim", "int", 1)),
    inputs=lambda p: ["ograd"] + _args(p), outputs=lambda p: [f"{a}_grad" for a in _args(p)],
    infer_shape=_backward_concat_shape,
    infer_type=shared_type, forward=_backward_concat, kernel=triton_backward_concat,
    gradient=lambda g, p, ins, outs, og: [g.op("Concat", *og, num_args=len(og), dim=p.dim)]
    + [None] * p.num_args,
    cases=(Case(((2, 5, 3), (2, 2, 3), (2, 3, 3)), {"num_args": 2}, no_grad_inputs=(1, 2)),),
    doc="Split a ``Concat`` output gradient back into one gradient per input."))


# ------------------------------------------------------------------ stack

def _stack_shape(p, shapes):
    first = next((s for s in shapes if s), None)
    if first is None:
        return None
    common = list(first)
    for i, s in enumerate(shapes):
        if s and len(s) != len(common):
            raise ShapeError(f"stack: all inputs must have one shape, got {tuple(first)} and "
                             f"{tuple(s)} for input {i}")
        for d, n in enumerate(s):
            if common[d] and n and common[d] != n:
                raise ShapeError(f"stack: all inputs must have one shape, got {tuple(first)} "
                                 f"and {tuple(s)} for input {i}")
            common[d] = common[d] or n
    axis = norm_axis(p.axis, len(common) + 1, "stack")
    out = tuple(common[:axis]) + (len(shapes),) + tuple(common[axis:])
    return [tuple(common)] * len(shapes), [out]


def triton_stack(p, ins, aux, rt):
    """stack as one Triton launch over all inputs."""
    from ..kernels.copy import stack
    return (stack(ins, norm_axis(p.axis, ins[0].dim() + 1, "stack")),)


register(OpDef(
    name="stack", key_var_num_args="num_args",
    params=(Param("num_args", "int", doc="Number of inputs to stack.", lower=1,
                  upper=MAX_VARIADIC),
            Param("axis", "int", 0, doc="Position of the new axis in the output.")),
    inputs=_args, infer_shape=_stack_shape, infer_type=shared_type, kernel=triton_stack,
    forward=lambda p, ins, aux, rt: (
        torch.stack(list(ins), dim=norm_axis(p.axis, ins[0].dim() + 1, "stack")),),
    gradient=lambda g, p, ins, outs, og: g.multi(
        "SliceChannel", og[0], num_outputs=len(ins), axis=p.axis, squeeze_axis=True),
    cases=(Case(((2, 3), (2, 3), (2, 3))), Case(((3, 2), (3, 2)), {"axis": -1}),
           Case(((2, 1, 3), (2, 1, 3)), {"axis": 2})),
    doc="Join arrays of one shape along a new axis ``axis``."))


# ------------------------------------------------------------------ SliceChannel

def _split_shape(p, shapes):
    src = shapes[0]
    if not src:
        return None
    axis = norm_axis(p.axis, len(src), "SliceChannel")
    n, size = p.num_outputs, src[axis]
    if p.squeeze_axis and size and size != n:
        raise ShapeError(f"If squeeze axis is True, the size of the sliced axis must be the same "
                         f"as num_outputs. Input shape={tuple(src)}, axis={p.axis}, "
                         f"num_outputs={n}.")
    if size % n:
        raise ShapeError(f"You are trying to split the {axis}-th axis of input tensor with shape "
                         f"{tuple(src)} into num_outputs={n} evenly sized chunks, but this is not "
                         f"possible because {n} does not evenly divide {size}")
    if p.squeeze_axis:
        out = tuple(src[:axis]) + tuple(src[axis + 1:])
    else:
        out = tuple(src[:axis]) + (size // n,) + tuple(src[axis + 1:])
    return shapes, [out or (1,)] * n


def _split_input_from_outputs(p, shapes, outs):
    """The data shape from any known output (MXNet's SliceChannel runs backwards too)."""
    out: tuple = ()
    for k, o in enumerate(outs):  # the outputs share one shape: merge what each knows
        out = merge_shape(out, o, f"output {k}")
    if not out:
        return None
    if p.squeeze_axis:
        axis = p.axis % (len(out) + 1)
        full = tuple(out[:axis]) + (p.num_outputs,) + tuple(out[axis:])
    else:
        axis = p.axis % len(out)
        size = out[axis] * p.num_outputs
        full = tuple(out[:axis]) + (size,) + tuple(out[axis + 1:])
    return [merge_shape(shapes[0], full, "data")]


def _split_forward(p, ins, aux, rt):
    x = ins[0]
    axis = norm_axis(p.axis, x.dim(), "SliceChannel")
    parts = torch.chunk(x, p.num_outputs, dim=axis)
    if p.squeeze_axis:
        parts = [t.squeeze(axis) if x.dim() > 1 else t for t in parts]
    return tuple(parts)


def triton_split(p, ins, aux, rt):
    """SliceChannel as one Triton launch writing every part."""
    from ..kernels.copy import split
    x = ins[0]
    axis = norm_axis(p.axis, x.dim(), "SliceChannel")
    parts = split(x, [x.shape[axis] // p.num_outputs] * p.num_outputs, axis)
    if p.squeeze_axis and x.dim() > 1:
        parts = tuple(t.squeeze(axis) for t in parts)
    return parts


def _split_grad(g, p, ins, outs, og):
    if not p.squeeze_axis:
        return [g.op("Concat", *og, num_args=len(og), dim=p.axis)]
    # reshape_like: a squeezed 1-D split has (1,) parts, which stack would make (n, 1)
    return [g.op("reshape_like", g.op("stack", *og, num_args=len(og), axis=p.axis), ins[0])]


register(OpDef(
    name="SliceChannel", aliases=("split",),
    params=(Param("num_outputs", "int", doc="Number of equal parts.", lower=1,
                  upper=MAX_VARIADIC),
            Param("axis", "int", 1, doc="The axis to split."),
            Param("squeeze_axis", "bool", False,
                  doc="Drop the split axis (its size must equal num_outputs).")),
    outputs=lambda p: [f"output{i}" for i in range(p.num_outputs)],
    infer_shape=_split_shape, forward=_split_forward, gradient=_split_grad, kernel=triton_split,
    special=Special(infer_inputs_from_outputs=_split_input_from_outputs),
    cases=(Case(((2, 6, 3),), {"num_outputs": 3}),
           Case(((4, 3),), {"num_outputs": 2, "axis": 0}),
           Case(((2, 3, 3),), {"num_outputs": 3, "axis": -1, "squeeze_axis": True}),
           Case(((2, 5),), {"num_outputs": 1})),
    doc="""Split an array into ``num_outputs`` equal parts along ``axis``.

    The outputs are named ``output0 ... output{n-1}``; with ``squeeze_axis`` the split axis
    (whose size must then equal ``num_outputs``) is dropped."""))


# ------------------------------------------------------------------ _split_v2

def split_bounds(p, size: int) -> list[tuple[int, int]]:
    """``(start, end)`` of each ``_split_v2`` part along an axis of ``size`` (MXNet's rule:
    ``sections`` parts, the first ``size % sections`` one longer; else the ``indices``)."""
    if p.sections > 0:
        short, extra = divmod(size, p.sections)
        starts = [i * short + min(i, extra) for i in range(p.sections + 1)]
    else:
        starts = list(p.indices) + [size]
    return list(zip(starts[:-1], starts[1:]))


def _split_v2_shape(p, shapes):
    src = shapes[0]
    if not src:
        return None
    axis = norm_axis(p.axis, len(src), "_split_v2")
    size = src[axis]
    outs = []
    for i, (start, end) in enumerate(split_bounds(p, size)):
        if size and not 0 <= start <= end <= size:
            raise ShapeError(f"_split_v2: part {i} runs from {start} to {end}, outside the "
                             f"axis {axis} of size {size} (input shape {tuple(src)})")
        if p.squeeze_axis and size and end - start != 1:
            raise ShapeError(f"_split_v2: expected axis size of 1 but got {end - start} for "
                             f"part {i} (squeeze_axis=True, input shape {tuple(src)})")
        width = end - start if size else 0
        out = src[:axis] + (() if p.squeeze_axis else (width,)) + src[axis + 1:]
        outs.append(out or (1,))
    return shapes, outs


def _split_v2_sizes(p, x: torch.Tensor) -> tuple[int, list[int]]:
    axis = norm_axis(p.axis, x.dim(), "_split_v2")
    return axis, [end - start for start, end in split_bounds(p, x.shape[axis])]


def _split_v2_forward(p, ins, aux, rt):
    x = ins[0]
    axis, sizes = _split_v2_sizes(p, x)
    parts = [x.narrow(axis, start, n).contiguous()
             for (start, _), n in zip(split_bounds(p, x.shape[axis]), sizes)]
    if p.squeeze_axis:
        parts = [t.squeeze(axis) if x.dim() > 1 else t for t in parts]
    return tuple(parts)


def triton_split_v2(p, ins, aux, rt):
    """_split_v2 as one Triton launch writing every part."""
    from ..kernels.copy import split
    x = ins[0]
    axis, sizes = _split_v2_sizes(p, x)
    start = split_bounds(p, x.shape[axis])[0][0]
    if start or sum(sizes) != x.shape[axis]:  # indices need not start at 0
        x = x.narrow(axis, start, sum(sizes))
    parts = split(x, sizes, axis)
    if p.squeeze_axis and x.dim() > 1:
        parts = tuple(t.squeeze(axis) for t in parts)
    return parts


def _split_v2_grad(g, p, ins, outs, og):
    """The parts' gradients joined back (MXNet's ``_split_v2_backward``); a part missing
    from the start of the axis (``indices`` not starting at 0) has a zero gradient."""
    if p.squeeze_axis:
        return [g.op("reshape_like", g.op("stack", *og, num_args=len(og), axis=p.axis),
                     ins[0])]
    joined = g.op("Concat", *og, num_args=len(og), dim=p.axis)
    if p.sections == 0 and p.indices and p.indices[0] != 0:
        return [g.op("_backward_slice_axis", joined, ins[0], axis=p.axis, begin=p.indices[0],
                     end=None)]
    return [joined]


def _split_v2_check(p) -> None:
    if p.sections <= 0 and not p.indices:
        raise ShapeError("_split_v2: give sections > 0 or at least one split index")
    if p.sections > MAX_VARIADIC or len(p.indices) > MAX_VARIADIC:
        raise ShapeError(f"_split_v2: at most {MAX_VARIADIC} parts")


register(OpDef(
    name="_split_v2",
    params=(Param("indices", "shape", doc="Where the parts start along axis (the Python "
                  "wrappers prepend 0); ignored when sections > 0."),
            Param("axis", "int", 1, doc="The axis to split."),
            Param("squeeze_axis", "bool", False,
                  doc="Drop the split axis (every part must have size 1 along it)."),
            Param("sections", "int", 0, doc="Number of parts (0: split at indices).")),
    outputs=lambda p: [f"output{i}" for i in range(p.sections or len(p.indices))],
    check=_split_v2_check, infer_shape=_split_v2_shape, forward=_split_v2_forward,
    kernel=triton_split_v2, gradient=_split_v2_grad,
    cases=(Case(((2, 7, 3),), {"sections": 3, "indices": ()}),
           Case(((5, 3),), {"indices": (0, 1, 4), "axis": 0}),
           Case(((2, 3, 3),), {"sections": 3, "indices": (), "axis": -1,
                               "squeeze_axis": True}),
           Case(((6, 2),), {"indices": (2, 3), "axis": 0}),
           Case(((2, 5),), {"indices": (1, 3), "axis": 1})),
    doc="""Split an array along ``axis`` into ``sections`` parts (the first ``size %
    sections`` one element longer) or at ``indices`` (``mx.nd.split_v2(x, (2, 5))`` passes
    ``indices=(0, 2, 5)``), as ``numpy.split``."""))
