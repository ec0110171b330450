"""The nn operators against MXNet 1.9.1 results recorded in tests/fixtures/nn/nn.npz.

BatchNorm (training/inference, aux updates, fix_gamma, output_mean_var, axis, float16),
LayerNorm, L2Normalization, LeakyReLU, softmax/log_softmax/SoftmaxActivation, the
regression heads, MakeLoss, softmax_cross_entropy and smooth_l1: forward, backward with
the recorded head gradients (ignored by the loss heads), inference forward and error
cases. Regenerate the fixtures with ``tests/fixtures/nn/generate.py`` (MXNet oracle).
Dropout is random: its checks are structural.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import MXNetError
from symgraph.symbol.op_api import invoke

FIXTURES = np.load(Path(__file__).parent / "fixtures" / "nn" / "nn.npz", allow_pickle=False)
INDEX = json.loads(str(FIXTURES["index"]))
NUMERIC = [pytest.param(c, id=c["id"]) for c in INDEX
           if not c["error"] and c["op"] != "Dropout"]
ERRORS = [pytest.param(c, id=c["id"]) for c in INDEX if c["error"]]


def _arr(c, key: str) -> np.ndarray:
    return FIXTURES[f"{c['id']}:{key}"]


def _symbol(c):
    slots = list(c["inputs"]) + list(c["aux"])
    with mx.name.NameManager():
        return invoke(c["op"], [], {**{s: mx.sym.Variable(s) for s in slots}, **c["attrs"]},
                      name="op")


def _bind(c, grad_req="null"):
    sym = _symbol(c)
    if c["error"]:  # no recorded values: bind by shape
        return sym.simple_bind(mx.cpu(), grad_req=grad_req,
                               **{s: tuple(v[0]) for s, v in c["inputs"].items()})
    values = {s: _arr(c, f"in:{s}") for s in c["inputs"]}
    values.update({s: _arr(c, f"aux:{s}") for s in c["aux"]})
    exe = sym.simple_bind(mx.cpu(), grad_req=grad_req,
                          type_dict={s: values[s].dtype for s in c["inputs"]},
                          **{s: values[s].shape for s in c["inputs"]})
    for s, v in values.items():
        (exe.arg_dict if s in c["inputs"] else exe.aux_dict)[s][:] = v
    return exe


def _close(c, got, want, what: str) -> None:
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    # MXNet's float16 BatchNorm rounds its gamma gradient (0.3% off the exact value)
    half = any(str(v[1]).endswith("float16") for v in c["inputs"].values())
    tol = (5e-3, 2e-3) if half else (1e-4, 1e-5)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), *tol,
                               err_msg=what)


@pytest.mark.parametrize("c", NUMERIC)
def test_matches_mxnet(c):
    exe = _bind(c, c["grad_req"])
    outs = exe.forward(is_train=c["train"])[:c["num_outputs"]]
    for i, o in enumerate(outs):
        _close(c, o.asnumpy(), _arr(c, f"out:{i}"), f"out {i}")
    for s in c["inputs"]:
        _close(c, exe.arg_dict[s].asnumpy(), _arr(c, f"arg_after:{s}"), f"{s} after forward")
    if c["backward"]:
        exe.backward([mx.nd.array(_arr(c, f"ograd:{i}"), dtype=_arr(c, f"ograd:{i}").dtype)
                      for i in range(len(outs))])
        for s, req in c["grad_req"].items():
            if req != "null":
                _close(c, exe.grad_dict[s].asnumpy(), _arr(c, f"grad:{s}"), f"grad {s}")
        # MXNet's CPU kernels update the moving statistics in backward, symgraph in the
        # training forward: after a forward + backward step they agree
        for s in c["aux"]:
            _close(c, exe.aux_dict[s].asnumpy(), _arr(c, f"aux_after:{s}"), f"aux {s}")
    if c["eval"]:
        for i, o in enumerate(_bind(c).forward(is_train=False)):
            _close(c, o.asnumpy(), _arr(c, f"out_eval:{i}"), f"eval out {i}")


@pytest.mark.parametrize("c", ERRORS)
def test_rejects_what_mxnet_rejects(c):
    with pytest.raises(MXNetError):
        exe = _bind(c, "write")
        exe.forward(is_train=True)


def _bn(**attrs):
    c = next(e for e in INDEX if e["id"] == "bn_nofix")
    return _bind({**c, "attrs": {**c["attrs"], **attrs}}), c


def test_batchnorm_training_forward_updates_moving_stats_in_place():
    exe, c = _bn(momentum=0.75)
    x = _arr(c, "in:data").astype(np.float64)
    mean0, var0 = _arr(c, "aux:moving_mean"), _arr(c, "aux:moving_var")
    moving_mean = exe.aux_dict["moving_mean"]
    exe.forward(is_train=False)
    np.testing.assert_array_equal(moving_mean.asnumpy(), mean0)
    exe.forward(is_train=True)
    want_mean = mean0 * 0.75 + x.mean(axis=(0, 2)) * 0.25
    want_var = var0 * 0.75 + x.var(axis=(0, 2)) * 0.25  # biased batch variance
    assert exe.aux_dict["moving_mean"] is moving_mean  # the same array, updated in place
    np.testing.assert_allclose(moving_mean.asnumpy(), want_mean, rtol=1e-5)
    np.testing.assert_allclose(exe.aux_dict["moving_var"].asnumpy(), want_var, rtol=1e-5)


def test_batchnorm_global_stats_leave_moving_stats_alone():
    exe, c = _bn(use_global_stats=True)
    exe.forward(is_train=True)
    np.testing.assert_array_equal(exe.aux_dict["moving_var"].asnumpy(),
                                  _arr(c, "aux:moving_var"))


def test_batchnorm_mean_var_outputs_are_mean_and_inverse_std():
    exe, c = _bn(output_mean_var=True, eps=0.01)
    x = _arr(c, "in:data").astype(np.float64)
    _, mean, invstd = (o.asnumpy() for o in exe.forward(is_train=True))
    np.testing.assert_allclose(mean, x.mean(axis=(0, 2)), rtol=1e-5)
    np.testing.assert_allclose(invstd, 1 / np.sqrt(x.var(axis=(0, 2)) + 0.01), rtol=1e-5)


def _dropout_case():
    return next(e for e in INDEX if e["op"] == "Dropout")


def test_dropout_structure_matches_mxnet():
    c = _dropout_case()
    x, p = _arr(c, "in:data"), c["attrs"]["p"]
    for out in (_arr(c, "out:0"), _bind(c, "write").forward(is_train=True)[0].asnumpy()):
        kept = out != 0
        np.testing.assert_allclose(out[kept], x[kept] / (1 - p), rtol=1e-6)
        assert (kept == kept[:, :1, :]).all()  # one draw shared along axes=(1,)
    np.testing.assert_array_equal(_bind(c).forward(is_train=False)[0].asnumpy(),
                                  _arr(c, "out_eval:0"))


def test_dropout_gradient_is_the_scaled_mask_and_seeded():
    c = _dropout_case()
    x, p = _arr(c, "in:data"), c["attrs"]["p"]
    mx.random.seed(7)
    exe = _bind(c, "write")
    out = exe.forward(is_train=True)[0].asnumpy()
    exe.backward([mx.nd.ones(x.shape)])
    np.testing.assert_allclose(exe.grad_dict["data"].asnumpy(), out / x, rtol=1e-6)
    assert {round(float(v), 5) for v in np.unique(out / x)} <= {0.0, round(1 / (1 - p), 5)}
    mx.random.seed(7)
    np.testing.assert_array_equal(_bind(c).forward(is_train=True)[0].asnumpy(), out)
