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
    out = fn(*arrays, **config["attrs"], **({"out": arrays[0]} if config.get("out") else {}))
    outs = out if isinstance(out, list) else [out]
    low = any(v.dtype == np.float16 for v in values)  # MXNet squares fp16 in fp16 (sum_sq)
    for k, got in enumerate(outs):
        want = DATA[f"{case}/out/{k}"]
        assert got.dtype == want.dtype
        tol = 2e-3 if low else _tol(want)
        np.testing.assert_allclose(got.asnumpy(), want, rtol=tol, atol=tol)
    for i, a in enumerate(arrays):  # states (and _adamw_update's grad) written in place
        want = DATA[f"{case}/post/{i}"]
        np.testing.assert_allclose(a.asnumpy(), want, rtol=_tol(want), atol=_tol(want),
                                   err_msg=f"input {i}")


def _tol(want: np.ndarray) -> float:
    """fp16 arrays to fp16 precision; fp32 ones (states, masters: fp32 arithmetic) tightly."""
    return 2e-3 if want.dtype == np.float16 else 2e-5


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


def test_a_computed_input_written_in_place_is_refused():
    """MXNet 1.9.1 (nnvm) refuses to compose an update whose state is not a variable: a
    view of one would be written through, a computed one written and lost."""
    w, g, m = (mx.sym.var(n) for n in "wgm")
    with pytest.raises(GraphError, match="'mom' is written in place"):
        mx.sym.sgd_mom_update(w, g, mx.sym.reshape(m, shape=(2,)), lr=0.1)
    with pytest.raises(GraphError, match="'mom' is written in place"):
        mx.sym.sgd_mom_update(w, g, m * 1, lr=0.1)
    v, r = mx.sym.var("v"), mx.sym.var("r")  # grad is written but not declared, as in MXNet
    assert mx.sym.contrib.adamw_update(w, g * 2, m, v, r, lr=0.1, eta=1.0) is not None


def test_contrib_wrappers_take_lists_and_scalar_rescale():
    """nd.contrib.multi_*/adamw wrappers (MXNet's Python-level ones) against the operators
    they call with interleaved inputs; sym.contrib has only the single-weight AdamW forms."""
    rng = np.random.default_rng(3)
    shapes = [(2, 3), (4,)]

    def arrays(scale=1.0, low=None):
        return [mx.nd.array(np.abs(rng.standard_normal(s)) * scale + (low or 0)) for s in shapes]
    w, g, m, v = arrays(), arrays(), arrays(0.1), arrays(0.1, 0.01)
    copies = [[a.copy() for a in group] for group in (w, g, m, v)]
    kw = {"lrs": (0.1, 0.2), "wds": (0.01, 0.0), "etas": (1.0, 0.5)}
    got = mx.nd.contrib.multi_adamw_update(w, g, m, v, 0.5, **kw)
    inter = [a for group in zip(*copies) for a in group] + [mx.nd.array([0.5])]
    want = mx.nd._internal._multi_adamw_update(*inter, num_weights=2, **kw)
    for a, b in zip(got + m, want + copies[2]):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-6)
    got = mx.nd.contrib.multi_lamb_update(w, g, m, v, step_count=(2, 3), lrs=(0.1, 0.2),
                                          wds=(0.0, 0.1))
    assert [o.shape for o in got] == shapes
    assert hasattr(mx.sym.contrib, "mp_adamw_update")
    assert not hasattr(mx.sym.contrib, "multi_adamw_update")


def test_typed_errors_name_the_op():
    with pytest.raises(mx.base.DTypeError, match="multi_sum_sq"):
        mx.nd.multi_sum_sq(mx.nd.ones((2,)), mx.nd.ones((2,), dtype="float16"), num_arrays=2)
    with pytest.raises(mx.base.ShapeError, match="group_adagrad_update"):
        mx.nd.contrib.group_adagrad_update(mx.nd.ones((3, 2)), mx.nd.ones((3, 2)),
                                           mx.nd.ones((2, 1)), lr=0.1)
    with pytest.raises(mx.base.AttrError, match="etas"):
        mx.nd.contrib.multi_adamw_update([mx.nd.ones((2,))], [mx.nd.ones((2,))],
                                         [mx.nd.ones((2,))], [mx.nd.ones((2,))], 1.0,
                                         lrs=(0.1,), wds=(0.0,), etas=(1.0, 1.0))


@pytest.mark.filterwarnings("ignore:invalid value encountered")  # NaN rescale, interpreted
@pytest.mark.parametrize("backend", ["torch", "triton"])
def test_adamw_reads_its_rescale_on_the_device(backend, monkeypatch):
    """Issue #22: the AdamW ops keep ``rescale_grad`` on the device (MXNet reads it on the
    host): no host read in the step, a finite rescale applies, and 0, NaN or inf leave
    weight, mean, var and grad as they were (the grad-writing and master-weight forms)."""
    import torch

    from symgraph import config
    names = ("w", "g", "m", "v", "r")
    w, g, m, v, r = (mx.sym.var(n) for n in names)
    syms = {"adamw": mx.sym.contrib.adamw_update(w, g, m, v, r, lr=0.1, eta=1.0, wd=0.1),
            "_adamw": mx.sym._internal._adamw_update(w, g, m, v, r, lr=0.1, eta=1.0)}
    for name, sym in syms.items():
        with config.override(backend=backend):
            exe = sym.simple_bind(mx.cpu(), grad_req="null", w=(3,), g=(3,), m=(3,), v=(3,),
                                  r=(1,))
        for rescale in (0.5, 0.0, np.nan, np.inf):
            start = {"w": [0.5, 1.5, -1.0], "g": [0.2, -0.3, 0.4], "m": [0.1, 0.1, 0.1],
                     "v": [0.2, 0.2, 0.2], "r": [rescale]}
            for k, val in start.items():
                exe.arg_dict[k][:] = np.array(val, np.float32)
            reads = []
            for method in ("__float__", "__bool__", "item"):
                real = getattr(torch.Tensor, method)
                monkeypatch.setattr(torch.Tensor, method, lambda t, *a, _real=real,
                                    _seen=reads: _seen.append(t) or _real(t, *a))
            out = exe.forward()[0]
            monkeypatch.undo()
            assert not reads, (name, backend)
            if rescale == 0.5:
                assert not np.allclose(out.asnumpy(), start["w"])
                continue
            np.testing.assert_array_equal(out.asnumpy(), np.float32(start["w"]))
            for k in "mvg":
                np.testing.assert_array_equal(exe.arg_dict[k].asnumpy(), np.float32(start[k]),
                                              err_msg=f"{name} {k} {rescale}")
