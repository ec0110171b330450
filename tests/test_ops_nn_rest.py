"""DeformableConvolution and ModulatedDeformableConvolution against MXNet 1.9.1 (outputs and
v1 gradients recorded by ``tests/fixtures/nn_rest/generate.py``; MXNet has no CPU backward
for v2, so v2's gradients are checked against float64 central differences), plus fft/ifft
and count_sketch (GPU-only in MXNet 1.9.1) against numpy's FFT and an independent loop."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import MXNetError

HERE = Path(__file__).parent / "fixtures" / "nn_rest"
CALLS = json.loads((HERE / "calls.json").read_text())
DATA = np.load(HERE / "nn_rest.npz")


def _resolve(op: str):
    fn = mx.sym
    for part in op.split("."):
        fn = getattr(fn, part)
    return fn


def _bind(op, ins, attrs, grad_req="write", dtype=np.float32):
    sym = _resolve(op)(*[mx.sym.Variable(f"in{i}") for i in range(len(ins))], name="op",
                       **attrs)
    args = {f"in{i}": mx.nd.array(a, dtype=dtype) for i, a in enumerate(ins)}
    grads = {k: mx.nd.zeros(v.shape, dtype=dtype) for k, v in args.items()}
    return sym.bind(mx.cpu(), args=args, args_grad=grads, grad_req=grad_req)


@pytest.mark.parametrize("call", CALLS, ids=[c["name"] for c in CALLS])
def test_deformable_matches_mxnet(call):
    name = call["name"]
    ins = [DATA[f"{name}/in{i}"] for i in range(call["n_in"])]
    attrs = {k: tuple(v) if isinstance(v, list) else v for k, v in call["attrs"].items()}
    exe = _bind(call["op"], ins, attrs)
    out = exe.forward(is_train=True)[0]
    np.testing.assert_allclose(out.asnumpy(), DATA[f"{name}/out"], rtol=1e-4, atol=1e-5)
    if not call["grad"]:
        return
    exe.backward([mx.nd.array(DATA[f"{name}/head"])])
    for i in range(len(ins)):
        np.testing.assert_allclose(exe.grad_dict[f"in{i}"].asnumpy(), DATA[f"{name}/grad{i}"],
                                   rtol=1e-4, atol=1e-4, err_msg=f"{name} d/d in{i}")


def test_modulated_gradients_match_central_differences():
    """v2's data, offset and mask gradients (MXNet: GPU only) against float64 differences
    of the loss sum(out * head)."""
    rng = np.random.RandomState(3)
    shapes = [(1, 2, 4, 4), (1, 18, 4, 4), (1, 9, 4, 4), (2, 2, 3, 3)]
    ins = [rng.uniform(-1, 1, s) for s in shapes]
    ins[1] = rng.uniform(-1.5, 1.5, shapes[1])
    attrs = {"kernel": (3, 3), "pad": (1, 1), "num_filter": 2, "no_bias": True}
    head = rng.uniform(-1, 1, (1, 2, 4, 4))
    exe = _bind("contrib.ModulatedDeformableConvolution", ins, attrs, dtype=np.float64)
    exe.forward(is_train=True)
    exe.backward([mx.nd.array(head, dtype=np.float64)])

    def loss(values):
        e = _bind("contrib.ModulatedDeformableConvolution", values, attrs, "null", np.float64)
        return float((e.forward()[0].asnumpy() * head).sum())
    eps = 1e-6
    for i in range(3):
        flat = ins[i].reshape(-1)
        for j in rng.choice(flat.size, 6, replace=False):
            hi = [a.copy() for a in ins]
            lo = [a.copy() for a in ins]
            hi[i].reshape(-1)[j] += eps
            lo[i].reshape(-1)[j] -= eps
            want = (loss(hi) - loss(lo)) / (2 * eps)
            got = exe.grad_dict[f"in{i}"].asnumpy().reshape(-1)[j]
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7, err_msg=f"in{i}[{j}]")


@pytest.mark.parametrize("op,attrs,shapes,match", [
    ("DeformableConvolution", {"kernel": (3, 3), "num_filter": 2},
     {"data": (1, 2, 5, 5), "offset": (1, 16, 3, 3)}, "offset has shape"),
    ("DeformableConvolution", {"kernel": (3, 3), "num_filter": 2, "num_deformable_group": 2},
     {"data": (1, 3, 5, 5)}, "deformable group"),
    ("ModulatedDeformableConvolution", {"kernel": (3, 3), "num_filter": 2},
     {"data": (3, 2, 5, 5)}, None),
    ("ModulatedDeformableConvolution", {"kernel": (3, 3), "num_filter": 2, "im2col_step": 2},
     {"data": (3, 2, 5, 5)}, "im2col_step"),
])
def test_deformable_shape_errors(op, attrs, shapes, match):
    inputs = [mx.sym.Variable(n) for n in ("data", "offset", "mask")]
    n_in = 3 if op.startswith("Modulated") else 2
    sym = getattr(mx.sym.contrib, op)(*inputs[:n_in], name="d", **attrs)
    if match is None:  # a batch below im2col_step is fine
        assert sym.infer_shape(**shapes)[1] == [(3, 2, 3, 3)]
        return
    with pytest.raises(MXNetError, match=match):
        sym.infer_shape(**shapes)


def test_deformable_only_2d():
    with pytest.raises(MXNetError, match="2-D"):
        mx.sym.contrib.DeformableConvolution(mx.sym.Variable("x"), mx.sym.Variable("o"),
                                             kernel=(3,), num_filter=2)


def _interleave(z: np.ndarray) -> np.ndarray:
    return np.stack([z.real, z.imag], axis=-1).reshape(*z.shape[:-1], 2 * z.shape[-1])


def _run(sym_fn, x, head, **attrs):
    exe = _bind(sym_fn, [x], attrs)
    out = exe.forward(is_train=True)[0].asnumpy()
    exe.backward([mx.nd.array(head)])
    return out, exe.grad_dict["in0"].asnumpy()


@pytest.mark.parametrize("shape", [(3, 7), (2, 3, 2, 8)])
def test_fft_matches_numpy(shape):
    """Forward: numpy's FFT interleaved; gradient: MXNet's backward, the unnormalised
    inverse transform of the head gradient (real part)."""
    rng = np.random.RandomState(0)
    x = rng.normal(size=shape).astype(np.float32)
    head = rng.normal(size=shape[:-1] + (2 * shape[-1],)).astype(np.float32)
    out, grad = _run("contrib.fft", x, head)
    np.testing.assert_allclose(out, _interleave(np.fft.fft(x)), rtol=1e-4, atol=1e-4)
    d = shape[-1]
    g = head[..., 0::2] + 1j * head[..., 1::2]
    np.testing.assert_allclose(grad, (np.fft.ifft(g) * d).real, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", [(3, 12), (2, 1, 3, 6)])
def test_ifft_matches_numpy_unnormalised(shape):
    rng = np.random.RandomState(1)
    y = rng.normal(size=shape).astype(np.float32)
    d = shape[-1] // 2
    head = rng.normal(size=shape[:-1] + (d,)).astype(np.float32)
    out, grad = _run("contrib.ifft", y, head)
    z = y[..., 0::2] + 1j * y[..., 1::2]
    np.testing.assert_allclose(out, (np.fft.ifft(z) * d).real, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(grad, _interleave(np.fft.fft(head)), rtol=1e-4, atol=1e-4)


def test_fft_shape_rules():
    with pytest.raises(MXNetError, match="2-D"):
        mx.sym.contrib.fft(mx.sym.Variable("x")).infer_shape(x=(2, 3, 4))
    with pytest.raises(MXNetError, match="even"):
        mx.sym.contrib.ifft(mx.sym.Variable("x")).infer_shape(x=(2, 5))


@pytest.mark.parametrize("shape,out_dim", [((4, 9), 5), ((2, 3, 2, 6), 4)])
def test_count_sketch_matches_loop(shape, out_dim):
    rng = np.random.RandomState(2)
    d = shape[-1]
    x = rng.normal(size=shape).astype(np.float32)
    h = rng.randint(0, out_dim, (1, d)).astype(np.float32)
    s = rng.choice([-1.0, 1.0], (1, d)).astype(np.float32)
    head = rng.normal(size=shape[:-1] + (out_dim,)).astype(np.float32)
    exe = _bind("contrib.count_sketch", [x, h, s], {"out_dim": out_dim})
    out = exe.forward(is_train=True)[0].asnumpy()
    exe.backward([mx.nd.array(head)])
    want = np.zeros(shape[:-1] + (out_dim,), np.float32)
    for i in range(d):
        want[..., int(h[0, i])] += s[0, i] * x[..., i]
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    grad = head[..., h[0].astype(int)] * s[0]
    np.testing.assert_allclose(exe.grad_dict["in0"].asnumpy(), grad, rtol=1e-5, atol=1e-5)
    assert not exe.grad_dict["in1"].asnumpy().any()  # MXNet computes no hash gradients


def test_count_sketch_shape_rules():
    cs = mx.sym.contrib.count_sketch(mx.sym.Variable("x"), mx.sym.Variable("h"),
                                     mx.sym.Variable("s"), out_dim=3)
    with pytest.raises(MXNetError, match="same length"):
        cs.infer_shape(x=(2, 5), h=(1, 4))
    with pytest.raises(MXNetError, match="2D or 4D"):
        cs.infer_shape(x=(2, 5, 3))
