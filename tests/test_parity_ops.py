"""Each operator case recorded from MXNet 1.9.1 (tests/fixtures/mxnet/ops) runs the same here.

For every case: output names, inferred shapes and dtypes, the training-mode forward,
the backward with MXNet's head gradient, BatchNorm's aux updates and the inference
forward where recorded. Dropout draws differ by design (see docs/compat.md): we check
the dropout property and the inference output instead.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import symgraph as mx
from symgraph.symbol.op_api import invoke

OPS = Path(__file__).parent / "fixtures" / "mxnet" / "ops"
INDEX = json.loads((OPS / "index.json").read_text())
CASES = [pytest.param(e, id=e["id"]) for e in INDEX]


def _build(entry):
    inputs = [mx.sym.Variable(n) for n in entry["inputs"] + entry["aux"]]
    with mx.name.NameManager():
        return invoke(entry["op"], inputs, dict(entry["attrs"]), name=entry["node_name"])


def _bind(entry, arrays):
    sym = _build(entry)
    shapes = {n: tuple(s) for n, s in zip(entry["inputs"], entry["arg_shapes"])}
    types = {n: arrays[f"in:{n}"].dtype for n in entry["inputs"]}
    exe = sym.simple_bind(mx.cpu(), grad_req=entry["grad_req"], type_dict=types, **shapes)
    for n in entry["inputs"]:
        exe.arg_dict[n][:] = arrays[f"in:{n}"]
    for n in entry["aux"]:
        exe.aux_dict[n][:] = arrays[f"aux:{n}"]
    return sym, exe


def _tol(entry):
    return (1e-3, 1e-4) if any(t == "float16" for t in entry["out_types"]) else (1e-4, 1e-5)


@pytest.mark.parametrize("entry", CASES)
def test_symbol_matches_mxnet(entry):
    sym = _build(entry)
    assert sym.list_arguments() == entry["inputs"]
    assert sym.list_auxiliary_states() == entry["aux"]
    assert sym.list_outputs() == entry["outputs"]
    shapes = {n: tuple(s) for n, s in zip(entry["inputs"], entry["arg_shapes"])}
    arg, out, aux = sym.infer_shape(**shapes)
    assert [list(s) for s in arg] == entry["arg_shapes"]
    assert [list(s) for s in out] == entry["out_shapes"]
    assert [list(s) for s in aux] == entry["aux_shapes"]


@pytest.mark.parametrize("entry", CASES)
def test_forward_backward_match_mxnet(entry):
    arrays = dict(np.load(OPS / f"{entry['id']}.npz", allow_pickle=False))
    sym, exe = _bind(entry, arrays)
    rtol, atol = _tol(entry)
    outs = [o.asnumpy() for o in exe.forward(is_train=entry["is_train"])]
    assert [str(o.dtype) for o in outs] == entry["out_types"]
    if entry["op"] == "Dropout":
        _check_dropout(entry, arrays, outs)
        return
    for i, got in enumerate(outs):
        np.testing.assert_allclose(got, arrays[f"out:{i}"], rtol, atol, err_msg=f"out {i}")
    if entry["has_backward"]:
        exe.backward([mx.nd.array(arrays[f"ograd:{i}"], dtype=arrays[f"ograd:{i}"].dtype)
                      for i in range(len(outs))])
        for n, req in entry["grad_req"].items():
            if req != "null":
                np.testing.assert_allclose(exe.grad_dict[n].asnumpy(), arrays[f"grad:{n}"],
                                           rtol, atol, err_msg=f"grad {n}")
    for n in entry["aux"]:
        np.testing.assert_allclose(exe.aux_dict[n].asnumpy(), arrays[f"aux_after:{n}"],
                                   rtol, atol, err_msg=f"aux {n}")


def _check_dropout(entry, arrays, outs):
    x = arrays[f"in:{entry['inputs'][0]}"]
    p = float(entry["attrs"].get("p", 0.5))
    kept = np.isclose(outs[0], x / (1 - p), rtol=1e-5)
    assert np.all(kept | (outs[0] == 0))


@pytest.mark.parametrize("entry", [c for c in CASES if c.values[0]["has_eval"]])
def test_inference_forward_matches_mxnet(entry):
    arrays = dict(np.load(OPS / f"{entry['id']}.npz", allow_pickle=False))
    _, exe = _bind(entry, arrays)
    rtol, atol = _tol(entry)
    outs = exe.forward(is_train=False)
    if entry["op"] == "Dropout" and entry["attrs"].get("mode") == "always":
        _check_dropout(entry, arrays, [o.asnumpy() for o in outs])
        return
    for i, got in enumerate(outs):
        np.testing.assert_allclose(got.asnumpy(), arrays[f"out_eval:{i}"], rtol, atol)
