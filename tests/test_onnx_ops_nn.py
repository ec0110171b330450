"""ONNX translations of the layers (``symgraph/onnx/ops/nn.py``): every attribute form
against symgraph's executor in ONNX Runtime, opsets 12 to 28, fixed and dynamic shapes."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import symgraph as mx
from symgraph.export import ExportError
from tests.onnx_check import check_onnx

RNG = np.random.RandomState(11)
X = mx.sym.var("data")


def _u(*shape, low=-1.0, high=1.0):
    return RNG.uniform(low, high, shape).astype(np.float32)


def _params(sym, shapes):
    args, _, aux = sym.infer_shape(**shapes)
    out = {n: _u(*s, low=-0.5, high=0.5) for n, s in zip(sym.list_arguments(), args)
           if n not in shapes}
    out.update({n: _u(*s, low=0.5, high=1.5) for n, s in zip(sym.list_auxiliary_states(), aux)})
    return out


IMG = (2, 3, 9, 8)
CASES = [
    ("conv", mx.sym.Convolution(X, kernel=(3, 3), num_filter=4), IMG),
    ("conv_stride_pad_dilate", mx.sym.Convolution(X, kernel=(3, 2), stride=(2, 1), pad=(1, 0),
                                                  dilate=(1, 2), num_filter=4), IMG),
    ("conv_group_nobias", mx.sym.Convolution(X, kernel=(1, 1), num_filter=6, num_group=3,
                                             no_bias=True), IMG),
    ("conv1d", mx.sym.Convolution(X, kernel=(3,), num_filter=2), (2, 3, 7)),
    ("conv3d", mx.sym.Convolution(X, kernel=(2, 2, 2), num_filter=2), (1, 2, 4, 5, 3)),
    ("deconv", mx.sym.Deconvolution(X, kernel=(3, 3), stride=(2, 2), pad=(1, 1), adj=(1, 0),
                                    num_filter=2, no_bias=False), IMG),
    ("deconv_target", mx.sym.Deconvolution(X, kernel=(4, 4), stride=(2, 2), num_filter=2,
                                           target_shape=(17, 16)), IMG),
    ("deconv_group", mx.sym.Deconvolution(X, kernel=(2, 2), num_filter=3, num_group=3), IMG),
    ("bn", mx.sym.BatchNorm(X, fix_gamma=False, eps=1e-3), IMG),
    ("bn_fix_gamma", mx.sym.BatchNorm(X), IMG),
    ("bn_axis_last", mx.sym.BatchNorm(X, axis=-1, fix_gamma=False), (2, 5, 4)),
    *[(f"act_{a}", mx.sym.Activation(X, act_type=a), (3, 4))
      for a in ("relu", "sigmoid", "tanh", "softrelu", "softsign")],
    *[(f"leaky_{a}", mx.sym.LeakyReLU(X, act_type=a, slope=0.3), (3, 4))
      for a in ("leaky", "elu", "selu", "gelu")],
    ("prelu", mx.sym.LeakyReLU(X, act_type="prelu", name="pr"), IMG),
    ("fc", mx.sym.FullyConnected(X, num_hidden=5), IMG),
    ("fc_no_flatten", mx.sym.FullyConnected(X, num_hidden=5, flatten=False), (2, 3, 4)),
    ("fc_no_bias", mx.sym.FullyConnected(X, num_hidden=5, no_bias=True), (3, 4)),
    ("flatten", mx.sym.Flatten(X), IMG),
    ("dropout", mx.sym.Dropout(X, p=0.4), (3, 4)),
    ("softmax_axis0", mx.sym.softmax(X, axis=0), (3, 4, 2)),
    ("softmax_temperature", mx.sym.softmax(X, temperature=2.0), (3, 4)),
    ("log_softmax", mx.sym.log_softmax(X, axis=1), (3, 4, 2)),
    ("softmax_output", mx.sym.SoftmaxOutput(X), (3, 4, 2)),
    ("softmax_output_multi", mx.sym.SoftmaxOutput(X, multi_output=True), (3, 4, 2)),
    ("softmax_output_preserve", mx.sym.SoftmaxOutput(X, preserve_shape=True), (3, 4, 2)),
    ("clip", mx.sym.clip(X, -0.3, 0.4), (3, 4)),
    ("concat", mx.sym.Concat(X, X * 2, dim=2), (2, 3, 4)),
]


def _pool_cases():
    for kind, conv, include, (k, s, p) in itertools.product(
            ("max", "avg", "sum"), ("valid", "full"), (True, False),
            [((3, 3), (2, 2), (1, 1)), ((2, 2), (3, 2), (1, 1)), ((3, 2), (1, 2), (0, 1)),
             ((2, 3), (2, 2), (0, 0))]):
        if kind != "avg" and not include:
            continue
        sym = mx.sym.Pooling(X, kernel=k, stride=s, pad=p, pool_type=kind,
                             pooling_convention=conv, count_include_pad=include)
        yield (f"pool_{kind}_{conv}_{int(include)}_{k}_{s}_{p}", sym, (1, 2, 11, 10))
    for kind in ("max", "avg", "sum"):
        yield f"pool_global_{kind}", mx.sym.Pooling(X, global_pool=True, kernel=(1, 1),
                                                     pool_type=kind, p_value=1), IMG
    for power in (1, 2, 3):
        yield f"pool_lp{power}", mx.sym.Pooling(X, kernel=(2, 2), pool_type="lp",
                                               p_value=power), IMG
        yield f"pool_global_lp{power}", mx.sym.Pooling(X, kernel=(1, 1), pool_type="lp",
                                                      global_pool=True, p_value=power), IMG
    yield "pool_3d", mx.sym.Pooling(X, kernel=(2, 2, 2), stride=(2, 1, 2),
                                    pooling_convention="full"), (1, 2, 5, 4, 5)


ALL = CASES + list(_pool_cases())


@pytest.mark.parametrize(("name", "sym", "shape"), ALL, ids=[c[0] for c in ALL])
def test_layer(name, sym, shape, tmp_path):
    x = _u(*shape)
    params = _params(sym, {"data": shape})
    check_onnx(sym, {"data": x}, tmp_path, params=params, opsets=(12, 13, 21, 28))


DYNAMIC = ["conv", "deconv", "bn_axis_last", "fc_no_flatten", "softmax_output",
           "pool_max_full_1_(3, 3)_(2, 2)_(1, 1)", "pool_avg_valid_1_(3, 3)_(2, 2)_(1, 1)"]


@pytest.mark.parametrize("name", DYNAMIC)
def test_layer_dynamic(name, tmp_path):
    _, sym, shape = next(c for c in ALL if c[0] == name)
    params = _params(sym, {"data": shape})
    if "full" in name:  # padding: the last window depends on the size, refused when dynamic
        with pytest.raises(ExportError, match="dynamic export"):
            check_onnx(sym, {"data": _u(*shape)}, tmp_path, params=params, opsets=(21,),
                       dynamic=True)
        return
    check_onnx(sym, {"data": _u(*shape)}, tmp_path, params=params, opsets=(13, 21),
               dynamic=True)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_with_length(axis, tmp_path):
    x = _u(4, 5, 6)
    shape = tuple(d for i, d in enumerate(x.shape) if i != axis % 3)
    length = RNG.randint(0, x.shape[axis], shape).astype(np.int32)  # 0: all masked
    sym = mx.sym.softmax(X, mx.sym.var("length"), axis=axis, use_length=True,
                         temperature=1.5)
    check_onnx(sym, {"data": x, "length": length}, tmp_path)
    check_onnx(sym, {"data": x, "length": length}, tmp_path, opsets=(21,), dynamic=True)


def test_embedding_clips_indices_as_mxnet(tmp_path):
    sym = mx.sym.Embedding(X, input_dim=6, output_dim=3, name="emb")
    data = np.array([[0, 5, 2], [7, -1, 3]], np.float32)  # out-of-range ids are clipped
    check_onnx(sym, {"data": data}, tmp_path, params={"emb_weight": _u(6, 3)})


DEFORM = [  # (data shape, num_filter, kernel, stride, pad, dilate, num_group, dg, no_bias)
    ((2, 4, 7, 6), 6, (3, 3), (1, 1), (1, 1), (1, 1), 1, 1, False),
    ((1, 4, 5, 8), 4, (3, 3), (2, 2), (1, 1), (2, 2), 2, 2, True),
    ((2, 6, 6, 5), 3, (3, 2), (1, 2), (1, 0), (2, 1), 1, 3, False),
]


def _deformable(case, modulated: bool):
    shape, nf, k, s, p, d, g, dg, no_bias = case
    ho = (shape[2] + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    wo = (shape[3] + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    kk = k[0] * k[1]
    offset = _u(shape[0], 2 * dg * kk, ho, wo, low=-3, high=3)
    offset[:, :, 0, 0] = np.round(offset[:, :, 0, 0])  # whole pixels: the edges exactly
    inputs = {"data": _u(*shape), "offset": offset}
    attrs = dict(kernel=k, stride=s, pad=p, dilate=d, num_filter=nf, num_group=g,
                 num_deformable_group=dg, no_bias=no_bias, name="dc")
    if modulated:
        inputs["mask"] = _u(shape[0], dg * kk, ho, wo, low=0, high=1)
        sym = mx.sym.contrib.ModulatedDeformableConvolution(
            X, mx.sym.var("offset"), mx.sym.var("mask"), **attrs)
    else:
        sym = mx.sym.contrib.DeformableConvolution(X, mx.sym.var("offset"), **attrs)
    return sym, inputs, _params(sym, {n: v.shape for n, v in inputs.items()})


@pytest.mark.parametrize("modulated", [True, False], ids=["v2", "v1"])
@pytest.mark.parametrize("case", DEFORM, ids=[f"deform{i}" for i in range(len(DEFORM))])
def test_deformable_convolution(case, modulated, tmp_path):
    """DeformConv against the executor, offsets up to 3 pixels so samples cross every
    border: v2 reads 0 outside the image as DeformConv does; v1 (clamped last row and
    column, nothing outside) through moved offsets."""
    sym, inputs, params = _deformable(case, modulated)
    check_onnx(sym, inputs, tmp_path, params=params, opsets=(19, 21, 28))
    check_onnx(sym, inputs, tmp_path, params=params, opsets=(21,), dynamic=True)


def test_deformable_convolution_refusals(tmp_path):
    """Before opset 19 there is no DeformConv; v1's border rule needs static H and W."""
    for modulated, opset, dynamic, why in ((True, 18, None, "opset 19"),
                                           (False, 21, (None, 4, None, None), "height")):
        sym, inputs, params = _deformable(DEFORM[0], modulated)
        names = [n for n in sym.list_arguments() if n in inputs]
        shapes = [inputs[n].shape for n in names]
        kwargs = {}
        if dynamic:
            kwargs = dict(dynamic=True, dynamic_input_shapes=[dynamic] + [
                (None,) + s[1:2] + (None, None) for s in shapes[1:]])
        with pytest.raises(ExportError, match=why):
            mx.onnx.export_model(sym, {k: mx.nd.array(v) for k, v in params.items()}, shapes,
                                 [np.float32] * len(names), str(tmp_path / "m.onnx"),
                                 opset_version=opset, **kwargs)
        assert not (tmp_path / "m.onnx").exists()
