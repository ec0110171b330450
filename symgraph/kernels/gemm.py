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

import contextlib
import functools
import inspect
import math
import warnings

import torch
import triton
import triton.language as tl

from .philox import device
from .runtime import aot_compile, cdiv, compile_target, kernel, on_cpu
from .table import KernelSpec, tensor_bytes

ACTS = {None: 0, "none": 0, "relu": 1, "sigmoid": 2, "tanh": 3}

# Tuning configs as data: (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages), autotuned per
# (M, N, K) on CUDA; the interpreter runs one small config (every program is numpy work).
CUDA_CONFIGS = ((128, 128, 32, 4, 4), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4),
                (128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (64, 64, 32, 4, 5),
                (32, 64, 32, 4, 5))
CPU_CONFIG = {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}
FP64_CONFIG = {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 8}  # float64 on CUDA (tests)
_tuned: dict[str, object] = {}
_compile_tuned = {"on": False}  # compile_check also compiles every CUDA_CONFIGS entry


@contextlib.contextmanager
def compile_tuned_configs():
    """While on (with ``runtime.compile_check``), a CPU launch also compiles the kernel
    ahead of time in each autotuning configuration the GPU would try (block sizes,
    ``num_warps``, ``num_stages``)."""
    _compile_tuned["on"] = True
    try:
        yield
    finally:
        _compile_tuned["on"] = False


def _launch(kern, grid, key: tuple[str, ...], args: tuple, meta: dict) -> None:
    """Launch ``kern`` with the CPU config under the interpreter, autotuned on CUDA."""
    if on_cpu(*[a for a in args if isinstance(a, torch.Tensor)]):
        arch = compile_target()
        if arch is not None and _compile_tuned["on"] and not meta.get("FP64"):
            for m, n, k, w, s in CUDA_CONFIGS:
                aot_compile(kern.fn, args, {**meta, "SUMK": False, "BLOCK_M": m,
                                            "BLOCK_N": n, "BLOCK_K": k, "num_warps": w,
                                            "num_stages": s}, arch)
        kern[grid(CPU_CONFIG)](*args, **meta, SUMK=False, **CPU_CONFIG)
        return
    if meta.get("FP64"):  # small tiles: the fp64 products are summed in registers
        kern[grid(FP64_CONFIG)](*args, **meta, SUMK=True, **FP64_CONFIG, num_warps=4,
                                num_stages=1)
        return
    meta = {**meta, "SUMK": False}
    tuned = _tuned.get(kern.__name__)
    if tuned is None:
        configs = [triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k},
                                 num_warps=w, num_stages=s) for m, n, k, w, s in CUDA_CONFIGS]
        # cache_results: the winning config is stored in Triton's on-disk cache (under
        # symgraph's cache_dir), so a second process starts tuned
        params = inspect.signature(kern.fn).parameters
        tuned = triton.autotune(configs, key=tune_key(key, meta, params), cache_results=True,
                                prune_configs_by={"early_config_prune": prune_configs(key)})(
            triton.jit(kern.fn))
        _tuned[kern.__name__] = tuned
    tuned[grid](*args, **meta)


def _pow2_at_least(n: int) -> int:
    return 1 << max(int(n) - 1, 0).bit_length()


def prune_configs(dims: tuple[str, ...]):
    """Triton's early pruning for a kernel whose problem dims are named ``dims`` (M, N, K):
    tiles more than a power of two beyond the problem are dropped before autotuning, so a
    small layer compiles and times 2-3 configurations instead of all of them (on the H200 a
    LeNet step spent over 120 s in ptxas compiling 256-wide tiles for 20 channels)."""
    blocks = ("BLOCK_M", "BLOCK_N", "BLOCK_K")

    def prune(configs, named_args, **kwargs):
        limits = [max(32, _pow2_at_least(named_args[d])) for d in dims]
        kept = [c for c in configs
                if all(c.kwargs[b] <= lim for b, lim in zip(blocks, limits))]
        return kept or [min(configs, key=lambda c: c.kwargs["BLOCK_M"] * c.kwargs["BLOCK_N"])]
    return prune


def tune_key(dims: tuple[str, ...], meta: dict, params) -> list[str]:
    """What one autotuned config is chosen for: the problem dims, the operands' layout (the
    unit-or-not strides of A's K and B's N axes, where the kernel has them) and the
    epilogue and precision flags; Triton adds the tensors' dtypes. One config per (M, N,
    K) alone made transposed operands and fused epilogues share a config tuned for
    another."""
    layout = [k for k in ("sak", "sbn") if k in params]
    return [*dims, *layout, *sorted(k for k in ("HAS_BIAS", "ACT", "UPCAST", "IEEE", "PARTIAL")
                                    if k in meta and k in params)]


@device
def _act(acc, ACT: tl.constexpr):
    """The GEMM epilogue's activation (ACT: 0 none, 1 relu, 2 sigmoid, 3 tanh), shared by
    the kernels (a ``device`` helper: interpreted kernels can call it too)."""
    if ACT == 1:
        acc = tl.maximum(acc, 0.0)
    elif ACT == 2:
        acc = 1.0 / (1.0 + tl.exp(-acc))
    elif ACT == 3:
        acc = 2.0 / (1.0 + tl.exp(-2.0 * acc)) - 1.0
    return acc


