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


@pytest.mark.filterwarnings("ignore:TRITON_DEFAULT_FP_FUSION")
def test_gemm_autotune_configs_compile_to_hopper_mma(sm90):
    """Issue #22: the check compiles the configurations the GPU autotunes over (block
    sizes with their num_warps/num_stages), not only the interpreter's small one, and
    for fp16 on sm_90 Triton emits Hopper's warpgroup MMA (wgmma) in them."""
    from symgraph.kernels import gemm
    spec = SPECS["matmul"]
    args, kwargs = spec.make(torch.float16, torch.device("cpu"), spec.shapes[0])
    with gemm.compile_tuned_configs():
        spec.fn(*args, **kwargs)
    ptx = runtime.compiled_ptx("_matmul_kernel")
    assert len(ptx) == len(gemm.CUDA_CONFIGS) + 1  # every tuned config and the CPU one
    warps = sorted({w for *_, w, _ in gemm.CUDA_CONFIGS})
    threads = {int(line.split()[-1]) // 32 for p in ptx for line in p.splitlines()
               if line.strip().startswith(".reqntid")}
    assert threads == set(warps), threads  # num_warps reaches the compile
    big = [c for c in gemm.CUDA_CONFIGS if c[0] >= 64]  # wgmma needs 64-row tiles
    assert sum("wgmma" in p for p in ptx) == len(big), [p.count("wgmma") for p in ptx]


def test_gemm_autotune_key_names_layout_and_epilogue():
    """One tuned config per problem, layout and epilogue, not per (M, N, K) alone."""
    import inspect

    from symgraph.kernels import gemm
    params = inspect.signature(gemm._matmul_kernel.fn).parameters
    key = gemm.tune_key(("M", "N", "K"), {"HAS_BIAS": True, "ACT": 1, "IEEE": False,
                                          "UPCAST": False, "FP64": False}, params)
    assert key == ["M", "N", "K", "sak", "sbn", "ACT", "HAS_BIAS", "IEEE", "UPCAST"]
    conv = inspect.signature(gemm._conv_fwd_kernel.fn).parameters
    assert "sak" not in gemm.tune_key(("M", "N", "K"), {"HAS_BIAS": False}, conv)
