"""MXNet 1.x symbol JSON: writing (byte-compatible layout), loading (current and legacy forms)."""
from __future__ import annotations

import json
import math
import os
import re

import networkx as nx
import numpy as np

from ..attrs import HIDDEN_KEYS, hide_keys
from ..base import AttrError, FileFormatError, GraphError, MXNetError
from ..fileio import atomic_write
from ..ops.base import get_op
from .graph import IndexedGraph, Node
from .symbol import Symbol, _as_dtype, _as_shape

MXNET_VERSION = 10901


# ------------------------------------------------------------------ writing

def _q(s: str) -> str:
    return json.dumps(s)


def _attrs_text(attrs: dict[str, str], indent: int) -> str:
    """dmlc's JSONWriter: a map of more than one entry goes one entry per line."""
    items = [f"{_q(k)}: {_q(v)}" for k, v in sorted(attrs.items())]
    if len(items) <= 1:
        return "{" + ", ".join(items) + "}"
    pad = " " * (indent + 2)
    return "{\n" + ", \n".join(pad + it for it in items) + "\n" + " " * indent + "}"


def _list_text(items: list[str], indent: int) -> str:
    """dmlc's JSONWriter: arrays of more than 10 items go one item per line."""
    if len(items) <= 10:
        return "[" + ", ".join(items) + "]"
    pad = " " * (indent + 2)
    return "[\n" + ", \n".join(pad + it for it in items) + "\n" + " " * indent + "]"


def _entries_text(entries: list[list[int]], indent: int) -> str:
    return _list_text(["[" + ", ".join(map(str, e)) + "]" for e in entries], indent)


def _node_text(node: Node, inputs: list[list[int]]) -> str:
    fields = [f'"op": {_q(node.op.name if node.op else "null")}', f'"name": {_q(node.name)}']
    if node.attrs:
        fields.append(f'"attrs": {_attrs_text(node.attrs, 6)}')
    fields.append(f'"inputs": {_entries_text(inputs, 6)}')
    if node.subgraphs:  # control flow: each subgraph a graph document, 8 spaces deeper
        subs = [_graph_text(sub, None).replace("\n", "\n        ") for sub in node.subgraphs]
        fields.append('"subgraphs": [\n        ' + ", \n        ".join(subs) + "\n      ]")
    return "    {\n      " + ", \n      ".join(fields) + "\n    }"


def _input_entries(ig: IndexedGraph) -> list[list[list[int]]]:
    """``[node, output, version]`` per input; a mutated (aux) variable's version counts up."""
    versions: dict[int, int] = {}
    out = []
    for node in ig.nodes:
        n_regular = node.num_regular_inputs()
        entries = []
        for slot, (src, idx) in enumerate(node.inputs):
            sid = ig.node_id[id(src)]
            if slot >= n_regular:
                versions[sid] = versions.get(sid, 0) + 1
            entries.append([sid, idx, versions.get(sid, 0) if src.op is None else 0])
        if node.versions is not None and len(node.versions) == len(entries):
            for entry, version in zip(entries, node.versions):
                entry[2] = version  # keep what the loaded file said
        out.append(entries)
    return out


def to_json(symbol: Symbol) -> str:
    """The symbol as MXNet 1.9.1 writes it (same keys, order and whitespace)."""
    return _graph_text(symbol, _graph_attrs_text())


def _graph_text(symbol: Symbol, attrs: str | None) -> str:
    """A graph document; a subgraph's has no ``attrs`` (None)."""
    ig = IndexedGraph(symbol._outputs)
    nodes = []
    for node, inputs in zip(ig.nodes, _input_entries(ig)):
        nodes.append(_node_text(node, inputs))
    heads = [[ig.node_id[id(n)], i, 0] for n, i in ig.heads]
    return ("{\n  \"nodes\": [\n" + ", \n".join(nodes) + "\n  ], \n"
            f"  \"arg_nodes\": {_list_text(list(map(str, ig.variable_ids)), 2)}, \n"
            f"  \"node_row_ptr\": {_list_text(list(map(str, ig.row_ptr)), 2)}, \n"
            f"  \"heads\": {_entries_text(heads, 2)}"
            + (f", \n  \"attrs\": {attrs}\n}}" if attrs is not None else "\n}"))


def _graph_attrs_text() -> str:
    """The graph's ``attrs``: MXNet adds ``is_np_shape`` while NumPy shape semantics is on."""
    from ..util import is_np_shape
    if is_np_shape():
        return ("{\n    \"is_np_shape\": [\"int\", 1], \n"
                f"    \"mxnet_version\": [\"int\", {MXNET_VERSION}]\n  }}")
    return f"{{\"mxnet_version\": [\"int\", {MXNET_VERSION}]}}"


