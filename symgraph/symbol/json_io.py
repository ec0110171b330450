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
    ig = IndexedGraph(symbol._outputs)
    nodes = []
    for node, inputs in zip(ig.nodes, _input_entries(ig)):
        nodes.append(_node_text(node, inputs))
    heads = [[ig.node_id[id(n)], i, 0] for n, i in ig.heads]
    return ("{\n  \"nodes\": [\n" + ", \n".join(nodes) + "\n  ], \n"
            f"  \"arg_nodes\": {_list_text(list(map(str, ig.variable_ids)), 2)}, \n"
            f"  \"node_row_ptr\": {_list_text(list(map(str, ig.row_ptr)), 2)}, \n"
            f"  \"heads\": {_entries_text(heads, 2)}, \n"
            f"  \"attrs\": {_graph_attrs_text()}\n}}")


def _graph_attrs_text() -> str:
    """The graph's ``attrs``: MXNet adds ``is_np_shape`` while NumPy shape semantics is on."""
    from ..util import is_np_shape
    if is_np_shape():
        return ("{\n    \"is_np_shape\": [\"int\", 1], \n"
                f"    \"mxnet_version\": [\"int\", {MXNET_VERSION}]\n  }}")
    return f"{{\"mxnet_version\": [\"int\", {MXNET_VERSION}]}}"


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
    attrs.update(raw.get("attr") or {})
    if legacy:
        attrs = {(f"__{k}__" if k in _HIDDEN_KEYS else k): v for k, v in attrs.items()}
    return {str(k): str(v) for k, v in attrs.items()}


def _version(doc: dict) -> int:
    try:
        return int(doc["attrs"]["mxnet_version"][1])
    except (KeyError, TypeError, IndexError, ValueError):
        return 800  # files without a version were written by MXNet 0.8


def _upgrade(raw_nodes: list, version: int) -> None:
    """MXNet's legacy_json_util upgrades, applied to the raw node dicts in place."""
    legacy = any("param" in n or "attr" in n for n in raw_nodes)
    for raw in raw_nodes:
        raw["attrs"] = _node_attrs(raw, legacy)
        raw.pop("param", None)
        raw.pop("attr", None)
        raw["inputs"] = [list(e) + [0] * (3 - len(e)) for e in raw.get("inputs", [])]
    if version < 900:  # 0.8 kept per-input multipliers on the op: weight_lr_mult=...
        for raw in raw_nodes:
            _move_input_mults(raw, raw_nodes)
    if version < 904:  # argmax/argmin axis=-1 used to mean "flatten"
        for raw in raw_nodes:
            if raw.get("op") in ("argmax", "argmin") and raw["attrs"].get("axis") == "-1":
                del raw["attrs"]["axis"]


def _move_input_mults(raw: dict, raw_nodes: list) -> None:
    attrs = raw["attrs"]
    for key in list(attrs):
        for hidden in _HIDDEN_KEYS:
            suffix = "_" + hidden
            if key.endswith(suffix) and key != hidden:
                target = f"{raw.get('name')}_{key[:-len(suffix)]}"
                for entry in raw["inputs"]:
                    src = raw_nodes[entry[0]] if 0 <= entry[0] < len(raw_nodes) else None
                    if src is not None and src.get("name") == target:
                        src.setdefault("attrs", {})[f"__{hidden}__"] = attrs[key]
                del attrs[key]
                break


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


def _build_node(i: int, raw: dict, built: dict[int, Node]) -> Node:
    try:
        op_name, name = raw["op"], raw["name"]
    except KeyError as err:
        raise GraphError(f"Symbol JSON: node {i} lacks the key {err}") from None
    attrs = dict(raw.get("attrs") or {})
    if op_name == "null":
        return Node(None, name, attrs)
    node = Node(get_op(op_name), name, attrs)
    p = node.params  # validate attributes now
    node.inputs = [(built[e[0]], int(e[1])) for e in raw.get("inputs", [])]
    node.versions = [int(e[2]) for e in raw.get("inputs", [])]
    slots = node.op.input_names(p) + node.op.aux_names(p)
    n_missing = len(slots) - len(node.inputs)
    if n_missing > 0 and len(node.inputs) >= len(node.op.input_names(p)):
        # legacy files left aux states implicit; MXNet's upgrader creates them like this
        extra = node.op.var_attrs or {}
        added = slots[len(node.inputs):]
        node.inputs += [(Node(None, f"{name}_{s}", {**attrs, **extra.get(s, {})}), 0)
                        for s in added]
        node.versions += [0] * len(added)
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
    if not all(isinstance(n, dict) for n in raw_nodes):
        raise GraphError("Symbol JSON is malformed: every node must be an object")
    _order(raw_nodes)  # reject cycles and dangling inputs before touching the nodes
    _upgrade(raw_nodes, _version(doc))
    built: dict[int, Node] = {}
    for i in _order(raw_nodes):
        built[i] = _build_node(i, raw_nodes[i], built)
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
