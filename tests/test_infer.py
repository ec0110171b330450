"""The one inference engine (``symgraph.symbol.infer``): its single pass with settling
reaches the fixed point of every op's shape and dtype rules, the specification written out
here as the plain loop."""
from __future__ import annotations

import pytest

import symgraph as mx
from symgraph.ops.base import canonical_ops
from symgraph.symbol import infer
from symgraph.symbol.graph import IndexedGraph
from tests.op_harness import op_symbol
from tests.test_bucketing_module import sym_gen


def _fixed_point(kind, ig: IndexedGraph, initial: dict) -> list:
    """The specification: run every rule until a whole pass changes nothing."""
    values = [kind.unknown] * ig.num_entries
    for nid, value in initial.items():
        values[ig.row_ptr[nid]] = value
    op_ids = [i for i, n in enumerate(ig.nodes) if n.op is not None]
    for _ in range(len(op_ids) + 1):
        if not any([infer._apply_rule(kind, ig, nid, values) for nid in op_ids]):
            break
    return values


def _both(sym, shapes: dict, types: dict) -> None:
    ig = IndexedGraph(sym._outputs)
    by_name = {ig.nodes[i].name: i for i in ig.variable_ids}
    shapes = {by_name[n]: s for n, s in shapes.items()}
    types = {by_name[n]: t for n, t in types.items()}
    assert infer.infer_shapes(ig, shapes) == _fixed_point(infer.SHAPE, ig, shapes)
    assert infer.infer_types(ig, types) == _fixed_point(infer.DTYPE, ig, types)


def test_one_pass_inference_equals_the_fixed_point():
    """``infer`` (one pass, settling around entries that a later rule refines after an
    earlier node saw them incomplete) reaches the fixed point of all rules."""
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    _both(sym_gen(5)[0], {"data": (4, 5)}, {"data": "float32"})  # weights from their users
    # y's shape and dtype are known only from the add after the relu that reads it
    _both(mx.sym.elemwise_add(mx.sym.Activation(y, act_type="relu"), x), {"x": (2, 3)},
          {"x": "float16"})
    _both(mx.sym.Group([mx.sym.FullyConnected(y, num_hidden=3), mx.sym.elemwise_add(y, x)]),
          {"x": (2, 3)}, {"x": "float32"})
    _both(mx.sym.broadcast_add(x, y), {"x": (2, 3), "y": (1, 3)},
          {"x": "float32", "y": "float32"})
    with pytest.raises(mx.base.ShapeError, match="Shape inconsistent"):
        _both(mx.sym.elemwise_add(x, y), {"x": (2, 3), "y": (3, 2)}, {})


def test_refinements_settle_to_the_fixed_point(monkeypatch):
    """An LSTMCell's begin state (zeros of shape (0, hidden)) learns its batch size from the
    add after the h2h FullyConnected that reads it: ``_settle`` re-runs the rules around
    the refined entries, and the values equal the fixed-point loop's."""
    calls = []
    settle = infer._settle
    monkeypatch.setattr(infer, "_settle", lambda *a: calls.append(1) or settle(*a))
    cell = mx.rnn.SequentialRNNCell()
    for i in range(2):
        cell.add(mx.rnn.LSTMCell(num_hidden=6, prefix=f"l{i}_"))
    out, _ = cell.unroll(4, mx.sym.Variable("data"), layout="NTC", merge_outputs=True)
    _both(out, {"data": (3, 4, 5)}, {"data": "float32"})
    assert calls, "the sweep never needed to settle: the case does not test _settle"
    # a refinement travelling back through several nodes before reaching a variable
    y = mx.sym.Variable("y")
    chain = mx.sym.Activation(mx.sym.Activation(mx.sym.zeros(shape=(0, 3)), act_type="relu"),
                              act_type="tanh")
    _both(mx.sym.elemwise_add(chain, y), {"y": (2, 3)}, {"y": "float32"})


def test_backward_completion_sees_the_outputs_its_own_rule_gave():
    """Reshape's rule gives (6, 1, 5, 6) from an input with an unknown batch size; the same
    application completes the input from that output (MXNet's inverse reshape), as the
    fixed point would on a second pass."""
    data = mx.sym.Variable("data")
    net = mx.sym.elemwise_add(data.reshape((6, 1, -2)), mx.sym.ones(shape=(6, 1, 5, 6)))
    _both(net, {"data": (0, 3, 5, 6)}, {"data": "float32"})
    assert net.infer_shape(data=(0, 3, 5, 6))[0] == [(2, 3, 5, 6)]


def _partial(shapes: tuple) -> list[dict]:
    """The case's shapes, then each input unknown in turn and the first dimension unknown."""
    out = [dict(enumerate(shapes))]
    out += [{i: s for i, s in enumerate(shapes) if i != k} for k in range(len(shapes))]
    out.append({i: (0,) + tuple(s[1:]) if s else s for i, s in enumerate(shapes)})
    return out


@pytest.mark.parametrize("op", [op for op in canonical_ops()
                                if op.cases and op.special.eager is None],
                         ids=lambda op: op.name)
def test_every_op_case_reaches_the_fixed_point(op):
    """Every op's table cases, with inputs or dimensions left unknown: ``infer`` gives the
    fixed point's shapes and dtypes, or both raise."""
    for case in op.cases[:2]:
        sym, _ = op_symbol(op, case)
        ig = IndexedGraph(sym._outputs)
        ids = {ig.nodes[i].name: i for i in ig.variable_ids}
        for given in _partial(case.shapes):
            initial = {ids[f"in{i}"]: tuple(s) for i, s in given.items() if f"in{i}" in ids}
            for kind, start in ((infer.SHAPE, initial),
                                (infer.DTYPE, {i: "float32" for i in initial})):
                try:
                    want = _fixed_point(kind, ig, dict(start))
                except mx.base.MXNetError as err:
                    with pytest.raises(type(err)):
                        infer.infer(kind, ig, dict(start))
                    continue
                assert infer.infer(kind, ig, dict(start)) == want, (op.name, given)
