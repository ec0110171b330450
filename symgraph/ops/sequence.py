"""Variable-length sequences: ``SequenceMask``, ``SequenceLast`` and ``SequenceReverse``.

Data is time-major ``(T, B, ...)`` (``axis=0``) or, for Mask and Last, batch-major
``(B, T, ...)`` (``axis=1``). With ``use_sequence_length`` a second input
``sequence_length`` of shape ``(B,)`` gives each sequence's length (truncated to an
integer); it gets no gradient. Without it the input is absent, as in MXNet.

Examples
--------
>>> import symgraph as mx
>>> m = mx.sym.SequenceMask(mx.sym.Variable('x'), mx.sym.Variable('n'),
...                         use_sequence_length=True, name='mask')
>>> m.list_arguments(), m.infer_shape(x=(5, 3, 2))[0]
(['x', 'n'], [(5, 3, 2), (3,)])

>>> last = mx.sym.SequenceLast(mx.sym.Variable('x'), axis=1)
>>> last.infer_shape(x=(3, 5, 2))[1]
[(3, 2)]

>>> r = mx.sym.SequenceReverse(mx.sym.Variable('x'), mx.sym.Variable('n'),
...                            use_sequence_length=True)
>>> r.infer_shape(x=(5, 3, 2))[0]
[(5, 3, 2), (3,)]
"""
from __future__ import annotations

import torch

from ..attrs import Param
from ..base import ShapeError
from .base import Case, OpDef, grad_rule, merge_shape, register
from .indexing import as_index


def _inputs(p) -> list[str]:
    return ["data", "sequence_length"] if p.use_sequence_length else ["data"]


def _params(mask: bool = False) -> tuple[Param, ...]:
    value = (Param("value", "float", 0.0, doc="The value put at masked positions."),)
    return (Param("use_sequence_length", "bool", False,
                  doc="Read lengths from the ``sequence_length`` input (else: full length)."),
            *(value if mask else ()),
            Param("axis", "int", 0, doc="The time axis: 0 (T, B, ...) or 1 (B, T, ...)."))


def _check(p, data: tuple, what: str, axes: tuple[int, ...] = (0, 1)) -> int:
    """Validate rank and axis; return the batch axis."""
    if p.axis not in axes:
        expects = "to be 0" if axes == (0,) else "to be 0 or 1"
        raise ShapeError(f"{what}: Current implementation expects axis {expects}, got "
                         f"axis={p.axis}")
    if len(data) < 2:
        raise ShapeError(f"{what}: The data array must be of rank 2 or greater, got shape "
                         f"{tuple(data)}")
    return 1 - p.axis


def _shape_rule(what: str, out_fn, axes=(0, 1)):
    def rule(p, shapes):
        data = shapes[0]
        if not data:
            return None
        batch = _check(p, data, what, axes)
        ins = [data]
        if p.use_sequence_length:
            ins.append(merge_shape(shapes[1], (data[batch],), "input 'sequence_length'"))
        return ins, [out_fn(p, data)]
    return rule


def _seq_type(p, types):
    data = types[0]
    if data is None:
        return None
    lengths = [types[1] if types[1] is not None else data] if p.use_sequence_length else []
    return [data] + lengths, [data]


def _time_major(x: torch.Tensor, axis: int) -> torch.Tensor:
    return x.transpose(0, 1) if axis == 1 else x


def _lengths(p, ins, steps: int, batch: int, device) -> torch.Tensor:
    """Per-sequence lengths as int64 ``(B,)`` (the full length without the input)."""
    if p.use_sequence_length:
        return as_index(ins[1]).reshape(batch)
    return torch.full((batch,), steps, dtype=torch.int64, device=device)


def _bcast(v: torch.Tensor, ndim: int) -> torch.Tensor:
    return v.reshape(v.shape + (1,) * (ndim - v.dim()))


# ------------------------------------------------------------------ SequenceMask

def _mask_forward(p, ins, aux, rt):
    x = _time_major(ins[0], p.axis)
    steps, batch = x.shape[0], x.shape[1]
    t = torch.arange(steps, device=x.device).unsqueeze(1)
    keep = _bcast(t < _lengths(p, ins, steps, batch, x.device).unsqueeze(0), x.dim())
    fill = torch.tensor(p.value, dtype=torch.float64).to(x.dtype)
    return (_time_major(torch.where(keep, x, fill), p.axis).contiguous(),)


def _seq_lengths(p, ins):
    return ins[1] if p.use_sequence_length else None


def triton_sequence_mask(p, ins, aux, rt):
    """SequenceMask as one Triton kernel."""
    from ..kernels.sequence import sequence_mask
    return (sequence_mask(ins[0], _seq_lengths(p, ins), p.value, p.axis),)


def _mask_grad(g, p, ins, outs, og):
    if not p.use_sequence_length:
        return [og[0]]
    return [g.op("SequenceMask", og[0], ins[1], use_sequence_length=True, value=0.0,
                 axis=p.axis), None]


register(OpDef(
    name="SequenceMask", inputs=_inputs, params=_params(mask=True),
    infer_shape=_shape_rule("SequenceMask", lambda p, d: tuple(d)), infer_type=_seq_type,
    forward=_mask_forward, gradient=_mask_grad, kernel=triton_sequence_mask,
    cases=(Case(((4, 3, 2), (3,)), {"use_sequence_length": True}, ints={1: 5}),
           Case(((3, 5), (3,)), {"use_sequence_length": True, "value": -1.5, "axis": 1},
                ints={1: 6}),
           Case(((3, 2, 2),), {})),
    doc="Set the steps at or beyond each sequence's length to ``value``."))


