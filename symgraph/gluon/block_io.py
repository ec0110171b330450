"""``Block.save``/``Block.load``: a model's structure and parameters, as MXNet 1.9.1 writes
them.

``prefix-model.json`` maps each block, in creation order, to its entry: key
``<class name lowercased><index>`` (index counting blocks depth first), holding
``orig_name``, ``children`` (child name -> its key in the parent) and, for a hybridized
block that ran, ``hybridized``, ``in_format``, ``out_format``, ``inputs`` and ``symbol``
(graph JSON). ``prefix-model.params`` is :meth:`Block.save_parameters`'s file. Both files
are written atomically; loading reads JSON and MXNet's parameter format only (no pickle)
and checks the structure against the block before changing anything.

Examples
--------
>>> import os, tempfile
>>> import symgraph as mx
>>> def make(prefix):
...     net = mx.gluon.nn.HybridSequential(prefix=prefix)
...     with net.name_scope():
...         net.add(mx.gluon.nn.Dense(2, in_units=3))
...     return net
>>> net = make('net_')
>>> net.initialize()
>>> prefix = os.path.join(tempfile.mkdtemp(), 'net')
>>> net.save(prefix)
>>> sorted(os.listdir(os.path.dirname(prefix)))
['net-model.json', 'net-model.params']
>>> other = make('other_')
>>> other.load(prefix)
>>> other.name, list(other.collect_params().keys())
('net', ['net_dense0_weight', 'net_dense0_bias'])
>>> mx.gluon.nn.Dropout(0.5, prefix='drop_').load(prefix)
Traceback (most recent call last):
...
symgraph.base.MXNetError: Block.load: net-model.json has no entry 'dropout0' for block \
'drop' (Dropout): the model must be created as the saved one was (same classes, same order)
"""
from __future__ import annotations

import json
import os
from collections import defaultdict

from .. import ndarray as _nd
from ..base import MXNetError
from ..fileio import atomic_write
from ..symbol import load_json
from .block import Block, HybridBlock, _brief
from .parameter import ParameterLoadError, ParameterNameError


def save_model(block: Block, prefix: str) -> None:
    """Write ``prefix-model.json`` and ``prefix-model.params`` for ``block``."""
    model: dict = {}
    _describe(block, [0], model)
    atomic_write(f"{prefix}-model.json", json.dumps(model).encode())
    block.save_parameters(f"{prefix}-model.params")


def _describe(block: Block, index: list, structure: dict) -> None:
    entry: dict = {"orig_name": block.name}
    structure[f"{type(block).__name__.lower()}{index[0]}"] = entry
    if isinstance(block, HybridBlock):
        if block._cached_graph and (block._active or block._inferred):
            inputs, out = block._cached_graph
            entry.update(in_format=block._in_format, out_format=block._out_format,
                         inputs=[s.tojson() for s in inputs], symbol=out.tojson(),
                         hybridized=True)
        else:
            entry["hybridized"] = False
    children: dict = {}
    entry["children"] = children
    for key, child in block._children.items():
        index[0] += 1
        children[child.name] = key
        _describe(child, index, entry)


def load_model(block: Block, prefix: str) -> None:
    """Restore names, hybridized graphs and parameters written by :func:`save_model`."""
    fname = f"{prefix}-model.json"
    with open(fname, encoding="utf-8") as f:
        try:
            model = json.load(f)
        except json.JSONDecodeError as err:
            raise MXNetError(f"Block.load: {fname} is not a model file: {err}") from err
    plan: list = []
    _match(block, [0], model, os.path.basename(fname), plan)
    # everything matched: change the blocks, children before their parents (a parent
    # keys its children by their restored names)
    for blk, entry, graph in reversed(plan):
        _restore(blk, entry, graph)
    block.load_parameters(f"{prefix}-model.params")


