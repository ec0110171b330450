"""Detection operators (box_iou, box_encode, box_decode, box_nms with its gradient,
bipartite_matching and the MultiBox ops): every table case gives the same outputs and
gradients with ``backend='triton'`` (kernels under Triton's interpreter on CPU) as with the
torch backend, and no node of the plan falls back to a torch reference."""
from __future__ import annotations

import numpy as np
import pytest

from symgraph.ops.base import OPS, get_op
from tests.op_harness import assert_backends_agree, draw_inputs

DETECTION = ["_contrib_box_iou", "_contrib_box_encode", "_contrib_box_decode",
             "_contrib_box_nms", "_contrib_bipartite_matching", "_contrib_MultiBoxPrior",
             "_contrib_MultiBoxTarget", "_contrib_MultiBoxDetection", "_contrib_Proposal",
             "_contrib_MultiProposal"]

CASES = [pytest.param(name, i, id=f"{name}-{i}")
         for name in DETECTION if name in OPS for i, _ in enumerate(get_op(name).cases)]


@pytest.mark.parametrize("name,index", CASES)
def test_triton_backend_matches_torch(name, index):
    op = get_op(name)
    case = op.cases[index]
    exe = assert_backends_agree(op, case, draw_inputs(case, np.float32), 1e-5, 1e-5)
    labels = exe._plan.impl
    assert not [v for v in labels.values() if v.startswith("torch:")], labels
    if op.kernel is not None:
        assert f"triton:{op.kernel.__name__}" in labels.values(), labels
    if name == "_contrib_box_nms" and case.grad:
        assert "triton:triton_backward_box_nms" in labels.values(), labels