# ------------------------------------------------------------------ SequenceLast

def _last_index(p, ins, x: torch.Tensor) -> torch.Tensor:
    """Time index of each sequence's last step; out-of-range lengths clip to the ends."""
    steps, batch = x.shape[0], x.shape[1]
    return (_lengths(p, ins, steps, batch, x.device) - 1).clamp(0, steps - 1)


def _last_forward(p, ins, aux, rt):
    x = _time_major(ins[0], p.axis)
    idx = _last_index(p, ins, x)
    return (x[idx, torch.arange(x.shape[1], device=x.device)],)


def _backward_last(p, ins, aux, rt):
    g, data = ins[0], ins[1]
    x = _time_major(data, p.axis)
    idx = _last_index(p, ins[1:], x)
    out = torch.zeros(x.shape, dtype=g.dtype, device=g.device)
    out[idx, torch.arange(x.shape[1], device=x.device)] = g
    return (_time_major(out, p.axis).contiguous(),)


def triton_sequence_last(p, ins, aux, rt):
    """SequenceLast as one Triton gather."""
    from ..kernels.sequence import sequence_last
    return (sequence_last(ins[0], _seq_lengths(p, ins), p.axis),)


def triton_backward_sequence_last(p, ins, aux, rt):
    """The SequenceLast gradient as one Triton kernel writing every element once."""
    from ..kernels.sequence import sequence_last_backward
    return (sequence_last_backward(ins[0], _seq_lengths(p, ins[1:]), tuple(ins[1].shape),
                                   p.axis),)


def _last_grad(g, p, ins, outs, og):
    grad = g.op("_backward_SequenceLast", og[0], *ins, use_sequence_length=p.use_sequence_length,
                axis=p.axis)
    return [grad, None] if p.use_sequence_length else [grad]


def _drop_time(p, data: tuple) -> tuple:
    return tuple(d for i, d in enumerate(data) if i != p.axis)


register(OpDef(
    name="SequenceLast", inputs=_inputs, params=_params(),
    infer_shape=_shape_rule("SequenceLast", _drop_time), infer_type=_seq_type,
    forward=_last_forward, gradient=_last_grad, kernel=triton_sequence_last,
    cases=(Case(((4, 3, 2), (3,)), {"use_sequence_length": True}, ints={1: 5}),
           Case(((3, 5, 2), (3,)), {"use_sequence_length": True, "axis": 1}, ints={1: 6}),
           Case(((4, 3),), {}), Case(((2, 4, 3),), {"axis": 1})),
    doc="""The last step of each sequence: ``data[length-1, b]`` (or ``data[b, length-1]``).

    Lengths outside ``[1, T]`` are clipped to it (MXNet reads out of bounds there)."""))


def _inputs_back(p) -> list[str]:
    return ["ograd"] + _inputs(p)


register(OpDef(
    name="_backward_SequenceLast", inputs=_inputs_back, params=_params(), hidden=True,
    infer_shape=grad_rule(_shape_rule("SequenceLast", _drop_time)),
    infer_type=lambda p, t: (list(t), [t[0]]) if t[0] is not None else None,
    forward=_backward_last, kernel=triton_backward_sequence_last,
    gradient=lambda g, p, ins, outs, og: [g.op(
        "SequenceLast", og[0], *ins[2:], use_sequence_length=p.use_sequence_length,
        axis=p.axis)] + [None] * (len(ins) - 1),
    cases=(Case(((3, 2), (4, 3, 2), (3,)), {"use_sequence_length": True}, ints={2: 5},
                no_grad_inputs=(1,)),),
    doc="Gradient of ``SequenceLast``: the output gradient placed at each last step."))


# ------------------------------------------------------------------ SequenceReverse

def _reverse_forward(p, ins, aux, rt):
    x = ins[0]
    steps, batch = x.shape[0], x.shape[1]
    lengths = _lengths(p, ins, steps, batch, x.device).clamp(0, steps).unsqueeze(0)
    t = torch.arange(steps, device=x.device).unsqueeze(1)
    src = torch.where(t < lengths, lengths - 1 - t, t)  # (T, B): where each step comes from
    return (torch.gather(x, 0, _bcast(src, x.dim()).expand(x.shape)),)


def triton_sequence_reverse(p, ins, aux, rt):
    """SequenceReverse as one Triton gather."""
    from ..kernels.sequence import sequence_reverse
    return (sequence_reverse(ins[0], _seq_lengths(p, ins)),)


def _reverse_grad(g, p, ins, outs, og):
    if not p.use_sequence_length:
        return [g.op("SequenceReverse", og[0])]
    # reversing the first L steps is its own inverse
    return [g.op("SequenceReverse", og[0], ins[1], use_sequence_length=True), None]


register(OpDef(
    name="SequenceReverse", inputs=_inputs, params=_params(),
    infer_shape=_shape_rule("SequenceReverse", lambda p, d: tuple(d), axes=(0,)),
    infer_type=_seq_type, forward=_reverse_forward, gradient=_reverse_grad,
    kernel=triton_sequence_reverse,
    cases=(Case(((4, 3, 2), (3,)), {"use_sequence_length": True}, ints={1: 5}),
           Case(((5, 2),), {}), Case(((3, 4, 2), (4,)), {"use_sequence_length": True},
                                     ints={1: 4})),
    doc="""Reverse the first ``length`` steps of each sequence (all T without lengths).

    Only ``axis=0`` (time-major data) is supported, as in MXNet 1.x."""))