def _match(block: Block, index: list, structure, fname: str, plan: list) -> dict:
    """Check ``block`` (and its children) against the saved structure, collecting what
    :func:`_restore` applies: (block, entry, (inputs, symbol) or None). Its entry."""
    key = f"{type(block).__name__.lower()}{index[0]}"
    entry = structure.get(key) if isinstance(structure, dict) else None
    if not isinstance(entry, dict) or not isinstance(entry.get("orig_name"), str) or \
            not isinstance(entry.get("children"), dict):
        raise MXNetError(f"Block.load: {fname} has no entry {key!r} for block {block.name!r} "
                         f"({type(block).__name__}): the model must be created as the saved one "
                         "was (same classes, same order)")
    plan.append((block, entry, _saved_graph(block, entry, fname)))
    for child in block._children.values():
        index[0] += 1
        saved = _match(child, index, entry, fname, plan)
        if saved["orig_name"] not in entry["children"]:
            raise MXNetError(f"Block.load: {fname} does not list {saved['orig_name']!r} among "
                             f"the children of {entry['orig_name']!r}")
    return entry


def _saved_graph(block: Block, entry: dict, fname: str):
    if not isinstance(block, HybridBlock) or not entry.get("hybridized"):
        return None
    try:
        inputs = [load_json(s) for s in entry["inputs"]]
        graph = inputs, load_json(entry["symbol"])
        _check_format(entry["in_format"]), _check_format(entry["out_format"])
    except (KeyError, TypeError, ValueError, MXNetError) as err:
        raise MXNetError(f"Block.load: the graph of {entry['orig_name']!r} in {fname} cannot "
                         f"be read: {err}") from err
    return graph


def _check_format(fmt) -> None:
    """An argument structure: an int, or a list of them, nested."""
    if isinstance(fmt, list):
        for f in fmt:
            _check_format(f)
    elif not isinstance(fmt, int) or isinstance(fmt, bool):
        raise TypeError(f"bad argument structure {fmt!r}")


def _restore(block: Block, entry: dict, graph) -> None:
    """Rename ``block`` (and its parameters' keys) as saved; restore its graph; key its
    children as the saved parent did."""
    block._name = entry["orig_name"]
    if graph is not None:
        block._clear_cached_op()
        block._in_format, block._out_format = entry["in_format"], entry["out_format"]
        block._cached_graph = graph
        block._active = True
    params = block.params._params
    cut = len(block.params.prefix)
    for key in list(params):
        params[f"{block.name}_{key[cut:]}"] = params.pop(key)
    names = entry["children"]
    for key in list(block._children):
        child = block._children.pop(key)
        block._children[names[child.name]] = child


def load_parameters(block: Block, filename: str, ctx, allow_missing: bool,
                    ignore_extra: bool, cast: tuple) -> None:
    """:meth:`Block.load_parameters` (``cast``: ``(cast_dtype, dtype_source)``)."""
    cast_dtype, dtype_source = cast
    loaded = _nd.load(filename)
    params = block._collect_params_with_prefix()
    if not loaded and not params:
        return
    if not isinstance(loaded, dict):
        raise MXNetError(f"load_parameters: {filename} holds unnamed arrays")
    if not any("." in k for k in loaded):  # legacy: ParameterDict.save names
        block.collect_params().load(filename, ctx, allow_missing, ignore_extra, block.prefix,
                                    cast_dtype=cast_dtype, dtype_source=dtype_source)
        return
    if not allow_missing:
        inverse = defaultdict(list)
        for k, v in params.items():
            inverse[id(v)].append(k)
        for name, param in params.items():
            if not any(p in loaded for p in inverse[id(param)]):
                raise ParameterLoadError(
                    f"Parameter '{name}' is missing in file '{filename}', which contains "
                    f"parameters: {_brief(loaded.keys())}. Set allow_missing=True to "
                    "ignore missing parameters.")
    staged = []  # all or nothing: every entry is checked before any is loaded
    for name in loaded:
        if not ignore_extra and name not in params:
            raise ParameterNameError(
                f"Parameter '{name}' loaded from file '{filename}' is not present in "
                f"ParameterDict, which contains parameters {_brief(block._params.keys())}. "
                "Set ignore_extra=True to ignore. ")
        if name in params:
            staged.append((params[name], params[name]._check_load(
                loaded[name], ctx, cast_dtype, dtype_source)))
    for param, checked in staged:
        param._apply_load(*checked)
