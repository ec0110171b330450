"""``mx.gluon.rnn`` layers (``RNN``, ``LSTM``, ``GRU``) against MXNet 1.9.1 golden records.

The cases live in ``tests/fixtures/gluon/generate_layers.py`` (``RNN_CASES``): TNC and NTC
layouts, one and two layers, bidirectional, states given or not, dropout between layers
in predict mode. MXNet 1.9.1's parameter names and shapes, reprs, outputs, states and the
gradients of inputs, states and every per-layer parameter are stored in
``layers_rnn.json``/``.npz``; ``layers_net.params`` is a net with a bidirectional LSTM
saved by MXNet's ``save_parameters``.
"""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import symgraph as mx
from symgraph.gluon import nn, rnn
from tests import fixture_scripts

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "gluon")


GEN = fixture_scripts.load("gluon/generate_layers.py")
STORED = GEN.load_group("rnn")
with open(os.path.join(FIXTURES, "layers_naming.json")) as _f:
    NAMING = json.load(_f)


def test_every_case_has_records():
    assert sorted(STORED[0]) == sorted(GEN.RNN_CASES)


@pytest.mark.parametrize("name", sorted(GEN.RNN_CASES))
def test_layer_matches_mxnet(name):
    GEN.check_case(mx, "rnn", name, STORED)


def test_loads_mxnet_save_parameters_file(tmp_path):
    net = GEN.params_file_net(mx)
    net.load_parameters(GEN.NET_PARAMS)
    out = net(mx.nd.ones((2, 3, 2))).asnumpy()
    np.testing.assert_allclose(out, NAMING["params_file"]["out"], rtol=1e-5, atol=1e-6)
    net.save_parameters(str(tmp_path / "again.params"))
    assert sorted(mx.nd.load(str(tmp_path / "again.params"))) == \
        sorted(mx.nd.load(GEN.NET_PARAMS))


def test_states_given_or_not_on_one_layer():
    layer = rnn.GRU(3, input_size=2)
    layer.initialize()
    x = mx.nd.array(np.random.randn(4, 2, 2))
    alone = layer(x).asnumpy()
    out, states = layer(x, layer.begin_state(batch_size=2))
    np.testing.assert_allclose(out.asnumpy(), alone, rtol=1e-6)
    np.testing.assert_allclose(states[0].asnumpy(), alone[-1:], rtol=1e-6)
    np.testing.assert_allclose(layer(x).asnumpy(), alone, rtol=1e-6)


def test_begin_state_shapes_and_symbols():
    lstm = rnn.LSTM(4, num_layers=2, bidirectional=True, prefix="l_")
    assert [s.shape for s in lstm.begin_state(batch_size=3)] == [(4, 3, 4), (4, 3, 4)]
    assert lstm.state_info(3)[0] == {"shape": (4, 3, 4), "__layout__": "LNC",
                                     "dtype": "float32"}
    names = [s.name for s in lstm.begin_state(func=mx.sym.zeros)]
    assert names == ["l_h0_0", "l_h0_1"]


def test_dropout_between_layers_only_while_training():
    layer = rnn.LSTM(8, num_layers=2, dropout=0.5, input_size=3)
    layer.initialize()
    x = mx.nd.array(np.random.randn(5, 4, 3))
    first, second = layer(x).asnumpy(), layer(x).asnumpy()
    np.testing.assert_array_equal(first, second)
    with mx.autograd.record():
        trained = layer(x).asnumpy()
    assert not np.allclose(trained, first)


def test_deferred_input_size_of_a_lone_layer():
    layer = rnn.LSTM(3, bidirectional=True)
    layer.initialize()
    assert layer(mx.nd.ones((2, 4, 5))).shape == (2, 4, 6)
    assert layer.r0_i2h_weight.shape == (12, 5)


def test_deferred_input_size_inside_a_container():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(rnn.LSTM(3), nn.Dense(2, flatten=False))
    net.initialize()
    assert net(mx.nd.ones((5, 2, 4))).shape == (5, 2, 2)


def test_invalid_state_shape():
    lstm = rnn.LSTM(4, input_size=3)
    lstm.initialize()
    with pytest.raises(ValueError) as info:
        lstm(mx.nd.ones((5, 2, 3)), [mx.nd.zeros((1, 3, 4)), mx.nd.zeros((1, 2, 4))])
    assert str(info.value) == "Invalid recurrent state shape. Expecting (1, 2, 4), got " \
        "(1, 3, 4)."


def test_invalid_layout():
    with pytest.raises(AssertionError) as info:
        rnn.GRU(3, layout="NCT")
    assert str(info.value) == "Invalid layout NCT; must be one of ['TNC' or 'NTC']"
