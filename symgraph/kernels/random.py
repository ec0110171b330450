"""Random sampling from counter-based Philox streams, and the sampling ops' parallel parts.

Every draw is a function of (seed, element index, round, stream): element ``k`` of a launch
reads ``philox((k_lo, k_hi, round, stream), seed)`` (:mod:`symgraph.kernels.philox`), a pair of
uniforms in [0, 1) (31-bit words for float32 and half outputs, 53-bit doubles for float64).
A seed therefore reproduces a sample on any grid, and the torch references below draw the
very same numbers from the torch Philox of ``kernels/philox.py``, so the table tests compare
kernels and references elementwise (tolerances cover ``log``/``cos`` rounding); the
distributions themselves are checked in ``tests/kernels/test_random_triton.py``. Streams:

    0  the value itself: uniform, normal (Box-Muller), exponential (inversion), randint
       (63 bits modulo the range), log-uniform; gamma's normal in round ``i``
    1  gamma's acceptance uniform in round ``i``     2  gamma's U^(1/alpha) for alpha < 1
    3  Poisson's PTRS uniforms in round ``i``        4  Poisson's inversion uniform

Gamma is Marsaglia-Tsang (d = a - 1/3, accept d v^3 when log U < x^2 / 2 + d - d v^3 +
d log v^3), at most ``ROUNDS`` rounds; Poisson is sequential inversion for lam < 10 and
Hormann's transformed rejection (PTRS, as numpy) above, its log-pmf in Stirling's form so
that large counts do not cancel; negative binomial is Poisson with a Gamma(k, (1 - p) / p)
rate, the generalized one Poisson with a Gamma(1 / alpha, alpha mu) rate. Rejection loops
stop when every element of a block has accepted (or after ``ROUNDS``: probability < 1e-16).

Also here: the multinomial inverse-CDF search (row prefix sums, then a binary search per
draw) and the scatter-add of its gradient, and shuffle's permutation (Philox keys sorted by
torch, rows gathered by ``symgraph.kernels.index.take``). The densities of ``_random_pdf_*`` live in
``random_pdf.py``, with the lgamma used here.

Bytes moved: a sampler writes its output and reads one parameter per element; a density
reads samples and parameters and writes one value per sample (backward: og and samples read,
gradients written).
"""
from __future__ import annotations

import math

import torch
import triton.language as tl

from .copy import copy_view, fill
from .index import take
from .philox import (
    device,
    philox,
    philox_ref,
    seed_arg,
    seed_int,
    seed_key,
    uniform,
    uniform64,
    uniform64_ref,
    uniform_ref,
)
from .random_pdf import lgamma, lgamma_ref, log1p_, log1p_ref
from .reduce import MAX, SUM
from .runtime import block_for, cdiv, device_meta, kernel
from .table import KernelSpec, tensor_bytes

CODES = {"uniform": 0, "normal": 1, "gamma": 2, "exponential": 3, "poisson": 4,
         "negative_binomial": 5, "generalized_negative_binomial": 6, "randint": 7,
         "log_uniform": 8}
ROUNDS = 16  # rejection rounds: each accepts with probability > 0.9
_U32 = 0xFFFFFFFF


def _block(n: int, dev: torch.device) -> int:
    # the interpreter's cost is per operation, not per element: wide blocks on CPU
    return block_for(n, cap=1024 if dev.type == "cuda" else 4096)


# launch arguments that change every call: no recompilation for their values
_VARYING = ("offset",)


