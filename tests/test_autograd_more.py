"""``mx.autograd`` against MXNet 1.9.1: ``get_symbol`` (MXNet's ``test_get_symbol``,
``test_inline``'s use of it), ``grad`` returning a list, and ``grad(create_graph=True)``
(MXNet's ``test_gradient``) — values recorded in ``tests/fixtures/gluon_more``.
"""
from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import symgraph as mx
from symgraph import autograd
from symgraph.base import MXNetError
from tests import fixture_scripts

scenarios = fixture_scripts.load("gluon_more/scenarios.py")
WANT = json.loads((pathlib.Path(__file__).parent / "fixtures" / "gluon_more" /
                   "gluon_more.json").read_text())


@pytest.mark.parametrize("name", ["get_symbol_graphs", "higher_order"])
def test_scenario_matches_mxnet(name, tmp_path):
    from tests.test_gluon_more import assert_close
    got = json.loads(json.dumps(scenarios.SCENARIOS[name](mx, str(tmp_path))))
    assert_close(got, WANT[name], name)


def test_mxnet_module_names():
    assert autograd.NDArray is mx.nd.NDArray and autograd.Symbol is mx.sym.Symbol
    assert autograd.string_types == (str,)
    for name in ("MXCallbackList", "array", "c_array", "c_array_buf", "c_handle_array",
                 "check_call", "get_symbol"):
        assert hasattr(autograd, name), name


def _var(values):
    x = mx.nd.array(values)
    x.attach_grad()
    return x


def test_get_symbol_names_variables_as_mxnet_does():
    x, c = _var([1.0]), mx.nd.ones((1,))
    with autograd.record():
        y = x * c + x
    sym = autograd.get_symbol(y)
    names = sym.list_arguments()
    assert len(names) == 2 and names[0].startswith("var") and names[1].startswith("null")


def test_get_symbol_errors():
    with pytest.raises(MXNetError, match="not part of a computational graph"):
        autograd.get_symbol(mx.nd.ones((1,)))

    class Twice(autograd.Function):
        def forward(self, x):
            return x * 2

        def backward(self, dy):
            return dy * 2

    x = _var([1.0])
    with autograd.record():
        y = Twice()(x) + 1
    with pytest.raises(MXNetError, match="custom autograd.Function"):
        autograd.get_symbol(y)


def test_grad_returns_a_list_even_for_one_variable():
    x = _var([1.0, 2.0])
    with autograd.record():
        y = x * x
    got = autograd.grad(y, x)
    assert isinstance(got, list) and len(got) == 1
    np.testing.assert_allclose(got[0].asnumpy(), [2.0, 4.0])
    with pytest.raises(AssertionError, match="cannot be an empty list"):
        autograd.grad(y, [])


def test_create_graph_beyond_mxnet():
    """Second derivatives through ops whose gradient MXNet 1.9.1 cannot differentiate
    (``_backward_mul``): checked against the analytic values."""
    x = _var([2.0, 3.0])
    with autograd.record():
        y = mx.nd.sin(x) * x * x
        g = autograd.grad(y, [x], create_graph=True)[0]
        s = (g * g).sum()
    s.backward()
    v = np.array([2.0, 3.0])
    dy = np.cos(v) * v ** 2 + 2 * v * np.sin(v)
    d2y = -np.sin(v) * v ** 2 + 4 * v * np.cos(v) + 2 * np.sin(v)
    np.testing.assert_allclose(g.asnumpy(), dy, rtol=1e-5)
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * dy * d2y, rtol=1e-4)


def test_create_graph_gradient_penalty_reaches_parameters():
    """A WGAN-GP style penalty: the input gradient's norm, differentiated for the weights."""
    dense = mx.gluon.nn.Dense(1, in_units=2, use_bias=False)
    dense.initialize(mx.init.Constant(0.5))
    x = _var([[1.0, -1.0]])
    with autograd.record():
        pen = autograd.grad(mx.nd.tanh(dense(x)).sum(), [x], create_graph=True)[0]
        loss = (pen * pen).sum()
    loss.backward()
    # x.w = 0: d tanh = 1, pen = w, loss = |w|^2, d loss / d w = 2 w
    np.testing.assert_allclose(pen.asnumpy(), [[0.5, 0.5]], rtol=1e-6)
    np.testing.assert_allclose(dense.weight.grad().asnumpy(), [[1.0, 1.0]], rtol=1e-6)


def test_create_graph_needs_a_reachable_variable():
    x, z = _var([1.0]), _var([2.0])
    with autograd.record():
        y = x * 3
    with pytest.raises(MXNetError, match="unreachable from the heads"):
        autograd.grad(y, [z], create_graph=True)
