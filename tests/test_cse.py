"""Common subexpression elimination at bind (MXNet's MXNET_ELIMINATE_COMMON_EXPR; the
savings are those of MXNet 1.9.1's unittest/test_symbol.py::test_eliminate_common_expr)."""
import numpy as np
import pytest

import symgraph as mx
from symgraph import config

a, b, c = mx.sym.var("a"), mx.sym.var("b"), mx.sym.var("c")
d = a + 1
CASES = [((a + 1) + (a + 2), 0), ((a + b) + (a + b), 1), (((a + b) + c) + ((a + b) + c), 2),
         (mx.sym.Group([a * d, a * d]), 0), (mx.sym.Group([a * d + b, a * d + b]), 1),
         (mx.sym.Dropout(a) + mx.sym.Dropout(a), 0)]


def _bind(sym, on: str, monkeypatch):
    monkeypatch.setenv("MXNET_ELIMINATE_COMMON_EXPR", on)
    shapes = {n: (3, 4) for n in sym.list_inputs()}
    return sym.simple_bind(mx.cpu(), **shapes)


@pytest.mark.parametrize("sym,savings", CASES)
def test_cse_merges_what_mxnet_merges_and_keeps_values(sym, savings, monkeypatch):
    orig, merged = _bind(sym, "0", monkeypatch), _bind(sym, "1", monkeypatch)
    assert len(orig.get_optimized_symbol().get_internals()) == \
        len(merged.get_optimized_symbol().get_internals()) + savings
    if "dropout" in sym.tojson():
        return
    rng = np.random.default_rng(0)
    data = {n: mx.nd.array(rng.random((3, 4))) for n in sym.list_inputs()}
    outs = [exe.forward(is_train=True, **data) for exe in (orig, merged)]
    for exe, out in zip((orig, merged), outs):
        exe.backward([mx.nd.ones_like(o) for o in out])
    for x, y in zip(*outs):
        np.testing.assert_allclose(x.asnumpy(), y.asnumpy(), rtol=1e-6)
    for x, y in zip(orig.grad_arrays, merged.grad_arrays):
        np.testing.assert_allclose(x.asnumpy(), y.asnumpy(), rtol=1e-6)
    assert len({id(o._t) for o in outs[1]}) == len(outs[1])  # every output its own array


def test_symbol_is_never_changed():
    net = (a + b) * (a + b)
    before = net.tojson()
    net.simple_bind(mx.cpu(), a=(2,), b=(2,))
    assert net.tojson() == before and config.env("MXNET_ELIMINATE_COMMON_EXPR")