def save(symbol: Symbol, fname) -> None:
    """Write the symbol's JSON to ``fname`` atomically."""
    atomic_write(os.fspath(fname), symbol.tojson().encode())


# ------------------------------------------------------------------ loading

# Limits of what a symbol JSON may hold. The largest files MXNet users save (unrolled
# language models) are a few MB (a 300-step LSTM: 0.6 MB); the layout nests 5 deep
# ({"nodes": [{"inputs": [[0, 0, 0]]}]}). Checked before decoding, so no text makes the
# decoder recurse or allocate without bound (json.loads recurses once per level: a deep text
# raises RecursionError, or overflows the C stack under a raised recursion limit; 32 MB of
# "[]," decode to ~0.7 GB of lists).
MAX_JSON_CHARS = 32 * 2**20
MAX_JSON_DEPTH = 64
_MAX_OUTPUT = 2**31 - 1  # output indices and versions fit MXNet's uint32 fields
_MAX_VERSION = 2**32 - 1
_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]++")


class SymbolFileError(GraphError, FileFormatError):
    """Symbol JSON that cannot be loaded: malformed, over the limits, or naming nodes,
    outputs or entries that do not exist (also a ``GraphError`` and a ``ValueError``)."""


def _nesting_depth(text: str) -> int:
    """The deepest bracket nesting of a JSON text (string contents skipped), iteratively."""
    skeleton = _NOT_BRACKET.sub("", _STRING.sub("", text)).encode("ascii")
    codes = np.frombuffer(skeleton, np.uint8)
    steps = np.where((codes == ord("[")) | (codes == ord("{")), np.int32(1), np.int32(-1))
    return int(np.cumsum(steps, dtype=np.int32).max(initial=0))


def _decode(text, src: str) -> dict:
    """The JSON document, after the size and depth limits; malformed text raises."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as err:
            raise SymbolFileError(f"{src} is not UTF-8 text: {err}") from None
    if not isinstance(text, str):
        raise TypeError(f"load_json expects a JSON string, got {type(text).__name__}")
    if len(text) > MAX_JSON_CHARS:
        raise SymbolFileError(f"{src} has {len(text)} characters, more than the limit of "
                              f"{MAX_JSON_CHARS} (symgraph.symbol.json_io.MAX_JSON_CHARS)")
    depth = _nesting_depth(text)
    if depth > MAX_JSON_DEPTH:
        raise SymbolFileError(f"{src} nests {depth} levels deep, more than the limit of "
                              f"{MAX_JSON_DEPTH}; a symbol nests 5")
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as err:  # JSONDecodeError is a ValueError
        raise SymbolFileError(f"{src} is malformed: {err}") from None
    if not isinstance(doc, dict):
        raise SymbolFileError(f"{src} is malformed: expected an object with 'nodes' and "
                              f"'heads', got {type(doc).__name__}")
    return doc


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _entry_problem(entry, n_nodes: int) -> str | None:
    """Why ``entry`` is not a ``[node, output(, version)]`` entry of this file, or None."""
    if not isinstance(entry, list) or len(entry) not in (2, 3) or \
            not all(_is_int(v) for v in entry):
        return f"{json.dumps(entry)[:80]} is not a [node, output, version] triple of ints"
    if not 0 <= entry[0] < n_nodes:
        return f"node index {entry[0]} is out of range (the file has {n_nodes} nodes)"
    if not 0 <= entry[1] <= _MAX_OUTPUT:
        return f"output index {entry[1]} is out of range"
    if len(entry) == 3 and not 0 <= entry[2] <= _MAX_VERSION:
        return f"version {entry[2]} is out of range"
    return None


def _node_problem(raw, n_nodes: int) -> str | None:
    """Why a raw node is malformed (field by field), or None."""
    if not isinstance(raw, dict):
        return f"is a {type(raw).__name__}, not an object"
    for key in ("op", "name"):
        if not isinstance(raw.get(key), str):
            return f"field '{key}' must be a string, got {json.dumps(raw.get(key))[:80]}"
    for key in ("attrs", "param", "attr"):
        attrs = raw.get(key)
        if attrs is None:
            continue
        if not isinstance(attrs, dict):
            return f"field '{key}' must be an object of strings"
        bad = next((k for k, v in attrs.items() if not isinstance(v, str)), None)
        if bad is not None:
            return (f"field '{key}': attribute {bad!r} must be a string, got "
                    f"{json.dumps(attrs[bad])[:80]}")
    inputs = raw.get("inputs", [])
    if not isinstance(inputs, list):
        return "field 'inputs' must be a list"
    if raw["op"] == "null" and inputs:
        return "field 'inputs': a variable (op 'null') takes no inputs"
    for k, entry in enumerate(inputs):
        problem = _entry_problem(entry, n_nodes)
        if problem:
            return f"field 'inputs'[{k}]: {problem}"
    subgraphs = raw.get("subgraphs", [])
    if not isinstance(subgraphs, list) or not all(isinstance(g, dict) for g in subgraphs):
        return "field 'subgraphs' must be a list of graph objects"
    return None


def _check_graph_fields(doc: dict, raw_nodes: list, src: str) -> None:
    """``heads``, ``arg_nodes``, ``node_row_ptr`` and ``attrs`` have MXNet's types and ranges."""
    n = len(raw_nodes)
    heads = doc["heads"]
    if not isinstance(heads, list) or not heads:
        raise SymbolFileError(f"{src}: field 'heads' must be a non-empty list of entries")
    for k, entry in enumerate(heads):
        problem = _entry_problem(entry, n)
        if problem:
            raise SymbolFileError(f"{src}: field 'heads'[{k}]: {problem}")
    args = doc.get("arg_nodes", [])
    if not isinstance(args, list) or not all(_is_int(a) and 0 <= a < n for a in args):
        raise SymbolFileError(f"{src}: field 'arg_nodes' must list node indices below {n}, "
                              f"got {json.dumps(args)[:80]}")
    bad = next((a for a in args if raw_nodes[a]["op"] != "null"), None)
    if bad is not None:
        raise SymbolFileError(f"{src}: field 'arg_nodes' names node {bad} "
                              f"({raw_nodes[bad]['name']}), which is not a variable")
    rows = doc.get("node_row_ptr")
    if rows is not None and (not isinstance(rows, list) or len(rows) != n + 1 or rows[:1] != [0]
                             or not all(_is_int(r) for r in rows)
                             or any(b < a for a, b in zip(rows, rows[1:]))):
        raise SymbolFileError(f"{src}: field 'node_row_ptr' must be {n + 1} non-decreasing "
                              f"ints from 0, got {json.dumps(rows)[:80]}")
    attrs = doc.get("attrs", {})
    version = attrs.get("mxnet_version", ["int", 0]) if isinstance(attrs, dict) else None
    if not (isinstance(version, list) and len(version) == 2 and _is_int(version[1])):
        raise SymbolFileError(f"{src}: field 'attrs' must be an object whose mxnet_version is "
                              f"[\"int\", version], got {json.dumps(attrs)[:80]}")


