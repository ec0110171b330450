"""``mx.viz``: MXNet 1.9.1's network summary table and Graphviz plot of a Symbol.

Both read the symbol's MXNet JSON (nodes in MXNet's order, ``attrs`` as strings), so the
text is MXNet's for the same symbol, including its conventions: a node's output shape is
looked up as ``<name>_output`` (a multi-output node shows none in the summary; an edge from
one is labelled with its last output's shape), parameters are counted for Convolution,
FullyConnected, BatchNorm and Embedding only, and shapes drop the batch dimension.

``plot_network`` returns a :class:`graphviz.Digraph`; rendering needs Graphviz's ``dot``
program. Without it, ``render``/``view`` keep the written ``.gv`` source, warn, and return
its path instead of failing.

Examples
--------
>>> import symgraph as mx
>>> net = mx.sym.FullyConnected(mx.sym.Variable('data'), name='fc1', num_hidden=4)
>>> mx.viz.print_summary(net, {'data': (2, 3)}, line_length=64, positions=[24, 40, 50, 64])
... # doctest: +NORMALIZE_WHITESPACE
________________________________________________________________
Layer (type)            Output Shape    Param #   Previous Layer
================================================================
data(null)              3               0
________________________________________________________________
fc1(FullyConnected)     4               16        data
================================================================
Total params: 16
________________________________________________________________
>>> print(mx.viz.plot_network(net).source)  # doctest: +NORMALIZE_WHITESPACE
digraph plot {
    data [label=data fillcolor="#8dd3c7" fixedsize=true height=0.8034 shape=oval
          style=filled width=1.3]
    fc1 [label="FullyConnected
4" fillcolor="#fb8072" fixedsize=true height=0.8034 shape=box style=filled width=1.3]
    fc1 -> data [label="" arrowtail=open dir=back]
}
"""
from __future__ import annotations

import functools
import json
import re
import warnings

from .base import DTypeError, GraphError, ShapeError
from .symbol.symbol import Symbol

__all__ = ["print_summary", "plot_network"]

_COLORS = ("#8dd3c7", "#fb8072", "#ffffb3", "#bebada", "#80b1d3", "#fdb462", "#b3de69",
           "#fccde5")
_WEIGHT_SUFFIXES = ("_weight", "_bias", "_beta", "_gamma", "_moving_var", "_moving_mean",
                    "_running_var", "_running_mean")
_HEADER = ("Layer (type)", "Output Shape", "Param #", "Previous Layer")


def _digits(text: str) -> list[str]:
    """The numbers of a tuple attribute: ``'(3, 3)'`` -> ``['3', '3']``."""
    return re.findall(r"\d+", text)


def _graph(symbol, what: str) -> tuple[list, list]:
    if not isinstance(symbol, Symbol):
        raise TypeError(f"{what}: symbol must be a Symbol, got {type(symbol).__name__}")
    conf = json.loads(symbol.tojson())
    return conf["nodes"], conf["heads"]


def _inferred(symbol: Symbol, given: dict | None, kind: str) -> dict | None:
    """Internal output name -> shape (``kind`` 'shape') or dtype ('type'); None if not given."""
    if given is None:
        return None
    internals = symbol.get_internals()
    infer = internals.infer_shape if kind == "shape" else internals.infer_type
    _, outs, _ = infer(**given)
    if outs is None:
        error = ShapeError if kind == "shape" else DTypeError
        raise error(f"Input {kind} is incomplete: {given} does not determine every "
                         f"output of the symbol")
    return dict(zip(internals.list_outputs(), outs))


def _row(fields, positions) -> str:
    """One table row: each field cut at, and padded to, its end column."""
    line = ""
    for field, end in zip(fields, positions):
        line = (line + str(field))[:end]
        line += " " * (end - len(line))
    return line


def _entry_key(node: dict) -> str:
    """The internals name MXNet reads a node's output shape from."""
    return node["name"] + "_output" if node["op"] != "null" else node["name"]


def _layer_params(node: dict, in_channels: int, shapes: dict | None) -> int:
    """Parameters MXNet's summary counts for one layer (``in_channels``: the inputs'
    summed first non-batch dimension, 0 without shapes)."""
    op, attrs = node["op"], node.get("attrs", {})
    bias = attrs.get("no_bias") != "True"
    if op == "Convolution":
        count = in_channels * int(attrs["num_filter"]) // int(attrs.get("num_group", "1"))
        for k in _digits(attrs["kernel"]):
            count *= int(k)
        return count + (int(attrs["num_filter"]) if bias else 0)
    if op == "FullyConnected":
        return (in_channels + bias) * int(attrs["num_hidden"])
    if op == "BatchNorm" and shapes is not None:
        shape = shapes.get(_entry_key(node))  # absent: several outputs (output_mean_var)
        return int(shape[1]) * 2 if shape is not None and len(shape) > 1 else 0
    if op == "Embedding":
        return int(attrs["input_dim"]) * int(attrs["output_dim"])
    return 0


