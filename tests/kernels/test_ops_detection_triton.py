"""Detection operators (box_iou, box_encode, box_decode, box_nms with its gradient,
bipartite_matching and the MultiBox ops): every table case gives the same outputs and
gradients with ``backend='triton'`` (kernels under Triton's interpreter on CPU) as with the
torch backend, and no node of the plan falls back to a torch reference."""
from __future__ import annotations

import numpy as np
import pytest

from symgraph.ops.base import OPS, get_op
from tests.op_harness import assert_triton_case

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
    labels = assert_triton_case(op, case, 1e-5, 1e-5)
    if name == "_contrib_box_nms" and case.grad:
        assert "triton:triton_backward_box_nms" in labels.values(), labels


FIXTURE_KERNELS = {
    "MultiBoxTarget": ("symgraph.kernels.multibox", "multibox_target", "TargetConfig"),
    "MultiBoxDetection": ("symgraph.kernels.multibox", "multibox_detection", "DetectionConfig"),
    "Proposal": ("symgraph.kernels.proposal", "multi_proposal", "ProposalConfig"),
    "MultiProposal": ("symgraph.kernels.proposal", "multi_proposal", "ProposalConfig"),
}


def _fixture_cases():
    from tests.test_ops_detection import GEN
    return [pytest.param(name, op, inputs, attrs, id=name)
            for name, op, inputs, attrs in GEN.make_cases()
            # multi_proposal runs the proposal kernels on 3 images: too slow interpreted
            if op in FIXTURE_KERNELS and name != "multi_proposal"]


@pytest.mark.parametrize("name,op,inputs,attrs", _fixture_cases())
def test_triton_kernels_match_mxnet(name, op, inputs, attrs):
    """The Triton wrappers of MultiBoxTarget/Detection and (Multi)Proposal (under the
    interpreter, or compiled on the test GPU) give MXNet 1.9.1's outputs on the fixture
    inputs."""
    import importlib

    import torch

    from tests import device
    from tests.test_ops_detection import ARRAYS
    module, fn, config = FIXTURE_KERNELS[op]
    mod = importlib.import_module(module)
    cfg = getattr(mod, config)(**attrs)
    got = getattr(mod, fn)(*[torch.from_numpy(x).to(device.TORCH) for x in inputs], cfg)
    got = got if isinstance(got, tuple) else (got,)
    for j, g in enumerate(got):
        np.testing.assert_allclose(g.cpu().numpy(), ARRAYS[f"{name}/out{j}"], rtol=1e-5,
                                   atol=1e-5,
                                   err_msg=f"{name} output {j}")
