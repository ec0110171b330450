"""ONNX import (``mx.onnx.import_model``, ``get_model_metadata``, ``import_to_gluon``): the
export's networks round-trip, hand-built one-op models import to what ONNX Runtime computes,
and what cannot be imported fails naming the node."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as mx
from symgraph.onnx.importer import (
    OnnxImportError,
    get_model_metadata,
    import_model,
    import_to_gluon,
)
from tests.export_nets import NETS

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

RNG = np.random.RandomState(0)


def _f(*shape, low=-1.0, high=1.0):
    return RNG.uniform(low, high, size=shape).astype(np.float32)


def _i(*values):
    return np.asarray(values, dtype=np.int64)


def run_imported(model_or_path, inputs: dict) -> list[np.ndarray]:
    """Import a model and run its symbol's inference forward on ``inputs``."""
    sym, args, aux = import_model(model_or_path)
    names = [n for n in sym.list_inputs() if n in inputs]
    exe = sym.simple_bind(mx.cpu(), grad_req="null",
                          type_dict={n: inputs[n].dtype for n in names},
                          **{n: inputs[n].shape for n in names})
    for k, v in {**args, **aux}.items():
        (exe.arg_dict if k in exe.arg_dict else exe.aux_dict)[k][:] = v
    return [o.asnumpy() for o in exe.forward(is_train=False, **{n: inputs[n] for n in names})]


def run_ort(model, inputs: dict) -> list[np.ndarray]:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {i.name: inputs[i.name] for i in sess.get_inputs()})


def assert_close(got, want, rtol=1e-4, atol=1e-5):
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, (k, g.shape, w.shape)
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol,
                                   atol=atol, err_msg=f"output {k}")


# ---------------------------------------------------------------- round trips of the export
ROUND_TRIP = ["mlp", "lenet", "resnet_block", "lstm_unrolled", "lstm_fused",
              "text_classifier", "deconv_net"]


def _reference(net, args, aux, inputs) -> np.ndarray:
    exe = net.sym.simple_bind(mx.cpu(), grad_req="null", **net.shapes)
    for k, v in {**args, **aux}.items():
        (exe.arg_dict if k in exe.arg_dict else exe.aux_dict)[k][:] = v
    return exe.forward(is_train=False, **inputs)[0].asnumpy()


def _export(net, args, aux, path, opset, dynamic=False) -> str:
    names = [n for n in net.sym.list_inputs() if n in net.shapes and not n.endswith("label")]
    try:
        return mx.onnx.export_model(net.sym, {**args, **aux}, [net.shapes[n] for n in names],
                                    onnx_file_path=str(path), opset_version=opset,
                                    dynamic=dynamic)
    except mx.base.MXNetError as err:
        if "no ONNX translation" in str(err):
            pytest.skip(f"the export does not translate this network yet: {err}")
        raise


@pytest.mark.parametrize("opset", [12, 21])
@pytest.mark.parametrize("name", ROUND_TRIP)
def test_round_trip(name, opset, tmp_path):
    net = NETS[name]()
    args, aux = net.params()
    inputs = net.inputs()
    want = _reference(net, args, aux, inputs)
    path = _export(net, args, aux, tmp_path / "m.onnx", opset)
    _, _, aux_params = import_model(path)
    assert set(aux_params) <= set(aux)
    got = run_imported(path, inputs)
    assert_close(got, [want])


def test_round_trip_batchnorm_aux_and_dynamic_batch(tmp_path):
    net = NETS["resnet_block"]()
    args, aux = net.params()
    path = _export(net, args, aux, tmp_path / "m.onnx", 13, dynamic=True)
    _, arg_params, aux_params = import_model(path)
    assert sorted(aux_params) == sorted(aux)  # BatchNorm's statistics stay auxiliary
    assert "bn1_gamma" in arg_params
    inputs = net.inputs(batch=5)
    net.shapes = {k: (5,) + tuple(v[1:]) for k, v in net.shapes.items()}
    assert_close(run_imported(path, inputs), [_reference(net, args, aux, inputs)])


