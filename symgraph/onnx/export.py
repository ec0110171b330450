"""``mx.onnx.export_model``: an MXNet symbol and its parameters as an ONNX model.

The file follows MXNet 1.9.1's layout: the graph is ``mxnet_converted_model``; its inputs
are the symbol's data inputs (the last node's ``<name>_label`` left out), in order; every
parameter a node reads is an initializer under its MXNet name (one replaced by a constant,
a fixed gamma or RNN weights in ONNX's gate order, is left out); an op node's outputs are
named after the node (``fc1``, or ``split0``, ``split1`` ... for several), and the graph's
outputs are the symbol's outputs under those names.

Every op is translated by its entry in :data:`~symgraph.onnx.emitter.CONVERTERS`; a
composite op without one is exported as the registered ops it decomposes into. An op with
neither raises :class:`~symgraph.export.graph.ExportError` naming the node, op and reason:
the exporter never writes a model that computes something else.
"""
from __future__ import annotations

import logging
import os
import tempfile

import numpy as np

from ..export.graph import (
    ExportError,
    ExportGraph,
    load_model,
    prepare,
    shapes_by_name,
    trace_dims,
)
from ..symbol.graph import Node
from .emitter import CONVERTERS, Emitter, NodeCtx, onnx_type

MIN_OPSET = 12
# the default opset: the newest at which ONNX Runtime (1.32) runs every translation (it has
# no RoiAlign/MaxRoiPool kernels for opset 22+); opsets up to the newest ``onnx`` knows
# are available, and the tests run each translation at 12, 13, 18, 21 and 28
DEFAULT_OPSET = 21


def _onnx():
    try:
        import onnx
    except ImportError:
        raise ImportError("ONNX export needs the onnx package: pip install symgraph[onnx]") \
            from None
    from . import ops  # noqa: F401 - fills CONVERTERS
    return onnx


def default_opset() -> int:
    """:data:`DEFAULT_OPSET`, or the newest the installed ``onnx`` knows if older."""
    from onnx.defs import onnx_opset_version
    return min(onnx_opset_version(), DEFAULT_OPSET)


def export_model(sym, params, in_shapes=None, in_types=np.float32,
                 onnx_file_path="model.onnx", verbose=False, dynamic=False,
                 dynamic_input_shapes=None, run_shape_inference=False, input_type=None,
                 input_shape=None, opset_version=None) -> str:
    """Export an MXNet model to an ONNX file.

    Parameters
    ----------
    sym : Symbol or str
        The network, or the path of its ``-symbol.json``.
    params : dict, [arg_params, aux_params] or str
        Parameter values, or the path of a ``.params`` file.
    in_shapes : list of tuple
        Shapes of the data inputs, in the order of ``sym.list_inputs()``.
    in_types : dtype or list of dtypes
        Their dtypes (default float32).
    onnx_file_path : str
        Where the model is written (atomically).
    verbose : bool
        Log each translated node.
    dynamic : bool
        Leave input dims dynamic (all of them, or the ``None`` dims of
        ``dynamic_input_shapes``); the model then computes every shape at run time.
    run_shape_inference : bool
        Annotate the model with ONNX's shape inference.
    input_type, input_shape
        MXNet's older names of ``in_types`` and ``in_shapes``.
    opset_version : int, optional
        ONNX opset (12 to the newest ``onnx`` knows; default :func:`default_opset`).

    Returns
    -------
    str
        ``onnx_file_path``.
    """
    model = export_proto(sym, params, in_shapes if input_shape is None else input_shape,
                         in_types if input_type is None else input_type,
                         dict(verbose=verbose, dynamic=dynamic,
                              dynamic_input_shapes=dynamic_input_shapes,
                              opset_version=opset_version))
    if run_shape_inference:
        model = _infer_shapes(model)
    _write(model, os.fspath(onnx_file_path))
    return onnx_file_path


def _infer_shapes(model):
    from onnx import shape_inference
    try:
        return shape_inference.infer_shapes(model, strict_mode=True)
    except Exception as err:  # ONNX's own inference may not know a valid construct
        logging.info("ONNX shape inference failed (%s); the model is kept as exported", err)
        return model


