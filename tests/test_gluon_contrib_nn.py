"""``gluon.contrib`` against MXNet 1.9.1: the ``contrib.nn`` scenarios of
``tests/fixtures/gluon_contrib`` (pixel shuffles, concatenating containers,
``SyncBatchNorm`` on one device; recorded by its ``generate.py``), and the names of
``contrib.rnn`` and the stand-ins (``estimator``, ``data``, ``cnn``, convolutional cells,
``SparseEmbedding``).
"""
from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import UnsupportedError
from symgraph.gluon import contrib
from symgraph.gluon.rnn import contrib_cells
from tests import fixture_scripts

scenarios = fixture_scripts.load("gluon_contrib/scenarios.py")
WANT = json.loads((pathlib.Path(__file__).parent / "fixtures" / "gluon_contrib" /
                   "gluon_contrib.json").read_text())


def assert_close(got, want, path="") -> None:
    """JSON values equal, floats to 1e-4."""
    fixture_scripts.assert_nested_close(got, want, path, rel=1e-4, abs_tol=1e-5)


@pytest.mark.parametrize("name", sorted(scenarios.SCENARIOS))
def test_scenario_matches_mxnet(name):
    got = json.loads(json.dumps(scenarios.SCENARIOS[name](mx)))
    assert_close(got, WANT[name], name)


def test_pixel_shuffle_factor_checks():
    with pytest.raises(ValueError, match="wrong length 2: expected 3 factors"):
        contrib.nn.PixelShuffle3D((2, 2))
    assert repr(contrib.nn.PixelShuffle2D(3)) == "PixelShuffle2D((3, 3))"


def test_identity_and_deferred_sync_batch_norm():
    x = mx.nd.array(np.arange(6).reshape((2, 3)))
    assert contrib.nn.Identity()(x).asnumpy().tolist() == x.asnumpy().tolist()
    bn = contrib.nn.SyncBatchNorm(num_devices=1)
    bn.initialize()
    assert bn(mx.nd.ones((2, 5, 3))).shape == (2, 5, 3)
    assert bn.gamma.shape == (5,)  # channels on axis 1, inferred from the input


def test_sparse_embedding_is_refused():
    with pytest.raises(UnsupportedError, match="SparseEmbedding.*row_sparse"):
        contrib.nn.SparseEmbedding(10, 4)


def test_contrib_rnn_names():
    assert contrib.rnn.LSTMPCell is contrib_cells.LSTMPCell
    assert contrib.rnn.VariationalDropoutCell is contrib_cells.VariationalDropoutCell
    assert contrib.rnn.rnn_cell.LSTMPCell is contrib.rnn.LSTMPCell
    assert len(contrib.rnn.__all__) == 11
    for name in contrib.rnn.conv_rnn_cell.__all__:
        cls = getattr(contrib.rnn, name)
        assert issubclass(cls, mx.gluon.rnn.HybridRecurrentCell)
        with pytest.raises(UnsupportedError, match=f"contrib.rnn.{name} .*convolutional"):
            cls((3, 8, 8), 4, 3, 3)
    with pytest.raises(UnsupportedError, match="dynamic_unroll.*contrib.foreach"):
        contrib.rnn.rnn_cell.dynamic_unroll(None, None, None)


@pytest.mark.parametrize("module,name", [("estimator", "Estimator"), ("data", "IntervalSampler"),
                                         ("cnn", "DeformableConvolution")])
def test_left_out_subpackages_raise_on_use(module, name):
    stand_in = getattr(mx.gluon.contrib, module)
    assert stand_in.__name__ == f"symgraph.gluon.contrib.{module}"
    with pytest.raises(UnsupportedError, match=f"mx.gluon.contrib.{module}.{name}"):
        getattr(stand_in, name)()
