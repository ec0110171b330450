"""``mx.gluon.rnn`` cells against MXNet 1.9.1 (``tests/fixtures/gluon_rnn_cells``).

The recipes in ``cases.py`` run on MXNet (``generate.py``) and here: unrolled outputs and
states, gradients with respect to inputs and parameters, the symbolic unroll (node names,
arguments, shapes, begin-state names, reprs) and ``_unfuse()`` of the fused layers. Ported
behaviour from MXNet's ``tests/python/unittest/test_gluon_rnn.py`` is named per test.
"""
from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import symgraph as mx
from symgraph import gluon
from tests import fixture_scripts

FIX = pathlib.Path(__file__).parent / "fixtures" / "gluon_rnn_cells"
cases = fixture_scripts.load("gluon_rnn_cells/cases.py")
ARR = np.load(FIX / "gluon_rnn_cells.npz", allow_pickle=False)
RECORDS = json.loads((FIX / "gluon_rnn_cells.json").read_text())
ALL = [pytest.param(c, id=c["id"]) for c in cases.CASES]


def _want(cid: str) -> dict:
    return {k.split(":", 1)[1]: ARR[k] for k in ARR.files if k.startswith(cid + ":")}


def _compare(got: dict, want: dict, keys, what: str) -> None:
    for key in keys:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-4, atol=1e-5,
                                   err_msg=f"{what} {key}")


