"""``mx.gluon.loss`` against MXNet 1.9.1 golden records, plus behaviour MXNet documents.

The cases live in ``tests/fixtures/gluon/generate_layers.py`` (``LOSS_CASES``): each loss
with and without ``sample_weight`` and scalar ``weight``, ``batch_axis``, label reshaping,
``SoftmaxCrossEntropyLoss``'s ``sparse_label``/``axis``/``from_logits`` and
``SigmoidBinaryCrossEntropyLoss``'s ``from_sigmoid``/``pos_weight``. MXNet 1.9.1's outputs
and the gradients of every input are stored in ``layers_loss.json``/``.npz``.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import symgraph as mx
from symgraph.gluon import loss as gloss
from tests import fixture_scripts

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "gluon")




GEN = fixture_scripts.load("gluon/generate_layers.py")
STORED = GEN.load_group("loss")


def test_every_case_has_records():
    assert sorted(STORED[0]) == sorted(GEN.LOSS_CASES)


@pytest.mark.parametrize("name", sorted(GEN.LOSS_CASES))
def test_loss_matches_mxnet(name):
    GEN.check_case(mx, "loss", name, STORED)


def test_aliases():
    assert gloss.SoftmaxCELoss is gloss.SoftmaxCrossEntropyLoss
    assert gloss.SigmoidBCELoss is gloss.SigmoidBinaryCrossEntropyLoss


def test_sample_weight_given_or_not_on_one_loss():
    # MXNet runs losses imperatively, so one loss object takes both call structures
    loss = gloss.L2Loss()
    pred, label = mx.nd.array(np.random.randn(3, 4)), mx.nd.array(np.random.randn(3, 4))
    plain = loss(pred, label).asnumpy()
    weighted = loss(pred, label, mx.nd.array([[1.0], [0.0], [2.0]])).asnumpy()
    np.testing.assert_allclose(weighted, plain * [1.0, 0.0, 2.0], rtol=1e-6)
    np.testing.assert_allclose(loss(pred, label).asnumpy(), plain, rtol=1e-6)
    assert loss._fast_call  # same structure as traced: calls go straight to the graph


def test_a_forward_override_keeps_calls_on_the_general_path():
    class Halved(gloss.L2Loss):
        def forward(self, x, *args):
            return super().forward(x, *args) * 0.5
    pred, label = mx.nd.array(np.random.randn(3, 4)), mx.nd.array(np.random.randn(3, 4))
    loss = Halved()
    want = gloss.L2Loss()(pred, label).asnumpy() * 0.5
    for _ in range(2):
        np.testing.assert_allclose(loss(pred, label).asnumpy(), want, rtol=1e-6)
    assert not loss._fast_call


def test_loss_trains_a_dense_layer():
    net = mx.gluon.nn.Dense(3, in_units=4)
    net.initialize()
    x, y = mx.nd.array(np.random.randn(5, 4)), mx.nd.array([0, 1, 2, 1, 0])
    ce = gloss.SoftmaxCrossEntropyLoss()
    with mx.autograd.record():
        loss = ce(net(x), y)
    loss.backward()
    assert loss.shape == (5,)
    assert np.abs(net.weight.grad().asnumpy()).sum() > 0


@pytest.mark.parametrize("make, error, message", [
    (lambda: gloss.LogisticLoss(label_format="zero-one"), ValueError,
     "label_format can only be signed or binary, recieved zero-one."),
    (lambda: gloss.CTCLoss(layout="NCT"), AssertionError,
     "Only 'NTC' and 'TNC' layouts for pred are supported. Got: NCT"),
    (lambda: gloss.CTCLoss(label_layout="NC"), AssertionError,
     "Only 'NT' and 'TN' layouts for label are supported. Got: NC"),
])
def test_construction_errors(make, error, message):
    with pytest.raises(error) as info:
        make()
    assert str(info.value) == message


def test_weight_must_be_a_number():
    x = mx.nd.ones((2, 2))
    with pytest.raises(AssertionError, match="weight must be a number"):
        gloss.L1Loss(weight="2")(x, x)


def test_ctc_loss_matches_mxnet_in_every_layout():
    """Values recorded from MXNet 1.9.1's gluon.loss.CTCLoss on these inputs."""
    pred = mx.nd.array(np.sin(np.arange(2 * 7 * 5).reshape(2, 7, 5)))
    label = mx.nd.array([[1, 0, 2, -1], [3, 3, -1, -1]])
    want = [5.391165256500244, 7.784299850463867]
    np.testing.assert_allclose(gloss.CTCLoss()(pred, label).asnumpy(), want, rtol=1e-5)
    tn = gloss.CTCLoss(layout="TNC", label_layout="TN")(pred.swapaxes(0, 1), label.T)
    np.testing.assert_allclose(tn.asnumpy(), want, rtol=1e-5)
    lengths = gloss.CTCLoss()(pred, label, mx.nd.array([5, 6]), mx.nd.array([2, 1]))
    np.testing.assert_allclose(lengths.asnumpy(), [4.061371803283691, 6.4105048179626465],
                               rtol=1e-5)
