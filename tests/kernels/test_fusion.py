"""Elementwise lowering and fusion under the Triton backend (interpreted on CPU)."""
from __future__ import annotations

import os

import numpy as np
import pytest

import symgraph as mx
from symgraph import config
from tests import device


@pytest.fixture
def triton_backend():
    with config.override(backend="triton"):
        yield


def _bind(net, **shapes):
    exe = net.simple_bind(device.context(), grad_req="null", **shapes)
    rng = np.random.RandomState(0)
    for arr in exe.arg_arrays:
        arr[:] = rng.uniform(-1, 1, arr.shape)
    return exe


def test_relu_of_axpy_is_one_generated_kernel(triton_backend):
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    net = mx.sym.relu(x * 2 + y)
    exe = _bind(net, x=(3, 37), y=(3, 37))
    assert len(exe._plan.forward_train) == 1
    text = exe.debug_str()
    assert "fused:fused_" in text and "(3 ops)" in text and "torch:" not in text
    xv, yv = exe.arg_dict["x"].asnumpy(), exe.arg_dict["y"].asnumpy()
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), np.maximum(xv * 2 + yv, 0),
                               rtol=1e-6)


def test_chain_with_broadcast_input_and_shared_intermediate(triton_backend):
    x, b = mx.sym.Variable("x"), mx.sym.Variable("b")
    t = mx.sym.broadcast_add(x, b)
    net = mx.sym.Group([mx.sym.tanh(t) * 3, t])  # t is needed outside the chain
    exe = _bind(net, x=(5, 13), b=(1, 13))
    outs = [o.asnumpy() for o in exe.forward()]
    with config.override(backend="torch"):
        ref = _bind(net, x=(5, 13), b=(1, 13))
    want = [o.asnumpy() for o in ref.forward()]
    for got, exp in zip(outs, want):
        np.testing.assert_allclose(got, exp, rtol=1e-5, atol=1e-6)
    assert len(exe._plan.forward_train) == 1


def test_fused_training_step_matches_torch_backend(triton_backend):
    x, w = mx.sym.Variable("x"), mx.sym.Variable("w")
    net = mx.sym.MakeLoss(mx.sym.sum(mx.sym.sigmoid(x * w + 1) * x))
    exe = net.simple_bind(device.context(), x=(4, 7), w=(4, 7))
    with config.override(backend="torch"):
        ref = net.simple_bind(device.context(), x=(4, 7), w=(4, 7))
    rng = np.random.RandomState(1)
    for name in ("x", "w"):
        value = rng.uniform(-1, 1, (4, 7))
        exe.arg_dict[name][:] = value
        ref.arg_dict[name][:] = value
    for e in (exe, ref):
        e.forward(is_train=True)
        e.backward()
    for name in ("x", "w"):
        np.testing.assert_allclose(exe.grad_dict[name].asnumpy(), ref.grad_dict[name].asnumpy(),
                                   rtol=1e-5, atol=1e-6)
    assert any(label.startswith("fused:") and "ops)" in label
               for label in exe._plan.impl.values() if "(1 ops)" not in label)


def test_generated_source_is_readable_and_cached(triton_backend):
    net = mx.sym.exp(mx.sym.Variable("x") - 1)
    exe = _bind(net, x=(2, 3))
    node = exe._plan.forward_train[0][-1]
    assert "tl.exp" in node.source and "@kernel" in node.source
    assert "t1 = tl.exp(t0)" in node.expression


def test_integer_tensors_stay_on_the_reference(triton_backend):
    net = mx.sym.Variable("x") + 1
    exe = net.simple_bind(device.context(), grad_req="null", type_dict={"x": "int32"}, x=(2, 3))
    assert exe._plan.impl[exe._plan.forward_train[0][-1].name].startswith("torch:")
    exe.arg_dict["x"][:] = 4
    assert exe.forward()[0].asnumpy().tolist() == [[5, 5, 5], [5, 5, 5]]


def test_a_failing_kernel_falls_back_to_the_reference_with_a_warning(triton_backend):
    from symgraph.compiler.lowering import guarded

    def broken(p, ins, aux, rt):
        raise RuntimeError("compiler exploded")

    step = guarded(broken, lambda p, ins, aux, rt: ("reference",), "test op")
    with pytest.warns(RuntimeWarning, match="compiler exploded"):
        assert step(None, [], [], None) == ("reference",)
    assert step(None, [], [], None) == ("reference",)  # decided once