@kernel
def _matmul_kernel(a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K,
                   sa0, sam, sak, sb0, sbk, sbn, sc0, scm, scn, sbias_m, sbias_n, split, scs,
                   HAS_BIAS: tl.constexpr, ACT: tl.constexpr, FP64: tl.constexpr,
                   SUMK: tl.constexpr, PARTIAL: tl.constexpr,
                   IEEE: tl.constexpr, UPCAST: tl.constexpr, GROUP_M: tl.constexpr,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """One BLOCK_M x BLOCK_N tile of ``C[b] = act(A[b] @ B[b] + bias)``; batch b = axis 1.

    Tiles are taken in groups of GROUP_M tile rows that sweep the columns together, so the
    rows of A and the columns of B they share stay in L2. Split-K (PARTIAL): program axis 2
    takes one of ``split`` slices of K (whole BLOCK_K steps) and stores its fp32 partial sum
    at ``c + slice * scs``, without the epilogue (``_splitk_sum_kernel`` adds the slices)."""
    pid, batch = tl.program_id(0), tl.program_id(1)
    n_tiles = (N + BLOCK_N - 1) // BLOCK_N  # (tl.cdiv is a nested jit call: not interpretable)
    m_tiles = (M + BLOCK_M - 1) // BLOCK_M
    width = GROUP_M * n_tiles
    first_m = (pid // width) * GROUP_M
    group_m = tl.minimum(m_tiles - first_m, GROUP_M)
    rm = (first_m + (pid % width) % group_m) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = ((pid % width) // group_m) * BLOCK_N + tl.arange(0, BLOCK_N)
    per = ((K + split - 1) // split + BLOCK_K - 1) // BLOCK_K * BLOCK_K  # K of one slice
    k_lo = tl.program_id(2) * per
    k_hi = tl.minimum(K, k_lo + per)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + batch * sa0 + rm[:, None] * sam + (rk[None, :] + k_lo) * sak
    b_ptrs = b_ptr + batch * sb0 + (rk[:, None] + k_lo) * sbk + rn[None, :] * sbn
    acc = tl.full((BLOCK_M, BLOCK_N), 0.0, tl.float64 if FP64 else tl.float32)
    for k0 in range(k_lo, k_hi, BLOCK_K):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] + k0 < k_hi), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] + k0 < k_hi) & (rn[None, :] < N), other=0.0)
        if UPCAST:  # the interpreter's dot mistreats bf16 operands
            a, b = a.to(tl.float32), b.to(tl.float32)
        if SUMK:  # fp64 on CUDA: products summed over K (fp64 tl.dot fails to compile)
            acc += tl.reduce(a[:, :, None] * b[None, :, :], 1, _add_combine)
        elif IEEE:
            acc = tl.dot(a, b, acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * sak
        b_ptrs += BLOCK_K * sbk
    if PARTIAL:
        c_ptrs = c_ptr + tl.program_id(2) * scs + batch * sc0 + rm[:, None] * scm + \
            rn[None, :] * scn
        tl.store(c_ptrs, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))
        return
    if HAS_BIAS:
        bias = tl.load(bias_ptr + rm[:, None] * sbias_m + rn[None, :] * sbias_n,
                       mask=(rm[:, None] < M) & (rn[None, :] < N), other=0.0)
        acc = acc + bias.to(acc.dtype)
    acc = _act(acc, ACT)
    c_ptrs = c_ptr + batch * sc0 + rm[:, None] * scm + rn[None, :] * scn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


@kernel
def _matmul_tma_kernel(a_desc, b_desc, c_desc, bias_ptr, M, N, K, sbias,
                       HAS_BIAS: tl.constexpr, ACT: tl.constexpr, B_T: tl.constexpr,
                       UPCAST: tl.constexpr, GROUP_M: tl.constexpr, BLOCK_M: tl.constexpr,
                       BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """The Hopper schedule of ``C = act(A @ B + bias)``: persistent programs (about one per
    SM) walk the output tiles in GROUP_M groups; A (M, K) and B (K, N), or B^T (N, K) with
    B_T, come through TMA descriptors (out-of-range rows read as 0), C goes out through a
    TMA store after the epilogue (stores past the edge are dropped)."""
    m_tiles = (M + BLOCK_M - 1) // BLOCK_M
    n_tiles = (N + BLOCK_N - 1) // BLOCK_N
    width = GROUP_M * n_tiles
    for tile in range(tl.program_id(0), m_tiles * n_tiles, tl.num_programs(0)):
        first_m = (tile // width) * GROUP_M
        group_m = tl.minimum(m_tiles - first_m, GROUP_M)
        off_m = (first_m + (tile % width) % group_m) * BLOCK_M
        off_n = ((tile % width) // group_m) * BLOCK_N
        acc = tl.full((BLOCK_M, BLOCK_N), 0.0, tl.float32)
        for k in range(0, K, BLOCK_K):
            a = a_desc.load([off_m, k])
            if B_T:
                b = tl.trans(b_desc.load([off_n, k]))
            else:
                b = b_desc.load([k, off_n])
            if UPCAST:  # the interpreter's dot mistreats bf16 operands
                a, b = a.to(tl.float32), b.to(tl.float32)
            acc = tl.dot(a, b, acc)
        if HAS_BIAS:
            rn = off_n + tl.arange(0, BLOCK_N)
            acc += tl.load(bias_ptr + rn * sbias, mask=rn < N, other=0.0).to(tl.float32)[None, :]
        acc = _act(acc, ACT)
        c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) of the TMA schedule on CUDA
TMA_CONFIGS = ((128, 128, 64, 8, 3), (128, 256, 64, 8, 3), (128, 128, 64, 4, 4),
               (64, 128, 64, 4, 4))
TMA_CPU_CONFIG = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16}
_TMA = {"on": True}  # off for the process once a TMA launch failed


def _aligned(t: torch.Tensor) -> bool:
    """What a TMA descriptor needs of a 2-D operand: unit last stride, 16-byte base and
    leading stride."""
    return t.stride(-1) == 1 and t.data_ptr() % 16 == 0 and \
        (t.stride(0) * t.element_size()) % 16 == 0


def tma_ok(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> bool:
    """Whether a 2-D GEMM takes the Hopper TMA schedule: sm_90 or newer, 16-bit operands,
    TMA-aligned A, C and B (or B^T)."""
    if not c.is_cuda or a.dtype not in (torch.float16, torch.bfloat16) or \
            torch.cuda.get_device_capability(c.device)[0] < 9:
        return False
    return _aligned(a) and _aligned(c) and (_aligned(b) or _aligned(b.t()))


def matmul_tma(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None, act=None,
               out: torch.Tensor | None = None) -> torch.Tensor:
    """``act(a @ b + bias)`` by the TMA schedule (2-D, 16-bit operands on a GPU: ``matmul``
    takes it where :func:`tma_ok`; on a CPU interpreted with small tiles and at most 4
    programs, so each walks several tiles)."""
    from triton.tools.tensor_descriptor import TensorDescriptor
    c = _check_out(out, (a.shape[0], b.shape[1]), a)
    m, k = a.shape
    n = b.shape[1]
    if c.numel() == 0 or k == 0:
        return c.copy_(_gemm_empty_k(c, bias, 1, act)) if c.numel() else c
    b_t = b.stride(-1) != 1  # b = w.t(): describe w (N, K)
    bm = b.t() if b_t else b
    if not (_aligned(a) and _aligned(bm) and _aligned(c)):
        raise ValueError(f"matmul_tma needs unit last strides and 16-byte aligned rows, got "
                         f"a {tuple(a.shape)} strides {a.stride()}, b {tuple(b.shape)} strides "
                         f"{b.stride()}, out strides {c.stride()} ({a.dtype})")
    cfg = TMA_CPU_CONFIG if on_cpu(a) else {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}
    descs = (TensorDescriptor.from_tensor(a, [cfg["BLOCK_M"], cfg["BLOCK_K"]]),
             TensorDescriptor.from_tensor(bm, [cfg["BLOCK_N"], cfg["BLOCK_K"]] if b_t else
                                          [cfg["BLOCK_K"], cfg["BLOCK_N"]]),
             TensorDescriptor.from_tensor(c, [cfg["BLOCK_M"], cfg["BLOCK_N"]]))
    args = (*descs, a if bias is None else bias, m, n, k, 0 if bias is None else bias.stride(0))
    meta = {"HAS_BIAS": bias is not None, "ACT": ACTS[act], "B_T": b_t, "UPCAST": _upcast(a),
            "GROUP_M": 8}
    tiles = lambda cfg: cdiv(m, cfg["BLOCK_M"]) * cdiv(n, cfg["BLOCK_N"])  # noqa: E731
    if on_cpu(a):
        _matmul_tma_kernel[(min(4, tiles(cfg)),)](*args, **meta, **cfg)
        return c
    sms = _sm_count(c.device)
    _tma_tuned()[lambda cfg: (min(sms, tiles(cfg)),)](*args, **meta)
    return c


def _tma_block_shapes(nargs: dict) -> None:
    """Autotune pre-hook: the descriptors' block shapes follow the config being timed."""
    bm, bn, bk = nargs["BLOCK_M"], nargs["BLOCK_N"], nargs["BLOCK_K"]
    nargs["a_desc"].block_shape = [bm, bk]
    nargs["b_desc"].block_shape = [bn, bk] if nargs["B_T"] else [bk, bn]
    nargs["c_desc"].block_shape = [bm, bn]


def _tma_tuned():
    tuned = _tuned.get("_matmul_tma_kernel")
    if tuned is None:
        configs = [triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k}, num_warps=w,
                                 num_stages=s, pre_hook=_tma_block_shapes)
                   for m, n, k, w, s in TMA_CONFIGS]
        tuned = _tuned["_matmul_tma_kernel"] = triton.autotune(
            configs, key=["M", "N", "K", "HAS_BIAS", "ACT", "B_T"], cache_results=True)(
            triton.jit(_matmul_tma_kernel.fn))
    return tuned


