"""MXNet's optimizer update ops against MXNet 1.9.1 (tests/fixtures/optimizer_update), and
what the graph machinery must know about inputs written in place."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import GraphError

FIXTURE = Path(__file__).parent / "fixtures" / "optimizer_update" / "optimizer_update.npz"
DATA = dict(np.load(FIXTURE, allow_pickle=False))
CASES = sorted({k.split("/")[0] for k in DATA})


def _inputs(case: str) -> list[np.ndarray]:
    n = len([k for k in DATA if k.startswith(f"{case}/in/")])
    return [DATA[f"{case}/in/{i}"] for i in range(n)]


@pytest.mark.parametrize("case", CASES)
def test_op_matches_mxnet(case):
    config = json.loads(str(DATA[f"{case}/config"]))
    values = _inputs(case)
    arrays = [mx.nd.array(v, dtype=v.dtype) for v in values]
    op = config["op"]
    fn = getattr(mx.nd, op) if not op.startswith("_") else getattr(mx.nd._internal, op)
    out = fn(*arrays, **config["attrs"])
    outs = out if isinstance(out, list) else [out]
    tol = 2e-3 if any(v.dtype == np.float16 for v in values) else 2e-5
    for k, got in enumerate(outs):
        want = DATA[f"{case}/out/{k}"]
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got.asnumpy(), want, rtol=tol, atol=tol)
    for i, a in enumerate(arrays):  # states written in place, the rest untouched
        if "adamw" in case and i == 1:
            continue  # MXNet 1.9.1 also overwrites grad with clip(rescale*grad) (not here)
        np.testing.assert_allclose(a.asnumpy(), DATA[f"{case}/post/{i}"], rtol=tol, atol=tol,
                                   err_msg=f"input {i}")


def test_out_weight_and_symbolic_update_write_states_in_place():
    w, g, m = mx.nd.array([1.0, 2.0]), mx.nd.array([0.5, -0.5]), mx.nd.array([0.1, 0.2])
    mx.nd.sgd_mom_update(w, g, m, out=w, lr=0.1, momentum=0.9)
    np.testing.assert_allclose(m.asnumpy(), [0.9 * 0.1 - 0.05, 0.9 * 0.2 + 0.05], rtol=1e-6)
    np.testing.assert_allclose(w.asnumpy(), [1.0 + 0.04, 2.0 + 0.23], rtol=1e-6)
    net = mx.sym.sgd_mom_update(mx.sym.var("w"), mx.sym.var("g"), mx.sym.var("m"),
                                lr=0.1, momentum=0.9)
    exe = net.bind(mx.cpu(), {"w": mx.nd.ones((2,)), "g": mx.nd.ones((2,)),
                              "m": mx.nd.zeros((2,))})
    exe.forward()
    exe.forward()  # the momentum argument carries over between calls
    np.testing.assert_allclose(exe.arg_dict["m"].asnumpy(), [-0.19, -0.19], rtol=1e-6)
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), [1 - 0.19, 1 - 0.19], rtol=1e-6)


def test_equal_updates_are_not_merged():
    """Two equal updates of one momentum both run (common subexpressions never merge them)."""
    w, g, m = (mx.sym.var(n) for n in "wgm")
    a = mx.sym.sgd_mom_update(w, g, m, lr=1.0, momentum=1.0)
    b = mx.sym.sgd_mom_update(w, g, m, lr=1.0, momentum=1.0)
    exe = mx.sym.Group([a, b]).bind(mx.cpu(), {"w": mx.nd.zeros((2,)), "g": mx.nd.ones((2,)),
                                               "m": mx.nd.zeros((2,))})
    exe.forward()
    np.testing.assert_allclose(exe.arg_dict["m"].asnumpy(), [-2, -2])


def test_backward_through_an_update_is_an_error():
    net = mx.sym.sgd_update(mx.sym.var("w"), mx.sym.var("g"), lr=0.1)
    with pytest.raises(GraphError, match="has no gradient"):
        net.simple_bind(mx.cpu(), w=(2,), g=(2,))
    exe = net.simple_bind(mx.cpu(), grad_req="null", w=(2,), g=(2,))
    assert exe.forward()[0].shape == (2,)


def test_adamw_skips_the_update_for_a_non_finite_rescale():
    """MXNet's test_contrib_optimizer.test_adamw: rescale 0, NaN or inf leaves all unchanged."""
    w, g, m, v = (mx.nd.array([0.5, 1.5]) for _ in range(4))
    for r in (0.0, np.nan, np.inf):
        out = mx.nd._internal._adamw_update(w, g, m, v, mx.nd.array([r]), lr=0.1, eta=1.0)
        np.testing.assert_array_equal(out.asnumpy(), [0.5, 1.5])
        np.testing.assert_array_equal(m.asnumpy(), [0.5, 1.5])


def test_mismatched_shapes_name_the_op():
    with pytest.raises(mx.base.ShapeError, match="adam_update"):
        mx.nd.adam_update(mx.nd.ones((2,)), mx.nd.ones((2,)), mx.nd.ones((3,)),
                          mx.nd.ones((2,)), lr=0.1)
