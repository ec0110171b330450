"""Join/split, slicing, indexing, Cast/clip/norm and sequence ops against MXNet 1.9.1.

The fixtures (``tests/fixtures/struct``, written by its ``generate.py`` with the MXNet
oracle) hold per case the attribute strings MXNet stored, argument and output names,
inferred shapes, the training forward and the backward for a random head gradient, or
the error MXNet raised. Nothing here imports MXNet.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import MXNetError
from symgraph.symbol.op_api import invoke

HERE = Path(__file__).parent / "fixtures" / "struct"
META = json.loads((HERE / "cases.json").read_text())
ARRAYS = dict(np.load(HERE / "arrays.npz", allow_pickle=False))
OK = [pytest.param(c, id=c["id"]) for c in META["cases"] if c["expect"] == "ok"]
ERRORS = [pytest.param(c, id=c["id"]) for c in META["cases"] if c["expect"] != "ok"]

# A phrase both MXNet's message and ours contain, per error case.
PHRASES = {
    "err_concat_mismatch": "Incompatible input shape",
    "err_split_uneven": "does not evenly divide 6",
    "err_split_squeeze": "must be the same as num_outputs",
    "err_slice_axis_end": "Invalid end for end=6 as axis_size is 5",
    "err_slice_len": "begin and end must have the same length",
    "err_squeeze": "which has size=3 not equal to one",
    "err_slice_like_ndim": "ndim mismatch for inputs: 2 vs. 1",
    "err_take_axis": "Axis should be in the range of [-r, r-1]",
    "err_take_raise": "take operator contains indices out of bound",
    "err_pick_index": "Shape inconsistent",
    "err_embedding_weight": "Shape inconsistent",
    "err_seqrev_axis": "Current implementation expects axis to be 0",
    "err_seqmask_len": "Shape inconsistent",
}


def _symbol(case):
    inputs = [mx.sym.Variable(n) for n in case["shapes"]]
    with mx.name.NameManager():
        return invoke(case["op"], inputs, dict(case["attrs"]), name=case["node_name"])


def _bind(case):
    sym = _symbol(case)
    shapes = {n: tuple(s) for n, s in case["shapes"].items()}
    exe = sym.simple_bind(mx.cpu(), grad_req=case["grad_req"], type_dict=case["dtypes"],
                          **shapes)
    for n in case["shapes"]:
        exe.arg_dict[n][:] = ARRAYS[f"{case['id']}/in:{n}"]
    return sym, exe


def _tol(dtype: str) -> tuple[float, float]:
    return (1e-3, 1e-3) if dtype == "float16" else (1e-5, 1e-6)


@pytest.mark.parametrize("case", OK)
def test_names_and_shapes_match_mxnet(case):
    sym = _symbol(case)
    assert sym.list_arguments() == case["arguments"]
    assert sym.list_outputs() == case["outputs"]
    _, out_shapes, _ = sym.infer_shape(**{n: tuple(s) for n, s in case["shapes"].items()})
    assert [list(s) for s in out_shapes] == case["out_shapes"]


@pytest.mark.parametrize("case", OK)
def test_forward_and_backward_match_mxnet(case):
    _, exe = _bind(case)
    cid = case["id"]
    outs = [o.asnumpy() for o in exe.forward(is_train=True)]
    assert [str(o.dtype) for o in outs] == case["out_types"]
    for i, got in enumerate(outs):
        want = ARRAYS[f"{cid}/out:{i}"]
        rtol, atol = _tol(str(want.dtype))
        np.testing.assert_allclose(got, want, rtol, atol, err_msg=f"{cid} out {i}")
    if f"{cid}/ograd:0" not in ARRAYS:
        return
    heads = [ARRAYS[f"{cid}/ograd:{i}"] for i in range(len(outs))]
    exe.backward([mx.nd.array(h, dtype=h.dtype) for h in heads])
    for n, req in case["grad_req"].items():
        if req != "null":
            want = ARRAYS[f"{cid}/grad:{n}"]
            rtol, atol = _tol(str(want.dtype))
            np.testing.assert_allclose(exe.grad_dict[n].asnumpy(), want, rtol, atol,
                                       err_msg=f"{cid} grad {n}")


@pytest.mark.parametrize("case", ERRORS)
def test_errors_match_mxnet(case):
    phrase = PHRASES[case["id"]]
    assert phrase in case["error"], "fixture and phrase table disagree"
    shapes = {n: tuple(s) for n, s in case["shapes"].items()}
    sym = _symbol(case)
    if case["expect"] == "infer_error":
        with pytest.raises(MXNetError, match=_pattern(phrase)):
            sym.infer_shape(**shapes)
        return
    ints = {n for n in shapes if n != case["arguments"][0]}
    case = {**case, "grad_req": {n: "null" if n in ints else "write" for n in shapes}}
    _, exe = _bind(case)
    with pytest.raises(MXNetError, match=_pattern(phrase)):  # at the call or at the read,
        exe.forward(is_train=True)[0].wait_to_read()  # as MXNet's engine reports it


def _pattern(phrase: str) -> str:
    return re.escape(phrase)


@pytest.mark.parametrize("entry", META["naming"], ids=lambda e: f"{e['op']}-{e['attrs']}")
def test_argument_and_output_names_match_mxnet(entry):
    name = "sc" if entry["op"] == "SliceChannel" else "seq"
    sym = getattr(mx.sym, entry["op"])(mx.sym.Variable("data"), name=name, **entry["attrs"])
    assert sym.list_arguments() == entry["arguments"]
    assert sym.list_outputs() == entry["outputs"]
