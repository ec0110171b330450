"""GEMM family: tiled matmul with a fused epilogue (convolutions: ``kernels/conv.py``).

Matmul. ``C[b] = act(A[b] @ B[b] + bias)`` with A (M, K), B (K, N) given by arbitrary strides
(a transposed operand is a strided view, never a copy), one program per BLOCK_M x BLOCK_N
tile of C, K walked in BLOCK_K steps with ``tl.dot`` accumulating in fp32 (fp64 for fp64
inputs; fp32 operands use IEEE products, not TF32, to match torch's default), ragged edges
masked. The bias is a vector broadcast along M (linear) or along N (convolution's per-filter
bias) by its two strides. Traffic: A, B, bias read, C written; 2*M*N*K FLOPs.

Schedules beyond the one-tile loop: split-K (few output tiles, a long K: slices of K
summed by a second kernel with the epilogue) and, on sm_90 or newer for 16-bit operands,
persistent programs with TMA descriptor loads and stores (``matmul_tma``). Convolutions are
the same GEMM with a gathered operand: ``kernels/conv.py``.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
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


@triton.jit
def _add_combine(a, b):
    """Combine function of the bias-gradient sum (tl.sum is not interpretable standalone)."""
    return a + b


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
    if split is None and c.is_cuda and _TMA["on"] and \
            split_for(1, a.shape[0], b.shape[1], a.shape[1], c.device) == 1:
        if tma_ok(a, b, c):
            try:
                return matmul_tma(a, b, bias, act, out=c)
            except Exception as err:  # a Triton without this lowering: the classic schedule
                _TMA["on"] = False
                warnings.warn(f"the TMA GEMM schedule failed ({type(err).__name__}: {err}); "
                              "using the classic one from now on", RuntimeWarning,
                              stacklevel=2)
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
    b = _randn(gen, (n, k), dtype, device).t() if b_t else \
        _randn(gen, (k, n), dtype, device)
    return (_randn(gen, (m, k), dtype, device), b,
            _randn(gen, (n,), dtype, device), "relu"), {}


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
