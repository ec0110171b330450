"""_contrib_hawkesll against MXNet 1.9.1 (tests/fixtures/hawkesll/generate.py): the
log-likelihood, the final states and the gradients for lda, alpha and beta, on the torch
backend and on the Triton kernels (interpreted on CPU)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import symgraph as mx
from symgraph import config

CASES = json.loads((Path(__file__).parent / "fixtures" / "hawkesll" / "cases.json").read_text())
NAMES = ("lda", "alpha", "beta", "state", "lags", "marks", "valid_length", "max_time")


def _run(case: dict):
    arrays = {n: mx.nd.array(case["inputs"][n], dtype="int32" if n == "marks" else "float32")
              for n in NAMES}
    for n in ("lda", "alpha", "beta"):
        arrays[n].attach_grad()
    with mx.autograd.record():
        ll, states = mx.nd.contrib.hawkesll(*arrays.values())
    ll.backward(mx.nd.array(case["head"]))
    return ll, states, {n: arrays[n].grad for n in ("lda", "alpha", "beta")}


@pytest.mark.parametrize("backend", ["torch", "triton"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: str(np.shape(c["inputs"]["lags"])))
def test_hawkesll_matches_mxnet(case, backend):
    with config.override(backend=backend):
        ll, states, grads = _run(case)
    np.testing.assert_allclose(ll.asnumpy(), case["ll"], rtol=1e-4)
    np.testing.assert_allclose(states.asnumpy(), case["states"], rtol=1e-4, atol=1e-30)
    for name, grad in grads.items():
        np.testing.assert_allclose(grad.asnumpy(), case["grads"][name], rtol=1e-3, atol=1e-5,
                                   err_msg=name)


def test_hawkesll_triton_plan_launches_no_reference():
    sym = mx.sym.contrib.hawkesll(*[mx.sym.var(n) for n in NAMES])
    shapes = {"lda": (2, 3), "alpha": (3,), "beta": (3,), "state": (2, 3), "lags": (2, 4),
              "marks": (2, 4), "valid_length": (2,), "max_time": (2,)}
    with config.override(backend="triton"):
        exe = sym.simple_bind(mx.cpu(), type_dict={"marks": "int32"}, **shapes)
    assert not [v for v in exe._plan.impl.values() if v.startswith("torch:")], exe._plan.impl


def test_hawkesll_shape_errors_name_the_input():
    with pytest.raises(mx.base.MXNetError, match="alpha must have shape"):
        mx.nd.contrib.hawkesll(mx.nd.ones((2, 3)), mx.nd.ones((2,)), mx.nd.ones((3,)),
                               mx.nd.zeros((2, 3)), mx.nd.ones((2, 4)),
                               mx.nd.zeros((2, 4), dtype="int32"), mx.nd.ones((2,)),
                               mx.nd.ones((2,)))