# ---------------------------------------------------------------- one-op models against ORT
def case(op, inputs, attrs=None, opset=13, init=(), outs=1, cid=None):
    """One table row: ``inputs`` is name -> array (in order; ``None`` for an absent
    optional input); names in ``init`` become initializers."""
    return pytest.param(op, inputs, attrs or {}, opset, set(init), outs,
                        id=cid or f"{op}-{opset}")


def one_op_model(op, inputs, attrs, opset, init, outs):
    names = [k if v is not None else "" for k, v in inputs.items()]
    node = helper.make_node(op, names, [f"y{k}" for k in range(outs)], name=f"the_{op}",
                            **attrs)
    graph_in = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype),
                                              v.shape)
                for k, v in inputs.items() if v is not None and k not in init]
    inits = [numpy_helper.from_array(v, k) for k, v in inputs.items() if k in init]
    types = {k: helper.make_tensor_type_proto(helper.np_dtype_to_tensor_dtype(v.dtype),
                                              v.shape) for k, v in inputs.items() if v is not None}
    schema = onnx.defs.get_schema(op, opset)
    out_types = onnx.shape_inference.infer_node_outputs(
        schema, node, types, {i.name: i for i in inits})
    graph = helper.make_graph([node], "g", graph_in,
                              [helper.make_value_info(f"y{k}", out_types[f"y{k}"])
                               for k in range(outs)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(model.ir_version, 8)
    return model


X4 = _f(2, 3, 5, 6)
CASES = [
    case("Conv", {"x": X4, "w": _f(4, 3, 3, 3), "b": _f(4)}, {"pads": [1, 1, 1, 1]},
         init="wb"),
    case("Conv", {"x": _f(2, 4, 7, 6), "w": _f(6, 2, 2, 3)},
         {"group": 2, "strides": [2, 1], "dilations": [1, 2]}, init="w", cid="Conv-group"),
    case("Conv", {"x": X4, "w": _f(2, 3, 3, 2)}, {"pads": [0, 1, 2, 0]}, init="w",
         cid="Conv-asym-pads"),
    case("Conv", {"x": X4, "w": _f(2, 3, 3, 3)}, {"auto_pad": "SAME_UPPER",
                                                   "strides": [2, 2]}, init="w",
         cid="Conv-same-upper"),
    case("Conv", {"x": _f(2, 3, 9), "w": _f(2, 3, 4), "b": _f(2)}, {"pads": [1, 1]},
         init="wb", cid="Conv-1d"),
    case("ConvTranspose", {"x": _f(1, 2, 4, 5), "w": _f(2, 3, 3, 3), "b": _f(3)},
         {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 0]}, init="wb"),
    case("ConvTranspose", {"x": _f(1, 2, 4, 5), "w": _f(2, 1, 3, 3)},
         {"strides": [2, 2], "output_shape": [7, 9], "group": 2}, init="w",
         cid="ConvTranspose-output-shape"),
    case("BatchNormalization", {"x": X4, "s": _f(3), "b": _f(3), "m": _f(3),
                                "v": _f(3, low=0.5, high=1.5)}, {"epsilon": 1e-3},
         init="sbmv"),
    *[case(op, {"x": X4}) for op in ("Relu", "Sigmoid", "Tanh", "Softplus", "Softsign",
                                     "Abs", "Neg", "Exp", "Floor", "Ceil", "Erf", "Sin",
                                     "Cos", "Identity", "Sign", "HardSigmoid")],
    *[case(op, {"x": _f(3, 4, low=0.2, high=2)}) for op in ("Log", "Sqrt", "Reciprocal")],
    case("LeakyRelu", {"x": X4}, {"alpha": 0.2}),
    case("Elu", {"x": X4}, {"alpha": 0.7}),
    case("Selu", {"x": X4}),
    case("Selu", {"x": X4}, {"alpha": 1.5, "gamma": 0.5}, cid="Selu-attrs"),
    case("PRelu", {"x": X4, "slope": _f(3, 1, 1)}, init=["slope"]),
    case("MaxPool", {"x": X4}, {"kernel_shape": [3, 3], "strides": [2, 2],
                                "pads": [1, 1, 1, 1]}),
    case("MaxPool", {"x": X4}, {"kernel_shape": [2, 2], "strides": [2, 2],
                                "ceil_mode": 1}, cid="MaxPool-ceil"),
    case("MaxPool", {"x": X4}, {"kernel_shape": [2, 3], "pads": [0, 1, 1, 0]},
         cid="MaxPool-asym"),
    case("AveragePool", {"x": X4}, {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    case("AveragePool", {"x": X4}, {"kernel_shape": [3, 2], "pads": [1, 1, 1, 1],
                                    "count_include_pad": 1}, cid="AveragePool-include"),
    case("AveragePool", {"x": _f(1, 2, 5, 7)}, {"kernel_shape": [2, 3], "strides": [2, 2],
                                               "ceil_mode": 1}, cid="AveragePool-ceil"),
    case("LpPool", {"x": X4}, {"kernel_shape": [2, 2], "p": 2}),
    case("GlobalAveragePool", {"x": X4}),
    case("GlobalMaxPool", {"x": X4}),
    case("Gemm", {"a": _f(3, 5), "w": _f(4, 5), "c": _f(4)}, {"transB": 1}, init="wc"),
    case("Gemm", {"a": _f(5, 3), "b": _f(5, 4), "c": _f(1, 4)},
         {"transA": 1, "alpha": 0.5, "beta": 2.0}, cid="Gemm-general"),
    case("Gemm", {"a": _f(3, 5), "b": _f(5, 4)}, cid="Gemm-no-c"),
    case("MatMul", {"a": _f(3, 5), "b": _f(5, 4)}),
    case("MatMul", {"a": _f(2, 3, 5), "b": _f(5, 4)}, init="b", cid="MatMul-3x2"),
    case("MatMul", {"a": _f(2, 3, 4, 5), "b": _f(2, 3, 5, 2)}, cid="MatMul-4x4"),
    case("MatMul", {"a": _f(2, 3, 4, 5), "b": _f(3, 5, 2)}, cid="MatMul-broadcast"),
    case("Flatten", {"x": X4}, {"axis": 2}),
    case("Flatten", {"x": X4}, cid="Flatten-1"),
    case("Dropout", {"x": X4}, {}, opset=12),
    case("Softmax", {"x": _f(2, 3, 4)}, {"axis": 1}, opset=12),
    case("Softmax", {"x": _f(2, 3, 4)}, {"axis": 1}, opset=13),
    case("LogSoftmax", {"x": _f(2, 3, 4)}, {}, opset=11),
    case("LogSoftmax", {"x": _f(2, 3, 4)}, {"axis": 0}, opset=21),
    case("Add", {"a": _f(3, 4), "b": _f(4)}),
    case("Sub", {"a": _f(3, 4), "b": np.float32(0.5)}, init="b", cid="Sub-scalar"),
    case("Div", {"a": np.float32(2.0), "b": _f(3, 4, low=0.5, high=2)}, init="a",
         cid="Div-scalar-left"),
    case("Mul", {"a": _f(2, 3, 4), "b": _f(3, 1)}, init="b", cid="Mul-param"),
    case("Pow", {"a": _f(3, 4, low=0.5, high=2), "b": _f(3, 4)}),
    case("Max", {"a": _f(3, 4), "b": _f(4), "c": _f(1, 4)}),
    case("Min", {"a": _f(3, 4), "b": _f(3, 4)}),
    case("Sum", {"a": _f(3, 4), "b": _f(4), "c": _f(3, 4)}),
    case("Mean", {"a": _f(3, 4), "b": _f(3, 4)}),
    case("Clip", {"x": X4}, {"min": -0.3, "max": 0.4}, opset=6),
    case("Clip", {"x": X4, "lo": np.float32(-0.2), "hi": np.float32(0.5)}, opset=11,
         init=["lo", "hi"]),
    case("Clip", {"x": X4, "lo": np.float32(-0.2)}, opset=13, init=["lo"], cid="Clip-min"),
    case("Concat", {"a": _f(2, 3), "b": _f(2, 4)}, {"axis": -1}),
    case("Split", {"x": _f(2, 7)}, {"axis": 1, "split": [2, 5]}, opset=12, outs=2),
    case("Split", {"x": _f(2, 7), "s": _i(3, 4)}, {"axis": 1}, init="s", outs=2),
    case("Split", {"x": _f(6, 2)}, {}, outs=3, cid="Split-equal"),
    case("Split", {"x": _f(2, 7)}, {"axis": 1, "num_outputs": 3}, opset=18, outs=3),
    case("Reshape", {"x": X4, "s": _i(0, -1, 3)}, init="s"),
    case("Transpose", {"x": X4}, {"perm": [0, 2, 3, 1]}),
    case("Transpose", {"x": _f(2, 3, 4)}, cid="Transpose-default"),
    case("Squeeze", {"x": _f(2, 1, 3, 1)}, {"axes": [1, -1]}, opset=11),
    case("Squeeze", {"x": _f(2, 1, 3, 1), "a": _i(1)}, init="a"),
    case("Unsqueeze", {"x": _f(2, 3)}, {"axes": [0, -1]}, opset=12),
    case("Unsqueeze", {"x": _f(2, 3), "a": _i(1, 3)}, init="a"),
    case("Gather", {"w": _f(10, 4), "i": _i([1, 0], [9, 3])}, init="w", cid="Gather-embed"),
    case("Gather", {"x": _f(3, 5, 2), "i": np.asarray(-2, dtype=np.int64)}, {"axis": 1},
         init="i", cid="Gather-scalar"),
    case("Gather", {"x": _f(3, 5, 2), "i": _i(4, -1, 0)}, {"axis": 1}, cid="Gather-take"),
    case("Cast", {"x": _f(3, 4, low=-5, high=5)}, {"to": TensorProto.INT32}),
    case("ReduceMean", {"x": X4}, {"axes": [1, 3], "keepdims": 0}),
    case("ReduceSum", {"x": X4, "a": _i(-1)}, {}, init="a"),
    case("ReduceSum", {"x": X4}, {"axes": [0, 2]}, opset=12, cid="ReduceSum-12"),
    case("ReduceMax", {"x": X4, "a": _i(1)}, {"keepdims": 0}, opset=18, init="a"),
    case("ReduceMin", {"x": X4}, {"axes": [2]}),
    case("ReduceProd", {"x": _f(2, 3, 4)}, {"axes": [1]}),
    case("ReduceL2", {"x": _f(2, 3, 4)}, {"axes": [2]}),
    case("ReduceLogSumExp", {"x": _f(2, 3, 4)}, {"axes": [0]}),
    case("ArgMax", {"x": _f(3, 5)}, {"axis": 1, "keepdims": 0}),
    case("ArgMin", {"x": _f(3, 5)}, {"axis": 0}),
    case("Pad", {"x": X4, "p": _i(0, 0, 1, 2, 0, 0, 2, 1), "v": np.float32(1.5)}, opset=11,
         init="pv"),
    case("Pad", {"x": X4, "p": _i(0, 0, 1, 2, 0, 0, 2, 1)}, {"mode": "reflect"}, init="p",
         cid="Pad-reflect"),
    case("Slice", {"x": _f(4, 6), "s": _i(1, -1), "e": _i(2 ** 62, 0), "a": _i(0, 1),
                   "t": _i(1, -2)}, init="seat"),
    case("Slice", {"x": _f(4, 6), "s": _i(1), "e": _i(-1), "a": _i(-1)}, init="sea",
         cid="Slice-neg-axis"),
    case("Resize", {"x": _f(1, 2, 3, 4), "r": None, "s": np.asarray([1, 1, 2, 3], "f4")},
         {"mode": "nearest"}, init="s"),
    case("Resize", {"x": _f(1, 2, 3, 4), "r": None, "s": None, "z": _i(1, 2, 6, 8)},
         {"coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
         opset=13, init="z", cid="Resize-sizes"),
    case("Upsample", {"x": _f(1, 2, 3, 4), "s": np.asarray([1, 1, 2, 2], "f4")}, opset=9,
         init="s"),
    case("LRN", {"x": X4}, {"size": 3, "alpha": 1e-3, "beta": 0.5, "bias": 2.0}),
    case("InstanceNormalization", {"x": X4, "s": _f(3), "b": _f(3)}, init="sb"),
    case("LayerNormalization", {"x": _f(2, 3, 6), "s": _f(6), "b": _f(6)}, opset=17,
         init="sb"),
    case("LayerNormalization", {"x": _f(2, 3, 6), "s": _f(6)}, opset=17, init="s",
         cid="LayerNormalization-no-bias"),
    case("Where", {"c": RNG.rand(3, 4) > 0.5, "a": _f(3, 4), "b": _f(4)}),
    case("Equal", {"a": np.asarray([[1, 2], [3, 4]], "f4"), "b": np.asarray([1, 4], "f4")}),
    case("Greater", {"a": _f(3, 4), "b": _f(3, 4)}),
    case("Less", {"a": _f(3, 4), "b": np.float32(0.1)}, init="b", cid="Less-scalar"),
    case("Not", {"x": RNG.rand(3, 4) > 0.5}),
    case("And", {"a": RNG.rand(3, 4) > 0.5, "b": RNG.rand(4) > 0.5}),
    case("Or", {"a": RNG.rand(3, 4) > 0.5, "b": RNG.rand(3, 4) > 0.5}),
    case("TopK", {"x": _f(3, 6), "k": _i(2)}, {"axis": 1}, init="k", outs=2),
    case("TopK", {"x": _f(3, 6), "k": _i(3)}, {"axis": 0, "largest": 0}, opset=11,
         init="k", outs=2, cid="TopK-smallest"),
    case("Expand", {"x": _f(3, 1), "s": _i(2, 1, 4)}, init="s"),
    case("Tile", {"x": _f(2, 3), "r": _i(2, 3)}, init="r"),
    case("DepthToSpace", {"x": _f(2, 8, 2, 3)}, {"blocksize": 2}),
    case("SpaceToDepth", {"x": _f(2, 2, 4, 6)}, {"blocksize": 2}),
    case("Mod", {"a": _i([-5, 5], [7, -7]), "b": _i([3, -3], [-2, 2])}),
    case("Mod", {"a": _f(3, 4, low=-5, high=5), "b": _f(4, low=0.5, high=2)}, {"fmod": 1},
         cid="Mod-fmod"),
    case("IsNaN", {"x": np.asarray([1, np.nan, np.inf], "f4")}),
    case("IsInf", {"x": np.asarray([1, np.nan, np.inf, -np.inf], "f4")},
         {"detect_negative": 0}),
    case("GatherND", {"x": _f(2, 3, 4), "i": _i([0, 1], [1, -1])}),
    case("HardSwish", {"x": _f(3, 4, low=-4, high=4)}, opset=14),
    case("Gelu", {"x": _f(3, 4)}, opset=20),
    case("LSTM", {"x": _f(3, 2, 4), "w": _f(2, 20, 4), "r": _f(2, 20, 5), "b": _f(2, 40)},
         {"hidden_size": 5, "direction": "bidirectional"}, init="wrb", outs=3),
    case("LSTM", {"x": _f(3, 2, 4), "w": _f(1, 12, 4), "r": _f(1, 12, 3), "b": None,
                  "s": None, "h": _f(1, 2, 3), "c": _f(1, 2, 3)},
         {"hidden_size": 3}, init="wr", outs=3, cid="LSTM-states"),
    case("GRU", {"x": _f(3, 2, 4), "w": _f(1, 9, 4), "r": _f(1, 9, 3), "b": _f(1, 18)},
         {"hidden_size": 3, "linear_before_reset": 1}, init="wrb", outs=2),
    case("RNN", {"x": _f(3, 2, 4), "w": _f(2, 3, 4), "r": _f(2, 3, 3)},
         {"hidden_size": 3, "activations": ["Relu", "Relu"], "direction": "bidirectional"},
         init="wr", outs=2),
]


@pytest.mark.parametrize("op, inputs, attrs, opset, init, outs", CASES)
def test_one_op(op, inputs, attrs, opset, init, outs):
    model = one_op_model(op, inputs, attrs, opset, init, outs)
    onnx.checker.check_model(model)
    feed = {k: v for k, v in inputs.items() if v is not None and k not in init}
    want = run_ort(model, feed)
    got = run_imported(model, feed)
    assert_close(got, want)


def test_shape_chain_folds_to_constants():
    """PyTorch's ``x.view(x.size(0), -1)``: Shape -> Gather -> Unsqueeze -> Concat ->
    Reshape is evaluated at import when the input shape is static."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "ax"], ["n1"]),
             helper.make_node("Concat", ["n1", "minus1"], ["shape"], axis=0),
             helper.make_node("Reshape", ["x", "shape"], ["flat"]),
             helper.make_node("Constant", [], ["k"], value_float=2.0),
             helper.make_node("Mul", ["flat", "k"], ["y"])]
    inits = [numpy_helper.from_array(np.asarray(0, np.int64), "zero"),
             numpy_helper.from_array(_i(0), "ax"), numpy_helper.from_array(_i(-1), "minus1")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [2, 3, 4])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, [2, 12])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    x = _f(2, 3, 4)
    sym, args, aux = import_model(model)
    assert sym.list_inputs() == ["x"] and not args and not aux
    assert_close(run_imported(model, {"x": x}), run_ort(model, {"x": x}))


# ---------------------------------------------------------------- metadata and gluon
def test_get_model_metadata(tmp_path):
    net = NETS["lenet"]()
    args, aux = net.params()
    path = _export(net, args, aux, tmp_path / "m.onnx", 13)
    meta = get_model_metadata(path)
    assert meta["input_tensor_data"] == [("data", (2, 1, 14, 14), TensorProto.FLOAT)]
    assert meta["output_tensor_data"] == [("softmax", (2, 4))]
    dyn = _export(net, args, aux, tmp_path / "d.onnx", 13, dynamic=True)
    assert get_model_metadata(dyn)["input_tensor_data"][0][1] == (0, 0, 0, 0)


def test_import_to_gluon(tmp_path):
    net = NETS["resnet_block"]()
    args, aux = net.params()
    inputs = net.inputs()
    path = _export(net, args, aux, tmp_path / "m.onnx", 21)
    block = import_to_gluon(path, mx.cpu())
    assert isinstance(block, mx.gluon.SymbolBlock)
    got = block(mx.nd.array(inputs["data"])).asnumpy()
    assert_close([got], [_reference(net, args, aux, inputs)])


# ---------------------------------------------------------------- what cannot be imported
def test_missing_and_corrupt_files(tmp_path):
    missing = tmp_path / "nope.onnx"
    with pytest.raises(FileNotFoundError, match="nope.onnx"):
        import_model(str(missing))
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage that is not a protobuf \xff\xfe")
    with pytest.raises(OnnxImportError, match="bad.onnx"):
        import_model(str(bad))
    with pytest.raises(OnnxImportError, match="bad.onnx"):
        get_model_metadata(str(bad))


def test_invalid_model_is_refused_before_import(tmp_path):
    node = helper.make_node("Relu", ["x"], ["y"])  # y is produced but "z" is the output
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [2])], [helper.make_tensor_value_info(
            "z", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = tmp_path / "invalid.onnx"
    path.write_bytes(model.SerializeToString())
    with pytest.raises(OnnxImportError, match="invalid.onnx.*not valid"):
        import_model(str(path))


REFUSED = [
    ("Einsum", {"equation": "abcd->dcba"}, 4, "Einsum"),
    ("Det", {}, 2, "not supported"),
    ("Resize", {"mode": "linear"}, 4, "mode 'linear'"),
    ("ArgMax", {"select_last_index": 1}, 4, "select_last_index"),
    ("MaxPool", {"kernel_shape": [2, 2], "dilations": [2, 2]}, 4, "dilations"),
    ("ConvTranspose", {"output_shape": [6, 6], "strides": [2, 2]}, 4, "even, non-negative"),
]


@pytest.mark.parametrize("op, attrs, rank, message", REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_ops_name_the_node(op, attrs, rank, message):
    """An op the import cannot translate exactly raises OnnxImportError naming the node."""
    extra, inputs = [], ["x"]
    if op == "Resize":
        extra = [numpy_helper.from_array(np.asarray([1, 1, 2, 2], "f4"), "s")]
        inputs = ["x", "", "s"]
    if op == "ConvTranspose":
        extra = [numpy_helper.from_array(_f(3, 2, 3, 3), "w")]
        inputs = ["x", "w"]
    node = helper.make_node(op, inputs, ["y"], name="culprit", **attrs)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["d"] * rank)
    graph = helper.make_graph([node], "g", [x], [y], initializer=extra)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(OnnxImportError, match=f"culprit.*{op}.*{message}"):
        import_model(model)


def test_shape_of_a_dynamic_input_is_refused():
    node = helper.make_node("Shape", ["x"], ["y"], name="culprit")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])
    y = helper.make_tensor_value_info("y", TensorProto.INT64, [2])
    model = helper.make_model(helper.make_graph([node], "g", [x], [y]),
                              opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(OnnxImportError, match="culprit.*Shape.*known at import"):
        import_model(model)


def test_importer_module_needs_no_onnx():
    """``symgraph.onnx.importer`` imports onnx only inside its functions."""
    import subprocess
    import sys
    code = ("import sys; sys.modules['onnx'] = None; "
            "import symgraph.onnx.importer as m; print(m.OnnxImportError.__mro__[1].__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "MXNetError"


# ---------------------------------------------------------------- another producer
def _torch_model():
    torch = pytest.importorskip("torch")
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.fc = nn.Linear(4 * 3 * 3, 5)
            self.norm = nn.LayerNorm(5)

        def forward(self, x):
            y = nn.functional.max_pool2d(torch.relu(self.conv(x)), 2)
            y = nn.functional.interpolate(y, scale_factor=2, mode="nearest")[:, :, :3, :3]
            y = self.norm(self.fc(y.reshape(y.shape[0], -1)))
            return torch.softmax(y * 0.5, dim=-1).transpose(0, 1).unsqueeze(0) + y.mean()
    torch.manual_seed(0)
    return torch, Net().eval()


@pytest.mark.parametrize("opset", [13, 17])
def test_pytorch_exported_model(opset):
    """A model from PyTorch's exporter (Constant nodes, shape arithmetic, Resize, Slice,
    Gemm, LayerNormalization or its decomposition, a 0-d mean) imports exactly."""
    import io
    import warnings
    torch, net = _torch_model()
    x = _f(2, 3, 6, 6)
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            torch.onnx.export(net, (torch.from_numpy(x),), buf, opset_version=opset,
                              input_names=["x"], dynamo=False)
        except Exception as err:  # the exporter needs packages this install may lack
            pytest.skip(f"torch.onnx.export failed: {err}")
    model = onnx.load_from_string(buf.getvalue())
    assert_close(run_imported(model, {"x": x}), run_ort(model, {"x": x}))


def test_zero_dim_results_are_one_element():
    """MXNet has no 0-d tensors: a reduction to a scalar is (1,), and broadcasts as one."""
    nodes = [helper.make_node("ReduceMean", ["x"], ["m"], keepdims=0),
             helper.make_node("Sub", ["x", "m"], ["y"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    graph = helper.make_graph(nodes, "g", [x], [
        helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3]),
        helper.make_tensor_value_info("m", TensorProto.FLOAT, [])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    value = _f(2, 3)
    got = run_imported(model, {"x": value})
    want = run_ort(model, {"x": value})
    assert got[1].shape == (1,)
    assert_close([got[0], got[1].reshape(())], want)


def test_initializers_listed_as_inputs_are_parameters():
    """Older files (IR < 4) list every initializer among the graph inputs too."""
    w = _f(4, 3)
    node = helper.make_node("MatMul", ["x", "w"], ["y"])
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4]),
                      helper.make_tensor_value_info("w", TensorProto.FLOAT, [4, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        initializer=[numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)])
    model.ir_version = 3
    sym, args, aux = import_model(model)
    assert sym.list_inputs() == ["x", "w"] and list(args) == ["w"] and not aux
    assert [i[0] for i in get_model_metadata(model)["input_tensor_data"]] == ["x"]
    x = _f(2, 4)
    assert_close(run_imported(model, {"x": x}), [x @ w])