@kernel
def _splitk_sum_kernel(ws, bias_ptr, c_ptr, total, M, N, split, scs, sc0, scm, scn, sbias_m,
                       sbias_n, HAS_BIAS: tl.constexpr, ACT: tl.constexpr,
                       BLOCK: tl.constexpr):
    """c[b, m, n] = act(sum over the ``split`` slices of ws + bias): the split-K epilogue
    (ws: (split, B, M, N) fp32 partial sums, contiguous)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    valid = offs < total
    acc = tl.full((BLOCK,), 0.0, tl.float32)
    for sl in range(0, split):
        acc += tl.load(ws + sl * scs + offs, mask=valid, other=0.0)
    b, r = offs // (M * N), offs % (M * N)
    m, n = r // N, r % N
    if HAS_BIAS:
        acc += tl.load(bias_ptr + m * sbias_m + n * sbias_n, mask=valid, other=0.0).to(
            tl.float32)
    acc = _act(acc, ACT)
    tl.store(c_ptr + b * sc0 + m * scm + n * scn, acc.to(c_ptr.dtype.element_ty), mask=valid)


def split_for(nb: int, m: int, n: int, k: int, device: torch.device) -> int:
    """How many slices of K a GEMM runs in parallel: on CUDA, when its output has too few
    128x128 tiles to fill half the SMs and K is long (>= 2048), enough slices of at least
    512 to fill them (at most 16); else 1. (The interpreter never splits: tests force it.)"""
    if device.type != "cuda" or k < 2048:
        return 1
    tiles = nb * cdiv(m, 128) * cdiv(n, 128)
    sms = _sm_count(device)
    if tiles * 2 >= sms:
        return 1
    return max(1, min(16, sms // tiles, k // 512))


@functools.cache
def _sm_count(device: torch.device) -> int:
    return torch.cuda.get_device_properties(device).multi_processor_count


def _check_out(out: torch.Tensor | None, shape: tuple, like: torch.Tensor) -> torch.Tensor:
    """The given ``out=`` (shape and dtype checked) or a new tensor."""
    if out is None:
        return torch.empty(shape, dtype=like.dtype, device=like.device)
    if tuple(out.shape) != tuple(shape) or out.dtype != like.dtype:
        raise ValueError(f"out must be {like.dtype} of shape {tuple(shape)}, got {out.dtype} "
                         f"{tuple(out.shape)}")
    return out


def _gemm(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, bias=None, bias_axis: int = 1,
          act=None, split: int | None = None) -> torch.Tensor:
    """Launch the batched matmul on 3-D views (B, M, K) x (B, K, N) -> (B, M, N); ``split``
    slices of K (None: :func:`split_for`) summed by a second kernel with the epilogue."""
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
    fp64 = a.dtype == torch.float64
    split = 1 if fp64 else (split_for(nb, m, n, k, a.device) if split is None else split)
    meta = {"HAS_BIAS": bias is not None, "ACT": ACTS[act], "FP64": fp64,
            "IEEE": a.dtype in (torch.float32, torch.float64), "UPCAST": _upcast(a),
            "GROUP_M": 8, "PARTIAL": split > 1}
    out = c if split == 1 else torch.empty((split, nb, m, n), dtype=torch.float32,
                                           device=c.device)
    args = (a, b, a if bias is None else bias, out, m, n, k, *a.stride(), *b.stride(),
            *out.stride()[-3:], *sbias, split, out.stride(0) if split > 1 else 0)
    _launch(_matmul_kernel, lambda cfg: (cdiv(m, cfg["BLOCK_M"]) * cdiv(n, cfg["BLOCK_N"]), nb,
                                         split), ("M", "N", "K"), args, meta)
    if split > 1:
        total = nb * m * n
        block = 1024 if c.is_cuda else 256
        _splitk_sum_kernel[(cdiv(total, block),)](
            out, a if bias is None else bias, c, total, m, n, split, out.stride(0),
            *c.stride(), *sbias, HAS_BIAS=bias is not None, ACT=ACTS[act], BLOCK=block)
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
           out: torch.Tensor | None = None, split: int | None = None) -> torch.Tensor:
    """``act(a @ b + bias)`` for 2-D a (M, K), b (K, N) in any strides; bias (N,).
    ``split``: slices of K run in parallel (None: :func:`split_for` decides)."""
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0] or a.dtype != b.dtype:
        raise ValueError(f"matmul expects (M, K) x (K, N) of one dtype, got {tuple(a.shape)} "
                         f"{a.dtype} and {tuple(b.shape)} {b.dtype}")
    if bias is not None and tuple(bias.shape) != (b.shape[1],):
        raise ValueError(f"bias must be ({b.shape[1]},), got {tuple(bias.shape)}")
    c = _check_out(out, (a.shape[0], b.shape[1]), a)
    if split is None and _TMA["on"] and tma_ok(a, b, c) and \
            split_for(1, a.shape[0], b.shape[1], a.shape[1], c.device) == 1:
        try:
            return matmul_tma(a, b, bias, act, out=c)
        except Exception as err:  # a Triton without this lowering: the classic schedule
            _TMA["on"] = False
            warnings.warn(f"the TMA GEMM schedule failed ({type(err).__name__}: {err}); "
                          "using the classic one from now on", RuntimeWarning, stacklevel=2)
    _gemm(a.unsqueeze(0), b.unsqueeze(0), c.unsqueeze(0), bias, 1, act, split)
    return c


def matmul_ref(a, b, bias=None, act=None, split=None):
    """Reference: 2*M*N*K FLOPs; reads A, B (and bias), writes C (``split`` changes the
    schedule only)."""
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



# ---------------------------------------------------------------- convolution (implicit GEMM)

@kernel
def _conv_fwd_kernel(x_ptr, w_ptr, bias_ptr, y_ptr, M, N, K, D, H, W, OD, OH, OW,
                     KD, KH, KW, sxn, sxc, sxd, sxh, sxw, std, sth, stw, pd, ph, pw,
                     dld, dlh, dlw, CG,
                     HAS_BIAS: tl.constexpr, FP64: tl.constexpr,
                     SUMK: tl.constexpr, IEEE: tl.constexpr,
                     UPCAST: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     BLOCK_K: tl.constexpr):
    """Tile of y (rows: output positions n,od,oh,ow; cols: filters of group axis 1)."""
    pid, g = tl.program_id(0), tl.program_id(1)
    n_tiles = (N + BLOCK_N - 1) // BLOCK_N
    rm = (pid // n_tiles) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = (pid % n_tiles) * BLOCK_N + tl.arange(0, BLOCK_N)
    ow, t = rm % OW, rm // OW
    oh, t = t % OH, t // OH
    od, nb = t % OD, t // OD
    x_row = x_ptr + nb * sxn + g * CG * sxc
    acc = tl.full((BLOCK_M, BLOCK_N), 0.0, tl.float64 if FP64 else tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        kw, u = rk % KW, rk // KW  # not `t`: a loop-carried name must keep its shape
        kh, u = u % KH, u // KH
        kd, c = u % KD, u // KD
        i_d = od[:, None] * std - pd + kd[None, :] * dld
        i_h = oh[:, None] * sth - ph + kh[None, :] * dlh
        i_w = ow[:, None] * stw - pw + kw[None, :] * dlw
        ok = (rm[:, None] < M) & (rk[None, :] < K) & (i_d >= 0) & (i_d < D) & (i_h >= 0) \
            & (i_h < H) & (i_w >= 0) & (i_w < W)
        a = tl.load(x_row[:, None] + c[None, :] * sxc + i_d * sxd + i_h * sxh + i_w * sxw,
                    mask=ok, other=0.0)
        b = tl.load(w_ptr + (g * N + rn[None, :]) * K + rk[:, None],
                    mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        if UPCAST:
            a, b = a.to(tl.float32), b.to(tl.float32)
        if SUMK:  # fp64 on CUDA: products summed over K (fp64 tl.dot fails to compile)
            acc += tl.reduce(a[:, :, None] * b[None, :, :], 1, _add_combine)
        elif IEEE:
            acc = tl.dot(a, b, acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc)
    if HAS_BIAS:
        acc += tl.load(bias_ptr + g * N + rn, mask=rn < N, other=0.0).to(acc.dtype)[None, :]
    osp = OD * OH * OW
    y_off = (nb * (tl.num_programs(1) * N) + g * N)[:, None] * osp + rn[None, :] * osp \
        + (rm % osp)[:, None]
    tl.store(y_ptr + y_off, acc.to(y_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@kernel
def _conv_dgrad_kernel(dy_ptr, w_ptr, bias_ptr, dx_ptr, M, N, K, D, H, W, OD, OH, OW,
                       KD, KH, KW, syn, syc, syd, syh, syw, std, sth, stw, pd, ph, pw,
                       dld, dlh, dlw, FG,
                       HAS_BIAS: tl.constexpr, FP64: tl.constexpr,
                       SUMK: tl.constexpr, IEEE: tl.constexpr,
                       UPCAST: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                       BLOCK_K: tl.constexpr):
    """Tile of dx (rows: input positions n,id,ih,iw; cols: channels of group axis 1)."""
    pid, g = tl.program_id(0), tl.program_id(1)
    n_tiles = (N + BLOCK_N - 1) // BLOCK_N
    rm = (pid // n_tiles) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = (pid % n_tiles) * BLOCK_N + tl.arange(0, BLOCK_N)
    iw, t = rm % W, rm // W
    ih, t = t % H, t // H
    i_d, nb = t % D, t // D
    kk_n = KD * KH * KW
    dy_row = dy_ptr + nb * syn + g * FG * syc
    acc = tl.full((BLOCK_M, BLOCK_N), 0.0, tl.float64 if FP64 else tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        kw, u = rk % KW, rk // KW  # not `t`: a loop-carried name must keep its shape
        kh, u = u % KH, u // KH
        kd, f = u % KD, u // KD
        # o * stride = i + pad - kk * dilate; clamp before // and % (C vs numpy semantics)
        nd = i_d[:, None] + pd - kd[None, :] * dld
        nh = ih[:, None] + ph - kh[None, :] * dlh
        nw = iw[:, None] + pw - kw[None, :] * dlw
        ok = (rm[:, None] < M) & (rk[None, :] < K) & (nd >= 0) & (nh >= 0) & (nw >= 0)
        nd, nh, nw = tl.where(ok, nd, 0), tl.where(ok, nh, 0), tl.where(ok, nw, 0)
        ok = ok & (nd % std == 0) & (nh % sth == 0) & (nw % stw == 0) & (nd // std < OD) \
            & (nh // sth < OH) & (nw // stw < OW)
        a = tl.load(dy_row[:, None] + f[None, :] * syc + (nd // std) * syd + (nh // sth) * syh
                    + (nw // stw) * syw, mask=ok, other=0.0)
        b = tl.load(w_ptr + ((g * FG + f[:, None]) * N + rn[None, :]) * kk_n
                    + (rk % kk_n)[:, None], mask=(rk[:, None] < K) & (rn[None, :] < N),
                    other=0.0)
        if UPCAST:
            a, b = a.to(tl.float32), b.to(tl.float32)
        if SUMK:  # fp64 on CUDA: products summed over K (fp64 tl.dot fails to compile)
            acc += tl.reduce(a[:, :, None] * b[None, :, :], 1, _add_combine)
        elif IEEE:
            acc = tl.dot(a, b, acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc)
    if HAS_BIAS:
        acc += tl.load(bias_ptr + g * N + rn, mask=rn < N, other=0.0).to(acc.dtype)[None, :]
    sp = D * H * W
    dx_off = (nb * (tl.num_programs(1) * N) + g * N)[:, None] * sp + rn[None, :] * sp \
        + (rm % sp)[:, None]
    tl.store(dx_ptr + dx_off, acc.to(dx_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@kernel
def _conv_wgrad_kernel(dy_ptr, x_ptr, dw_ptr, M, N, K, D, H, W, OD, OH, OW,
                       KD, KH, KW, syn, syc, sxn, sxc, sxd, sxh, sxw, std, sth, stw,
                       pd, ph, pw, dld, dlh, dlw, CG,
                       FP64: tl.constexpr,
                       SUMK: tl.constexpr, IEEE: tl.constexpr, UPCAST: tl.constexpr,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """Tile of dw (rows: filters of group axis 1; cols: c,kd,kh,kw); K runs over n,o."""
    pid, g = tl.program_id(0), tl.program_id(1)
    n_tiles = (N + BLOCK_N - 1) // BLOCK_N
    rm = (pid // n_tiles) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = (pid % n_tiles) * BLOCK_N + tl.arange(0, BLOCK_N)
    kw, t = rn % KW, rn // KW
    kh, t = t % KH, t // KH
    kd, c = t % KD, t // KD
    osp = OD * OH * OW
    acc = tl.full((BLOCK_M, BLOCK_N), 0.0, tl.float64 if FP64 else tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        ow, u = rk % OW, rk // OW  # not `t`: a loop-carried name must keep its shape
        oh, u = u % OH, u // OH
        od, nb = u % OD, u // OD
        a = tl.load(dy_ptr + nb[None, :] * syn + (g * M + rm[:, None]) * syc
                    + (rk % osp)[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K),
                    other=0.0)
        i_d = od[:, None] * std - pd + kd[None, :] * dld
        i_h = oh[:, None] * sth - ph + kh[None, :] * dlh
        i_w = ow[:, None] * stw - pw + kw[None, :] * dlw
        ok = (rk[:, None] < K) & (rn[None, :] < N) & (i_d >= 0) & (i_d < D) & (i_h >= 0) \
            & (i_h < H) & (i_w >= 0) & (i_w < W)
        b = tl.load(x_ptr + nb[:, None] * sxn + (g * CG + c[None, :]) * sxc + i_d * sxd
                    + i_h * sxh + i_w * sxw, mask=ok, other=0.0)
        if UPCAST:
            a, b = a.to(tl.float32), b.to(tl.float32)
        if SUMK:  # fp64 on CUDA: products summed over K (fp64 tl.dot fails to compile)
            acc += tl.reduce(a[:, :, None] * b[None, :, :], 1, _add_combine)
        elif IEEE:
            acc = tl.dot(a, b, acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc)
    tl.store(dw_ptr + (g * M + rm[:, None]) * N + rn[None, :], acc.to(dw_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def _add_combine(a, b):
    """Combine function of the bias-gradient sum (tl.sum is not interpretable standalone)."""
    return a + b


@kernel
def _bias_grad_kernel(dy_ptr, db_ptr, NB, S, syn, syc, FP64: tl.constexpr,
                      BLOCK: tl.constexpr):
    """``db[f] = sum_{n, s} dy[n, f, s]``; one program per channel f."""
    f = tl.program_id(0)
    acc = tl.full((BLOCK,), 0.0, tl.float64 if FP64 else tl.float32)
    for nb in range(0, NB):
        for s0 in range(0, S, BLOCK):
            rs = s0 + tl.arange(0, BLOCK)
            acc += tl.load(dy_ptr + nb * syn + f * syc + rs, mask=rs < S, other=0.0).to(acc.dtype)
    tl.store(db_ptr + f, tl.reduce(acc, 0, _add_combine).to(db_ptr.dtype.element_ty))


def _geom(nd: int, stride, pad, dilate) -> tuple[tuple, tuple, tuple]:
    """Stride, pad, dilate as 3-tuples (unit/zero leading axes for 1-D and 2-D)."""
    def full(v, fill):
        v = (fill,) * nd if v is None or len(v) == 0 else tuple(v)
        if len(v) != nd:
            raise ValueError(f"expected {nd} values, got {v}")
        return (fill,) * (3 - nd) + v
    return full(stride, 1), full(pad, 0), full(dilate, 1)


def _as5d(t: torch.Tensor) -> torch.Tensor:
    """(N, C, *spatial) as an (N, C, D, H, W) view."""
    while t.dim() < 5:
        t = t.unsqueeze(2)
    return t


def _meta(t: torch.Tensor, bias=None) -> dict:
    """Constexpr flags for a conv launch (bias=False: the kernel has no HAS_BIAS)."""
    meta = {"FP64": t.dtype == torch.float64,
            "IEEE": t.dtype in (torch.float32, torch.float64), "UPCAST": _upcast(t)}
    if bias is not False:
        meta["HAS_BIAS"] = bias is not None
    return meta


def _check_conv(x, w, groups, what="conv") -> int:
    """Rank, dtype and group checks; returns the number of spatial axes."""
    nd = x.dim() - 2
    if nd not in (1, 2, 3) or w.dim() != x.dim() or x.dtype != w.dtype or groups < 1 \
            or x.shape[1] % groups or w.shape[0] % groups:
        raise ValueError(f"{what}: bad operands {tuple(x.shape)} {x.dtype}, weight "
                         f"{tuple(w.shape)} {w.dtype}, groups {groups}")
    return nd


def _grid(m, n, groups):
    """Tiles of an M x N output per group (axis 1)."""
    return lambda cfg: (cdiv(m, cfg["BLOCK_M"]) * cdiv(n, cfg["BLOCK_N"]), groups)


def conv_nd(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None = None, stride=None,
            pad=None, dilate=None, groups: int = 1, out=None) -> torch.Tensor:
    """Convolution of x (N, C, *sp) with w (F, C/groups, *kernel) (+ bias (F,)), 1-3 D."""
    nd = _check_conv(x, w, groups)
    st, pd, dl = _geom(nd, stride, pad, dilate)
    x5, w5 = _as5d(x), _as5d(w).contiguous()
    ks = w5.shape[2:]
    osz = tuple((d + 2 * p - (1 + (k - 1) * di)) // s + 1
                for d, p, k, di, s in zip(x5.shape[2:], pd, ks, dl, st))
    y = _check_out(out, (x.shape[0], w.shape[0]) + osz[3 - nd:], x)
    if y.numel() == 0:
        return y
    if not y.is_contiguous():
        raise ValueError("conv_nd: out must be contiguous")
    m, n, k = x.shape[0] * osz[0] * osz[1] * osz[2], w.shape[0] // groups, w5[0].numel()
    args = (x5, w5, x5 if bias is None else bias, y, m, n, k, *x5.shape[2:], *osz, *ks,
            *x5.stride(), *st, *pd, *dl, x.shape[1] // groups)
    _launch(_conv_fwd_kernel, _grid(m, n, groups), ("M", "N", "K"), args, _meta(x, bias))
    return y


def conv_nd_ref(x, w, bias=None, stride=None, pad=None, dilate=None, groups=1):
    """Reference: 2*N*F*prod(out)*C/g*prod(kernel) FLOPs; reads x, w, bias, writes y."""
    nd = x.dim() - 2
    st, pd, dl = (g[3 - nd:] for g in _geom(nd, stride, pad, dilate))
    conv = (torch.nn.functional.conv1d, torch.nn.functional.conv2d,
            torch.nn.functional.conv3d)[nd - 1]
    return conv(x, w, bias, st, pd, dl, groups)


def _dgrad(dy, w, bias, dx, geom, groups) -> torch.Tensor:
    """Launch the data-gradient kernel: dx (N, G*CG, *sp) from dy (N, F, *o), w (F, CG, *k)."""
    st, pd, dl = geom
    dy5, w5, dx5 = _as5d(dy), _as5d(w).contiguous(), _as5d(dx)
    if dx.numel() == 0:
        return dx
    if not dx.is_contiguous():
        raise ValueError("out must be contiguous")
    fg, cg = w.shape[0] // groups, w.shape[1]
    m, k = dx5.shape[0] * dx5[0, 0].numel(), fg * w5[0, 0].numel()
    args = (dy5, w5, dy5 if bias is None else bias, dx5, m, cg, k, *dx5.shape[2:],
            *dy5.shape[2:], *w5.shape[2:], *dy5.stride(), *st, *pd, *dl, fg)
    _launch(_conv_dgrad_kernel, _grid(m, cg, groups), ("M", "N", "K"), args, _meta(dy, bias))
    return dx


def conv_data_grad(dy: torch.Tensor, w: torch.Tensor, in_spatial: tuple, stride=None,
                   pad=None, dilate=None, groups: int = 1, out=None) -> torch.Tensor:
    """Gradient of :func:`conv_nd` w.r.t. x of spatial size ``in_spatial`` (implicit GEMM)."""
    nd = _check_conv(dy, w, groups, "conv_data_grad")
    dx = _check_out(out, (dy.shape[0], w.shape[1] * groups) + tuple(in_spatial), dy)
    return _dgrad(dy, w, None, dx, _geom(nd, stride, pad, dilate), groups)


def conv_data_grad_ref(dy, w, in_spatial, stride=None, pad=None, dilate=None, groups=1):
    """Reference: the FLOPs of the forward; reads dy, w, writes dx."""
    nd = dy.dim() - 2
    st, pd, dl = (list(g[3 - nd:]) for g in _geom(nd, stride, pad, dilate))
    x = dy.new_empty((dy.shape[0], w.shape[1] * groups) + tuple(in_spatial))
    return torch.ops.aten.convolution_backward(dy, x, w, None, st, pd, dl, False, [0] * nd,
                                               groups, [True, False, False])[0]


def conv_weight_grad(dy: torch.Tensor, x: torch.Tensor, kernel_size: tuple, stride=None,
                     pad=None, dilate=None, groups: int = 1, out=None) -> torch.Tensor:
    """Gradient of :func:`conv_nd` w.r.t. w (F, C/groups, *kernel) (implicit GEMM over n, o)."""
    nd = x.dim() - 2
    st, pd, dl = _geom(nd, stride, pad, dilate)
    cg, fg = x.shape[1] // groups, dy.shape[1] // groups
    dw = _check_out(out, (dy.shape[1], cg) + tuple(kernel_size), x)
    if dw.numel() == 0:
        return dw
    if not dw.is_contiguous():
        raise ValueError("conv_weight_grad: out must be contiguous")
    dy5, x5 = _as5d(dy), _as5d(x)
    if not dy5[0, 0].is_contiguous():
        dy5 = dy5.contiguous()  # the kernel walks output positions linearly
    ks = _as5d(dw).shape[2:]
    n, k = cg * ks[0] * ks[1] * ks[2], dy.shape[0] * dy5[0, 0].numel()
    args = (dy5, x5, dw, fg, n, k, *x5.shape[2:], *dy5.shape[2:], *ks, *dy5.stride()[:2],
            *x5.stride(), *st, *pd, *dl, cg)
    _launch(_conv_wgrad_kernel, _grid(fg, n, groups), ("M", "N", "K"), args, _meta(x, False))
    return dw


def conv_weight_grad_ref(dy, x, kernel_size, stride=None, pad=None, dilate=None, groups=1):
    """Reference: the FLOPs of the forward; reads dy, x, writes dw."""
    nd = x.dim() - 2
    st, pd, dl = (list(g[3 - nd:]) for g in _geom(nd, stride, pad, dilate))
    w = x.new_empty((dy.shape[1], x.shape[1] // groups) + tuple(kernel_size))
    return torch.ops.aten.convolution_backward(dy, x, w, None, st, pd, dl, False, [0] * nd,
                                               groups, [False, True, False])[1]


def conv_bias_grad(dy: torch.Tensor, out=None) -> torch.Tensor:
    """``dy.sum(every axis but 1)``: the bias gradient of a convolution."""
    db = _check_out(out, (dy.shape[1],), dy)
    dy3 = dy.reshape(dy.shape[0], dy.shape[1], -1)
    if not dy3[0, 0].is_contiguous():
        dy3 = dy3.contiguous()
    if db.numel():
        _bias_grad_kernel[(dy.shape[1],)](dy3, db, dy3.shape[0], dy3.shape[2],
                                          *dy3.stride()[:2], FP64=dy.dtype == torch.float64,
                                          BLOCK=128 if on_cpu(dy) else 1024)
    return db


def conv_bias_grad_ref(dy):
    """Reference: reads dy once, writes F values."""
    return dy.sum(dim=[d for d in range(dy.dim()) if d != 1])


def conv_transpose_nd(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None = None,
                      stride=None, pad=None, dilate=None, groups: int = 1, adj=None,
                      out=None) -> torch.Tensor:
    """Deconvolution of x (N, C, *sp) with w (C, F/groups, *kernel): a conv data gradient."""
    nd = _check_conv(x, w, groups, "conv_transpose_nd")
    st, pd, dl = _geom(nd, stride, pad, dilate)
    adj = (0,) * nd if not adj else tuple(adj)
    ks = w.shape[2:]
    osz = tuple(s * (d - 1) + 1 + (k - 1) * di - 2 * p + a for s, d, k, di, p, a in
                zip(st[3 - nd:], x.shape[2:], ks, dl[3 - nd:], pd[3 - nd:], adj))
    y = _check_out(out, (x.shape[0], w.shape[1] * groups) + osz, x)
    return _dgrad(x, w, bias, y, (st, pd, dl), groups)


def conv_transpose_nd_ref(x, w, bias=None, stride=None, pad=None, dilate=None, groups=1,
                          adj=None):
    """Reference: the FLOPs of the convolution it transposes; reads x, w, bias, writes y."""
    nd = x.dim() - 2
    st, pd, dl = (g[3 - nd:] for g in _geom(nd, stride, pad, dilate))
    fn = (torch.nn.functional.conv_transpose1d, torch.nn.functional.conv_transpose2d,
          torch.nn.functional.conv_transpose3d)[nd - 1]
    return fn(x, w, bias, st, pd, tuple(adj) if adj else 0, groups, dl)

# ---------------------------------------------------------------- table entries

_TOL = {torch.float32: (1e-4, 1e-4), torch.float16: (1e-2, 1e-2),
        torch.bfloat16: (2e-2, 2e-2)}
_MM_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
_MM_BENCH = ((2048, 2048, 2048), (4096, 4096, 4096), (8192, 1024, 4096))


def _randn(gen, shape, dtype, device):
    """Seeded normal values (drawn on CPU so every device sees the same numbers)."""
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


def _make_mm_split(dtype, device, shape):
    """(M, K, N, split): few output tiles, long K, bias and sigmoid: split-K."""
    gen = torch.Generator().manual_seed(5)
    m, k, n, split = shape
    return (_randn(gen, (m, k), dtype, device), _randn(gen, (k, n), dtype, device),
            _randn(gen, (n,), dtype, device), "sigmoid"), {"split": split}


def _make_mm_tma(dtype, device, shape):
    """(M, K, N, b given as w.t()): TMA-aligned operands (K, N multiples of 8), bias, ReLU."""
    gen = torch.Generator().manual_seed(6)
    m, k, n, b_t = shape
    b = _randn(gen, (n, k), dtype, device).t() if b_t else _randn(gen, (k, n), dtype, device)
    return (_randn(gen, (m, k), dtype, device), b, _randn(gen, (n,), dtype, device),
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
    """2 * (B) * M * N * K."""
    return 2 * a.shape[-2] * a.shape[-1] * b.shape[-1] * (a.shape[0] if a.dim() == 3 else 1)


def _linear_flops(x, w, *rest):
    """2 * M * N * K."""
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
    KernelSpec(name="matmul_split_k", fn=matmul, ref=matmul_ref, make=_make_mm_split,
               shapes=((5, 200, 7, 3), (17, 97, 33, 4)),
               bench_shapes=((64, 16384, 64, 16), (128, 32768, 256, 8)),
               dtypes=_MM_DTYPES, tol=_TOL, flops=_mm_flops, family="gemm"),
    KernelSpec(name="matmul_tma", fn=matmul_tma, ref=matmul_ref, make=_make_mm_tma,
               shapes=((37, 48, 24, False), (70, 32, 40, True)),
               bench_shapes=((4096, 4096, 4096, True), (8192, 8192, 8192, True)),
               dtypes=(torch.float16, torch.bfloat16), tol=_TOL, flops=_mm_flops,
               family="gemm"),
    KernelSpec(name="linear_bias_tanh", fn=linear, ref=linear_ref, make=_make_linear,
               shapes=((3, 37, 5), (17, 9, 33)), bench_shapes=((4096, 4096, 4096),),
               dtypes=_MM_DTYPES, tol=_TOL, flops=_linear_flops, family="gemm"),
    KernelSpec(name="bmm_bt", fn=bmm, ref=bmm_ref, make=_make_bmm,
               shapes=((2, 3, 37, 5), (3, 17, 9, 33)), bench_shapes=((16, 1024, 1024, 1024),),
               dtypes=_MM_DTYPES, tol=_TOL, flops=_mm_flops, family="gemm"),
]



# Convolution entries: shape = (N, C, F, *spatial); the geometry is fixed per entry.

def _make_conv(dtype, device, shape, *, kernel, stride, pad, dilate, groups, role="fwd"):
    """Operands for one conv-family wrapper (role: fwd, dgrad, wgrad, bgrad, transpose)."""
    gen = torch.Generator().manual_seed(4)
    nb, c, f, *sp = shape
    x = _randn(gen, (nb, c, *sp), dtype, device)
    geom = (stride, pad, dilate, groups)
    if role == "transpose":
        w = _randn(gen, (c, f // groups, *kernel), dtype, device)
        adj = tuple(s - 1 for s in stride)
        return (x, w, _randn(gen, (f,), dtype, device), *geom, adj), {}
    w = _randn(gen, (f, c // groups, *kernel), dtype, device)
    if role == "fwd":
        return (x, w, _randn(gen, (f,), dtype, device), *geom), {}
    dy = _randn(gen, conv_nd_ref(x.float(), w.float(), None, *geom).shape, dtype, device)
    if role == "dgrad":
        return (dy, w, tuple(sp), *geom), {}
    if role == "wgrad":
        return (dy, x, tuple(kernel), *geom), {}
    return (dy,), {}


def _conv_flops(x, w, bias, stride, pad, dilate, groups):
    """2 * N * F * prod(out) * C/g * prod(kernel)."""
    out = [(d + 2 * p - (1 + (k - 1) * di)) // s + 1 for d, p, k, di, s in
           zip(x.shape[2:], pad, w.shape[2:], dilate, stride)]
    return 2 * x.shape[0] * w.shape[0] * math.prod(out) * w[0].numel()


def _dgrad_flops(dy, w, *rest):
    """The forward's FLOPs: 2 * dy.numel() * C/g * prod(kernel)."""
    return 2 * dy.numel() * w[0].numel()