def _check_document(doc: dict, src: str) -> list:
    """Validate the whole document before anything is built; returns the raw nodes."""
    missing = [k for k in ("nodes", "heads") if k not in doc]
    if missing:
        raise SymbolFileError(f"{src} is malformed: missing field {missing[0]!r}")
    raw_nodes = doc["nodes"]
    if not isinstance(raw_nodes, list) or not raw_nodes:
        raise SymbolFileError(f"{src} is malformed: 'nodes' must be a non-empty list")
    for i, raw in enumerate(raw_nodes):
        problem = _node_problem(raw, len(raw_nodes))
        if problem:
            name = f" ({raw.get('name')})" if isinstance(raw, dict) else ""
            raise SymbolFileError(f"{src}: node {i}{name} {problem}"
                                  if problem.startswith("is ") else
                                  f"{src}: node {i}{name}: {problem}")
    _check_graph_fields(doc, raw_nodes, src)
    for i, raw in enumerate(raw_nodes):
        for k, sub in enumerate(raw.get("subgraphs", [])):
            _check_document(sub, f"{src}: node {i} ({raw['name']}) field 'subgraphs'[{k}]")
    return raw_nodes


def _node_attrs(raw: dict, legacy: bool) -> dict[str, str]:
    """One attribute map; pre-0.9 files kept hidden keys (lr_mult...) without underscores."""
    attrs = dict(raw.get("attrs") or {})
    attrs.update(raw.get("param") or {})
    attrs.update(raw.get("attr") or {})
    return hide_keys(attrs) if legacy else attrs


def _version(doc: dict) -> int:
    """The writer's MXNet version; files without one were written by MXNet 0.8."""
    version = doc.get("attrs", {}).get("mxnet_version")
    return version[1] if version else 800


