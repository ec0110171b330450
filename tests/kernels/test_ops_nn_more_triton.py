"""SVMOutput, IdentityAttachKLSparseReg and CTCLoss (with their hidden backward ops) and the
composites BatchNorm_v1, SyncBatchNorm, BatchNormWithReLU and the interleaved attention
products: every case gives the same outputs and gradients with ``backend='triton'``
(kernels under Triton's interpreter on CPU) as with the torch backend, and no node of the
plan falls back to a torch reference."""
from __future__ import annotations

import pytest

from symgraph.ops.base import get_op
from tests.op_harness import assert_triton_case

OPS = ["SVMOutput", "_backward_SVMOutput", "IdentityAttachKLSparseReg",
       "_backward_IdentityAttachKLSparseReg", "CTCLoss", "BatchNorm_v1",
       "_contrib_SyncBatchNorm", "_contrib_BatchNormWithReLU",
       "_contrib_interleaved_matmul_selfatt_qk", "_contrib_interleaved_matmul_selfatt_valatt",
       "_contrib_interleaved_matmul_encdec_qk", "_contrib_interleaved_matmul_encdec_valatt"]
CASES = [pytest.param(name, i, id=f"{name}-{i}")
         for name in OPS for i, _ in enumerate(get_op(name).cases)]


@pytest.mark.parametrize("name,index", CASES)
def test_triton_backend_matches_torch(name, index):
    op = get_op(name)
    case = op.cases[index]
    assert_triton_case(op, case, 1e-4, 1e-5)
