"""Every kernel in the table also compiles for the GPU (sm_90, to cubin; no GPU needed).

The interpreter accepts code the GPU compiler rejects (a name rebound to another shape or
type inside a loop, say); compiling each interpreted launch ahead of time catches that here.
"""
from __future__ import annotations

import pytest
import torch

from symgraph.kernels import runtime
from symgraph.kernels.table import all_kernels

SPECS = all_kernels()
CASES = [pytest.param(spec, dtype, id=f"{name}-{dtype}".replace("torch.", ""))
         for name, spec in SPECS.items() for dtype in spec.dtypes[:2]]


@pytest.fixture
def sm90():
    runtime.compile_check(90)
    yield
    runtime.compile_check(None)


@pytest.mark.filterwarnings("ignore:TRITON_DEFAULT_FP_FUSION")
@pytest.mark.parametrize("spec,dtype", CASES)
def test_kernel_compiles_for_sm90(spec, dtype, sm90):
    args, kwargs = spec.make(dtype, torch.device("cpu"), spec.shapes[0])
    spec.fn(*args, **kwargs)
