"""What every exporter starts from: a symbol, its parameter values and its input shapes,
resolved into one indexed graph with the shape and dtype of every entry.

``load_model`` accepts what MXNet's ``export_model`` accepts (a Symbol or a ``.json``
path; a params dict, ``[arg_params, aux_params]`` or a ``.params`` path) and
``prepare`` runs symgraph's inference over the graph, so a translation reads the shapes it
needs instead of guessing them.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ..base import MXNetError, ShapeError, dtype_name
from ..ops.base import OpDef
from ..symbol.graph import Entry, IndexedGraph, Node
from ..symbol.infer import infer_shapes, infer_types


class ExportError(MXNetError):
    """A model cannot be exported as asked: the message names the node, op and reason."""


def load_model(sym, params) -> tuple:
    """``(Symbol, {name: torch.Tensor})`` from a Symbol or JSON path and a params dict,
    ``[arg_params, aux_params]`` or ``.params`` path (``arg:``/``aux:`` prefixes dropped)."""
    from .. import ndarray as nd
    from ..symbol import Symbol
    from ..symbol import load as sym_load
    if isinstance(sym, (str, os.PathLike)):
        sym = sym_load(os.fspath(sym))
    if not isinstance(sym, Symbol):
        raise ExportError(f"sym must be a Symbol or a symbol JSON path, got {type(sym).__name__}")
    if isinstance(params, (str, os.PathLike)):
        path = os.fspath(params)
        params = nd.load(path)
        if params == []:  # a model without parameters saves an empty file
            params = {}
        if not isinstance(params, dict):
            raise ExportError(f"{path}: a params file must hold named arrays")
    if isinstance(params, (list, tuple)):
        if len(params) != 2:
            raise ExportError("params given as a list must be [arg_params, aux_params]")
        params = {**params[0], **params[1]}
    if not isinstance(params, dict):
        raise ExportError(f"params must be a dict, a [arg, aux] list or a .params path, got "
                          f"{type(params).__name__}")
    return sym, {_strip(k): _tensor(k, v) for k, v in params.items()}


def _strip(key: str) -> str:
    kind, sep, name = key.partition(":")
    return name if sep and kind in ("arg", "aux") else key


def _tensor(name: str, value) -> torch.Tensor:
    from ..ndarray import NDArray
    if isinstance(value, NDArray):
        return value.tostype("default")._t.detach().cpu() if value.stype != "default" \
            else value._t.detach().cpu()
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(value))
    raise ExportError(f"parameter {name}: expected an NDArray, numpy array or tensor, got "
                      f"{type(value).__name__}")


@dataclass
class ExportGraph:
    """The graph an exporter walks: nodes in MXNet's order, every entry's shape and dtype."""

    ig: IndexedGraph
    shapes: list[tuple]  # per entry id
    dtypes: list[str | None]  # per entry id (numpy names)
    inputs: list[str]  # the data inputs (variables that are not parameters), in order
    params: dict[str, torch.Tensor]  # parameter values the graph reads (args and aux)
    output_names: list[str]  # MXNet's ``list_outputs`` of the symbol
    skipped: list[str]  # variables left out: labels of loss heads nothing else reads
    # per entry, per dim: None (fixed) or (input name, axis) it equals at any input size;
    # filled by :func:`trace_dims` for exports that keep input dims dynamic
    dim_sources: list | None = None

    def shape(self, entry: Entry) -> tuple:
        return self.shapes[self.ig.entry_id(entry)]

    def dtype(self, entry: Entry) -> str | None:
        return self.dtypes[self.ig.entry_id(entry)]


def data_inputs(sym, params: dict) -> tuple[list[str], list[str]]:
    """``(inputs, skipped)``: the symbol's variables that are not parameters, and the label
    MXNet's exporter leaves out (the last node's ``<name>_label`` when no value is given)."""
    last = sym.get_internals()[len(sym.get_internals()) - 1].name
    label = f"{last}_label"
    names = [n for n in sym.list_inputs() if n not in params]
    return [n for n in names if n != label], [n for n in names if n == label]


def prepare(sym, params: dict, in_shapes: dict, in_types: dict,
            keep: Callable[[OpDef], bool] | None = None) -> ExportGraph:
    """The graph of ``sym`` with composite ops expanded unless ``keep(op)``, inferred from
    the data inputs' shapes and dtypes and the parameters' values."""
    from ..compiler.composite import expand
    inputs, skipped = data_inputs(sym, params)
    heads = expand(list(sym._outputs), keep)
    ig = IndexedGraph(heads)
    by_name = {ig.nodes[i].name: i for i in ig.variable_ids}
    shapes0, types0 = {}, {}
    for name, nid in by_name.items():
        if name in params:
            shapes0[nid] = tuple(params[name].shape)
            types0[nid] = dtype_name(params[name].dtype)
        elif name in in_shapes:
            shapes0[nid] = tuple(int(d) for d in in_shapes[name])
            types0[nid] = dtype_name(in_types.get(name, np.float32))
    shapes = infer_shapes(ig, shapes0)
    dtypes = infer_types(ig, types0)
    graph = ExportGraph(ig, shapes, dtypes, inputs, {k: v for k, v in params.items()
                                                     if k in by_name},
                        sym.list_outputs(), skipped)
    _check_known(graph)
    return graph


def trace_dims(graph: ExportGraph, dynamic: dict[str, tuple]) -> None:
    """Which input dim each entry's dims follow when the ``dynamic`` dims (input -> axes)
    change: inference runs again with those dims grown (all of them, else the batch axes
    alone when the graph fixes the others, as an unrolled RNN fixes its length), and a dim
    that moves with an input dim is that dim (one that moves otherwise is ``("?", -1)``)."""
    for axes in (dynamic, {k: tuple(a for a in v if a == 0) for k, v in dynamic.items()}):
        grown = _grown_shapes(graph, axes)
        if grown is not None:
            graph.dim_sources = _sources(graph, axes, grown)
            return


def _grown_shapes(graph: ExportGraph, dynamic: dict[str, tuple]) -> list | None:
    ig = graph.ig
    initial = {}
    for i in ig.variable_ids:
        shape, axes = graph.shapes[ig.row_ptr[i]], dynamic.get(ig.nodes[i].name, ())
        if shape:
            initial[i] = tuple(d + 3 if a in axes else d for a, d in enumerate(shape))
    try:
        return infer_shapes(ig, initial)
    except MXNetError:
        return None


def _sources(graph: ExportGraph, dynamic: dict[str, tuple], grown: list) -> list:
    ig = graph.ig
    base = {ig.nodes[i].name: graph.shapes[ig.row_ptr[i]] for i in ig.variable_ids}
    moved = {}
    for name, axes in dynamic.items():
        for a in axes:
            moved.setdefault((base[name][a], base[name][a] + 3), (name, a))
    sources = []
    for old, new in zip(graph.shapes, grown):
        if not old or len(old) != len(new or ()):
            sources.append(None)
            continue
        sources.append(tuple(None if o == g else moved.get((o, g), ("?", -1))
                             for o, g in zip(old, new)))
    return sources


def _check_known(graph: ExportGraph) -> None:
    """Every entry a used node reads or gives has a full shape (else name what is missing)."""
    for node in graph.ig.nodes:
        if node.op is None:
            continue
        for slot, (src, k) in enumerate(node.inputs):
            if src.op is None and src.name in graph.skipped:
                continue
            shape = graph.shape((src, k))
            if not shape or 0 in shape:
                raise ShapeError(f"Error in {node.where}: the shape of input {slot} "
                                 f"({_entry_name(src, k)}) is not known from the given input "
                                 f"shapes {_given(graph)}; give it in in_shapes")


def _entry_name(node: Node, k: int) -> str:
    return node.name if node.op is None else node.output_name(k)


def _given(graph: ExportGraph) -> dict:
    ig = graph.ig
    return {ig.nodes[i].name: graph.shapes[ig.row_ptr[i]] for i in ig.variable_ids
            if ig.nodes[i].name in graph.inputs}


def shapes_by_name(names: Sequence[str], in_shapes) -> dict[str, tuple]:
    """``{input name: shape}`` from MXNet's list of shapes (in input order) or a dict."""
    if isinstance(in_shapes, dict):
        unknown = set(in_shapes) - set(names)
        if unknown:
            raise ExportError(f"in_shapes names {sorted(unknown)}, which are not data inputs "
                              f"of the symbol; its data inputs are {list(names)}")
        return {k: tuple(v) for k, v in in_shapes.items()}
    in_shapes = list(in_shapes or [])
    if in_shapes and not isinstance(in_shapes[0], (tuple, list)):
        in_shapes = [in_shapes]
    if len(in_shapes) != len(names):
        raise ExportError(f"in_shapes gives {len(in_shapes)} shapes for the symbol's "
                          f"{len(names)} data inputs {list(names)}")
    return {n: tuple(int(d) for d in s) for n, s in zip(names, in_shapes)}