class _Twice(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        y = x * 2
        return y, y


def test_an_output_listed_twice_gets_both_head_gradients():
    """MXNet's CachedOp copies a repeated output (a cell's output and its new state)."""
    x = mx.nd.ones((1,))
    x.attach_grad()
    with mx.autograd.record():
        a, b = _Twice()(x)
        loss = a + b
    loss.backward()
    assert float(x.grad.asnumpy()[0]) == 4.0


@pytest.mark.parametrize("case", ALL)
def test_unroll_matches_mxnet(case):
    got, want = cases.run(mx, case, grad=False), _want(case["id"])
    _compare(got, want, [k for k in want if k.startswith(("out", "state"))], case["id"])


@pytest.mark.parametrize("case", [pytest.param(c, id=c["id"])
                                  for c in cases.CASES if c["grad"]])
def test_gradients_match_mxnet(case):
    got, want = cases.run(mx, case), _want(case["id"])
    assert sorted(got) == sorted(want)
    _compare(got, want, [k for k in want if k.startswith(("dx", "d:"))], case["id"])


@pytest.mark.parametrize("case", ALL)
def test_symbolic_unroll_matches_mxnet(case):
    with mx.name.NameManager():
        got = cases.symbolic(mx, case)
    want = RECORDS[case["id"]]
    if "error" in want:  # MXNet fails here (it wraps a split Symbol in a list); we do not
        assert got["shapes"][:case["length"]] == [[cases.BATCH, 4]] * case["length"]
        return
    assert got == want


@pytest.mark.parametrize("name", cases.UNFUSE)
def test_unfuse_matches_fused_layer(name):
    """test_gluon_rnn.py::test_lstm_cpu_inference: the unfused stack computes the layer."""
    layer = cases.fused_layer(mx, name)
    rng = np.random.RandomState(7)
    cases.set_params(mx, layer, rng)
    x = mx.nd.array(rng.uniform(-1, 1, (5, 2, 3)))
    stack = layer._unfuse()
    prefix = f"unfuse:{name}:"
    assert sorted(stack.collect_params().keys()) == ARR[prefix + "params"].tolist()
    np.testing.assert_allclose(layer(x).asnumpy(), ARR[prefix + "fused"], rtol=1e-5, atol=1e-6)
    cells = stack.unroll(5, x, layout="TNC", merge_outputs=True)[0]
    np.testing.assert_allclose(cells.asnumpy(), ARR[prefix + "cells"], rtol=1e-5, atol=1e-6)


def test_unfuse_refuses_projection():
    with pytest.raises(AssertionError, match="projection"):
        gluon.rnn.LSTM(4, projection_size=2)._unfuse()


def _zoneout_run(p_out):
    base = gluon.rnn.RNNCell(6, input_size=4, prefix="rnn_")
    cell = gluon.rnn.ZoneoutCell(base, zoneout_outputs=p_out)
    cases.set_params(mx, cell, np.random.RandomState(0))
    x = mx.nd.array(np.random.RandomState(1).uniform(-1, 1, (3, 5, 4)))
    with mx.autograd.record():
        outs, _ = cell.unroll(5, x, merge_outputs=False)
    base._modified = False
    plain, _ = base.unroll(5, x, merge_outputs=False)
    return [o.asnumpy() for o in outs], [p.asnumpy() for p in plain]


def test_zoneout_keeps_previous_output_in_training():
    """Each output element is the base cell's new one or the previous output (0 at first)."""
    mx.random.seed(3)
    outs, plain = _zoneout_run(0.5)
    prev, kept, new = np.zeros_like(outs[0]), 0, 0
    for out, fresh in zip(outs, plain):
        is_new, is_kept = np.isclose(out, fresh), np.isclose(out, prev)
        assert np.all(is_new | is_kept)
        new, kept = new + (is_new & ~is_kept).sum(), kept + (is_kept & ~is_new).sum()
        prev = out
    assert new > 10 and kept > 10


def test_dropout_cell_drops_in_training_only():
    cell = gluon.rnn.DropoutCell(0.5)
    x = mx.nd.ones((4, 3, 50))
    out, states = cell.unroll(3, x, merge_outputs=True)
    assert states == [] and np.array_equal(out.asnumpy(), x.asnumpy())
    with mx.autograd.train_mode():
        dropped = cell.unroll(3, x, merge_outputs=True)[0].asnumpy()
    assert set(np.unique(dropped)) == {0.0, 2.0}


def test_modifier_rules_match_mxnet():
    base = gluon.rnn.GRUCell(3)
    cell = gluon.rnn.ResidualCell(base)
    with pytest.raises(AssertionError, match="After applying modifier cells"):
        base.begin_state(2)
    with pytest.raises(AssertionError, match="One cell cannot be modified twice"):
        gluon.rnn.ZoneoutCell(base)
    assert [s.shape for s in cell.begin_state(batch_size=2, func=mx.nd.zeros)] == [(2, 3)]
    bi = gluon.rnn.BidirectionalCell(gluon.rnn.GRUCell(3), gluon.rnn.GRUCell(3))
    with pytest.raises(AssertionError, match="BidirectionalCell doesn't support zoneout"):
        gluon.rnn.ZoneoutCell(bi)
    with pytest.raises(NotImplementedError, match="Bidirectional cannot be stepped"):
        bi(mx.nd.ones((2, 3)), [])


def test_deferred_input_size_is_inferred():
    """test_gluon_rnn.py::test_cell_fill_shape."""
    cell = gluon.rnn.LSTMCell(10)
    cell.hybridize()
    cell.initialize()
    outs, states = cell.unroll(3, mx.nd.ones((2, 3, 7)), merge_outputs=True)
    assert cell.i2h_weight.shape == (40, 7) and outs.shape == (2, 3, 10)
    assert repr(cell) == "LSTMCell(7 -> 40)"


class _Layer(gluon.HybridBlock):
    def __init__(self):
        super().__init__()
        with self.name_scope():
            self.cell = gluon.rnn.BidirectionalCell(gluon.rnn.LSTMCell(3), gluon.rnn.GRUCell(2))

    def hybrid_forward(self, F, seq):
        return self.cell.unroll(4, seq, layout="NTC", merge_outputs=True)[0]


def test_cells_inside_hybrid_block_export_and_import(tmp_path):
    """test_gluon_rnn.py::test_rnn_cells_export_import, with a bidirectional pair."""
    net = _Layer()
    net.initialize()
    net.hybridize()
    x = mx.nd.array(np.random.RandomState(2).uniform(size=(2, 4, 5)))
    out = net(x)
    assert out.shape == (2, 4, 5)
    net.export(str(tmp_path / "model"))
    loaded = gluon.SymbolBlock.imports(str(tmp_path / "model-symbol.json"), ["data"],
                                       str(tmp_path / "model-0000.params"))
    np.testing.assert_allclose(loaded(x).asnumpy(), out.asnumpy(), rtol=1e-6)


def test_begin_state_names_and_values():
    cell = gluon.rnn.SequentialRNNCell(prefix="s_")
    cell.add(gluon.rnn.LSTMCell(3, prefix="a_"))
    cell.add(gluon.rnn.RNNCell(2, prefix="b_"))
    assert [s["shape"] for s in cell.state_info(5)] == [(5, 3), (5, 3), (5, 2)]
    names = [s.name for s in cell.begin_state(func=mx.sym.var)]
    assert names == ["a_begin_state_0", "a_begin_state_1", "b_begin_state_0"]
    ones = cell.begin_state(batch_size=2, func=mx.nd.ones, dtype="float64")
    assert [(s.shape, s.dtype) for s in ones] == [((2, 3), np.float64)] * 2 + \
        [((2, 2), np.float64)]


def test_rnn_cell_module_names():
    from symgraph import alias
    from symgraph.gluon.rnn import rnn_cell
    assert alias.target_module("mxnet.gluon.rnn.rnn_cell") == "symgraph.gluon.rnn.rnn_cell"
    for name in rnn_cell.__all__:
        assert getattr(gluon.rnn, name) is getattr(rnn_cell, name)


def test_variational_dropout_keeps_one_mask_per_sequence():
    from symgraph.gluon.rnn.contrib_cells import VariationalDropoutCell
    cell = VariationalDropoutCell(gluon.rnn.GRUCell(8, input_size=6), drop_inputs=0.5,
                                  drop_states=0.5, drop_outputs=0.5)
    cell.initialize()
    mx.random.seed(5)
    with mx.autograd.train_mode():
        outs, _ = cell.unroll(4, mx.nd.ones((3, 4, 6)), merge_outputs=False)
    masks = [cell.drop_inputs_mask, cell.drop_states_mask, cell.drop_outputs_mask]
    assert [m.shape for m in masks] == [(3, 6), (3, 8), (3, 8)]
    for m in masks:
        assert set(np.unique(m.asnumpy())) <= {0.0, 2.0}
    dropped = cell.drop_outputs_mask.asnumpy() == 0
    assert dropped.any()
    for out in outs:  # the same output elements are dropped at every step
        assert not out.asnumpy()[dropped].any()


@pytest.mark.parametrize("p_out, p_state", [(0.0, 0.5), (0.5, 0.0), (0.0, 0.0)])
def test_zoneout_unrolls_with_either_rate_zero(p_out, p_state):
    cell = gluon.rnn.ZoneoutCell(gluon.rnn.LSTMCell(3, input_size=2), p_out, p_state)
    cell.initialize()
    for _ in range(2):  # a second unroll starts from a first step again
        with mx.autograd.train_mode():
            out, states = cell.unroll(3, mx.nd.ones((2, 3, 2)), merge_outputs=True)
        assert out.shape == (2, 3, 3) and [s.shape for s in states] == [(2, 3), (2, 3)]
