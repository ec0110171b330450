"""The deformable convolutions (composites around ``_deformable_im2col``), fft/ifft and
count_sketch (composites): every case gives the same outputs and gradients with
``backend='triton'`` (kernels under Triton's interpreter on CPU) as with the torch backend,
and no node of the plan falls back to a torch reference."""
from __future__ import annotations

import pytest

from symgraph.ops.base import OPS, get_op
from tests.op_harness import assert_triton_case

OPS_HERE = ["_deformable_im2col", "_contrib_DeformableConvolution",
            "_contrib_ModulatedDeformableConvolution", "_contrib_fft", "_contrib_ifft",
            "_contrib_count_sketch"]
CASES = [pytest.param(name, i, id=f"{name}-{i}")
         for name in OPS_HERE if name in OPS for i, _ in enumerate(get_op(name).cases)]


@pytest.mark.parametrize("name,index", CASES)
def test_triton_backend_matches_torch(name, index):
    op = get_op(name)
    case = op.cases[index]
    labels = assert_triton_case(op, case, 1e-4, 1e-5)
    if op.decompose is not None and "Deformable" in name:
        assert "triton:_col_kernel" in labels.values(), labels
