"""Seeded mutation fuzzing of the symbol JSON loader, the attribute parser and the ``.params``
reader (issue 16, item 7): every mutant loads (and then infers, binds and runs) or raises an
``MXNetError``; an untyped exception, a hang or a memory blow-up is a defect.

``SYMGRAPH_FUZZ_N`` (default 250) mutants per target; the long local run is

    SYMGRAPH_FUZZ_N=10000 python -m pytest tests/test_fuzz_symbol.py -q -s

which prints the counts per target (``-s``).
"""
from __future__ import annotations

import json
import math
import os
import tempfile

import numpy as np
import pytest

import symgraph as mx
from symgraph.attrs import REQUIRED, to_attr_string
from symgraph.ops.base import canonical_ops
from symgraph.symbol.graph import Node
from symgraph.symbol.symbol import Symbol

from .fuzzing import N, byte_mutants, json_mutants, run

# an accepted graph is bound and run when its arrays hold at most this many elements
MAX_BIND_ELEMENTS = 200_000


# ------------------------------------------------------------------ real symbols

def _mlp():
    data = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=16, name="fc1")
    act = mx.sym.Activation(fc1, act_type="relu", name="relu1")
    fc2 = mx.sym.FullyConnected(act, num_hidden=4, name="fc2")
    return mx.sym.SoftmaxOutput(fc2, name="softmax"), {"data": (2, 8), "softmax_label": (2,)}


def _lenet():
    data = mx.sym.Variable("data")
    c1 = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, name="conv1")
    p1 = mx.sym.Pooling(mx.sym.tanh(c1), pool_type="max", kernel=(2, 2), stride=(2, 2))
    c2 = mx.sym.Convolution(p1, kernel=(2, 2), num_filter=6, pad=(1, 1), name="conv2")
    bn = mx.sym.BatchNorm(c2, name="bn")
    p2 = mx.sym.Pooling(mx.sym.relu(bn), pool_type="avg", kernel=(2, 2), stride=(2, 2))
    fc = mx.sym.FullyConnected(mx.sym.Flatten(p2), num_hidden=5, name="fc")
    return (mx.sym.SoftmaxOutput(fc, name="softmax"),
            {"data": (2, 1, 10, 10), "softmax_label": (2,)})


def _lstm():
    cell = mx.rnn.LSTMCell(num_hidden=6, prefix="lstm_")
    data = mx.sym.Variable("data")
    outputs, _ = cell.unroll(3, inputs=data, layout="NTC", merge_outputs=True)
    pred = mx.sym.FullyConnected(mx.sym.Reshape(outputs, shape=(-1, 6)), num_hidden=5,
                                 name="pred")
    return mx.sym.LinearRegressionOutput(pred, name="out"), {"data": (2, 3, 4)}


def _group():
    x = mx.sym.Variable("x")
    parts = mx.sym.SliceChannel(x, num_outputs=2, axis=1, name="split")
    y = mx.sym.broadcast_mul(parts[0], mx.sym.exp(parts[1]), name="mul")
    return (mx.sym.Group([y, mx.sym.sum(y, axis=1, name="total"), parts[1],
                          mx.sym.transpose(x, axes=(1, 0), name="t")]), {"x": (3, 4)})


SYMBOLS = {"mlp": _mlp, "lenet": _lenet, "lstm": _lstm, "group": _group}


def _run_graph(sym: Symbol, shapes: dict) -> None:
    """Infer with the valid input shapes and, when complete and small, bind and run."""
    args = set(sym.list_arguments()) | set(sym.list_auxiliary_states())
    given = {k: v for k, v in shapes.items() if k in args}
    arg_shapes, out_shapes, aux_shapes = sym.infer_shape_partial(**given)
    sym.infer_type_partial(**dict.fromkeys(given, "float32"))
    every = arg_shapes + out_shapes + aux_shapes
    if not all(s and all(d > 0 for d in s) for s in every):
        return
    if sum(math.prod(s) for s in every) > MAX_BIND_ELEMENTS:
        return
    exe = sym.simple_bind(mx.cpu(), grad_req="null", **given)
    for out in exe.forward(is_train=False):
        out.asnumpy()


def _symbol_reader(shapes_of):
    def read(data):
        name, text = data
        sym = mx.sym.load_json(text)
        # what loaded saves and loads back unchanged (no silent rewiring on the way)
        assert mx.sym.load_json(sym.tojson()).tojson() == sym.tojson()
        _run_graph(sym, shapes_of[name])
    return read


def _symbol_targets():
    built = {}
    for name, make in SYMBOLS.items():
        with mx.name.NameManager():  # auto-names (tanh0...) independent of earlier tests
            built[name] = make()
    return ({name: sym.tojson() for name, (sym, _) in built.items()},
            {name: shapes for name, (_, shapes) in built.items()})


def _round_robin(texts: dict, mutate):
    """``N`` mutants in all, taking each seed text in turn (mutant k from seed k)."""
    names = sorted(texts)
    for k in range(N):
        name = names[k % len(names)]
        yield name, next(iter(mutate(texts[name], k)))


