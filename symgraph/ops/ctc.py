"""CTCLoss (``ctc_loss``, ``_contrib_CTCLoss``, ``_contrib_ctc_loss``): connectionist
temporal classification loss, MXNet 1.9.1's operator.

``data`` (T, N, C) are unnormalised scores (softmax is applied inside), ``label`` (N, L)
class indices. With ``blank_label='first'`` class 0 is the blank and label rows end at their
first 0; with ``'last'`` class C-1 is the blank and rows end at their first -1 (unless
``use_label_lengths`` gives the lengths). ``use_data_lengths`` takes each sequence's length
from ``data_lengths``. Outputs (MXNet's names): ``output0``, the loss (N,) =
-log p(label | data), and, hidden, ``output1``, its gradient with respect to ``data``
(``softmax - state posteriors``, 0 past each length; see ``kernels/ctc.py``), computed in
the forward as MXNet does. The backward scales that hidden
gradient by the head gradient of each item.

>>> import symgraph as mx
>>> loss = mx.sym.ctc_loss(mx.sym.Variable('data'), mx.sym.Variable('label'), name='ctc')
>>> loss.list_outputs(), loss.infer_shape(data=(6, 2, 4), label=(2, 3))[1]
(['ctc_output0'], [(2,)])
>>> loss.infer_shape(data=(6, 2, 4), label=(3, 3))  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
symgraph.base.ShapeError: ...The batch size of the labels and data arrays must be the same...
"""
from __future__ import annotations

from ..attrs import Param
from ..base import DTypeError, ShapeError
from .base import Case, OpDef, merge_shape, register

_PARAMS = (
    Param("use_data_lengths", "bool", False, doc="Take sequence lengths from data_lengths."),
    Param("use_label_lengths", "bool", False, doc="Take label lengths from label_lengths."),
    Param("blank_label", "str", "first", choices=("first", "last"),
          doc="Whether class 0 ('first') or class C-1 ('last') is the blank."),
)


def _inputs(p) -> list[str]:
    return (["data", "label"] + (["data_lengths"] if p.use_data_lengths else [])
            + (["label_lengths"] if p.use_label_lengths else []))


def _shape(p, shapes):
    data, label = shapes[0], shapes[1]
    if not data or not label:
        return None
    if len(data) != 3:
        raise ShapeError(f"CTCLoss: The number of dimensions of data array must be 3, got {data}")
    if len(label) != 2:
        raise ShapeError(f"CTCLoss: The number of dimensions of labels array must be 2, got "
                         f"{label}")
    if data[1] != label[0]:
        raise ShapeError(f"CTCLoss: The batch size of the labels and data arrays must be the "
                         f"same: data {data}, label {label}")
    if data[0] < label[1]:
        raise ShapeError(f"CTCLoss: The max number of labels ({label[1]}) cannot exceed the "
                         f"maximum sequence length of the data {data}")
    ins = [data, label] + [merge_shape(s, (data[1],), f"CTCLoss input {i + 2}")
                           for i, s in enumerate(shapes[2:])]
    return ins, [(data[1],), data]


def _type(p, types):
    data = types[0]
    if data is None:
        return None
    if data not in ("float32", "float64", "float16"):
        raise DTypeError(f"CTCLoss: data must be a floating point type, got {data}")
    rest = [t if t is not None else data for t in types[1:]]
    return [data] + rest, [data, data]


def _split(p, ins):
    data, label = ins[0], ins[1]
    k = 2
    data_len = label_len = None
    if p.use_data_lengths:
        data_len, k = ins[k], k + 1
    if p.use_label_lengths:
        label_len = ins[k]
    return data, label, data_len, label_len


def _forward(p, ins, aux, rt):
    from ..kernels.ctc import ctc_loss_ref
    return ctc_loss_ref(*_split(p, ins), blank_last=p.blank_label == "last")


def triton_ctc_loss(p, ins, aux, rt):
    """Triton kernels (``kernels.ctc.ctc_loss``): one program per item for the recursions."""
    from ..kernels.ctc import ctc_loss
    return ctc_loss(*_split(p, ins), blank_last=p.blank_label == "last")


def _gradient(g, p, ins, outs, og):
    scale = g.op("Reshape", og[0], shape=(1, -1, 1))
    return [g.op("broadcast_mul", outs[1], scale)] + [g.zeros(x) for x in ins[1:]]


def _case(shapes, attrs=None, ints=None):
    return Case(shapes, attrs or {}, ints=ints or {1: 4},
                no_grad_inputs=tuple(range(1, len(shapes))))


register(OpDef(
    name="CTCLoss", aliases=("ctc_loss", "_contrib_CTCLoss", "_contrib_ctc_loss"),
    params=_PARAMS, inputs=_inputs, outputs=("output0", "output1"), num_visible=lambda p: 1,
    infer_shape=_shape, infer_type=_type, forward=_forward, kernel=triton_ctc_loss,
    gradient=_gradient,
    cases=(_case(((7, 2, 5), (2, 3))),
           _case(((6, 3, 4), (3, 2)), {"blank_label": "last"}, {1: 3}),
           _case(((6, 3, 5), (3, 1), (3,), (3,)),  # one label fits any data length
                 {"use_data_lengths": True, "use_label_lengths": True}, {1: 5, 2: 7, 3: 2})),
    doc="""Connectionist temporal classification loss of scores (T, N, C) against labels
    (N, L): one loss per sequence; softmax over C is applied inside. The gradient with
    respect to ``data`` is computed in the forward (hidden output ``output1``) and scaled by the
    head gradient in the backward; labels and lengths get none.
    """))
