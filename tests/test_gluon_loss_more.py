"""``gluon.loss.SDMLLoss`` against MXNet 1.9.1 (values, gradient, and MXNet's
``test_sdml_loss`` training on fixed data, recorded in ``tests/fixtures/gluon_more``), and
the losses run imperatively (not hybridized, ``F`` = ``mx.nd``) as through their graphs.
"""
from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import symgraph as mx
from tests import fixture_scripts
from tests.test_gluon_more import assert_close

scenarios = fixture_scripts.load("gluon_more/scenarios.py")
WANT = json.loads((pathlib.Path(__file__).parent / "fixtures" / "gluon_more" /
                   "gluon_more.json").read_text())
L = mx.gluon.loss


def test_sdml_loss_matches_mxnet(tmp_path):
    got = json.loads(json.dumps(scenarios.sdml_loss(mx, str(tmp_path))))
    assert_close(got, WANT["sdml_loss"], "sdml_loss")
    assert np.mean(got["trained"]) < 0.05  # MXNet's test_sdml_loss criterion


def test_sdml_loss_hybridized_fails_as_in_mxnet():
    loss = L.SDMLLoss()
    loss.hybridize()
    with pytest.raises(AttributeError, match="'Symbol' object has no attribute 'shape'"):
        loss(mx.nd.ones((2, 3)), mx.nd.ones((2, 3)))


_R = np.random.RandomState(0)
_P, _T = mx.nd.array(_R.rand(4, 5)), mx.nd.array(_R.rand(4, 5))
_SIGN = mx.nd.array(np.sign(_R.rand(4, 5) - 0.5))
CASES = [
    (L.L2Loss, (_P, _T, mx.nd.array(_R.rand(4, 1)))), (L.L1Loss, (_P, _T)),
    (L.SigmoidBCELoss, (_P, _T)), (L.SoftmaxCELoss, (_P, mx.nd.array([0, 1, 4, 2]))),
    (L.KLDivLoss, (mx.nd.log_softmax(_P), mx.nd.softmax(_T))), (L.HuberLoss, (_P, _T)),
    (L.HingeLoss, (_P, _SIGN)), (L.SquaredHingeLoss, (_P, _SIGN)),
    (L.LogisticLoss, (_P, _SIGN)), (L.TripletLoss, (_P, _T, mx.nd.array(_R.rand(4, 5)))),
    (L.PoissonNLLLoss, (_P, _T)), (L.CosineEmbeddingLoss, (_P, _T, mx.nd.array([1, -1, 1, -1]))),
]


@pytest.mark.parametrize("cls,args", CASES, ids=[c[0].__name__ for c in CASES])
def test_loss_imperative_equals_graph(cls, args):
    loss = cls()
    np.testing.assert_allclose(loss._forward_imperative(*args).asnumpy(),
                               loss(*args).asnumpy(), rtol=1e-5, atol=1e-6)
