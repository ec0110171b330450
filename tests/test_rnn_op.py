"""RNN (``mx.sym.RNN``) agrees with MXNet 1.9.1.

The reference values come from ``tests/fixtures/rnn/generate.py`` (run with the MXNet
oracle; float64 through MXNet's native CPU kernels, checked there against its float32 MKLDNN
kernels): forward outputs and every gradient for each mode, uni- and bidirectional, one and
two layers, ``infer_shape``/``infer_type`` results and error messages, and attribute sets
MXNet rejects when the symbol is created. MXNet is not needed here. Dropout, which cannot
match MXNet's random stream, is checked for its properties instead.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import MXNetError

FIXTURE = Path(__file__).parent / "fixtures" / "rnn" / "rnn.npz"
ARRAYS = dict(np.load(FIXTURE, allow_pickle=False))
META = json.loads(str(ARRAYS["__meta__"]))


def _params(key: str):
    return [pytest.param(e, id=e["id"]) for e in META[key]]


def _rnn(attrs: dict):
    return mx.sym.RNN(mx.sym.Variable("data"), name="rnn", **attrs)


def _bind(case, dtype):
    sym = _rnn(case["attrs"])
    shapes = {n: tuple(s) for n, s in zip(case["arguments"], case["arg_shapes"])}
    exe = sym.simple_bind(mx.cpu(), grad_req="write", type_dict=dict.fromkeys(shapes, dtype),
                          **shapes)
    for n in shapes:
        exe.arg_dict[n][:] = ARRAYS[f"{case['id']}/in:{n}"].astype(dtype)
    return sym, exe


@pytest.mark.parametrize("dtype,tol", [("float64", 1e-9), ("float32", 2e-5)])
@pytest.mark.parametrize("case", _params("cases"))
def test_forward_and_gradients_match_mxnet(case, dtype, tol):
    key = case["id"]
    if dtype == "float64" and case["attrs"]["mode"] == "rnn_relu":
        tol = 1e-7  # MXNet's native relu casts each value to float32 (rnn_impl.h ``relu``)
    sym, exe = _bind(case, dtype)
    assert sym.list_arguments() == case["arguments"]
    assert sym.list_outputs() == case["outputs"]
    assert json.loads(sym.tojson())["nodes"][-1]["attrs"] == case["attrs"]
    arg_shapes, out_shapes, _ = sym.infer_shape(data=tuple(case["arg_shapes"][0]))
    assert [list(s) for s in arg_shapes] == case["arg_shapes"]
    assert [list(s) for s in out_shapes] == case["out_shapes"]
    outs = exe.forward(is_train=True)
    assert len(outs) == len(case["outputs"])
    for k, o in enumerate(outs):
        np.testing.assert_allclose(o.asnumpy(), ARRAYS[f"{key}/out{k}"], rtol=tol * 10,
                                   atol=tol, err_msg=f"output {k}")
    exe.backward([mx.nd.array(ARRAYS[f"{key}/ograd{k}"], dtype=dtype)
                  for k in range(len(outs))])
    for n in case["arguments"]:
        np.testing.assert_allclose(exe.grad_dict[n].asnumpy(), ARRAYS[f"{key}/grad:{n}"],
                                   rtol=tol * 10, atol=tol * 5, err_msg=f"d/d{n}")


@pytest.mark.parametrize("case", _params("inference"))
def test_lstm_projection_inference_matches_mxnet(case):
    """LSTMP runs in inference (MXNet's CPU operator has no training for it)."""
    key = case["id"]
    sym = _rnn(case["attrs"])
    assert sym.list_arguments() == case["arguments"]
    assert sym.list_outputs() == case["outputs"]
    arg_shapes, out_shapes, _ = sym.infer_shape(data=tuple(case["arg_shapes"][0]))
    assert [list(s) for s in arg_shapes] == case["arg_shapes"]
    assert [list(s) for s in out_shapes] == case["out_shapes"]
    shapes = {n: tuple(s) for n, s in zip(case["arguments"], case["arg_shapes"])}
    exe = sym.simple_bind(mx.cpu(), grad_req="null",
                          type_dict=dict.fromkeys(shapes, "float64"), **shapes)
    for n in shapes:
        exe.arg_dict[n][:] = ARRAYS[f"{key}/in:{n}"]
    for k, o in enumerate(exe.forward(is_train=False)):
        np.testing.assert_allclose(o.asnumpy(), ARRAYS[f"{key}/out{k}"], rtol=1e-8,
                                   atol=1e-9, err_msg=f"output {k}")
    with pytest.raises(MXNetError, match="No training support for LSTM with projection"):
        exe.forward(is_train=True)


@pytest.mark.parametrize("case", _params("cases")[:6])
def test_inference_forward_equals_training_forward(case):
    _, exe = _bind(case, "float64")
    train = [o.asnumpy().copy() for o in exe.forward(is_train=True)]
    for o, want in zip(exe.forward(is_train=False), train):
        np.testing.assert_array_equal(o.asnumpy(), want)


@pytest.mark.parametrize("record", _params("shapes"))
def test_infer_shape_matches_mxnet(record):
    sym = _rnn(record["attrs"])
    given = {n: tuple(s) for n, s in record["given"].items()}
    if "error" in record:
        with pytest.raises(MXNetError) as err:
            sym.infer_shape(**given)
        assert record["expect"] in str(err.value), (str(err.value), record["error"])
        return
    arg_shapes, out_shapes, _ = sym.infer_shape(**given)
    assert sym.list_arguments() == record["arguments"]
    assert sym.list_outputs() == record["outputs"]
    assert [list(s) for s in arg_shapes] == record["args"]
    assert [list(s) for s in out_shapes] == record["outs"]


@pytest.mark.parametrize("record", _params("types"))
def test_infer_type_matches_mxnet(record):
    sym = _rnn(record["attrs"])
    if "error" in record:
        with pytest.raises(MXNetError) as err:
            sym.infer_type(**record["given"])
        assert record["expect"] in str(err.value), (str(err.value), record["error"])
        return
    arg_types, out_types, _ = sym.infer_type(**record["given"])
    assert [np.dtype(t).name for t in arg_types] == record["args"]
    assert [np.dtype(t).name for t in out_types] == record["outs"]


@pytest.mark.parametrize("record", _params("creation"))
def test_bad_attributes_fail_at_creation_like_mxnet(record):
    with pytest.raises(MXNetError) as err:
        _rnn(record["python_attrs"])
    assert record["expect"] in str(err.value), (str(err.value), record["error"])


@pytest.mark.parametrize("attrs,message", [
    (dict(mode="gru", projection_size=2), "Projection is only supported for LSTM"),
    (dict(mode="lstm", lstm_state_clip_min=-1.0, lstm_state_clip_max=1.0),
     "LSTM state clipping is only supported for GPU"),
    (dict(mode="gru", use_sequence_length=True), "use_sequence_length option is only available"),
    (dict(mode="gru", num_layers=2, p=1.0), "unsupported dropout value"),
])
def test_unsupported_options_raise_when_run_like_mxnet_cpu(attrs, message):
    """MXNet 1.9.1's CPU operator refuses these when it runs (its native kernels)."""
    attrs = dict(dict(state_size=3, num_layers=1), **attrs)
    sym = _rnn(attrs)
    shapes = {"data": (3, 2, 4)}
    if attrs.get("use_sequence_length"):
        shapes["rnn_sequence_length"] = (2,)
    exe = sym.simple_bind(mx.cpu(), grad_req="null", **shapes)
    with pytest.raises(MXNetError, match=message):
        exe.forward(is_train=False)


@pytest.mark.parametrize("attrs", [dict(num_layers=0, state_size=3),
                                   dict(num_layers=1, state_size=0)])
def test_empty_layers_are_refused_at_shape_inference(attrs):
    """MXNet accepts these and its CPU kernels return NaN or fail; symgraph refuses them."""
    with pytest.raises(MXNetError, match="num_layers >= 1 and state_size >= 1"):
        _rnn(dict(mode="gru", **attrs)).infer_shape(data=(3, 2, 4))


def _dropout_exe():
    sym = _rnn(dict(mode="gru", state_size=4, num_layers=3, p=0.5, bidirectional=True))
    exe = sym.simple_bind(mx.cpu(), type_dict={"data": "float64"}, data=(5, 3, 2))
    rng = np.random.RandomState(0)
    for a in exe.arg_dict.values():
        a[:] = rng.uniform(-1, 1, a.shape)
    return exe


def test_dropout_is_reproducible_and_training_only():
    exe = _dropout_exe()
    mx.random.seed(3)
    first = exe.forward(is_train=True)[0].asnumpy().copy()
    mx.random.seed(3)
    again = exe.forward(is_train=True)[0].asnumpy().copy()
    other = exe.forward(is_train=True)[0].asnumpy().copy()
    infer = exe.forward(is_train=False)[0].asnumpy().copy()
    np.testing.assert_array_equal(first, again)
    assert not np.allclose(first, other) and not np.allclose(first, infer)
    assert exe.outputs[0].shape == (5, 3, 8) and len(exe.outputs) == 1


def test_dropout_backward_uses_the_forward_masks():
    """The gradient of the training forward with its masks: a directional derivative of
    sum(out * head) under the same seed matches the analytic gradient."""
    exe = _dropout_exe()
    head = np.random.RandomState(1).uniform(-1, 1, (5, 3, 8))
    mx.random.seed(7)
    exe.forward(is_train=True)
    exe.backward([mx.nd.array(head)])
    grad = exe.grad_dict["rnn_parameters"].asnumpy().copy()
    w = exe.arg_dict["rnn_parameters"].asnumpy().copy()
    direction = np.random.RandomState(2).uniform(-1, 1, w.shape)

    def loss(values):
        exe.arg_dict["rnn_parameters"][:] = values
        mx.random.seed(7)
        return float((exe.forward(is_train=True)[0].asnumpy() * head).sum())
    eps = 1e-3
    numeric = (loss(w + eps * direction) - loss(w - eps * direction)) / (2 * eps)
    assert abs(numeric - float((grad * direction).sum())) < 1e-3 * max(1.0, abs(numeric))


def test_backward_reuses_the_training_forward_graph_and_recomputes_otherwise(monkeypatch):
    """The backward differentiates the graph its training forward kept in the hidden
    ``reserve`` output (no second forward); without it (or after an in-place change of an
    input) it recomputes: same gradients."""
    from symgraph.ops import rnn as rnn_op
    data = mx.sym.Variable("data")
    out = mx.sym.RNN(data, mx.sym.Variable("w"), mx.sym.Variable("h"), mx.sym.Variable("c"),
                     state_size=5, num_layers=2, mode="lstm", name="rnn")
    assert out.list_outputs() == ["rnn_output"]  # the reserve is hidden
    exe = mx.sym.MakeLoss(mx.sym.sum(out)).simple_bind(mx.cpu(), data=(4, 3, 6), h=(2, 3, 5),
                                                      c=(2, 3, 5))
    rng = np.random.RandomState(0)
    for arr in exe.arg_dict.values():
        arr[:] = rng.uniform(-0.5, 0.5, arr.shape)
    runs = []
    real_run, real_reserved = rnn_op.run, rnn_op._reserved
    monkeypatch.setattr(rnn_op, "run", lambda *a: runs.append(1) or real_run(*a))
    grads = []
    for keep in (True, False):
        monkeypatch.setattr(rnn_op, "_reserved",
                            real_reserved if keep else lambda *a: None)
        runs.clear()
        exe.forward(is_train=True)
        exe.backward()
        assert len(runs) == (1 if keep else 2), "kept graph used / recomputed without it"
        grads.append({k: v.asnumpy().copy() for k, v in exe.grad_dict.items()})
    monkeypatch.setattr(rnn_op, "_reserved", real_reserved)
    for name in grads[0]:
        np.testing.assert_allclose(grads[0][name], grads[1][name], rtol=1e-6, atol=1e-7)
    exe.forward(is_train=True)
    exe.arg_dict["w"][:] = exe.arg_dict["w"].asnumpy() * 2  # in place: the kept graph is stale
    exe.backward()
    stale = {k: v.asnumpy().copy() for k, v in exe.grad_dict.items()}
    exe.forward(is_train=True)
    exe.backward()
    for name in stale:
        np.testing.assert_allclose(stale[name], exe.grad_dict[name].asnumpy(), rtol=1e-6,
                                   atol=1e-7)


def test_backward_reads_the_dropout_seed_without_a_device_read(monkeypatch):
    """Issue #22: the forward's seed output carries its value, so the backward does no
    device-to-host read for it; a seed tensor written since (or made elsewhere) is read."""
    from types import SimpleNamespace

    import torch

    from symgraph.ops import rnn
    p = SimpleNamespace(mode="lstm", state_outputs=False, p=0.5, num_layers=2)
    out = rnn._results(p, torch.zeros(1), None, None, 1234, torch.zeros(1), torch.zeros(1))[1]
    reads = []
    real_int = torch.Tensor.__int__
    monkeypatch.setattr(torch.Tensor, "__int__", lambda t: reads.append(t) or real_int(t))
    assert rnn._seed_of(out) == 1234 and not reads
    out.fill_(77)
    assert rnn._seed_of(out) == 77 and len(reads) == 1


def test_layer_mask_keys_agree_for_int_and_device_seeds():
    """The Triton path draws its dropout seed on the device; the per-layer Philox keys it
    derives there equal the ones an int seed gives (int64 arithmetic wraps as Python's
    masked sum)."""
    import torch

    from symgraph.ops.rnn import _layer_seed
    for seed in (5, (1 << 61) + 12345, (1 << 62) - 1):
        for layer in range(4):
            assert int(_layer_seed(torch.tensor([seed]), layer)) == _layer_seed(seed, layer)
