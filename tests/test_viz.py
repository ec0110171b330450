"""mx.viz against MXNet 1.9.1: summary text and Graphviz source recorded by
tests/fixtures/viz/generate.py for the same symbols (MLP, conv net, unrolled RNN, and the
net of MXNet's unittest/test_viz.py)."""
import importlib.util
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import ShapeError

FIXTURES = Path(__file__).parent / "fixtures" / "viz"


def _load_generator():
    spec = importlib.util.spec_from_file_location("viz_generate", FIXTURES / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _nets() -> dict:
    # a fresh name counter, as in the generator's own process (auto names such as _plus0)
    with mx.name.NameManager():
        return _load_generator().nets(mx)


NETS = _nets()


def _record(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def _source(dot) -> str:
    """Graphviz source without the final newline (graphviz 0.8.4, MXNet's, writes none)."""
    return dot.source.rstrip("\n")


@pytest.mark.parametrize("name", sorted(NETS))
def test_print_summary_matches_mxnet(name, capsys):
    sym, shape = NETS[name]
    record = _record(name)
    mx.viz.print_summary(sym, None)
    assert capsys.readouterr().out == record["summary"]
    mx.viz.print_summary(sym, shape)
    assert capsys.readouterr().out == record["summary_shape"]
    # the same table from the symbol MXNet saved
    loaded = mx.sym.load_json(json.dumps(record["symbol"]))
    assert mx.viz.print_summary(loaded, shape, quiet=True) + "\n" == record["summary_shape"]


@pytest.mark.parametrize("name", sorted(NETS))
def test_plot_network_source_matches_mxnet(name):
    sym, shape = NETS[name]
    record = _record(name)
    if "plot_shape" in record:
        dtype = {k: np.float32 for k in shape}
        assert _source(mx.viz.plot_network(sym, shape=shape, dtype=dtype)) == \
            record["plot_shape"]
    assert _source(mx.viz.plot_network(sym, title=name, save_format="svg")) == record["plot"]
    dot = mx.viz.plot_network(sym, hide_weights=False, node_attrs={"shape": "oval"})
    assert _source(dot) == record["plot_weights"]


def test_summary_counts_parameters_independently():
    # numpy math: conv 3->8 3x3 with bias, BN(8): gamma+beta, FC (8*4*4 -> 10) with bias
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, kernel=(3, 3), num_filter=8, name="c")
    net = mx.sym.BatchNorm(net, name="bn")
    net = mx.sym.FullyConnected(mx.sym.Flatten(net), num_hidden=10, name="f")
    text = mx.viz.print_summary(net, {"data": (1, 3, 6, 6)}, quiet=True)
    expected = (3 * 8 * 9 + 8) + 2 * 8 + (8 * 4 * 4 + 1) * 10
    # the FC's input is the flatten's output: 128 features
    assert text.splitlines()[-2] == f"Total params: {expected}"
    arg_shapes, _, _ = net.infer_shape(data=(1, 3, 6, 6))
    sizes = dict(zip(net.list_arguments(), (int(np.prod(s)) for s in arg_shapes)))
    assert expected == sum(v for k, v in sizes.items() if k != "data" and "moving" not in k)


@pytest.mark.filterwarnings("ignore:Cannot decide shape")
def test_summary_errors():
    with pytest.raises(TypeError, match="symbol must be a Symbol"):
        mx.viz.print_summary("not a symbol")
    net = mx.sym.dot(mx.sym.Variable("a"), mx.sym.Variable("b"))  # b's shape: unknown
    with pytest.raises(ShapeError, match="incomplete"):
        mx.viz.print_summary(net, {"a": (2, 4)})
    with pytest.raises(ShapeError, match="incomplete"):
        mx.viz.plot_network(net, shape={"a": (2, 4)})


def test_plot_network_warns_on_repeated_names():
    # MXNet's unittest/test_viz.py::test_plot_network
    net = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data=net, name="fc", num_hidden=128)
    net = mx.sym.Activation(data=net, name="relu1", act_type="relu")
    net = mx.sym.FullyConnected(data=net, name="fc", num_hidden=10)
    net = mx.sym.SoftmaxOutput(data=net, name="out")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        mx.viz.plot_network(net, shape={"data": (100, 200)}, dtype={"data": np.float32},
                            node_attrs={"fixedsize": "false"})
    assert len(w) == 1 and "Repeated names: fc" in str(w[0].message)


def test_render_without_dot_writes_source(tmp_path, monkeypatch):
    import graphviz
    sym, _ = NETS["mlp"]
    dot = mx.viz.plot_network(sym, save_format="png")
    assert isinstance(dot, graphviz.Digraph)

    def no_dot(*args, **kwargs):
        raise graphviz.ExecutableNotFound(["dot"])
    monkeypatch.setattr(graphviz.Digraph, "render", no_dot)  # as on a machine without dot
    with pytest.warns(RuntimeWarning, match="dot program is not installed"):
        path = dot.render(filename="net", directory=str(tmp_path))
    assert Path(path) == tmp_path / "net"
    assert Path(path).read_text(encoding="utf-8") == dot.source


def test_viz_is_visualization():
    assert mx.viz is mx.visualization


def test_gluon_block_summary_matches_mxnet():
    assert _load_generator().gluon_summaries(mx) == \
        json.loads((FIXTURES / "gluon_summary.json").read_text())
