"""MXNet 1.x symbol JSON: writing (byte-compatible layout), loading (current and legacy forms)."""
from __future__ import annotations

import json
import os
import tempfile

import networkx as nx

from ..base import GraphError, MXNetError
from ..graph import IndexedGraph, Node
from ..ops.base import get_op
from .symbol import Symbol

MXNET_VERSION = 10901
# Pre-0.9 JSON kept these user attributes without the double underscores.
_HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage")


# ------------------------------------------------------------------ writing

def _q(s: str) -> str:
    return json.dumps(s)


def _attrs_text(attrs: dict[str, str]) -> str:
    return "{" + ", ".join(f"{_q(k)}: {_q(v)}" for k, v in sorted(attrs.items())) + "}"


def _entries_text(entries: list[list[int]]) -> str:
    return "[" + ", ".join("[" + ", ".join(map(str, e)) + "]" for e in entries) + "]"


def _node_text(node: Node, inputs: list[list[int]]) -> str:
    fields = [f'"op": {_q(node.op.name if node.op else "null")}', f'"name": {_q(node.name)}']
    if node.attrs:
        fields.append(f'"attrs": {_attrs_text(node.attrs)}')
    fields.append(f'"inputs": {_entries_text(inputs)}')
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
        out.append(entries)
    return out


def to_json(symbol: Symbol) -> str:
    """The symbol as MXNet 1.9.1 writes it (same keys, order and whitespace)."""
    ig = IndexedGraph(symbol._outputs)
    nodes = []
    for node, inputs in zip(ig.nodes, _input_entries(ig)):
        nodes.append(_node_text(node, inputs))
    heads = [[ig.node_id[id(n)], i, 0] for n, i in ig.heads]
    return ("{\n  \"nodes\": [\n" + ", \n".join(nodes) + "\n  ], \n"
            f"  \"arg_nodes\": [{', '.join(map(str, ig.variable_ids))}], \n"
            f"  \"node_row_ptr\": [{', '.join(map(str, ig.row_ptr))}], \n"
            f"  \"heads\": {_entries_text(heads)}, \n"
            f"  \"attrs\": {{\"mxnet_version\": [\"int\", {MXNET_VERSION}]}}\n}}")


def atomic_write(fname: str, data: bytes) -> None:
    """Write ``data`` to ``fname`` through a temporary file and ``os.replace``."""
    directory = os.path.dirname(os.path.abspath(fname))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=os.path.basename(fname))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, fname)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def save(symbol: Symbol, fname) -> None:
    """Write the symbol's JSON to ``fname`` atomically."""
    atomic_write(os.fspath(fname), symbol.tojson().encode())


# ------------------------------------------------------------------ loading

def _node_attrs(raw: dict, legacy: bool) -> dict[str, str]:
    attrs = dict(raw.get("attrs") or {})
    attrs.update(raw.get("param") or {})
    for key, value in (raw.get("attr") or {}).items():
        attrs[f"__{key}__" if legacy and key in _HIDDEN_KEYS else key] = value
    return {str(k): str(v) for k, v in attrs.items()}


def _order(raw_nodes: list) -> list[int]:
    """Node indices in dependency order; cycles and dangling inputs raise GraphError."""
    g = nx.DiGraph()
    g.add_nodes_from(range(len(raw_nodes)))
    for i, raw in enumerate(raw_nodes):
        for entry in raw.get("inputs", []):
            src = entry[0]
            if not isinstance(src, int) or not 0 <= src < len(raw_nodes):
                raise GraphError(f"Symbol JSON: node {i} ({raw.get('name')}) has input "
                                 f"{entry} that points at no node")
            g.add_edge(src, i)
    try:
        cycle = nx.find_cycle(g)
    except nx.NetworkXNoCycle:
        return list(nx.topological_sort(g))
    names = [raw_nodes[a].get("name") for a, _ in cycle]
    raise GraphError(f"Symbol JSON has a cycle through nodes {names}")


def _build_node(i: int, raw: dict, built: dict[int, Node], legacy: bool) -> Node:
    try:
        op_name, name = raw["op"], raw["name"]
    except KeyError as err:
        raise GraphError(f"Symbol JSON: node {i} lacks the key {err}") from None
    attrs = _node_attrs(raw, legacy)
    if op_name == "null":
        return Node(None, name, attrs)
    node = Node(get_op(op_name), name, attrs)
    p = node.params  # validate attributes now
    node.inputs = [(built[e[0]], int(e[1])) for e in raw.get("inputs", [])]
    slots = node.op.input_names(p) + node.op.aux_names(p)
    n_missing = len(slots) - len(node.inputs)
    if n_missing > 0 and len(node.inputs) >= len(node.op.input_names(p)):
        # legacy files left aux states implicit; MXNet's upgrader creates them like this
        node.inputs += [(Node(None, f"{name}_{s}"), 0) for s in slots[len(node.inputs):]]
    elif n_missing != 0:
        raise GraphError(f"Symbol JSON: {node.where} has {len(node.inputs)} inputs, the op "
                         f"takes {slots}")
    for src, idx in node.inputs:
        if idx >= src.num_outputs:
            raise GraphError(f"Symbol JSON: {node.where} reads output {idx} of {src.where}, "
                             f"which has {src.num_outputs}")
    return node


def load_json(json_str: str) -> Symbol:
    """Load a symbol from MXNet JSON text (1.x ``attrs`` form or legacy ``param``/``attr``)."""
    try:
        doc = json.loads(json_str)
        raw_nodes, raw_heads = doc["nodes"], doc["heads"]
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise GraphError(f"Symbol JSON is malformed: {err}") from None
    if not isinstance(raw_nodes, list) or not raw_nodes:
        raise GraphError("Symbol JSON is malformed: 'nodes' must be a non-empty list")
    legacy = any("param" in n or "attr" in n for n in raw_nodes)
    built: dict[int, Node] = {}
    for i in _order(raw_nodes):
        built[i] = _build_node(i, raw_nodes[i], built, legacy)
    try:
        heads = [(built[h[0]], int(h[1])) for h in raw_heads]
    except (KeyError, IndexError, TypeError) as err:
        raise GraphError(f"Symbol JSON: bad heads entry {err}") from None
    return Symbol(heads)


fromjson = load_json


def load(fname) -> Symbol:
    """Load a symbol from a JSON file written by :meth:`Symbol.save` or MXNet."""
    try:
        with open(os.fspath(fname), encoding="utf-8") as f:
            text = f.read()
    except OSError as err:
        raise MXNetError(f"Cannot load symbol from {fname}: {err}") from err
    return load_json(text)


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
