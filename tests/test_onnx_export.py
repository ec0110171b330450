"""``mx.onnx.export_model``: MXNet 1.9.1's signature and file layout, the networks of our
tests in ONNX Runtime, dynamic batch sizes, and the errors."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as mx
from symgraph.export import ExportError
from tests.export_nets import NETS
from tests.onnx_check import OPSETS, run_onnx, run_symgraph

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")


def _export(net, path, opset=None, **kwargs):
    args, aux = net.params()
    data = [k for k in net.shapes if not k.endswith("label")]
    mx.onnx.export_model(net.sym, {**args, **aux}, [net.shapes[k] for k in data],
                         np.float32, str(path), opset_version=opset, **kwargs)
    return {k: v.asnumpy() for k, v in {**args, **aux}.items()}


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("name", sorted(NETS))
def test_networks_match_in_onnx_runtime(name, opset, tmp_path):
    net = NETS[name]()
    path = tmp_path / f"{name}.onnx"
    params = _export(net, path, opset)
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    ins = net.inputs()
    want = run_symgraph(net.sym, ins, params)
    got = run_onnx(str(path), ins)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", sorted(NETS))
def test_dynamic_batch(name, tmp_path):
    """Exported with dynamic dims, the model runs another batch size correctly."""
    net = NETS[name]()
    path = tmp_path / f"{name}.onnx"
    params = _export(net, path, dynamic=True)
    batch = 5
    ins = net.inputs(seed=2, batch=batch)
    if name == "lstm_fused":  # time-major: the batch is axis 1; states (layers, N, H)
        ins = net.inputs(seed=2)
        ins = {"data": np.random.RandomState(2).randint(0, 20, (7, batch)).astype("float32"),
               "lstm_state": np.zeros((2, batch, 8), "float32"),
               "lstm_state_cell": np.zeros((2, batch, 8), "float32")}
    want = run_symgraph(net.sym, ins, params)
    got = run_onnx(str(path), ins)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_file_layout_is_mxnet_s(tmp_path):
    net = NETS["mlp"]()
    path = tmp_path / "mlp.onnx"
    params = _export(net, path)
    model = onnx.load(str(path))
    g = model.graph
    assert g.name == "mxnet_converted_model"
    assert [i.name for i in g.input] == ["data"]  # the label is left out
    assert sorted(i.name for i in g.initializer) == sorted(params)
    assert [o.name for o in g.output] == ["softmax"]
    assert [d.dim_value for d in g.output[0].type.tensor_type.shape.dim] == [3, 5]
    assert {n.output[0] for n in g.node} >= {"fc1", "relu1", "fc2", "softmax"}


def test_dynamic_input_shapes_name_the_dynamic_dims(tmp_path):
    net = NETS["lenet"]()
    path = tmp_path / "lenet.onnx"
    _export(net, path, dynamic=True, dynamic_input_shapes=[(None, 1, 14, 14)])
    dims = onnx.load(str(path)).graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_value for d in dims] == [0, 1, 14, 14]
    assert not dims[0].HasField("dim_value")


def test_files_and_param_lists_are_accepted(tmp_path):
    net = NETS["lenet"]()
    args, aux = net.params()
    prefix = str(tmp_path / "lenet")
    mx.model.save_checkpoint(prefix, 1, net.sym, args, aux)
    a = mx.onnx.export_model(f"{prefix}-symbol.json", f"{prefix}-0001.params",
                             [(2, 1, 14, 14)], np.float32, str(tmp_path / "a.onnx"))
    b = mx.onnx.export_model(net.sym, [args, aux], input_shape=[(2, 1, 14, 14)],
                             input_type=np.float32, onnx_file_path=str(tmp_path / "b.onnx"))
    ma, mb = onnx.load(a), onnx.load(b)
    assert ma.graph.initializer == mb.graph.initializer


def test_contrib_path_warns_and_exports(tmp_path, capsys):
    net = NETS["mlp"]()
    args, aux = net.params()
    path = mx.contrib.onnx.export_model(net.sym, args, [(3, 10)], np.float32,
                                        str(tmp_path / "m.onnx"))
    assert "mxnet.onnx.export_model is the preferred path" in capsys.readouterr().out
    assert onnx.load(path).graph.name == "mxnet_converted_model"


def test_operator_support_lists_translations():
    ops = mx.onnx.get_operator_support()
    assert {"Convolution", "FullyConnected", "BatchNorm", "Pooling"} <= set(ops)
    assert ops == sorted(ops)


def test_untranslatable_op_names_node_and_op_and_writes_nothing(tmp_path):
    x = mx.sym.var("data")
    y = mx.sym.Correlation(x, x, name="corr")
    path = tmp_path / "x.onnx"
    with pytest.raises(ExportError, match=r"corr \(Correlation\)"):
        mx.onnx.export_model(y, {}, [(1, 2, 5, 5)], np.float32, str(path))
    assert not path.exists() and list(tmp_path.iterdir()) == []


def test_refused_attribute_is_named(tmp_path):
    y = mx.sym.Pooling(mx.sym.var("data"), kernel=(2,), pooling_convention="same",
                       name="pool")
    with pytest.raises(ExportError, match=r"pool \(Pooling\).*same"):
        mx.onnx.export_model(y, {}, [(1, 2, 5)], np.float32, str(tmp_path / "x.onnx"))


@pytest.mark.parametrize(("kwargs", "match"), [
    (dict(in_shapes=[(3, 10), (3,)]), "2 shapes for the symbol's 1 data inputs"),
    (dict(in_shapes=[(3, 10)], opset_version=9), "opset_version 9 is outside"),
    (dict(in_shapes=[(3, 10)], dynamic_input_shapes=[(None, 10)]), "set dynamic=True"),
    (dict(in_shapes=[(3, 10)], dynamic=True, dynamic_input_shapes=[(None,)]), "rank"),
    (dict(in_shapes=[(3, 7)]), "fc1"),
])
def test_bad_arguments_are_clear_errors(kwargs, match, tmp_path):
    net = NETS["mlp"]()
    args, aux = net.params()
    with pytest.raises(mx.MXNetError, match=match):
        mx.onnx.export_model(net.sym, args, onnx_file_path=str(tmp_path / "x.onnx"), **kwargs)


def test_a_model_without_parameters_exports_from_files(tmp_path):
    """Regression: a gluon block with no parameters saves an empty .params file (it loads
    as an empty list); MXNet's ONNX tests export such models from their files."""
    sym = mx.sym.abs(mx.sym.var("data"))
    sym.save(str(tmp_path / "m-symbol.json"))
    mx.nd.save(str(tmp_path / "m-0000.params"), {})
    path = mx.onnx.export_model(str(tmp_path / "m-symbol.json"), str(tmp_path / "m-0000.params"),
                                [(2, 3)], np.float32, str(tmp_path / "m.onnx"))
    x = np.random.RandomState(0).uniform(-1, 1, (2, 3)).astype(np.float32)
    np.testing.assert_array_equal(run_onnx(path, {"data": x})[0], np.abs(x))


def test_output_names_never_collide(tmp_path):
    """Regression (GluonCV's Faster R-CNN FPN): output 0 of a node ``split0`` is named
    ``split00``, which a node of that name also claims; one of them takes an ``idx_``
    prefix, so the file stays in single static assignment form."""
    x = mx.sym.var("data")
    first = mx.sym.relu(x, name="split00")
    parts = mx.sym.split(first, num_outputs=2, axis=1, name="split0")
    out = mx.sym.Group([parts[0] + 1, parts[1] * 2])
    data = np.random.RandomState(0).uniform(-1, 1, (2, 4)).astype(np.float32)
    path = str(tmp_path / "m.onnx")
    mx.onnx.export_model(out, {}, [(2, 4)], np.float32, path)
    onnx.checker.check_model(onnx.load(path), full_check=True)
    for g, w in zip(run_onnx(path, {"data": data}), run_symgraph(out, {"data": data}, {})):
        np.testing.assert_allclose(g, w, rtol=1e-6)
