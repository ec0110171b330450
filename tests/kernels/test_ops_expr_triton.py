"""Every op lowered through a Triton expression (alone, as a generated kernel) equals its torch
reference on its own table cases, forward and backward (interpreted on CPU)."""
from __future__ import annotations

import numpy as np
import pytest

from symgraph import config
from symgraph.compiler.lowering import node_template
from symgraph.ops.base import canonical_ops
from tests.op_harness import bind, draw_inputs, run_forward

CASES = [pytest.param(op, case, id=f"{op.name}-{i}")
         for op in canonical_ops()
         if op.expr is not None and op.kernel is None and not op.hints.view
         for i, case in enumerate(op.cases)]
# masked-out lanes load 0 and may take e.g. sqrt(-1); numpy warns, the values are discarded
pytestmark = pytest.mark.filterwarnings("error:Triton kernel",
                                        "ignore:invalid value:RuntimeWarning",
                                        "ignore:divide by zero:RuntimeWarning",
                                        "ignore:overflow:RuntimeWarning")


def _run(op, case, backend):
    values = draw_inputs(case, np.float32)
    with config.override(backend=backend):
        sym, exe = bind(op, case, values, grad=op.gradient is not None)
    if node_template(sym._outputs[0][0]) is None:
        pytest.skip("no Triton expression for these params")
    outs = run_forward(exe, case.train)
    rng = np.random.RandomState(1)
    heads = [rng.uniform(-1, 1, o.shape).astype(np.float32) for o in outs]
    grads = {}
    if any(g is not None for g in exe.grad_dict.values()):
        import symgraph as mx
        exe.backward(None if op.loss else [mx.nd.array(h) for h in heads])
        grads = {n: g.asnumpy() for n, g in exe.grad_dict.items() if g is not None}
    return outs, grads, exe


@pytest.mark.parametrize("op,case", CASES)
def test_expression_lowering_matches_reference(op, case):
    outs, grads, exe = _run(op, case, "triton")
    ref_outs, ref_grads, _ = _run(op, case, "torch")
    labels = set(exe._plan.impl.values())
    assert any(label.startswith("fused:") for label in labels), labels
    for a, b in zip(outs, ref_outs):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)
    for name in ref_grads:
        np.testing.assert_allclose(grads[name], ref_grads[name], rtol=2e-5, atol=2e-6,
                                   err_msg=name)