def _layer_rows(nodes: list, index: int, heads: set, shapes: dict | None,
                positions) -> tuple[list[str], int]:
    """The rows of node ``index`` (one per previous layer) and its parameter count."""
    node = nodes[index]
    previous, in_channels = [], 0
    for entry in node["inputs"] if node["op"] != "null" else ():
        src = nodes[entry[0]]
        if src["op"] == "null" and entry[0] not in heads:
            continue
        previous.append(src["name"])
        shape = shapes.get(_entry_key(src)) if shapes is not None else None
        if shape is not None and len(shape) > 1:
            in_channels += int(shape[1])
    out_shape = ()
    if shapes is not None and (node["op"] != "null" or index in heads):
        out_shape = tuple(shapes.get(_entry_key(node), ()))[1:]
    count = _layer_params(node, in_channels, shapes)
    fields = [f"{node['name']}({node['op']})", "x".join(str(x) for x in out_shape), count,
              previous[0] if previous else ""]
    rows = [_row(fields, positions)]
    rows += [_row(["", "", "", name], positions) for name in previous[1:]]
    return rows, count


def print_summary(symbol: Symbol, shape: dict | None = None, line_length: int = 120,
                  positions=(.44, .64, .74, 1.), quiet: bool = False) -> str | None:
    """Print MXNet's layer table of ``symbol``: layer (type), output shape, parameter count
    and previous layers, then the total number of parameters.

    Parameters
    ----------
    symbol : Symbol
        The network.
    shape : dict of str to tuple, optional
        Input shapes; without them no output shapes are shown and parameter counts that
        depend on them are 0 (as in MXNet).
    line_length : int
        Width of the table.
    positions : sequence of float or int
        End columns of the four fields, as fractions of ``line_length`` (when the last is
        at most 1) or absolute.
    quiet : bool
        Return the table as a string instead of printing it (MXNet always prints).

    Examples
    --------
    >>> import symgraph as mx
    >>> net = mx.sym.Embedding(mx.sym.Variable('x'), input_dim=10, output_dim=3, name='e')
    >>> print(mx.viz.print_summary(net, quiet=True, line_length=40).splitlines()[-2])
    Total params: 30
    """
    nodes, heads = _graph(symbol, "print_summary")
    shapes = _inferred(symbol, shape, "shape")
    # MXNet reads its first head entry as a set of numbers: [node, output index, version]
    head_set = set(heads[0])
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]
    lines = ["_" * line_length, _row(_HEADER, positions), "=" * line_length]
    total = 0
    for i, node in enumerate(nodes):
        if node["op"] == "null" and i > 0:
            continue
        rows, count = _layer_rows(nodes, i, head_set, shapes, positions)
        total += count
        lines += rows + [("=" if i == len(nodes) - 1 else "_") * line_length]
    lines += [f"Total params: {total}", "_" * line_length]
    text = "\n".join(lines)
    if quiet:
        return text
    print(text)
    return None


@functools.cache
def _digraph_class():
    try:
        import graphviz
    except ImportError:
        raise ImportError("Draw network requires graphviz library") from None

    class Digraph(graphviz.Digraph):
        """A Digraph whose rendering keeps the ``.gv`` source when Graphviz's ``dot``
        program is missing (a warning says so) instead of failing."""

        def render(self, *args, **kwargs):
            try:
                return super().render(*args, **kwargs)
            except graphviz.ExecutableNotFound as err:
                filename = args[0] if args else kwargs.get("filename")
                directory = args[1] if len(args) > 1 else kwargs.get("directory")
                path = self.save(filename=filename, directory=directory)
                warnings.warn(f"plot_network: Graphviz's dot program is not installed ({err});"
                              f" wrote the graph's source to {path} instead of a "
                              f"{self.format} file", RuntimeWarning, stacklevel=2)
                return path

        def view(self, *args, **kwargs):
            kwargs.setdefault("view", True)
            return self.render(*args, **kwargs)

    return Digraph