def test_fuzz_symbol_json_structure():
    texts, shapes = _symbol_targets()
    mutants = (_round_robin(
        texts, lambda text, k: json_mutants(json.loads(text), 1, rng_seed=k)))
    tally = run("symbol JSON (structure)", _symbol_reader(shapes), mutants)
    assert not tally.defects, "\n".join(tally.defects[:5])
    assert tally.accepted and tally.rejected


def test_fuzz_symbol_json_bytes():
    texts, shapes = _symbol_targets()
    mutants = _round_robin(texts, lambda text, k: byte_mutants(text.encode(), 1, rng_seed=k))
    tally = run("symbol JSON (bytes)", _symbol_reader(shapes), mutants)
    assert not tally.defects, "\n".join(tally.defects[:5])
    assert tally.rejected


# ------------------------------------------------------------------ attribute parser

def _attr_doc(op, case) -> dict[str, str]:
    """A case's attributes, and every other parameter at its default, as strings."""
    doc = {p.name: to_attr_string(p.default) for p in op.params if p.default is not REQUIRED}
    doc.update({k: to_attr_string(v) for k, v in case.attrs.items()})
    if op.key_var_num_args and op.key_var_num_args not in doc:
        doc[op.key_var_num_args] = str(len(case.shapes))
    return doc


def _as_attrs(text: str):
    """A mutant as attribute strings (values of other JSON types spelled as JSON)."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):  # a document nested too deep for json (not a reader)
        return None
    if not isinstance(doc, dict):
        return None
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in doc.items()}


def _attr_mutants():
    """``N`` mutated attribute sets: every op's first case in turn, then the second cases..."""
    ops = [op for op in canonical_ops() if op.cases and op.params]
    pairs = [(op, op.cases[j]) for j in range(max(len(op.cases) for op in ops))
             for op in ops if j < len(op.cases)]
    for k in range(N):
        op, case = pairs[k % len(pairs)]
        for retry in range(100):  # a mutation of the whole document leaves no attributes
            attrs = _as_attrs(next(json_mutants(_attr_doc(op, case), 1,
                                                rng_seed=k + retry * N)))
            if attrs is not None:
                yield op, case, attrs
                break


def _read_attrs(data) -> None:
    """Parse the mutated attributes into a node of the op, then infer and run it."""
    op, case, attrs = data
    node = Node(op, "fuzzed", attrs)
    p = node.params
    slots = op.input_names(p) + op.aux_names(p)
    node.inputs = [(Node(None, f"in{i}"), 0) for i in range(len(slots))]
    sym = Symbol([(node, i) for i in range(node.num_visible_outputs)])
    shapes = {f"in{i}": s for i, s in enumerate(case.shapes[:len(slots)])}
    _run_graph(sym, shapes)


def test_fuzz_attribute_parser():
    tally = run("op attributes", _read_attrs, _attr_mutants())
    assert not tally.defects, "\n".join(tally.defects[:5])
    assert tally.accepted and tally.rejected


# ------------------------------------------------------------------ .params reader

def _params_seeds() -> list[bytes]:
    rng = np.random.RandomState(0)
    named = {"arg:w": mx.nd.array(rng.randn(3, 4)), "aux:m": mx.nd.array(rng.randn(5)),
             "arg:i": mx.nd.array(np.arange(6).reshape(2, 3), dtype="int32")}
    listed = [mx.nd.array(rng.randn(2, 2), dtype="float16"),
              mx.nd.array(np.zeros((0,), np.float32))]
    seeds = []
    with tempfile.TemporaryDirectory() as tmp:
        for k, data in enumerate((named, listed)):
            path = os.path.join(tmp, f"seed{k}.params")
            mx.nd.save(path, data)
            with open(path, "rb") as f:
                seeds.append(f.read())
    return seeds


def _check_loaded(result) -> None:
    arrays = result.values() if isinstance(result, dict) else result
    for a in arrays:
        assert a.asnumpy().shape == a.shape


def _params_mutants():
    seeds = _params_seeds()
    for k in range(N):
        yield next(byte_mutants(seeds[k % len(seeds)], 1, rng_seed=k))


def test_fuzz_params_frombuffer():
    tally = run(".params (load_frombuffer)", mx.nd.load_frombuffer, _params_mutants(),
                check=_check_loaded)
    assert not tally.defects, "\n".join(tally.defects[:5])
    assert tally.rejected


def test_fuzz_params_file(tmp_path):
    path = tmp_path / "fuzz.params"

    def read(data: bytes):
        path.write_bytes(data)
        return mx.nd.load(str(path))

    tally = run(".params (load)", read, _params_mutants(), check=_check_loaded)
    assert not tally.defects, "\n".join(tally.defects[:5])
    assert tally.rejected


@pytest.mark.parametrize("name", sorted(SYMBOLS))
def test_seed_symbols_run(name):
    """The unmutated seeds load, infer and run (so the fuzz targets exercise real graphs)."""
    sym, shapes = SYMBOLS[name]()
    loaded = mx.sym.load_json(sym.tojson())
    assert loaded.tojson() == sym.tojson()
    _run_graph(loaded, shapes)