def _upgrade(raw_nodes: list, version: int) -> None:
    """MXNet's legacy_json_util upgrades, applied to the raw node dicts in place."""
    legacy = any("param" in n or "attr" in n for n in raw_nodes)
    for raw in raw_nodes:
        raw["attrs"] = _node_attrs(raw, legacy)
        raw.pop("param", None)
        raw.pop("attr", None)
        raw["inputs"] = [list(e) + [0] * (3 - len(e)) for e in raw.get("inputs", [])]
        for sub in raw.get("subgraphs", []):  # a subgraph has its writer's version
            _upgrade(sub["nodes"], version)
    if version < 900:  # 0.8 kept per-input multipliers on the op: weight_lr_mult=...
        for raw in raw_nodes:
            _move_input_mults(raw, raw_nodes)
    if version < 904:  # argmax/argmin axis=-1 used to mean "flatten"
        for raw in raw_nodes:
            if raw["op"] in ("argmax", "argmin") and raw["attrs"].get("axis") == "-1":
                del raw["attrs"]["axis"]


def _move_input_mults(raw: dict, raw_nodes: list) -> None:
    attrs = raw["attrs"]
    for key in list(attrs):
        for hidden in HIDDEN_KEYS:
            suffix = "_" + hidden
            if key.endswith(suffix) and key != hidden:
                target = f"{raw['name']}_{key[:-len(suffix)]}"
                for entry in raw["inputs"]:
                    src = raw_nodes[entry[0]]
                    if src["name"] == target:
                        src.setdefault("attrs", {})[f"__{hidden}__"] = attrs[key]
                del attrs[key]
                break


def _order(raw_nodes: list, src: str) -> list[int]:
    """Node indices in dependency order (inputs validated in range); cycles raise."""
    g = nx.DiGraph()
    g.add_nodes_from(range(len(raw_nodes)))
    g.add_edges_from((entry[0], i) for i, raw in enumerate(raw_nodes)
                     for entry in raw.get("inputs", []))
    try:  # one sort; the cycle is looked for only when there is one (find_cycle is slow)
        return list(nx.topological_sort(g))
    except nx.NetworkXUnfeasible:
        cycle = nx.find_cycle(g)
    names = [raw_nodes[a]["name"] for a, _ in cycle]
    raise SymbolFileError(f"{src} has a cycle through nodes {names}")


def _as_mult(value: str) -> float:
    mult = float(value)
    if not math.isfinite(mult):
        raise ValueError("not a finite number")
    return mult


_OBJECT_REPR = re.compile(r"<[\w.]+ object at 0x[0-9a-fA-F]+>")


def _as_init(value: str) -> None:
    """An initializer description: a registered-style name or JSON ``[name, {kwargs}]``, or
    the ``repr`` MXNet writes for a Parameter given an Initializer object (GluonCV's SSD and
    FPN exports): loaded as MXNet loads it (initializing from it fails, as in MXNet)."""
    if _OBJECT_REPR.fullmatch(value):
        return
    if value.startswith("["):
        desc = json.loads(value)
        if not (isinstance(desc, list) and len(desc) == 2 and isinstance(desc[0], str)
                and isinstance(desc[1], dict)):
            raise ValueError("not [name, {kwargs}]")
    elif not value.isidentifier():
        raise ValueError("not an initializer name")


def _check_hints(attrs: dict[str, str]) -> None:
    """A variable's hints (``__shape__``, ``__dtype__`` read by inference; ``__init__``,
    ``__lr_mult__``, ``__wd_mult__`` read by initializers and optimizers) must parse."""
    for key, convert in (("__shape__", _as_shape), ("__dtype__", _as_dtype),
                         ("__init__", _as_init), ("__lr_mult__", _as_mult),
                         ("__wd_mult__", _as_mult)):
        if key in attrs:
            try:
                convert(attrs[key])
            except (ValueError, KeyError, RecursionError, MXNetError) as err:
                raise AttrError(f"attribute {key}={attrs[key][:80]!r} is invalid: "
                                f"{err}") from None


