"""Spatial sampling, ROI and correlation operators under ``backend='triton'`` (kernels under
Triton's interpreter on CPU): every table case gives the torch backend's outputs and gradients,
and no node of the plan falls back to a torch reference (composites included)."""
from __future__ import annotations

import pytest

from symgraph.ops.base import get_op
from tests.op_harness import assert_triton_case

OPS = ["GridGenerator", "BilinearSampler", "SpatialTransformer", "_contrib_BilinearResize2D",
       "_contrib_AdaptiveAvgPooling2D", "ROIPooling", "_contrib_ROIAlign",
       "_contrib_PSROIPooling", "_contrib_DeformablePSROIPooling", "_contrib_RROIAlign",
       "Correlation"]

CASES = [pytest.param(name, i, id=f"{name}-{i}")
         for name in OPS for i in range(len(get_op(name).cases))]


@pytest.mark.parametrize("name,index", CASES)
def test_triton_backend_matches_torch(name, index):
    op = get_op(name)
    case = op.cases[index]
    assert_triton_case(op, case, 1e-4, 1e-5)