def _acc(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


# ---------------------------------------------------------------- draws (device functions)

@device
def _pair(k, rnd, stream, k0, k1, FP64: tl.constexpr):
    """Two uniforms in [0, 1) for element k (int64), round ``rnd`` and ``stream``."""
    w0, w1, w2, w3 = philox((k & 0xFFFFFFFF).to(tl.uint32), (k >> 32).to(tl.uint32),
                            (k * 0 + rnd).to(tl.uint32), (k * 0 + stream).to(tl.uint32), k0, k1)
    if FP64:
        u1 = uniform64(w0, w1)
        u2 = uniform64(w2, w3)
    else:
        u1 = uniform(w0)
        u2 = uniform(w1)
    return u1, u2


def _pair_ref(k, rnd, stream, seed: int, fp64: bool):
    seed = seed_int(seed)
    w = philox_ref(k & _U32, k >> 32, rnd, stream, seed & _U32, (seed >> 32) & _U32)
    if fp64:
        return uniform64_ref(w[0], w[1]), uniform64_ref(w[2], w[3])
    return uniform_ref(w[0]), uniform_ref(w[1])


@device
def _box_muller(u1, u2):
    return tl.sqrt(-2.0 * tl.log(1.0 - u1)) * tl.cos(6.283185307179586 * u2)


def _box_muller_ref(u1, u2):
    return torch.sqrt(-2.0 * torch.log(1.0 - u1)) * torch.cos(6.283185307179586 * u2)


@device
def _gamma(k, alpha, k0, k1, FP64: tl.constexpr, ROUNDS: tl.constexpr):
    """Gamma(alpha, 1) by Marsaglia-Tsang; alpha < 1 as Gamma(alpha + 1) U^(1 / alpha)."""
    boost = alpha < 1.0
    a = tl.where(boost, alpha + 1.0, alpha)
    d = a - 1.0 / 3.0
    c = 1.0 / tl.sqrt(9.0 * d)
    out = d  # kept only if every round rejects
    todo = alpha > 0.0
    i = 0
    while (i < ROUNDS) & (tl.reduce(todo.to(tl.int32), 0, MAX) > 0):
        u1, u2 = _pair(k, i, 0, k0, k1, FP64)
        x = _box_muller(u1, u2)
        u, _ = _pair(k, i, 1, k0, k1, FP64)
        v = 1.0 + c * x
        v = v * v * v
        bound = 0.5 * x * x + d - d * v + d * tl.log(tl.maximum(v, 1e-30))
        ok = (v > 0.0) & (tl.log(1.0 - u) < bound)
        out = tl.where(todo & ok, d * v, out)
        todo = todo & ~ok
        i += 1
    ub, _ = _pair(k, 0, 2, k0, k1, FP64)
    out = tl.where(boost, out * tl.exp(tl.log(1.0 - ub) / alpha), out)
    return tl.where(alpha > 0.0, out, 0.0)


def _gamma_ref(k, alpha, seed: int, fp64: bool):
    boost = alpha < 1.0
    a = torch.where(boost, alpha + 1.0, alpha)
    d = a - 1.0 / 3.0
    c = 1.0 / torch.sqrt(9.0 * d)
    out, todo = d.clone(), alpha > 0.0
    for i in range(ROUNDS):
        if not bool(todo.any()):
            break
        x = _box_muller_ref(*_pair_ref(k, i, 0, seed, fp64))
        u = _pair_ref(k, i, 1, seed, fp64)[0]
        v = (1.0 + c * x) ** 3
        bound = 0.5 * x * x + d - d * v + d * torch.log(torch.clamp(v, min=1e-30))
        ok = (v > 0.0) & (torch.log(1.0 - u) < bound)
        out = torch.where(todo & ok, d * v, out)
        todo = todo & ~ok
    ub = _pair_ref(k, 0, 2, seed, fp64)[0]
    out = torch.where(boost, out * torch.exp(torch.log(1.0 - ub) / alpha), out)
    return torch.where(alpha > 0.0, out, 0.0)


@device
def _poisson_log_pmf(x, lam, loglam):
    """log P(X = x), X ~ Poisson(lam >= 10), x integral >= 0 (Stirling's form above 8)."""
    direct = x * loglam - lam - lgamma(x + 1.0)
    xs = tl.maximum(x, 8.0)
    r = 1.0 / xs
    r2 = r * r
    corr = r * (0.08333333333333333 - r2 * (0.002777777777777778 - r2 * 0.0007936507936507937))
    big = -xs * log1p_((xs - lam) / lam) + (xs - lam) - 0.5 * tl.log(6.283185307179586 * xs)
    return tl.where(x >= 8.0, big - corr, direct)


def _poisson_log_pmf_ref(x, lam, loglam):
    direct = x * loglam - lam - lgamma_ref(x + 1.0)
    xs = torch.clamp(x, min=8.0)
    r = 1.0 / xs
    r2 = r * r
    corr = r * (0.08333333333333333 - r2 * (0.002777777777777778 - r2 * 0.0007936507936507937))
    big = -xs * log1p_ref((xs - lam) / lam) + (xs - lam) - 0.5 * torch.log(6.283185307179586 * xs)
    return torch.where(x >= 8.0, big - corr, direct)


@device
def _poisson(k, lam, k0, k1, FP64: tl.constexpr, ROUNDS: tl.constexpr):
    """Poisson(lam): inversion below 10 (stops where the tail is below rounding), PTRS above."""
    lam = tl.maximum(lam, 0.0)
    small = lam < 10.0
    if FP64:
        tail = 1e-17
    else:
        tail = 1e-8
    u, _ = _pair(k, 0, 4, k0, k1, FP64)
    p = tl.exp(-tl.where(small, lam, 0.0))
    f = p
    x = lam * 0.0
    todo = small & (u > f)
    while tl.reduce(todo.to(tl.int32), 0, MAX) > 0:
        x = tl.where(todo, x + 1.0, x)
        p = tl.where(todo, p * lam / tl.maximum(x, 1.0), p)
        f = tl.where(todo, f + p, f)
        todo = todo & (u > f) & (p > tail)
    lb = tl.maximum(lam, 10.0)
    loglam = tl.log(lb)
    b = 0.931 + 2.53 * tl.sqrt(lb)
    a = -0.059 + 0.02483 * b
    log_inv_alpha = tl.log(1.1239 + 1.1328 / (b - 3.4))
    vr = 0.9277 - 3.6224 / (b - 2.0)
    big = tl.floor(lb)
    todo = ~small
    i = 0
    while (i < ROUNDS) & (tl.reduce(todo.to(tl.int32), 0, MAX) > 0):
        uu, v = _pair(k, i, 3, k0, k1, FP64)
        uu = uu - 0.5
        us = tl.maximum(0.5 - tl.abs(uu), 1e-30)
        kk = tl.floor((2.0 * a / us + b) * uu + lb + 0.43)
        reject = (kk < 0.0) | ((us < 0.013) & (v > us))
        lhs = tl.log(v) + log_inv_alpha - tl.log(a / (us * us) + b)
        ok = ((us >= 0.07) & (v <= vr)) | \
            (~reject & (lhs <= _poisson_log_pmf(tl.maximum(kk, 0.0), lb, loglam)))
        big = tl.where(todo & ok, kk, big)
        todo = todo & ~ok
        i += 1
    return tl.where(small, x, big)


def _poisson_ref(k, lam, seed: int, fp64: bool):
    lam = torch.clamp(lam, min=0.0)
    small = lam < 10.0
    tail = 1e-17 if fp64 else 1e-8
    u = _pair_ref(k, 0, 4, seed, fp64)[0]
    p = torch.exp(-torch.where(small, lam, 0.0))
    f, x = p.clone(), lam * 0.0
    todo = small & (u > f)
    while bool(todo.any()):
        x = torch.where(todo, x + 1.0, x)
        p = torch.where(todo, p * lam / torch.clamp(x, min=1.0), p)
        f = torch.where(todo, f + p, f)
        todo = todo & (u > f) & (p > tail)
    lb = torch.clamp(lam, min=10.0)
    loglam = torch.log(lb)
    b = 0.931 + 2.53 * torch.sqrt(lb)
    a = -0.059 + 0.02483 * b
    log_inv_alpha = torch.log(1.1239 + 1.1328 / (b - 3.4))
    vr = 0.9277 - 3.6224 / (b - 2.0)
    big, todo = torch.floor(lb), ~small
    for i in range(ROUNDS):
        if not bool(todo.any()):
            break
        uu, v = _pair_ref(k, i, 3, seed, fp64)
        uu = uu - 0.5
        us = torch.clamp(0.5 - torch.abs(uu), min=1e-30)
        kk = torch.floor((2.0 * a / us + b) * uu + lb + 0.43)
        reject = (kk < 0.0) | ((us < 0.013) & (v > us))
        lhs = torch.log(v) + log_inv_alpha - torch.log(a / (us * us) + b)
        ok = ((us >= 0.07) & (v <= vr)) | \
            (~reject & (lhs <= _poisson_log_pmf_ref(torch.clamp(kk, min=0.0), lb, loglam)))
        big = torch.where(todo & ok, kk, big)
        todo = todo & ~ok
    return torch.where(small, x, big)


# ---------------------------------------------------------------- samplers

@kernel(do_not_specialize=_VARYING)
def _sample_kernel(a, b, out, n, inner, offset, seed, DIST: tl.constexpr,
                   FP64: tl.constexpr, ROUNDS: tl.constexpr, BLOCK: tl.constexpr):
    """out[j, i] ~ DIST(a[j], b[j]) for the ``inner`` draws i of parameter set j."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    valid = offs < n
    j = offs // inner
    k = offs + offset
    k0, k1 = seed_key(seed, offs)
    av = tl.load(a + j, mask=valid, other=1)
    bv = tl.load(b + j, mask=valid, other=2)
    if DIST == 7:  # randint: 63 random bits modulo the range (int64 bounds)
        w0, w1, _, _ = philox((k & 0xFFFFFFFF).to(tl.uint32), (k >> 32).to(tl.uint32),
                              k0 * 0, k0 * 0, k0, k1)
        bits = ((w0 & 0x7FFFFFFF).to(tl.int64) << 32) | w1.to(tl.int64)
        v = av + bits % (bv - av)
    else:
        if FP64:
            av = av.to(tl.float64)
            bv = bv.to(tl.float64)
        else:
            av = av.to(tl.float32)
            bv = bv.to(tl.float32)
        if DIST == 0:
            u, _ = _pair(k, 0, 0, k0, k1, FP64)
            v = av + (bv - av) * u
        elif DIST == 1:
            u1, u2 = _pair(k, 0, 0, k0, k1, FP64)
            v = av + bv * _box_muller(u1, u2)
        elif DIST == 2:
            v = _gamma(k, av, k0, k1, FP64, ROUNDS) * bv
        elif DIST == 3:
            u, _ = _pair(k, 0, 0, k0, k1, FP64)
            v = -tl.log(1.0 - u) / av
        elif DIST == 4:
            v = _poisson(k, av, k0, k1, FP64, ROUNDS)
        elif DIST == 5:
            v = _poisson(k, _gamma(k, av, k0, k1, FP64, ROUNDS) * ((1.0 - bv) / bv), k0, k1,
                         FP64, ROUNDS)
        elif DIST == 6:
            pos = bv > 0.0
            alpha = tl.where(pos, bv, 1.0)
            rate = tl.where(pos, _gamma(k, 1.0 / alpha, k0, k1, FP64, ROUNDS) * alpha * av, av)
            v = _poisson(k, rate, k0, k1, FP64, ROUNDS)
        else:  # log-uniform classes of [0, a): floor(exp(u log(a + 1)) - 1) mod a
            u, _ = _pair(k, 0, 0, k0, k1, FP64)
            v = (tl.exp(u * tl.log(av + 1.0)) - 1.0).to(tl.int64) % av.to(tl.int64)
    tl.store(out + offs, v.to(out.dtype.element_ty), mask=valid)


def _params(dist: str, a, b, dtype: torch.dtype, dev) -> tuple[torch.Tensor, torch.Tensor]:
    """Parameter tensors as the kernel reads them: int64 for randint, else the compute type."""
    kind = {"randint": torch.int64, "log_uniform": torch.float64}.get(dist, _acc(dtype))

    def cast(v):
        if isinstance(v, torch.Tensor):
            return v.to(device=dev, dtype=kind).contiguous()
        return device_meta([v], dev, kind).reshape(())  # copied once per value
        return v.contiguous()
    a = cast(a)
    return a, (a if b is None else cast(b))


def sample(dist: str, a, b, shape: tuple, seed, dtype: torch.dtype = torch.float32,
           offset: int = 0, out=None, device=None) -> torch.Tensor:
    """``shape`` draws from ``dist`` for each element of the parameters ``a``/``b`` (numbers
    or tensors of one shape, the output's leading dimensions); ``offset`` shifts the
    element counters (a continued stream). ``randint`` draws in ``[a, b)``. ``seed``: an
    ``int`` or a one-element int64 tensor on the device (:func:`philox.seed_arg`)."""
    dev = device or (a.device if isinstance(a, torch.Tensor) else torch.device("cpu"))
    a, b = _params(dist, a, b, dtype, dev)
    full = tuple(a.shape) + tuple(shape)
    out = out if out is not None else torch.empty(full, dtype=dtype, device=dev)
    n, inner = out.numel(), math.prod(shape)
    if n:
        block = _block(n, dev)
        _sample_kernel[(cdiv(n, block),)](a, b, out, n, inner, offset, seed_arg(seed, dev),
                                          DIST=CODES[dist],
                                          FP64=dtype == torch.float64 or dist == "log_uniform",
                                          ROUNDS=ROUNDS, BLOCK=block)
    return out


def sample_ref(dist: str, a, b, shape: tuple, seed: int, dtype: torch.dtype = torch.float32,
               offset: int = 0, device=None) -> torch.Tensor:
    """Reference: the same streams and transforms in torch (writes the output)."""
    dev = device or (a.device if isinstance(a, torch.Tensor) else torch.device("cpu"))
    a, b = _params(dist, a, b, dtype, dev)
    full = tuple(a.shape) + tuple(shape)
    view = tuple(a.shape) + (1,) * len(shape)
    av, bv = a.reshape(view).expand(full), b.reshape(view).expand(full)
    k = torch.arange(math.prod(full), dtype=torch.int64, device=dev).reshape(full) + offset
    fp64 = dtype == torch.float64 or dist == "log_uniform"
    seed = seed_int(seed)
    if dist == "randint":
        w = philox_ref(k & _U32, k >> 32, 0, 0, seed & _U32, (seed >> 32) & _U32)
        return (av + (((w[0] & 0x7FFFFFFF) << 32) | w[1]) % (bv - av)).to(dtype)
    u1, u2 = _pair_ref(k, 0, 0, seed, fp64)
    if dist == "uniform":
        v = av + (bv - av) * u1
    elif dist == "normal":
        v = av + bv * _box_muller_ref(u1, u2)
    elif dist == "gamma":
        v = _gamma_ref(k, av, seed, fp64) * bv
    elif dist == "exponential":
        v = -torch.log(1.0 - u1) / av
    elif dist == "poisson":
        v = _poisson_ref(k, av, seed, fp64)
    elif dist == "negative_binomial":
        v = _poisson_ref(k, _gamma_ref(k, av, seed, fp64) * ((1.0 - bv) / bv), seed, fp64)
    elif dist == "generalized_negative_binomial":
        pos = bv > 0.0
        alpha = torch.where(pos, bv, 1.0)
        rate = torch.where(pos, _gamma_ref(k, 1.0 / alpha, seed, fp64) * alpha * av, av)
        v = _poisson_ref(k, rate, seed, fp64)
    else:
        v = (torch.exp(u1 * torch.log(av + 1.0)) - 1.0).long() % av.long()
    return v.to(dtype)


# ---------------------------------------------------------------- multinomial

@kernel
def _cumsum_kernel(p, c, K, BLOCK: tl.constexpr):
    """c[r, :] = cumsum(p[r, :]) in c's dtype; one program per row, blocks carried over."""
    row = tl.program_id(0).to(tl.int64)
    carry = tl.full((), 0.0, c.dtype.element_ty)
    for start in range(0, K, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        v = tl.load(p + row * K + cols, mask=cols < K, other=0.0).to(c.dtype.element_ty)
        tl.store(c + row * K + cols, tl.associative_scan(v, 0, SUM) + carry, mask=cols < K)
        carry += tl.reduce(v, 0, SUM)


@kernel
def _multinomial_kernel(c, p, out, logp, n, per_row, K, steps, seed,
                        GET_PROB: tl.constexpr, FP64: tl.constexpr, BLOCK: tl.constexpr):
    """out = #{i: c[r, i] <= u} (searchsorted right) by binary search; logp = log p[r, out]."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    valid = offs < n
    row = offs // per_row
    k0, k1 = seed_key(seed, offs)
    u, _ = _pair(offs, 0, 0, k0, k1, FP64)
    lo = offs * 0
    hi = lo + K
    for _ in range(steps):
        go = lo < hi
        mid = (lo + hi) // 2
        cv = tl.load(c + row * K + mid, mask=valid & go, other=0.0)
        right = cv <= u
        lo = tl.where(go & right, mid + 1, lo)
        hi = tl.where(go & ~right, mid, hi)
    tl.store(out + offs, lo.to(out.dtype.element_ty), mask=valid)
    if GET_PROB:
        pv = tl.load(p + row * K + tl.minimum(lo, K - 1), mask=valid, other=1.0)
        tl.store(logp + offs, tl.log(pv.to(c.dtype.element_ty)).to(logp.dtype.element_ty),
                 mask=valid)


def multinomial(probs: torch.Tensor, per_row: int, seed, dtype: torch.dtype = torch.int32,
                get_prob: bool = False, out=None):
    """``per_row`` class draws from each row of ``probs`` (last axis; not normalised: past
    the row's sum is class K): ``(rows, per_row)`` indices, and their log-probabilities."""
    k = probs.shape[-1]
    rows = probs.reshape(-1, k).contiguous()
    acc = _acc(probs.dtype)
    shape = (rows.shape[0], per_row)
    if out is None:
        out = torch.empty(shape, dtype=dtype, device=probs.device)
        if get_prob:
            out = (out, torch.empty(shape, dtype=probs.dtype, device=probs.device))
    cls, logp = out if get_prob else (out, out)
    n = cls.numel()
    if n:
        cums = torch.empty(rows.shape, dtype=acc, device=probs.device)
        cap = 1024 if probs.device.type == "cuda" else 32
        _cumsum_kernel[(rows.shape[0],)](rows, cums, k, BLOCK=block_for(k, cap=cap))
        block = _block(n, probs.device)
        _multinomial_kernel[(cdiv(n, block),)](
            cums, rows, cls, logp, n, per_row, k, k.bit_length(), seed_arg(seed, probs.device),
            GET_PROB=get_prob, FP64=acc == torch.float64, BLOCK=block)
    return out


def multinomial_ref(probs: torch.Tensor, per_row: int, seed: int,
                    dtype: torch.dtype = torch.int32, get_prob: bool = False):
    """Reference: cumsum and searchsorted on the same uniforms, log of the drawn class."""
    k = probs.shape[-1]
    rows = probs.reshape(-1, k).to(_acc(probs.dtype))
    idx = torch.arange(rows.shape[0] * per_row, device=probs.device).reshape(-1, per_row)
    u = _pair_ref(idx, 0, 0, seed, rows.dtype == torch.float64)[0]
    cls = torch.searchsorted(rows.cumsum(1), u.contiguous(), right=True)
    if not get_prob:
        return cls.to(dtype)
    return cls.to(dtype), torch.log(rows.gather(1, cls.clamp(max=k - 1))).to(probs.dtype)


@kernel
def _multinomial_bwd_kernel(og, p, sample, grad, n, per_row, K, BLOCK: tl.constexpr):
    """grad[r, s] += og / p[r, s] for each draw s of row r (atomics: repeated classes sum)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    valid = offs < n
    row = offs // per_row
    cls = tl.minimum(tl.maximum(tl.load(sample + offs, mask=valid, other=0).to(tl.int64), 0),
                     K - 1)
    at = row * K + cls
    pv = tl.load(p + at, mask=valid, other=1.0).to(grad.dtype.element_ty)
    g = tl.load(og + offs, mask=valid, other=0.0).to(grad.dtype.element_ty)
    tl.atomic_add(grad + at, g / pv, mask=valid)


def multinomial_backward(og: torch.Tensor, probs: torch.Tensor, sample: torch.Tensor,
                         out=None) -> torch.Tensor:
    """Gradient of the drawn classes' log-probabilities w.r.t. ``probs``."""
    out = out if out is not None else torch.empty_like(probs)
    acc = out if out.dtype in (torch.float32, torch.float64) else torch.empty(
        probs.shape, dtype=torch.float32, device=probs.device)
    fill(acc, 0.0)
    n, k = sample.numel(), probs.shape[-1]
    if n:
        block = _block(n, probs.device)
        _multinomial_bwd_kernel[(cdiv(n, block),)](
            og.contiguous(), probs.contiguous(), sample.contiguous(), acc, n,
            n // (probs.numel() // k), k, BLOCK=block)
    if acc is not out:
        copy_view(acc, out)
    return out


def multinomial_backward_ref(og: torch.Tensor, probs: torch.Tensor,
                             sample: torch.Tensor) -> torch.Tensor:
    """Reference: scatter_add of og / p[class] (fp32 accumulation for half types)."""
    k = probs.shape[-1]
    rows = probs.reshape(-1, k).to(_acc(probs.dtype))
    idx = sample.reshape(rows.shape[0], -1).long().clamp(0, k - 1)
    contrib = og.reshape(idx.shape).to(rows.dtype) / rows.gather(1, idx)
    return torch.zeros_like(rows).scatter_add_(1, idx, contrib).reshape(probs.shape) \
        .to(probs.dtype)


# ---------------------------------------------------------------- shuffle

def shuffle(x: torch.Tensor, seed, out=None) -> torch.Tensor:
    """``x`` with its first axis permuted: 62-bit Philox keys per row, sorted (torch), and
    the rows gathered by the ``take`` kernel."""
    if x.dim() == 0 or x.shape[0] == 0:
        return x.clone() if out is None else out.copy_(x)
    keys = sample("randint", 0, 1 << 62, (x.shape[0],), seed, torch.int64, device=x.device)
    return take(x, torch.argsort(keys), 0, out=out)


def shuffle_ref(x: torch.Tensor, seed: int) -> torch.Tensor:
    """Reference: the same keys from torch's Philox, argsort, index_select."""
    keys = sample_ref("randint", 0, 1 << 62, (x.shape[0],), seed, torch.int64, device=x.device)
    return x.index_select(0, torch.argsort(keys))


# ---------------------------------------------------------------- table entries

_SEED = 0x1234_9ABC_DEF0  # low word >= 2^31: a negative int32 argument


def _lin(lo: float, hi: float, n: int, dev) -> torch.Tensor:
    return torch.linspace(lo, hi, n, device=dev) if n > 1 else torch.tensor([lo], device=dev)


_PARAMS = {  # (a, b) over the leading dimension: every branch of each sampler is reached
    "uniform": lambda n, d: (_lin(-2.0, 1.0, n, d), _lin(0.5, 4.0, n, d)),
    "normal": lambda n, d: (_lin(-3.0, 5.0, n, d), _lin(0.5, 2.0, n, d)),
    "gamma": lambda n, d: (torch.logspace(-1.0, 1.3, n, device=d), _lin(0.5, 2.0, n, d)),
    "exponential": lambda n, d: (_lin(0.25, 4.0, n, d), None),
    "poisson": lambda n, d: (torch.logspace(-0.5, 2.5, n, device=d), None),
    "negative_binomial": lambda n, d: (_lin(0.5, 6.0, n, d), _lin(0.2, 0.8, n, d)),
    "generalized_negative_binomial": lambda n, d: (_lin(2.0, 60.0, n, d), _lin(0.0, 0.5, n, d)),
    "randint": lambda n, d: (torch.tensor([-5, 0, 1 << 33][:n], device=d),
                             torch.tensor([7, 1 << 40, (1 << 33) + 3][:n], device=d)),
}


def _make_sample(dist: str):
    def make(dtype, dev, shape):
        a, b = _PARAMS[dist](shape[0], dev)
        dtype = torch.int64 if dist == "randint" else dtype
        return (dist, a, b, tuple(shape[1:]), _SEED, dtype), {}
    return make


def _make_multinomial(dtype, dev, shape):
    gen = torch.Generator().manual_seed(0)
    probs = torch.rand(shape, generator=gen).to(device=dev, dtype=dtype) + 0.05
    probs = probs / probs.sum(-1, keepdim=True) * 1.02  # a little past 1: class K drawn too
    return (probs, 13, _SEED, torch.int32, True), {}


def _make_multinomial_bwd(dtype, dev, shape):
    (probs, per_row, seed, _, _), _ = _make_multinomial(dtype, dev, shape)
    cls = multinomial_ref(probs, per_row, seed, torch.float32)
    og = torch.randn(cls.shape, generator=torch.Generator().manual_seed(1)).to(dev, dtype)
    return (og, probs, cls), {}


def _make_shuffle(dtype, dev, shape):
    x = torch.randn(shape, generator=torch.Generator().manual_seed(0)).to(dev, dtype)
    return (x, _SEED), {}


_SHAPES = ((3, 37), (2, 5, 13))
_FLOATS = (torch.float32, torch.float64)
_TOL = {torch.float32: (1e-5, 1e-5), torch.float64: (1e-9, 1e-9),
        torch.float16: (1e-3, 1e-3)}


def _sampler(dist: str, dtypes=_FLOATS, bench=((2, 1 << 23),)) -> KernelSpec:
    """A sampler's entry; shapes are (parameter sets, draws per set...)."""
    tol = {torch.float32: (0, 0), torch.float64: (0, 0)} if dist == "randint" else _TOL
    return KernelSpec(name=f"sample_{dist}", fn=sample, ref=sample_ref,
                      make=_make_sample(dist), shapes=_SHAPES, bench_shapes=bench,
                      dtypes=dtypes, tol=tol, family="random",
                      bytes=lambda d, a, b, shape, seed, dtype: math.prod(shape) * a.numel()
                      * dtype.itemsize + tensor_bytes(a))


_ROW_SHAPES = ((3, 37), (2, 3, 300))

KERNELS = [
    _sampler("uniform", dtypes=(torch.float32, torch.float64, torch.float16)),
    _sampler("normal", dtypes=(torch.float32, torch.float64, torch.float16)),
    _sampler("exponential"),
    _sampler("gamma", bench=((2, 1 << 19),)),
    _sampler("poisson", bench=((2, 1 << 19),)),
    _sampler("negative_binomial", bench=((2, 1 << 19),)),
    _sampler("generalized_negative_binomial", bench=((2, 1 << 19),)),
    _sampler("randint", dtypes=(torch.float32,)),
    KernelSpec(name="sample_multinomial", fn=multinomial, ref=multinomial_ref,
               make=_make_multinomial, shapes=_ROW_SHAPES, bench_shapes=((4096, 1000),),
               dtypes=_FLOATS, tol={torch.float32: (1e-5, 1e-6), torch.float64: (1e-9, 1e-12)},
               family="random",
               bytes=lambda p, n, seed, dtype, lp: tensor_bytes(p) * 2
               + p.numel() // p.shape[-1] * n * 8),
    KernelSpec(name="sample_multinomial_backward", fn=multinomial_backward,
               ref=multinomial_backward_ref, make=_make_multinomial_bwd, shapes=_ROW_SHAPES,
               bench_shapes=((4096, 1000),), dtypes=(torch.float32, torch.float16),
               tol={torch.float32: (1e-5, 1e-5), torch.float16: (1e-2, 1e-2)},
               family="random",
               bytes=lambda og, p, s: tensor_bytes(og, s, p) + 2 * tensor_bytes(og)),
    KernelSpec(name="shuffle", fn=shuffle, ref=shuffle_ref, make=_make_shuffle,
               shapes=((37, 3), (5, 2, 7)), bench_shapes=((1 << 16, 256),),
               dtypes=(torch.float32, torch.float16),
               tol={torch.float32: (0, 0), torch.float16: (0, 0)}, family="random",
               bytes=lambda x, seed: 2 * tensor_bytes(x) + 24 * x.shape[0]),
]