def _node_style(node: dict, base: dict) -> tuple[str, dict]:
    """Label and attributes of an operator node (MXNet's colours per op family)."""
    op, attrs, attr = node["op"], node.get("attrs", {}), dict(base)
    label, color = node["name"], 7
    if op == "Convolution":
        stride = "x".join(_digits(attrs["stride"])) if "stride" in attrs else "1"
        label = (f"Convolution\n{'x'.join(_digits(attrs['kernel']))}/{stride}, "
                 f"{attrs['num_filter']}")
        color = 1
    elif op == "FullyConnected":
        label, color = f"FullyConnected\n{attrs['num_hidden']}", 1
    elif op == "BatchNorm":
        color = 3
    elif op in ("Activation", "LeakyReLU"):
        default = "Leaky" if op == "LeakyReLU" else ""
        label, color = f"{op}\n{attrs.get('act_type', default)}", 2
    elif op == "Pooling":
        kernel = "x".join(_digits(attrs["kernel"])) if "kernel" in attrs else "[]"
        stride = "x".join(_digits(attrs["stride"])) if "stride" in attrs else "1"
        label, color = f"Pooling\n{attrs.get('pool_type', 'max')}, {kernel}/{stride}", 4
    elif op in ("Concat", "Flatten", "Reshape"):
        color = 5
    elif op == "Softmax":
        color = 6
    elif op == "Custom":
        label = attrs["op_type"]
    attr["fillcolor"] = _COLORS[color]
    return label, attr


def _edge_key(src: dict) -> str:
    """Where MXNet reads an edge's shape: a multi-output node's last output."""
    key = _entry_key(src)
    if src["op"] != "null" and "num_outputs" in src.get("attrs", {}):
        key += str(int(src["attrs"]["num_outputs"]) - 1)
    return key


def _edge_label(src: dict, shapes: dict | None, dtypes: dict | None) -> str:
    key, label = _edge_key(src), ""
    for table in (shapes, dtypes):
        if table is not None and key not in table:
            raise GraphError(f"plot_network: no inferred shape or type for {key!r} (input "
                             f"of an edge from node {src['name']!r})")
    if shapes is not None:
        label = "x".join(str(x) for x in shapes[key][1:])
    if dtypes is not None:
        label += f"({dtypes[key].__name__})"
    return label


def _warn_repeated(nodes: list) -> None:
    names = [n["name"] for n in nodes]
    if len(names) == len(set(names)):
        return
    seen: set = set()
    repeated = {n for n in names if n in seen or seen.add(n)}
    warnings.warn("There are multiple variables with the same name in your graph, this may "
                  "result in cyclic graph. Repeated names: " + ",".join(sorted(repeated)),
                  RuntimeWarning, stacklevel=3)


def plot_network(symbol: Symbol, title: str = "plot", save_format: str = "pdf",
                 shape: dict | None = None, dtype: dict | None = None,
                 node_attrs: dict | None = None, hide_weights: bool = True):
    """A :class:`graphviz.Digraph` of the graph computing ``symbol``, styled as MXNet's.

    Parameters
    ----------
    symbol : Symbol
        The network.
    title : str
        The graph's name (and default file name when rendered).
    save_format : str
        Output format for ``render`` ('pdf', 'png', 'svg', ...).
    shape, dtype : dict, optional
        Input shapes / dtypes; when given, edges are labelled with the tensors' shapes
        (without the batch dimension) / types.
    node_attrs : dict, optional
        Graphviz attributes overriding the node defaults (box, 1.3 x 0.8034, filled).
    hide_weights : bool
        Leave out variables named like weights (``*_weight``, ``*_bias``, ``*_gamma``, ...)
        and their edges.

    Examples
    --------
    >>> import symgraph as mx
    >>> net = mx.sym.Activation(mx.sym.Variable('x'), act_type='relu', name='act')
    >>> dot = mx.viz.plot_network(net, shape={'x': (2, 5)})
    >>> dot.body[-1].strip()
    'act -> x [label=5 arrowtail=open dir=back]'
    """
    digraph = _digraph_class()
    nodes, _ = _graph(symbol, "plot_network")
    shapes = _inferred(symbol, shape, "shape")
    dtypes = _inferred(symbol, dtype, "type")
    _warn_repeated(nodes)
    base = {"shape": "box", "fixedsize": "true", "width": "1.3", "height": "0.8034",
            "style": "filled", **(node_attrs or {})}
    dot = digraph(name=title, format=save_format)
    hidden = set()
    for node in nodes:
        if node["op"] == "null":
            if node["name"].endswith(_WEIGHT_SUFFIXES):
                if hide_weights:  # otherwise drawn as Graphviz's default node by its edge
                    hidden.add(node["name"])
                continue
            label, attr = node["name"], {**base, "shape": "oval", "fillcolor": _COLORS[0]}
        else:
            label, attr = _node_style(node, base)
        dot.node(name=node["name"], label=label, **attr)
    for node in nodes:
        if node["op"] == "null":
            continue
        inputs = node["inputs"][:1] if node["op"] == "_contrib_BilinearResize2D" else \
            node["inputs"]
        for entry in inputs:
            src = nodes[entry[0]]
            if src["name"] in hidden:
                continue
            dot.edge(tail_name=node["name"], head_name=src["name"], dir="back",
                     arrowtail="open", label=_edge_label(src, shapes, dtypes))
    return dot
