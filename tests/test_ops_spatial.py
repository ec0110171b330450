"""Spatial sampling and ROI operators against MXNet 1.9.1 (``tests/fixtures/spatial``):
outputs and gradients of every recorded case, plus shape rules and errors."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import MXNetError
from tests.fixture_scripts import FIXTURES, load

GEN = load("spatial/generate.py")
ARRAYS = np.load(FIXTURES / "spatial" / "spatial.npz")


@pytest.mark.parametrize("c", GEN.CASES, ids=[c["id"] for c in GEN.CASES])
def test_matches_mxnet(c):
    cid = c["id"]
    ins = {n: ARRAYS[f"{cid}/in:{n}"] for n in c["inputs"]}
    sym = GEN.symbol_of(mx, c)
    grads = {n: mx.nd.zeros(v.shape) for n, v in ins.items()}
    req = {n: "write" if n in c["grads"] else "null" for n in ins}
    exe = sym.bind(mx.cpu(), {n: mx.nd.array(v) for n, v in ins.items()}, args_grad=grads,
                   grad_req=req)
    out = exe.forward(is_train=True)[0].asnumpy()
    np.testing.assert_allclose(out, ARRAYS[f"{cid}/out"], rtol=1e-5, atol=1e-5)
    exe.backward([mx.nd.array(ARRAYS[f"{cid}/ograd"])])
    for n in c["grads"]:
        np.testing.assert_allclose(grads[n].asnumpy(), ARRAYS[f"{cid}/grad:{n}"], rtol=1e-4,
                                   atol=1e-5, err_msg=f"gradient of {n}")
