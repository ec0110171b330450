"""ONNX translations of the variable-length sequence ops: ``SequenceReverse``
(``ReverseSequence``, or a reversed ``Slice`` without lengths), ``SequenceMask`` (a ``Where``
on step < length) and ``SequenceLast`` (``GatherND`` at each sequence's last step)."""
from __future__ import annotations

import numpy as np

from ..emitter import Emitter, NodeCtx, converts

_INT64_MIN = np.iinfo(np.int64).min


def _lengths(e: Emitter, n: NodeCtx) -> str:
    """The ``sequence_length`` input as int64 (B,), truncated toward zero as MXNet reads it."""
    return e.cast(n.ins[1], "int64")


def _steps(e: Emitter, n: NodeCtx, axis: int) -> str:
    """The time-axis length T as a 1-D int64 of one value."""
    return e.dim_slice(n.ins[0], n.in_shapes[0], axis, axis + 1)


@converts("SequenceReverse")
def sequence_reverse(e: Emitter, n: NodeCtx):
    x, out = n.ins[0], n.outs[0]
    if n.p.axis != 0:
        raise n.fail(f"axis={n.p.axis} (MXNet supports time-major data only)")
    if not n.p.use_sequence_length:
        return [e.one("Slice", [x, e.ints([-1]), e.ints([_INT64_MIN]), e.ints([0]),
                                e.ints([-1])], out)]
    # symgraph clips lengths into [0, T]; ONNX Runtime refuses lengths outside it
    lens = e.one("Max", [_lengths(e, n), e.ints([0])])
    lens = e.one("Min", [lens, _steps(e, n, 0)])
    return [e.one("ReverseSequence", [x, lens], out, batch_axis=1, time_axis=0)]


@converts("SequenceMask")
def sequence_mask(e: Emitter, n: NodeCtx):
    p, x, out = n.p, n.ins[0], n.outs[0]
    if not p.use_sequence_length:
        return [e.one("Identity", [x], out)]
    if p.axis not in (0, 1):
        raise n.fail(f"axis={p.axis} (the time axis is 0 or 1)")
    if e.dynamic:
        steps = e.squeeze(_steps(e, n, p.axis), [0])
        t = e.one("Range", [e.scalar(0, "int64"), steps, e.scalar(1, "int64")])
    else:
        t = e.ints(range(n.in_shapes[0][p.axis]))
    lens = _lengths(e, n)
    # keep[t, b] (axis 0) or keep[b, t] (axis 1): step t lies within sequence b
    if p.axis == 0:
        keep = e.one("Less", [e.unsqueeze(t, [1]), lens])
    else:
        keep = e.one("Less", [t, e.unsqueeze(lens, [1])])
    rank = len(n.in_shapes[0])
    if rank > 2:
        keep = e.unsqueeze(keep, list(range(2, rank)))
    return [e.one("Where", [keep, x, e.scalar(p.value, n.in_dtypes[0])], out)]


@converts("SequenceLast")
def sequence_last(e: Emitter, n: NodeCtx):
    p, x, out = n.p, n.ins[0], n.outs[0]
    if p.axis not in (0, 1):
        raise n.fail(f"axis={p.axis} (the time axis is 0 or 1)")
    if not p.use_sequence_length:
        return [e.one("Gather", [x, e.scalar(-1, "int64")], out, axis=p.axis)]
    if p.axis == 0:  # batch-major for GatherND's batch_dims
        perm = list(range(len(n.in_shapes[0])))
        perm[0], perm[1] = 1, 0
        x = e.one("Transpose", [x], perm=perm)
    # the last step's index, clipped into [0, T - 1] as symgraph does
    last = e.one("Sub", [_lengths(e, n), e.ints([1])])
    last = e.one("Max", [last, e.ints([0])])
    last = e.one("Min", [last, e.one("Sub", [_steps(e, n, p.axis), e.ints([1])])])
    return [e.one("GatherND", [x, e.unsqueeze(last, [1])], out, batch_dims=1)]