def _write(model, path: str) -> None:
    """Write ``model`` to ``path`` atomically (a temporary file, then a rename)."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".onnx-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(model.SerializeToString())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def export_proto(sym, params, in_shapes, in_types, options: dict):
    """The checked ``onnx.ModelProto`` of an export (``options``: export_model's flags)."""
    onnx = _onnx()
    opset = options.get("opset_version") or default_opset()
    newest = onnx.defs.onnx_opset_version()
    if not MIN_OPSET <= opset <= newest:
        raise ExportError(f"opset_version {opset} is outside the supported {MIN_OPSET} to "
                          f"{newest}")
    sym, values = load_model(sym, params)
    from ..export.graph import data_inputs
    names = data_inputs(sym, values)[0]
    shapes = shapes_by_name(names, in_shapes)
    types = _types_by_name(names, in_types)
    graph = prepare(sym, values, shapes, types, keep=lambda op: op.name in CONVERTERS)
    dynamic = bool(options.get("dynamic"))
    if dynamic:
        trace_dims(graph, _dynamic_axes(names, shapes, options.get("dynamic_input_shapes")))
    e = Emitter(opset, dynamic)
    inputs = _graph_inputs(e, graph, shapes, types, options)
    env = _initializers(e, graph)
    env.update({n: n for n in names})
    heads = _translate(e, graph, env, bool(options.get("verbose")))
    outputs = _graph_outputs(e, graph, heads, dynamic)
    used = _read_names(e.nodes) | {o.name for o in outputs}
    g = onnx.helper.make_graph(e.nodes, "mxnet_converted_model", inputs, outputs,
                               initializer=[i for i in e.initializers if i.name in used])
    model = onnx.helper.make_model(g, opset_imports=[onnx.helper.make_opsetid("", opset)],
                                   producer_name="symgraph",
                                   ir_version=_ir_version(onnx, opset))
    onnx.checker.check_model(model)
    return model


def _dynamic_axes(names: list[str], shapes: dict, given) -> dict[str, tuple]:
    """input -> its dynamic axes (all of them unless ``dynamic_input_shapes`` says)."""
    if given is None:
        return {n: tuple(range(len(shapes[n]))) for n in names}
    return {n: tuple(a for a, d in enumerate(dims) if d is None)
            for n, dims in zip(names, given)}


def _read_names(nodes) -> set[str]:
    """Every value name the nodes read, their subgraphs' (Loop bodies) included."""
    used = set()
    for node in nodes:
        used.update(node.input)
        for a in node.attribute:
            used |= _read_names(a.g.node)
            for sub in a.graphs:
                used |= _read_names(sub.node)
    return used


def _ir_version(onnx, opset: int) -> int:
    """The oldest IR version that carries ``opset`` (what older runtimes read)."""
    return onnx.helper.find_min_ir_version_for([onnx.helper.make_opsetid("", opset)])


def _types_by_name(names: list[str], in_types) -> dict:
    if isinstance(in_types, dict):
        return dict(in_types)
    if not isinstance(in_types, (list, tuple)):
        in_types = [in_types] * len(names)
    if len(in_types) != len(names):
        raise ExportError(f"in_types gives {len(in_types)} dtypes for the {len(names)} data "
                          f"inputs {names}")
    return {n: np.dtype(t).name for n, t in zip(names, in_types)}


def _graph_inputs(e: Emitter, graph: ExportGraph, shapes: dict, types: dict,
                  options: dict) -> list:
    names = graph.inputs
    if not options.get("dynamic"):
        if options.get("dynamic_input_shapes") is not None:
            raise ExportError("dynamic_input_shapes is given: set dynamic=True to use it")
        dims = [shapes[n] for n in names]
    elif options.get("dynamic_input_shapes") is None:
        dims = [tuple(None for _ in shapes[n]) for n in names]
    else:
        dims = [tuple(d) for d in options["dynamic_input_shapes"]]
        if len(dims) != len(names) or any(len(d) != len(shapes[n])
                                          for d, n in zip(dims, names)):
            raise ExportError(f"dynamic_input_shapes {dims} must give one shape per input "
                              f"with the rank of in_shapes {[shapes[n] for n in names]}")
    for n in names:
        e.claim(n)
    return [e.helper.make_tensor_value_info(n, onnx_type(types.get(n, "float32")), list(d))
            for n, d in zip(names, dims)]


def _initializers(e: Emitter, graph: ExportGraph) -> dict:
    """Every parameter the graph reads as an initializer under its MXNet name."""
    env = {}
    for name, value in graph.params.items():
        array = value.float().numpy() if str(value.dtype) == "torch.bfloat16" \
            else value.numpy()
        env[name] = e.initializer(name, array)
    return env


def _out_names(e: Emitter, node: Node, nid: int, visible: int) -> list[str]:
    """MXNet's ONNX names of a node's outputs (``name`` or ``name0``, ``name1`` ...)."""
    def named(base: str) -> list[str]:
        return [base] if visible == 1 else [f"{base}{k}" for k in range(visible)]
    names = named(node.name)
    if any(n in e.names for n in names):  # taken (node 'split00' and output 0 of 'split0')
        names = named(f"idx_{nid}_{node.name}")
    return names


def _translate(e: Emitter, graph: ExportGraph, env: dict, verbose: bool) -> list[str]:
    """Translate every op node in order; the ONNX names of the symbol's outputs."""
    ig = graph.ig
    names: dict[tuple[int, int], str] = {}
    head_of = {(ig.node_id[id(src)], k) for src, k in ig.heads}
    for nid, node in enumerate(ig.nodes):
        if node.op is None:
            names[(nid, 0)] = env.get(node.name, "")
            continue
        ctx = _node_ctx(e, graph, nid, names)
        if not node.op.loss and "" in ctx.ins:  # computes from a left-out label only
            names.update({(nid, k): "" for k in range(node.num_outputs)})
            continue
        if node.op.name not in CONVERTERS:
            raise ctx.fail("no ONNX translation is registered for this op")
        if verbose:
            logging.info("Converting %s", ctx.where)
        e.current = node.name
        got = list(CONVERTERS[node.op.name](e, ctx))
        e.current = ""
        if len(got) < len(ctx.outs):
            raise ctx.fail(f"the translation gave {len(got)} outputs, the op has "
                           f"{len(ctx.outs)}")
        for k, value in enumerate(got[:len(ctx.outs)]):
            if (nid, k) in head_of and value != ctx.outs[k]:  # outputs keep MXNet's names
                value = e.one("Identity", [value], ctx.outs[k])
            names[(nid, k)] = value
    heads = [names[(ig.node_id[id(src)], k)] for src, k in ig.heads]
    if "" in heads:
        raise ExportError(f"an output of the symbol is computed from the label "
                          f"{graph.skipped}, which the export leaves out")
    return heads


def _node_ctx(e: Emitter, graph: ExportGraph, nid: int, names: dict) -> NodeCtx:
    ig = graph.ig
    node = ig.nodes[nid]
    ins, consts = [], {}
    for slot, (src, k) in enumerate(node.inputs):
        sid = ig.node_id[id(src)]
        ins.append(names[(sid, k)])
        if src.op is None and src.name in graph.params:
            consts[slot] = graph.params[src.name].float().numpy() \
                if str(graph.params[src.name].dtype) == "torch.bfloat16" \
                else graph.params[src.name].numpy()
    visible = node.num_visible_outputs
    row = ig.row_ptr[nid]
    return NodeCtx(
        name=node.name, op=node.op.name, p=node.params, ins=ins,
        in_shapes=[graph.shape(i) for i in node.inputs],
        in_dtypes=[graph.dtype(i) for i in node.inputs],
        out_shapes=graph.shapes[row:row + node.num_outputs],
        out_dtypes=graph.dtypes[row:row + node.num_outputs],
        outs=_out_names(e, node, nid, visible), consts=consts,
        out_dim_sources=[] if graph.dim_sources is None else
        graph.dim_sources[row:row + node.num_outputs])


def _graph_outputs(e: Emitter, graph: ExportGraph, heads: list[str], dynamic: bool) -> list:
    """Value infos of the symbol's outputs (an Identity where a head is an input or shared)."""
    ig = graph.ig
    infos, seen = [], set()
    inputs = set(graph.inputs) | set(graph.params)
    for (src, k), name in zip(ig.heads, heads):
        if name in seen or name in inputs:
            name = e.one("Identity", [name], e.fresh(f"{src.name}_output"))
        seen.add(name)
        shape = graph.shape((src, k))
        dims = [None] * len(shape) if dynamic else list(shape)
        infos.append(e.helper.make_tensor_value_info(
            name, onnx_type(graph.dtype((src, k))), dims))
    return infos