def _build_node(raw: dict, built: dict[int, Node]) -> Node:
    """The node of a validated raw node whose inputs are built."""
    op_name, name, attrs = raw["op"], raw["name"], raw["attrs"]
    if op_name == "null":
        _check_hints(attrs)
        return Node(None, name, attrs)
    node = Node(get_op(op_name), name, attrs)
    if raw.get("subgraphs"):
        node.set_subgraphs([_build(sub["nodes"], sub["heads"], f"subgraph of {name}")
                            for sub in raw["subgraphs"]])
    p = node.params  # validate attributes now
    node.inputs = [(built[e[0]], e[1]) for e in raw["inputs"]]
    node.versions = [e[2] for e in raw["inputs"]]
    slots = node.op.input_names(p) + node.op.aux_names(p)
    n_missing = len(slots) - len(node.inputs)
    if n_missing > 0 and len(node.inputs) >= len(node.op.input_names(p)):
        # legacy files left aux states implicit; MXNet's upgrader creates them like this
        extra = node.op.special.var_attrs or {}
        added = slots[len(node.inputs):]
        node.inputs += [(Node(None, f"{name}_{s}", {**attrs, **extra.get(s, {})}), 0)
                        for s in added]
        node.versions += [0] * len(added)
    elif n_missing != 0:
        raise GraphError(f"{node.where} has {len(node.inputs)} inputs, the op takes {slots}")
    for k, (src, idx) in enumerate(node.inputs):
        if idx >= src.num_outputs:
            raise GraphError(f"field 'inputs'[{k}]: {node.where} reads output {idx} of "
                             f"{src.where}, which has {src.num_outputs}")
    return node


def _build(raw_nodes: list, heads: list, src: str) -> Symbol:
    """Nodes in dependency order, then the heads; errors name the node and field."""
    built: dict[int, Node] = {}
    for i in _order(raw_nodes, src):
        try:
            built[i] = _build_node(raw_nodes[i], built)
        except MXNetError as err:
            raise type(err)(f"{src}: node {i} ({raw_nodes[i]['name']}): {err}") from None
    outputs = []
    for k, (nid, idx, *_) in enumerate(heads):
        node = built[nid]
        if idx >= node.num_outputs:
            raise SymbolFileError(f"{src}: field 'heads'[{k}]: output {idx} of {node.where} "
                                  f"does not exist (it has {node.num_outputs})")
        outputs.append((node, idx))
    return Symbol(outputs)


def load_json(json_str: str, source: str | None = None) -> Symbol:
    """Load a symbol from MXNet JSON text (1.x ``attrs`` form or legacy ``param``/``attr``).

    The whole document is validated before a node is built: sizes and nesting depth, field
    types, node and output indices in range, attribute values (strings parsed by the op's
    schema). Every rejection is an ``MXNetError`` naming ``source`` (a file name), the node
    and the field.

    >>> import symgraph as mx
    >>> mx.sym.load_json('{"nodes": [{"op": "null", "name": "x", "inputs": []}], '
    ...                  '"heads": [[0, 0, 0]]}').list_arguments()
    ['x']
    >>> mx.sym.load_json('{"nodes": [{"op": "null", "name": "x", "inputs": []}], '
    ...                  '"heads": [[0, -1, 0]]}')  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symgraph.symbol.json_io.SymbolFileError: Symbol JSON: field 'heads'[0]: output index -1 ...
    """
    src = f"Symbol JSON file {source}" if source else "Symbol JSON"
    doc = _decode(json_str, src)
    raw_nodes = _check_document(doc, src)
    _upgrade(raw_nodes, _version(doc))
    return _build(raw_nodes, doc["heads"], src)


fromjson = load_json


def load(fname) -> Symbol:
    """Load a symbol from a JSON file written by :meth:`Symbol.save` or MXNet; a file over
    ``MAX_JSON_CHARS`` bytes is refused before it is read."""
    path = os.fspath(fname)
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_JSON_CHARS + 1)
    except OSError as err:
        raise MXNetError(f"Cannot load symbol from {fname}: {err}") from err
    if len(data) > MAX_JSON_CHARS:
        raise SymbolFileError(f"Symbol JSON file {path} is larger than the limit of "
                              f"{MAX_JSON_CHARS} bytes (symgraph.symbol.json_io.MAX_JSON_CHARS)")
    return load_json(data, source=path)


# ------------------------------------------------------------------ debug_str

def debug_str(symbol: Symbol) -> str:
    """MXNet's ``Symbol.debug_str`` listing."""
    ig = IndexedGraph(symbol._outputs)
    lines = ["Symbol Outputs:"]
    lines += [f"\toutput[{i}]={n.name}({idx})" for i, (n, idx) in enumerate(ig.heads)]
    for node, entries in zip(ig.nodes, _input_entries(ig)):
        if node.op is None:
            lines.append(f"Variable:{node.name}")
            continue
        lines += ["--------------------", f"Op:{node.op.name}, Name={node.name}", "Inputs:"]
        lines += [f"\targ[{k}]={src.name}({idx})" +
                  (f" version={entries[k][2]}" if src.op is None else "")
                  for k, (src, idx) in enumerate(node.inputs)]
        if node.attrs:
            lines.append("Attrs:")
            lines += [f"\t{k}={v}" for k, v in sorted(node.attrs.items())]
    return "\n".join(lines) + "\n"
