"""Convolution, Deconvolution, Pooling and UpSampling agree with MXNet 1.9.1.

The reference values come from ``tests/fixtures/conv/generate.py`` (run with the MXNet
oracle; MXNet's native CPU kernels): forward outputs and gradients for a set of
configurations, ``infer_shape`` results and error messages, and attribute sets MXNet
rejects when the symbol is created. MXNet is not needed here.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import MXNetError

FIXTURE = Path(__file__).parent / "fixtures" / "conv" / "conv.npz"
ARRAYS = dict(np.load(FIXTURE, allow_pickle=False))
META = json.loads(str(ARRAYS["__meta__"]))


def _params(key: str):
    return [pytest.param(e, id=e["id"]) for e in META[key]]


def _symbol(op: str, attrs: dict, names: list[str]):
    variables = [mx.sym.Variable(n) for n in names]
    if op == "UpSampling":
        return mx.sym.UpSampling(*variables, name="op", **attrs)
    return getattr(mx.sym, op)(variables[0], name="op", **attrs)


@pytest.mark.parametrize("case", _params("cases"))
def test_forward_and_gradients_match_mxnet(case):
    key = case["id"]
    sym = _symbol(case["op"], case["attrs"], case["inputs"])
    args = sym.list_arguments()
    assert args == case["arguments"]
    assert json.loads(sym.tojson())["nodes"][-1]["attrs"] == case["attrs"]
    shapes = {n: tuple(s) for n, s in zip(args, case["arg_shapes"])}
    arg_shapes, out_shapes, _ = sym.infer_shape(
        **{n: shapes[n] for n in case["inputs"]})
    assert [list(s) for s in arg_shapes] == case["arg_shapes"]
    assert list(out_shapes[0]) == case["out_shape"]
    exe = sym.simple_bind(mx.cpu(), grad_req="write", **shapes)
    for n in args:
        exe.arg_dict[n][:] = ARRAYS[f"{key}/in:{n}"]
    out = exe.forward(is_train=True)[0].asnumpy()
    np.testing.assert_allclose(out, ARRAYS[f"{key}/out"], rtol=1e-4, atol=1e-5)
    exe.backward([mx.nd.array(ARRAYS[f"{key}/ograd"])])
    for n in args:
        np.testing.assert_allclose(exe.grad_dict[n].asnumpy(), ARRAYS[f"{key}/grad:{n}"],
                                   rtol=1e-4, atol=1e-5, err_msg=f"d/d{n}")


@pytest.mark.parametrize("record", _params("shapes"))
def test_infer_shape_matches_mxnet(record):
    sym = _symbol(record["op"], record["attrs"], record["inputs"])
    given = {n: tuple(s) for n, s in record["given"].items()}
    if "error" in record:
        with pytest.raises(MXNetError) as err:
            sym.infer_shape(**given)
        assert record["expect"] in str(err.value), (str(err.value), record["error"])
        return
    arg_shapes, out_shapes, _ = sym.infer_shape(**given)
    assert sym.list_arguments() == record["arguments"]
    assert [list(s) for s in arg_shapes] == record["arg_shapes"]
    assert [list(s) for s in out_shapes] == record["out_shapes"]


@pytest.mark.parametrize("record", _params("creation"))
def test_bad_attributes_fail_at_creation_like_mxnet(record):
    with pytest.raises(MXNetError) as err:
        getattr(mx.sym, record["op"])(mx.sym.Variable("data"), **record["python_attrs"])
    assert record["expect"] in str(err.value), (str(err.value), record["error"])
