"""GEMM family: tiled matmul with a fused epilogue, and convolution as implicit GEMM.

Matmul. ``C[b] = act(A[b] @ B[b] + bias)`` with A (M, K), B (K, N) given by arbitrary strides
(a transposed operand is a strided view, never a copy), one program per BLOCK_M x BLOCK_N
tile of C, K walked in BLOCK_K steps with ``tl.dot`` accumulating in fp32 (fp64 for fp64
inputs; fp32 operands use IEEE products, not TF32, to match torch's default), ragged edges
masked. The bias is a vector broadcast along M (linear) or along N (convolution's per-filter
bias) by its two strides. Traffic: A, B, bias read, C written; 2*M*N*K FLOPs.

Convolution (1-, 2- and 3-D; lower ranks are 3-D with unit leading axes) as implicit GEMM,
the input patch gathered inside the kernel (no im2col buffer). With ``o`` an output position,
``i = o * stride - pad + kk * dilate`` the input position read by kernel tap ``kk``:

    forward     y[n, f, o]  = sum_{c, kk} x[n, c, i] * w[f, c, kk]     M=N*O, N=F/g, K=C/g*KK
    data grad   dx[n, c, i] = sum_{f, kk} dy[n, f, o] * w[f, c, kk]    M=N*I, N=C/g, K=F/g*KK
                              over the (o, kk) with o * stride = i + pad - kk * dilate
    weight grad dw[f, c, kk] = sum_{n, o} dy[n, f, o] * x[n, c, i]     M=F/g, N=C/g*KK, K=N*O
    bias grad   db[f]       = sum_{n, o} dy[n, f, o]

Deconvolution (weight (C, F/g, *kernel)) is the data gradient of the convolution whose weight
it holds, so its forward is the data-grad kernel (output size ``stride*(d-1)+dk-2*pad+adj``)
and its backward is the convolution forward (dx) and the weight-grad kernel with the roles of
data and output gradient swapped (dw).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from .runtime import cdiv, kernel, on_cpu
from .table import KernelSpec, tensor_bytes

ACTS = {None: 0, "none": 0, "relu": 1, "sigmoid": 2, "tanh": 3}

# Tuning configs as data: (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages), autotuned per
# (M, N, K) on CUDA; the interpreter runs one small config (every program is numpy work).
CUDA_CONFIGS = ((128, 128, 32, 4, 4), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4),
                (128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (64, 64, 32, 4, 5),
                (32, 64, 32, 4, 5))
CPU_CONFIG = {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}
_tuned: dict[str, object] = {}


def _launch(kern, grid, key: tuple[str, ...], args: tuple, meta: dict) -> None:
    """Launch ``kern`` with the CPU config under the interpreter, autotuned on CUDA."""
    if on_cpu(*[a for a in args if isinstance(a, torch.Tensor)]):
        kern[grid(CPU_CONFIG)](*args, **meta, **CPU_CONFIG)
        return
    tuned = _tuned.get(kern.__name__)
    if tuned is None:
        configs = [triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k},
                                 num_warps=w, num_stages=s) for m, n, k, w, s in CUDA_CONFIGS]
        tuned = triton.autotune(configs, key=list(key))(triton.jit(kern.fn))
        _tuned[kern.__name__] = tuned
    tuned[grid](*args, **meta)


@kernel
def _matmul_kernel(a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K,
                   sa0, sam, sak, sb0, sbk, sbn, sc0, scm, scn, sbias_m, sbias_n,
                   HAS_BIAS: tl.constexpr, ACT: tl.constexpr, FP64: tl.constexpr,
                   IEEE: tl.constexpr, UPCAST: tl.constexpr, BLOCK_M: tl.constexpr,
                   BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """One BLOCK_M x BLOCK_N tile of ``C[b] = act(A[b] @ B[b] + bias)``; batch b = axis 1."""
    pid, batch = tl.program_id(0), tl.program_id(1)
    n_tiles = (N + BLOCK_N - 1) // BLOCK_N  # (tl.cdiv is a nested jit call: not interpretable)
    rm = (pid // n_tiles) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = (pid % n_tiles) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + batch * sa0 + rm[:, None] * sam + rk[None, :] * sak
    b_ptrs = b_ptr + batch * sb0 + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.full((BLOCK_M, BLOCK_N), 0.0, tl.float64 if FP64 else tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] + k0 < K), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] + k0 < K) & (rn[None, :] < N), other=0.0)
        if UPCAST:  # the interpreter's dot mistreats bf16 operands
            a, b = a.to(tl.float32), b.to(tl.float32)
        if IEEE:
            acc = tl.dot(a, b, acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * sak
        b_ptrs += BLOCK_K * sbk
    if HAS_BIAS:  # epilogue inlined: nested @jit helpers do not run under the interpreter
        bias = tl.load(bias_ptr + rm[:, None] * sbias_m + rn[None, :] * sbias_n,
                       mask=(rm[:, None] < M) & (rn[None, :] < N), other=0.0)
        acc = acc + bias.to(acc.dtype)
    if ACT == 1:
        acc = tl.maximum(acc, 0.0)
    elif ACT == 2:
        acc = 1.0 / (1.0 + tl.exp(-acc))
    elif ACT == 3:
        acc = 2.0 / (1.0 + tl.exp(-2.0 * acc)) - 1.0
    c_ptrs = c_ptr + batch * sc0 + rm[:, None] * scm + rn[None, :] * scn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def _check_out(out: torch.Tensor | None, shape: tuple, like: torch.Tensor) -> torch.Tensor:
    """The given ``out=`` (shape and dtype checked) or a new tensor."""
    if out is None:
        return torch.empty(shape, dtype=like.dtype, device=like.device)
    if tuple(out.shape) != tuple(shape) or out.dtype != like.dtype:
        raise ValueError(f"out must be {like.dtype} of shape {tuple(shape)}, got {out.dtype} "
                         f"{tuple(out.shape)}")
    return out


def _gemm(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, bias=None, bias_axis: int = 1,
          act=None) -> torch.Tensor:
    """Launch the batched matmul on 3-D views (B, M, K) x (B, K, N) -> (B, M, N)."""
    if act not in ACTS:
        raise ValueError(f"act must be one of {sorted(k for k in ACTS if k)}, got {act!r}")
    nb, m, k = a.shape
    n = b.shape[2]
    if c.numel() == 0:
        return c
    if k == 0:
        return c.copy_(_gemm_empty_k(c, bias, bias_axis, act))
    sbias = (0, 0) if bias is None else ((0, bias.stride(0)) if bias_axis == 1
                                         else (bias.stride(0), 0))
    args = (a, b, a if bias is None else bias, c, m, n, k, *a.stride(), *b.stride(),
            *c.stride(), *sbias)
    meta = {"HAS_BIAS": bias is not None, "ACT": ACTS[act], "FP64": a.dtype == torch.float64,
            "IEEE": a.dtype in (torch.float32, torch.float64), "UPCAST": _upcast(a)}
    _launch(_matmul_kernel, lambda cfg: (cdiv(m, cfg["BLOCK_M"]) * cdiv(n, cfg["BLOCK_N"]), nb),
            ("M", "N", "K"), args, meta)
    return c


def _upcast(t: torch.Tensor) -> bool:
    """bf16 operands are widened before tl.dot under the interpreter (numpy has no bf16)."""
    return t.dtype == torch.bfloat16 and on_cpu(t)


def _gemm_empty_k(c, bias, bias_axis, act):
    """The result of an empty contraction: act(bias) broadcast (or act(0))."""
    val = torch.zeros_like(c)
    if bias is not None:
        val += bias.view(-1) if bias_axis == 1 else bias.view(-1, 1)
    return _act_ref(val, act)


def _act_ref(x: torch.Tensor, act) -> torch.Tensor:
    """Torch reference of the epilogue activations."""
    if act == "relu":
        return torch.relu(x)
    if act == "sigmoid":
        return torch.sigmoid(x)
    if act == "tanh":
        return torch.tanh(x)
    return x


def matmul(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None, act=None,
           out: torch.Tensor | None = None) -> torch.Tensor:
    """``act(a @ b + bias)`` for 2-D a (M, K), b (K, N) in any strides; bias (N,)."""
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0] or a.dtype != b.dtype:
        raise ValueError(f"matmul expects (M, K) x (K, N) of one dtype, got {tuple(a.shape)} "
                         f"{a.dtype} and {tuple(b.shape)} {b.dtype}")
    if bias is not None and tuple(bias.shape) != (b.shape[1],):
        raise ValueError(f"bias must be ({b.shape[1]},), got {tuple(bias.shape)}")
    c = _check_out(out, (a.shape[0], b.shape[1]), a)
    _gemm(a.unsqueeze(0), b.unsqueeze(0), c.unsqueeze(0), bias, 1, act)
    return c


def matmul_ref(a, b, bias=None, act=None):
    """Reference: 2*M*N*K FLOPs; reads A, B (and bias), writes C."""
    c = a @ b if bias is None else torch.addmm(bias, a, b)
    return _act_ref(c, act)


def bmm(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """Batched ``a @ b`` for 3-D a (B, M, K), b (B, K, N) in any strides."""
    if a.dim() != 3 or b.dim() != 3 or a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1] \
            or a.dtype != b.dtype:
        raise ValueError(f"bmm expects (B, M, K) x (B, K, N) of one dtype, got "
                         f"{tuple(a.shape)} {a.dtype} and {tuple(b.shape)} {b.dtype}")
    c = _check_out(out, (a.shape[0], a.shape[1], b.shape[2]), a)
    return _gemm(a, b, c)


def bmm_ref(a, b):
    """Reference: 2*B*M*N*K FLOPs; reads A, B, writes C."""
    return torch.bmm(a, b)


def linear(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None = None, act=None,
           out: torch.Tensor | None = None) -> torch.Tensor:
    """``act(x @ w.T + bias)`` for x (M, K), w (N, K) (w.T is a strided view, no copy)."""
    return matmul(x, w.t(), bias, act, out=out)


def linear_ref(x, w, bias=None, act=None):
    """Reference: 2*M*N*K FLOPs; reads x, w (and bias), writes the output."""
    return _act_ref(torch.nn.functional.linear(x, w, bias), act)


# ---------------------------------------------------------------- table entries

_TOL = {torch.float32: (1e-4, 1e-4), torch.float16: (1e-2, 1e-2),
        torch.bfloat16: (2e-2, 2e-2)}
_MM_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
_MM_BENCH = ((2048, 2048, 2048), (4096, 4096, 4096), (8192, 1024, 4096))


def _randn(gen, shape, dtype, device):
    return torch.randn(shape, generator=gen).to(device=device, dtype=dtype)


def _make_mm(dtype, device, shape):
    """(M, K, N): a contiguous, b contiguous."""
    gen = torch.Generator().manual_seed(0)
    m, k, n = shape
    return (_randn(gen, (m, k), dtype, device), _randn(gen, (k, n), dtype, device)), {}


def _make_mm_t_bias(dtype, device, shape):
    """(M, K, N): a given as a transposed (K, M) view, a bias and a ReLU epilogue."""
    gen = torch.Generator().manual_seed(1)
    m, k, n = shape
    a = _randn(gen, (k, m), dtype, device).t()
    return (a, _randn(gen, (k, n), dtype, device), _randn(gen, (n,), dtype, device),
            "relu"), {}


def _make_linear(dtype, device, shape):
    """(M, K, N): x (M, K), w (N, K), bias (N,), tanh epilogue."""
    gen = torch.Generator().manual_seed(2)
    m, k, n = shape
    return (_randn(gen, (m, k), dtype, device), _randn(gen, (n, k), dtype, device),
            _randn(gen, (n,), dtype, device), "tanh"), {}


def _make_bmm(dtype, device, shape):
    """(B, M, K, N): b given as a transposed (B, N, K) view."""
    gen = torch.Generator().manual_seed(3)
    nb, m, k, n = shape
    return (_randn(gen, (nb, m, k), dtype, device),
            _randn(gen, (nb, n, k), dtype, device).transpose(1, 2)), {}


def _mm_flops(a, b, *rest):
    return 2 * a.shape[-2] * a.shape[-1] * b.shape[-1] * (a.shape[0] if a.dim() == 3 else 1)


def _linear_flops(x, w, *rest):
    return 2 * x.shape[0] * x.shape[1] * w.shape[0]


_MM_SHAPES = ((3, 37, 5), (33, 17, 65), (1, 129, 7))

KERNELS = [
    KernelSpec(name="matmul", fn=matmul, ref=matmul_ref, make=_make_mm, shapes=_MM_SHAPES,
               bench_shapes=_MM_BENCH, dtypes=_MM_DTYPES, tol=_TOL, flops=_mm_flops,
               bytes=lambda a, b: tensor_bytes(a, b) + a.shape[0] * b.shape[1] * a.element_size(),
               family="gemm"),
    KernelSpec(name="matmul_at_bias_relu", fn=matmul, ref=matmul_ref, make=_make_mm_t_bias,
               shapes=_MM_SHAPES, bench_shapes=_MM_BENCH, dtypes=_MM_DTYPES, tol=_TOL,
               flops=_mm_flops, family="gemm"),
    KernelSpec(name="linear_bias_tanh", fn=linear, ref=linear_ref, make=_make_linear,
               shapes=((3, 37, 5), (17, 9, 33)), bench_shapes=((4096, 4096, 4096),),
               dtypes=_MM_DTYPES, tol=_TOL, flops=_linear_flops, family="gemm"),
    KernelSpec(name="bmm_bt", fn=bmm, ref=bmm_ref, make=_make_bmm,
               shapes=((2, 3, 37, 5), (3, 17, 9, 33)), bench_shapes=((16, 1024, 1024, 1024),),
               dtypes=_MM_DTYPES, tol=_TOL, flops=_mm_flops, family="gemm"),
]