def _wgrad_flops(dy, x, kernel_size, stride, pad, dilate, groups):
    """The forward's FLOPs: 2 * dy.numel() * C/g * prod(kernel)."""
    return 2 * dy.numel() * (x.shape[1] // groups) * math.prod(kernel_size)


def _conv_entry(name, fn, ref, role, shapes, bench, geom, flops=_conv_flops, dtypes=None):
    """A conv-family table entry with its geometry bound into ``make``."""
    return KernelSpec(name=name, fn=fn, ref=ref, shapes=shapes, bench_shapes=bench,
                      make=functools.partial(_make_conv, role=role, **geom), tol=_CONV_TOL,
                      dtypes=dtypes or (torch.float32, torch.bfloat16), flops=flops,
                      family="gemm")


_CONV_TOL = {torch.float32: (1e-4, 1e-4), torch.float16: (1e-2, 1e-2),
             torch.bfloat16: (3e-2, 3e-2)}
_G2D = {"kernel": (3, 3), "stride": (2, 1), "pad": (1, 1), "dilate": (1, 1), "groups": 1}
_G1D = {"kernel": (3,), "stride": (1,), "pad": (2,), "dilate": (2,), "groups": 2}
_G3D = {"kernel": (2, 3, 2), "stride": (1, 2, 1), "pad": (1, 0, 1), "dilate": (1, 1, 1),
        "groups": 1}
_GR = {"kernel": (3, 3), "stride": (1, 1), "pad": (1, 1), "dilate": (1, 1), "groups": 1}
_S2D = ((2, 3, 5, 7, 6), (1, 4, 6, 9, 5))
_B2D = ((64, 64, 64, 56, 56), (32, 256, 256, 14, 14))

KERNELS += [
    _conv_entry("conv2d", conv_nd, conv_nd_ref, "fwd", _S2D, _B2D, _G2D),
    _conv_entry("conv2d_resnet", conv_nd, conv_nd_ref, "fwd", ((2, 3, 4, 6, 5),), _B2D, _GR),
    _conv_entry("conv1d_grouped_dilated", conv_nd, conv_nd_ref, "fwd", ((2, 4, 6, 13),),
                ((32, 256, 256, 1024),), _G1D),
    _conv_entry("conv3d", conv_nd, conv_nd_ref, "fwd", ((1, 2, 3, 4, 5, 3),),
                ((8, 32, 32, 16, 28, 28),), _G3D, dtypes=(torch.float32,)),
    _conv_entry("conv2d_data_grad", conv_data_grad, conv_data_grad_ref, "dgrad", _S2D, _B2D,
                _G2D, flops=_dgrad_flops),
    _conv_entry("conv1d_data_grad", conv_data_grad, conv_data_grad_ref, "dgrad",
                ((2, 4, 6, 13),), ((32, 256, 256, 1024),), _G1D, flops=_dgrad_flops),
    _conv_entry("conv2d_weight_grad", conv_weight_grad, conv_weight_grad_ref, "wgrad", _S2D,
                _B2D, _G2D, flops=_wgrad_flops),
    _conv_entry("conv3d_weight_grad", conv_weight_grad, conv_weight_grad_ref, "wgrad",
                ((1, 2, 3, 4, 5, 3),), ((8, 32, 32, 16, 28, 28),), _G3D, flops=_wgrad_flops,
                dtypes=(torch.float32,)),
    KernelSpec(name="conv_bias_grad", fn=conv_bias_grad, ref=conv_bias_grad_ref,
               make=functools.partial(_make_conv, role="bgrad", **_G2D), shapes=_S2D,
               bench_shapes=_B2D, dtypes=(torch.float32, torch.bfloat16), tol=_CONV_TOL,
               bytes=lambda dy: tensor_bytes(dy), family="gemm"),
    _conv_entry("conv_transpose2d", conv_transpose_nd, conv_transpose_nd_ref, "transpose",
                ((2, 3, 5, 4, 3), (1, 4, 2, 5, 6)), ((64, 64, 64, 28, 28),), _G2D,
                flops=lambda x, w, *rest: 2 * x.numel() * w[0].numel()),
]
