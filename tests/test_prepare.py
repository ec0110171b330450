"""``OpDef.prepare``: a bind-time specialised forward computes exactly what ``forward`` does,
with and without an ``out`` tensor, over every table case of the ops that define it."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import symgraph as mx  # noqa: F401 - fills the registry
from symgraph.attrs import parse_params, to_attr_string
from symgraph.ops.base import Case, Runtime, canonical_ops, get_op

from .op_harness import draw_inputs

EXTRA = {  # hidden ops (no table cases of their own) reached only from gradients
    "_backward_SoftmaxOutput": [
        Case(((4, 5), (4,)), ints={1: 7}),
        Case(((4, 5), (4,)), {"grad_scale": 0.5, "normalization": "batch"}, ints={1: 5}),
        Case(((2, 3, 4), (2, 3)), {"preserve_shape": True}, ints={1: 4}),
        Case(((4, 5), (4,)), {"use_ignore": True, "ignore_label": 1}, ints={1: 5}),
        Case(((6, 5), (6,)), {"use_ignore": True, "ignore_label": 0, "normalization": "valid",
                              "grad_scale": 2.0}, ints={1: 3}),
        Case(((6, 5), (6,)), {"use_ignore": True, "ignore_label": 7, "normalization": "valid"},
             ints={1: 5}),
        Case(((6, 5), (6,)), {"normalization": "valid"}, ints={1: 5}),
        Case(((2, 3, 4), (2, 3)), {"preserve_shape": True, "use_ignore": True,
                                   "normalization": "batch"}, ints={1: 4}),
    ],
    "_backward_softmax": [Case(((4, 5), (4, 5))), Case(((3, 4, 2), (3, 4, 2)), {"axis": 1})],
    "_backward_log_softmax": [Case(((4, 5), (4, 5))),
                              Case(((3, 4, 2), (3, 4, 2)), {"axis": 0})],
}
PREPARED = [op for op in canonical_ops() if op.prepare is not None]
CASES = [pytest.param(op, case, id=f"{op.name}-{i}") for op in PREPARED
         for i, case in enumerate(list(op.cases) + EXTRA.get(op.name, []))]


def _inputs(op, case):
    attrs = {k: to_attr_string(v) for k, v in case.attrs.items()}
    p = parse_params(op.params, attrs, op.name)
    ins = [torch.from_numpy(v) for v in draw_inputs(case, np.float32)]
    n_in = len(op.input_names(p))
    return p, ins[:n_in], ins[n_in:]


def test_the_hot_ops_are_prepared():
    names = {op.name for op in PREPARED}
    assert {"FullyConnected", "SoftmaxOutput", "_backward_SoftmaxOutput", "sum",
            "dot"} <= names


@pytest.mark.parametrize("op,case", CASES)
def test_prepared_forward_equals_forward(op, case):
    p, ins, aux = _inputs(op, case)
    rt = Runtime(case.train, torch.Generator().manual_seed(0))
    want = op.forward(p, ins, [a.clone() for a in aux], rt)
    shapes = [tuple(t.shape) for t in ins + aux]
    out_shapes = [tuple(w.shape) for w in want]
    fn = op.prepare(p, shapes, out_shapes)
    if fn is not None:
        got = fn(p, ins, [a.clone() for a in aux], rt)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype
            torch.testing.assert_close(g, w, rtol=0, atol=0)
    if len(want) == 1:  # the variant writing into a given tensor, if the op offers one
        out = torch.full_like(want[0], float("nan"))
        into = op.prepare(p, shapes, out_shapes, out)
        if into is not None:
            (got,) = into(p, ins, [a.clone() for a in aux], rt)
            assert got is out
            torch.testing.assert_close(out, want[0], rtol=0, atol=0)


def test_softmax_output_backward_fast_path_clamps_labels_like_the_reference():
    op = get_op("_backward_SoftmaxOutput")
    p = parse_params(op.params, {}, op.name)
    y = torch.softmax(torch.randn(3, 4), -1)
    label = torch.tensor([-1.0, 2.7, 9.0])  # out of range and fractional labels
    fn = op.prepare(p, [(3, 4), (3,)], [(3, 4)])
    assert fn is not None
    torch.testing.assert_close(fn(p, [y, label], [], Runtime())[0],
                               op.forward(p, [y, label], [], Runtime())[0], rtol=0, atol=0)
