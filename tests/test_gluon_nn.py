"""``mx.gluon.nn`` against MXNet 1.9.1 golden records, plus behaviour MXNet documents.

The cases live in ``tests/fixtures/gluon/generate_layers.py`` (``NN_CASES``); the generator
ran them with MXNet 1.9.1 and stored, per layer, the parameter names, shapes after deferred
initialization, reprs, outputs and the gradients of inputs and parameters under
``autograd.record()`` (``layers_nn.json``/``.npz``), and default names of a nested net
(``layers_naming.json``). Here every case runs again with symgraph on the stored inputs,
parameters and heads.
"""
from __future__ import annotations

import json
import os
import warnings

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import MXNetError
from symgraph.gluon import nn
from tests import fixture_scripts

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "gluon")


GEN = fixture_scripts.load("gluon/generate_layers.py")
STORED = GEN.load_group("nn")
with open(os.path.join(FIXTURES, "layers_naming.json")) as _f:
    NAMING = json.load(_f)


def test_every_case_has_records():
    assert sorted(STORED[0]) == sorted(GEN.NN_CASES)


@pytest.mark.parametrize("name", sorted(GEN.NN_CASES))
def test_layer_matches_mxnet(name):
    GEN.check_case(mx, "nn", name, STORED)


@pytest.mark.parametrize("key", sorted(k for k in NAMING if k != "params_file"))
def test_default_names_match_mxnet(key):
    got = json.loads(json.dumps(GEN.naming_records(mx)))
    assert got[key] == NAMING[key]


# ---------------------------------------------------------------- behaviour

def test_dropout_drops_and_scales_only_while_training():
    layer = nn.Dropout(0.5)
    x = mx.nd.ones((40, 50))
    assert np.array_equal(layer(x).asnumpy(), x.asnumpy())
    with mx.autograd.record():
        y = layer(x).asnumpy()
    assert set(np.unique(y)) <= {0.0, 2.0}
    assert 0.4 < (y == 0).mean() < 0.6


def test_dropout_axes_share_the_mask():
    layer = nn.Dropout(0.5, axes=(1,))
    with mx.autograd.record():
        y = layer(mx.nd.ones((30, 4))).asnumpy()
    assert (y == y[:, :1]).all()


def test_sequential_indexing_and_len():
    net = nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(nn.Dense(3), nn.Dense(4), nn.Dense(5))
    assert len(net) == 3
    assert net[1] is list(net._children.values())[1]
    head = net[:2]
    assert isinstance(head, nn.HybridSequential) and len(head) == 2
    assert head.prefix == "net_"


def test_sequential_hybridize_warns_when_all_children_hybrid():
    net = nn.Sequential(prefix="seq_")
    with net.name_scope():
        net.add(nn.Dense(3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        net.hybridize()
    assert [str(w.message) for w in caught] == [
        "All children of this Sequential layer 'seq_' are HybridBlocks. Consider using "
        "HybridSequential for the best performance."]


def test_batchnorm_cast_keeps_float32_for_float16():
    bn = nn.BatchNorm(in_channels=2)
    bn.initialize()
    bn.cast("float16")
    assert bn.gamma.data().dtype == np.float32


def test_batchnorm_running_stats_are_not_trained():
    bn = nn.BatchNorm()
    assert bn.running_mean.grad_req == "null" and bn.running_var.grad_req == "null"
    assert nn.BatchNorm(scale=False).gamma.grad_req == "null"


def test_export_and_imports_round_trip(tmp_path):
    # MXNet: HybridBlock.export + SymbolBlock.imports give the same network
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Conv2D(2, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
                nn.GlobalAvgPool2D(), nn.Flatten(), nn.Dense(3))
    net.initialize()
    x = mx.nd.array(np.random.randn(2, 1, 5, 5))
    want = net(x).asnumpy()
    net.export(str(tmp_path / "net"))
    back = nn.SymbolBlock.imports(str(tmp_path / "net-symbol.json"), ["data"],
                                  str(tmp_path / "net-0000.params"))
    np.testing.assert_allclose(back(x).asnumpy(), want, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- errors (MXNet's wording)

@pytest.mark.parametrize("make, error, message", [
    (lambda: nn.Conv2D(4, (3, 3, 3)), AssertionError,
     "kernel_size must be a number or a list of 2 ints"),
    (lambda: nn.Conv1D(4, 3, layout="NWC"), AssertionError,
     "Only supports 'NCW' layout for now"),
    (lambda: nn.Conv3D(4, 3, layout="NCHW"), AssertionError,
     "Only supports 'NCDHW' and 'NDHWC' layout for now"),
    (lambda: nn.MaxPool2D(layout="NCW"), AssertionError,
     "Only NCHW and NHWC layouts are valid for 2D Pooling"),
    (lambda: nn.AvgPool1D((2, 2)), AssertionError,
     "pool_size must be a number or a list of 1 int"),
    (lambda: nn.LeakyReLU(-1), AssertionError,
     "Slope coefficient for LeakyReLU must be no less than 0."),
    (lambda: nn.Lambda("no_such_op"), AssertionError,
     "Function name no_such_op is not found in ndarray."),
    (lambda: nn.HybridLambda("no_such_op"), AssertionError,
     "Function name no_such_op is not found in symbol/ndarray."),
    (lambda: nn.Lambda(3), ValueError,
     "Unrecognized function in lambda: 3 of type <class 'int'>"),
])
def test_construction_errors(make, error, message):
    with pytest.raises(error) as info:
        make()
    assert str(info.value) == message


def test_channel_last_convolution_is_refused_when_run():
    conv = nn.Conv2D(2, 3, layout="NHWC", in_channels=1)
    conv.initialize()
    with pytest.raises(MXNetError, match="layout NHWC is not supported"):
        conv(mx.nd.ones((1, 5, 5, 1)))


def test_reflection_pad_runs_the_pad_operator():
    x = np.random.RandomState(0).uniform(-1, 1, (1, 1, 3, 3)).astype(np.float32)
    got = nn.ReflectionPad2D(1)(mx.nd.array(x)).asnumpy()
    np.testing.assert_array_equal(got, np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), "reflect"))


@pytest.mark.parametrize("layer", [nn.InstanceNorm, nn.GroupNorm])
def test_norms_run_their_composite_operators(layer):
    block = layer()
    block.initialize()
    x = np.random.RandomState(0).uniform(-1, 1, (2, 2, 3))
    got = block(mx.nd.array(x)).asnumpy()
    axes = (2,) if layer is nn.InstanceNorm else (1, 2)
    want = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + 1e-5)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
