"""Every kernel in the table also compiles for the GPU (sm_90, to cubin; no GPU needed).

The interpreter accepts code the GPU compiler rejects (a name rebound to another shape or
type inside a loop, say); compiling each interpreted launch ahead of time catches that here.
"""
from __future__ import annotations

import pytest
import torch

from symgraph.kernels import runtime
from symgraph.kernels.table import all_kernels
from tests import device

SPECS = all_kernels()
CASES = [pytest.param(spec, dtype, id=f"{name}-{dtype}".replace("torch.", ""))
         for name, spec in SPECS.items() for dtype in spec.dtypes[:2]]


@pytest.fixture
def sm90():
    if device.ON_GPU:  # a CPU stand-in: on a GPU the kernel tests compile and run for real
        pytest.skip("the kernels compile for real on the test GPU")
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


def test_gemm_autotune_prunes_tiles_beyond_the_problem():
    """Small problems compile and time only the tiles that fit them (power-of-two bounds,
    32 at least); a problem smaller than every tile keeps the smallest one."""
    import triton

    from symgraph.kernels import gemm
    configs = [triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k}, num_warps=w,
                             num_stages=s) for m, n, k, w, s in gemm.CUDA_CONFIGS]
    prune = gemm.prune_configs(("M", "N", "K"))
    sizes = lambda kept: {(c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], c.kwargs["BLOCK_K"])  # noqa: E731
                          for c in kept}
    assert sizes(prune(configs, {"M": 6272, "N": 50, "K": 500})) == {
        (128, 64, 32), (64, 64, 32), (32, 64, 32)}
    assert len(prune(configs, {"M": 4096, "N": 4096, "K": 4096})) == len(configs)
    assert sizes(prune(configs, {"M": 1, "N": 1, "K": 1})) == {(32, 64, 32)}


def test_gemm_autotune_key_names_layout_and_epilogue():
    """One tuned config per problem, layout and epilogue, not per (M, N, K) alone."""
    import inspect

    from symgraph.kernels import gemm
    params = inspect.signature(gemm._matmul_kernel.fn).parameters
    key = gemm.tune_key(("M", "N", "K"), {"HAS_BIAS": True, "ACT": 1, "IEEE": False,
                                          "UPCAST": False, "FP64": False}, params)
    assert key == ["M", "N", "K", "sak", "sbn", "ACT", "HAS_BIAS", "IEEE", "UPCAST"]
    from symgraph.kernels import conv as conv_kernels
    conv = inspect.signature(conv_kernels._conv_fwd_kernel.fn).parameters
    assert "sak" not in gemm.tune_key(("M", "N", "K"), {"HAS_BIAS": False}, conv)


@pytest.mark.filterwarnings("ignore:TRITON_DEFAULT_FP_FUSION")
def test_decorator_launch_options_reach_the_compile(sm90):
    """``@kernel(enable_fp_fusion=False)`` reaches every launch: PSROIPooling's bin edges
    ``floor(p * bin + start)`` compile to a multiply and an add, not an FMA (on the H200 the
    fused form moved 4 of 108 bins by one pixel against MXNet's rounding)."""
    spec = SPECS["psroi_pool_fwd"]
    args, kwargs = spec.make(torch.float32, torch.device("cpu"), spec.shapes[0])
    spec.fn(*args, **kwargs)
    ptx = runtime.compiled_ptx("_psroi_kernel")
    assert ptx and not any("fma.rn.f32" in p for p in ptx)
    assert all("mul.rn.f32" in p or "mul.f32" in p for p in ptx)


@pytest.mark.filterwarnings("ignore:TRITON_DEFAULT_FP_FUSION")
def test_tma_schedule_compiles_to_tma_copies_and_hopper_mma(sm90):
    """Issue #22 item 4: the persistent TMA schedule of 16-bit GEMMs, in every
    configuration the GPU autotunes over, compiles for sm_90 to TMA bulk tensor copies and
    warpgroup MMA (wgmma)."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    from symgraph.kernels import gemm
    m, n, k = 256, 384, 512
    a = torch.randn(m, k).half()
    w = torch.randn(n, k).half()  # linear's weight: B = w.t()
    c = torch.empty(m, n).half()
    runtime._compile_check["ptx"].pop("_matmul_tma_kernel", None)
    for bm, bn, bk, warps, stages in gemm.TMA_CONFIGS:
        descs = (TensorDescriptor.from_tensor(a, [bm, bk]),
                 TensorDescriptor.from_tensor(w, [bn, bk]),
                 TensorDescriptor.from_tensor(c, [bm, bn]))
        runtime.aot_compile(gemm._matmul_tma_kernel.fn, (*descs, c, m, n, k, 1), {
            "HAS_BIAS": True, "ACT": 1, "B_T": True, "UPCAST": False, "GROUP_M": 8,
            "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "num_warps": warps,
            "num_stages": stages}, 90)
    ptx = runtime.compiled_ptx("_matmul_tma_kernel")
    assert len(ptx) == len(gemm.TMA_CONFIGS)
    assert all("cp.async.bulk.tensor" in p for p in ptx)
    assert all("wgmma" in p for p in ptx)
