"""Whole networks under the Triton backend (interpreted on CPU) equal the torch backend,
and their plans launch no torch reference for any operator."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgraph as mx
from symgraph import config
from tests import device

NETS = Path(__file__).parent.parent / "fixtures" / "mxnet" / "nets"


def lstm_unrolled(steps: int = 2, hidden: int = 4):
    """An LSTM cell unrolled over ``steps`` (FullyConnected, SliceChannel, gates, tanh)."""
    h = mx.sym.Variable("h0")
    c = mx.sym.Variable("c0")
    for t in range(steps):
        x = mx.sym.Variable(f"x{t}")
        gates = mx.sym.FullyConnected(x, num_hidden=4 * hidden, name=f"i2h{t}") + \
            mx.sym.FullyConnected(h, num_hidden=4 * hidden, no_bias=True, name=f"h2h{t}")
        i, f, g, o = mx.sym.SliceChannel(gates, num_outputs=4, name=f"slice{t}")
        c = mx.sym.sigmoid(f) * c + mx.sym.sigmoid(i) * mx.sym.tanh(g)
        h = mx.sym.sigmoid(o) * mx.sym.tanh(c)
    return mx.sym.LinearRegressionOutput(h, name="out")


def _nets():
    out = {}
    for name, shapes in (("mlp", {"data": (8, 20)}), ("lenet", {"data": (4, 1, 12, 12)}),
                         ("resblock", {"data": (2, 3, 8, 8)})):
        out[name] = (mx.sym.load(str(NETS / name / "symbol.json")), shapes)
    out["lstm"] = (lstm_unrolled(), {"x0": (2, 5), "x1": (2, 5), "h0": (2, 4), "c0": (2, 4)})
    return out


def _bind(sym, shapes, backend):
    with config.override(backend=backend):
        exe = sym.simple_bind(device.context(), **shapes)
    rng = np.random.RandomState(0)
    for name, arr in exe.arg_dict.items():
        arr[:] = rng.randint(0, 3, arr.shape) if name.endswith("label") else \
            rng.uniform(-0.5, 0.5, arr.shape)
    for arr in exe.aux_dict.values():
        arr[:] = rng.uniform(0.5, 1.5, arr.shape)
    return exe


@pytest.mark.parametrize("name", ["mlp", "lenet", "resblock", "lstm"])
def test_network_matches_torch_backend_with_no_reference_launch(name):
    sym, shapes = _nets()[name]
    tri, ref = _bind(sym, shapes, "triton"), _bind(sym, shapes, "torch")
    reference = sorted({label for label in tri._plan.impl.values() if label.startswith("torch:")})
    assert not reference, f"{name} still launches torch references: {reference}"
    for exe in (tri, ref):
        exe.forward(is_train=True)
        exe.backward()
    for a, b in zip(tri.outputs, ref.outputs):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-4, atol=1e-5)
    for arg, grad in tri.grad_dict.items():
        if grad is not None:
            np.testing.assert_allclose(grad.asnumpy(), ref.grad_dict[arg].asnumpy(),
                                       rtol=1e-4, atol=1e-5, err_msg=f"{name} d/d{arg}")
    for aux, arr in tri.aux_dict.items():
        np.testing.assert_allclose(arr.asnumpy(), ref.aux_dict[aux].asnumpy(), rtol=1e-4,
                                   atol=1e-5, err_msg=aux)


def test_auto_backend_keeps_the_faster_convolution(monkeypatch):
    """Issue #22: under backend 'auto' on a GPU (forced here on CPU) a convolution's first
    call times its Triton kernel against the torch reference (cuDNN there) and keeps the
    faster for every later call; debug_str shows the choice and the times."""
    from symgraph import config
    from symgraph.compiler import lowering
    monkeypatch.setattr(lowering, "uses_triton", lambda device: True)
    for kernel_s, winner in ((2e-3, "torch"), (1e-3, "triton")):
        calls = []
        times = iter([kernel_s, 1.5e-3])  # the kernel's time, then the reference's
        monkeypatch.setattr(lowering, "time_call", lambda call, device, reps=3, _t=times,
                            _c=calls: (call(), _c.append(1), next(_t))[2])
        data = mx.sym.var("data")
        net = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, name="conv")
        with config.override(backend="auto"):
            exe = net.simple_bind(mx.cpu(), grad_req="null", data=(2, 3, 6, 5))
        rng = np.random.RandomState(0)
        for arr in exe.arg_dict.values():
            arr[:] = rng.uniform(-1, 1, arr.shape)
        assert "[" not in exe.debug_str().splitlines()[2]  # not measured before the call
        first = exe.forward()[0].asnumpy()
        line = next(s for s in exe.debug_str().splitlines() if s.strip().startswith("conv"))
        assert "auto:" in line and f"[{winner} (" in line, line
        np.testing.assert_allclose(exe.forward()[0].asnumpy(), first, rtol=1e-5, atol=1e-5)
        assert len(calls) == 2  # measured once
        with config.override(backend="torch"):
            ref = net.simple_bind(mx.cpu(), grad_req="null", data=(2, 3, 6, 5))
        ref.copy_params_from({k: v for k, v in exe.arg_dict.items() if k != "data"})
        np.testing.assert_allclose(ref.forward(data=exe.arg_dict["data"])[0].asnumpy(), first,
                                   rtol=1e-5, atol=1e-5)