def test_unused_inputs_are_not_loaded(triton_backend):
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    exe = _bind(mx.sym.LogisticRegressionOutput(x, y), x=(3, 5), y=(3, 5))
    source = exe._plan.forward_train[0][-1].source  # the label is not read going forward
    assert "x1 = tl.load" not in source and "x0 = tl.load" in source
    np.testing.assert_allclose(exe.forward()[0].asnumpy(),
                               1 / (1 + np.exp(-exe.arg_dict["x"].asnumpy())), rtol=1e-6)


def test_generated_sources_persist_in_the_cache_dir(tmp_path):
    with config.override(backend="triton", cache_dir=str(tmp_path)):
        exe = _bind(mx.sym.sqrt(mx.sym.abs(mx.sym.Variable("x")) + 1), x=(2, 7))
        exe.forward()
    files = list((tmp_path / "fused").glob("fused_*.py"))
    assert len(files) == 1 and "tl.sqrt" in files[0].read_text()


def test_activation_folds_into_the_gemm_epilogue(triton_backend):
    data = mx.sym.Variable("data")
    net = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=6, name="fc"),
                            act_type="relu", name="act")
    net = mx.sym.LinearRegressionOutput(net, name="lro")
    exe = net.simple_bind(device.context(), data=(5, 7))
    with config.override(backend="torch"):
        ref = net.simple_bind(device.context(), data=(5, 7))
    rng = np.random.RandomState(0)
    for name in exe.arg_dict:
        value = rng.uniform(-1, 1, exe.arg_dict[name].shape)
        exe.arg_dict[name][:] = value
        ref.arg_dict[name][:] = value
    labels = [s[-1].name for s in exe._plan.forward_train]
    assert labels[0] == "fc+act" and "triton_fully_connected_relu" in exe.debug_str()
    for e in (exe, ref):
        e.forward(is_train=True)
        e.backward()
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), ref.outputs[0].asnumpy(), rtol=1e-5)
    for name, grad in exe.grad_dict.items():
        np.testing.assert_allclose(grad.asnumpy(), ref.grad_dict[name].asnumpy(), rtol=1e-4,
                                   atol=1e-6, err_msg=name)


def test_debug_str_can_print_generated_sources(triton_backend):
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    exe = _bind(mx.sym.relu(x * 2 + y), x=(2, 3), y=(2, 3))
    text = exe.debug_str(show_source=True)
    assert "expression: t0 = (x0 * 2.0); t1 = (t0 + x1); t2 = tl.maximum(t1, 0.0)" in text
    assert "| @kernel" in text and "Forward (1 kernel launches)" in text


def test_a_tampered_cached_source_is_rewritten_not_run(tmp_path):
    """Issue 16: a cached kernel source is checked against what its name generates."""
    from symgraph.kernels import elementwise
    name = "fused_tamper_check_" + tmp_path.name.replace("-", "_")
    source = f"def {name}():\n    return 'genuine'\n"
    saved = elementwise._settings["cache_dir"]
    try:
        elementwise.set_cache_dir(str(tmp_path))
        planted = tmp_path / "fused" / f"{name}.py"
        planted.parent.mkdir(mode=0o700)
        planted.write_text(f"def {name}():\n    return 'planted'\n")
        assert elementwise._load(name, source)() == "genuine"
        assert planted.read_text() == source
        assert not [p for p in planted.parent.iterdir() if p.name.endswith(".tmp")]
    finally:
        elementwise.set_cache_dir(saved)


def test_a_cache_dir_others_can_write_is_not_used(tmp_path):
    from symgraph.kernels import elementwise
    shared = tmp_path / "shared"
    (shared / "fused").mkdir(parents=True)
    (shared / "fused").chmod(0o777)
    saved = elementwise._settings["cache_dir"]
    try:
        elementwise.set_cache_dir(str(shared))
        used = elementwise._cache_dir()
        assert not used.startswith(str(shared)) and os.stat(used).st_mode & 0o077 == 0
    finally:
        elementwise.set_cache_dir(saved)
