"""Densities of the sampling distributions (``_random_pdf_*``) and their gradients.

A density op gives each sample the (log-)density under the parameters of its leading
index: parameters of shape ``L`` apply to samples of shape ``L + tail`` (Dirichlet: ``alpha``
of shape ``L + (K,)`` to samples ``L + tail + (K,)``, one density per K-vector). The math
(``l`` the log-density, ``x`` the sample)::

    normal(mu, s)     l = -z^2/2 - log s - log(2 pi)/2, z = (x - mu)/s
                      dl/dx = -z/s, dl/dmu = z/s, dl/ds = (z^2 - 1)/s
    uniform(lo, hi)   l = -log(hi - lo) (no support check), dl/dlo = -dl/dhi = 1/(hi - lo)
    gamma(a, b)       l = a log b + (a-1) log x - b x - lgamma(a)
                      dl/dx = (a-1)/x - b, dl/da = log b + log x - digamma(a), dl/db = a/b - x
    exponential(lam)  l = log lam - lam x, dl/dx = -lam, dl/dlam = 1/lam - x
    poisson(lam)      l = x log lam - lam - lgamma(x+1), dl/dlam = x/lam - 1
    neg. binomial     l = lgamma(x+k) - lgamma(x+1) - lgamma(k) + k log p + x log1p(-p)
      (k, p)          dl/dk = digamma(x+k) - digamma(k) + log p, dl/dp = k/p - x/(1-p)
    gen. neg. binom.  the negative binomial at k = 1/alpha, p = 1/(mu alpha + 1) (chain rule)
      (mu, alpha)
    dirichlet(alpha)  l = sum (a_i - 1) log x_i + lgamma(sum a) - sum lgamma(a_i)
                      dl/dx_i = (a_i - 1)/x_i, dl/da_i = log x_i + digamma(sum a) - digamma(a_i)

Densities (``is_log`` False) scale the gradients by ``exp(l)``. The discrete ones and
uniform have no gradient in the sample (zeros, as MXNet). Parameter gradients sum over the
samples that share a parameter: one program per parameter element loops over its samples
(Dirichlet: per alpha row and block of K, after a forward launch for the densities).
``lgamma`` and ``digamma`` are Stirling/asymptotic series at x + 8 shifted back by the
recurrence, for x > 0 (error relative to max(1, |f|): about 1e-11 in float64; in float32
3e-6 for lgamma, 5e-7 for digamma); the torch references use ``torch.lgamma`` and autograd,
so the hand-written derivatives are checked, not copied.

Bytes moved: forward reads samples and parameters and writes one value per density;
backward also reads the head gradient and writes gradients of samples and parameters.
"""
from __future__ import annotations

import math

import torch
import triton.language as tl

from .philox import device
from .reduce import SUM
from .runtime import block_for, cdiv, kernel
from .table import KernelSpec, tensor_bytes

CODES = {"uniform": 0, "normal": 1, "gamma": 2, "exponential": 3, "poisson": 4,
         "negative_binomial": 5, "generalized_negative_binomial": 6}
FLAT = ("uniform", "poisson", "negative_binomial", "generalized_negative_binomial")


# ---------------------------------------------------------------- special functions

@device
def log1p_(x):
    """log(1 + x) without losing small x (Goldberg's correction of log(1 + x))."""
    u = 1.0 + x
    return tl.where(u == 1.0, x, tl.log(u) * (x / tl.where(u == 1.0, 1.0, u - 1.0)))


def log1p_ref(x: torch.Tensor) -> torch.Tensor:
    """Reference (the same formula, so the samplers' tests compare like with like)."""
    u = 1.0 + x
    return torch.where(u == 1.0, x, torch.log(u) * (x / torch.where(u == 1.0, 1.0, u - 1.0)))


@device
def lgamma(x):
    """log Gamma(x), x > 0: Stirling's series at z = x (+ 8 below 8, then the recurrence)."""
    small = x < 8.0
    s = tl.where(small, x, 1.0)
    prod = s * (s + 1.0) * (s + 2.0) * (s + 3.0) * (s + 4.0) * (s + 5.0) * (s + 6.0) * (s + 7.0)
    z = tl.where(small, x + 8.0, x)
    r = 1.0 / z
    r2 = r * r
    series = r * (0.08333333333333333 - r2 * (0.002777777777777778 - r2 * (
        0.0007936507936507937 - r2 * 0.0005952380952380952)))
    return (z - 0.5) * tl.log(z) - z + 0.9189385332046728 + series - \
        tl.where(small, tl.log(prod), 0.0)


def lgamma_ref(x: torch.Tensor) -> torch.Tensor:
    """Reference: the same series in torch (the samplers' references need the kernel's
    rounding; densities are checked against ``torch.lgamma``)."""
    small = x < 8.0
    s = torch.where(small, x, 1.0)
    prod = s * (s + 1.0) * (s + 2.0) * (s + 3.0) * (s + 4.0) * (s + 5.0) * (s + 6.0) * (s + 7.0)
    z = torch.where(small, x + 8.0, x)
    r = 1.0 / z
    r2 = r * r
    series = r * (0.08333333333333333 - r2 * (0.002777777777777778 - r2 * (
        0.0007936507936507937 - r2 * 0.0005952380952380952)))
    return (z - 0.5) * torch.log(z) - z + 0.9189385332046728 + series - \
        torch.where(small, torch.log(prod), 0.0)


@device
def digamma(x):
    """digamma(x), x > 0: the asymptotic series at z = x (+ 8 below 8, then the recurrence)."""
    small = x < 8.0
    s = tl.where(small, x, 1.0)
    shift = 1.0 / s + 1.0 / (s + 1.0) + 1.0 / (s + 2.0) + 1.0 / (s + 3.0) + 1.0 / (s + 4.0) + \
        1.0 / (s + 5.0) + 1.0 / (s + 6.0) + 1.0 / (s + 7.0)
    z = tl.where(small, x + 8.0, x)
    r = 1.0 / z
    r2 = r * r
    series = r2 * (0.08333333333333333 - r2 * (0.008333333333333333 - r2 * (
        0.003968253968253968 - r2 * (0.004166666666666667 - r2 * 0.007575757575757576))))
    return tl.log(z) - 0.5 * r - series - tl.where(small, shift, 0.0)


# ---------------------------------------------------------------- densities

@device
def _as_acc(v, FP64: tl.constexpr):
    if FP64:
        r = v.to(tl.float64)
    else:
        r = v.to(tl.float32)
    return r


@device
def _log_pdf(x, a, b, DIST: tl.constexpr, GRADS: tl.constexpr):
    """The log-density of x under DIST(a, b) and, with GRADS, dl/dx, dl/da, dl/db."""
    gx = x * 0.0
    ga = gx
    gb = gx
    if DIST == 0:
        l = gx - tl.log(b - a)
        if GRADS:
            ga = gx + 1.0 / (b - a)
            gb = -ga
    elif DIST == 1:
        z = (x - a) / b
        l = -0.5 * z * z - tl.log(b) - 0.9189385332046728
        if GRADS:
            gx = -z / b
            ga = z / b
            gb = (z * z - 1.0) / b
    elif DIST == 2:
        l = a * tl.log(b) + (a - 1.0) * tl.log(x) - b * x - lgamma(a)
        if GRADS:
            gx = (a - 1.0) / x - b
            ga = tl.log(b) + tl.log(x) - digamma(a)
            gb = a / b - x
    elif DIST == 3:
        l = tl.log(a) - a * x
        if GRADS:
            gx = gx - a
            ga = 1.0 / a - x
    elif DIST == 4:
        l = x * tl.log(a) - a - lgamma(x + 1.0)
        if GRADS:
            ga = x / a - 1.0
    else:  # negative binomial (k=a, p=b); generalized: k = 1/alpha, p = 1/(mu alpha + 1)
        if DIST == 6:
            k = 1.0 / b
            p = 1.0 / (a * b + 1.0)
        else:
            k = a
            p = b
        l = lgamma(x + k) - lgamma(x + 1.0) - lgamma(k) + k * tl.log(p) + x * log1p_(-p)
        if GRADS:
            dk = digamma(x + k) - digamma(k) + tl.log(p)
            dp = k / p - x / (1.0 - p)
            if DIST == 6:
                ga = -dp * b * p * p
                gb = -dk * k * k - dp * a * p * p
            else:
                ga = dk
                gb = dp
    return l, gx, ga, gb


@kernel
def _pdf_kernel(x, a, b, out, n, inner, DIST: tl.constexpr, IS_LOG: tl.constexpr,
                FP64: tl.constexpr, BLOCK: tl.constexpr):
    """out[j, i] = (log-)density of x[j, i] under DIST(a[j], b[j])."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    valid = offs < n
    j = offs // inner
    xv = _as_acc(tl.load(x + offs, mask=valid, other=1.0), FP64)
    av = _as_acc(tl.load(a + j, mask=valid, other=0.25), FP64)  # others: finite logs
    bv = _as_acc(tl.load(b + j, mask=valid, other=0.5), FP64)
    l, _, _, _ = _log_pdf(xv, av, bv, DIST, False)
    if not IS_LOG:
        l = tl.exp(l)
    tl.store(out + offs, l.to(out.dtype.element_ty), mask=valid)


@kernel
def _pdf_bwd_kernel(og, x, a, b, dx, da, db, inner, DIST: tl.constexpr, IS_LOG: tl.constexpr,
                    FLAT: tl.constexpr, TWO: tl.constexpr, FP64: tl.constexpr,
                    BLOCK: tl.constexpr):
    """Parameter set j: dx over its samples, da[j] and db[j] summed over them."""
    j = tl.program_id(0).to(tl.int64)
    av = _as_acc(tl.load(a + j), FP64)
    bv = _as_acc(tl.load(b + j), FP64)
    sa = _as_acc(tl.full([BLOCK], 0.0, tl.float32), FP64)
    sb = sa
    for start in range(0, inner, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        m = cols < inner
        xv = _as_acc(tl.load(x + j * inner + cols, mask=m, other=1.0), FP64)
        g = _as_acc(tl.load(og + j * inner + cols, mask=m, other=0.0), FP64)
        l, gx, ga, gb = _log_pdf(xv, av, bv, DIST, True)
        if not IS_LOG:
            g = g * tl.exp(l)
        if FLAT:
            gx = gx * 0.0
        else:
            gx = g * gx
        tl.store(dx + j * inner + cols, gx.to(dx.dtype.element_ty), mask=m)
        sa += tl.where(m, g * ga, 0.0)
        sb += tl.where(m, g * gb, 0.0)
    tl.store(da + j, tl.reduce(sa, 0, SUM).to(da.dtype.element_ty))
    if TWO:
        tl.store(db + j, tl.reduce(sb, 0, SUM).to(db.dtype.element_ty))


@kernel
def _dirichlet_kernel(x, a, out, n, S, K, IS_LOG: tl.constexpr, FP64: tl.constexpr,
                      BS: tl.constexpr, BK: tl.constexpr):
    """out[g] = (log-)density of the K-vector x[g] under alpha row g // S."""
    g = tl.program_id(0).to(tl.int64) * BS + tl.arange(0, BS)
    gm = g < n
    r = g // S
    acc = _as_acc(tl.full([BS], 0.0, tl.float32), FP64)
    asum = acc
    for start in range(0, K, BK):
        kk = start + tl.arange(0, BK)
        m2 = gm[:, None] & (kk < K)[None, :]
        xv = _as_acc(tl.load(x + g[:, None] * K + kk[None, :], mask=m2, other=1.0), FP64)
        av = _as_acc(tl.load(a + r[:, None] * K + kk[None, :], mask=m2, other=1.0), FP64)
        acc += tl.reduce(tl.where(m2, (av - 1.0) * tl.log(xv) - lgamma(av), 0.0), 1, SUM)
        asum += tl.reduce(tl.where(m2, av, 0.0), 1, SUM)
    l = acc + lgamma(tl.where(gm, asum, 1.0))
    if not IS_LOG:
        l = tl.exp(l)
    tl.store(out + g, l.to(out.dtype.element_ty), mask=gm)


@kernel
def _dirichlet_bwd_kernel(og, dens, x, a, dx, da, S, K, IS_LOG: tl.constexpr,
                          FP64: tl.constexpr, BS: tl.constexpr, BK: tl.constexpr):
    """Alpha row r, classes of block c: dx over the row's samples, da summed over them."""
    r = tl.program_id(0).to(tl.int64)
    kk = tl.program_id(1) * BK + tl.arange(0, BK)
    km = kk < K
    asum = _as_acc(tl.full([BK], 0.0, tl.float32), FP64)
    for start in range(0, K, BK):
        cols = start + tl.arange(0, BK)
        asum += _as_acc(tl.load(a + r * K + cols, mask=cols < K, other=0.0), FP64)
    total = tl.reduce(asum, 0, SUM)
    av = _as_acc(tl.load(a + r * K + kk, mask=km, other=1.0), FP64)
    base = digamma(total) - digamma(av)
    acc = av * 0.0
    for start in range(0, S, BS):
        s = start + tl.arange(0, BS)
        sm = s < S
        g = r * S + s
        w = _as_acc(tl.load(og + g, mask=sm, other=0.0), FP64)
        if not IS_LOG:
            w = w * _as_acc(tl.load(dens + g, mask=sm, other=0.0), FP64)
        m2 = sm[:, None] & km[None, :]
        at = g[:, None] * K + kk[None, :]
        xv = _as_acc(tl.load(x + at, mask=m2, other=1.0), FP64)
        tl.store(dx + at, (w[:, None] * (av[None, :] - 1.0) / xv).to(dx.dtype.element_ty),
                 mask=m2)
        acc += tl.reduce(tl.where(m2, w[:, None] * (tl.log(xv) + base[None, :]), 0.0), 0, SUM)
    tl.store(da + r * K + kk, acc.to(da.dtype.element_ty), mask=km)


def _layout(dist: str, x: torch.Tensor, a: torch.Tensor) -> tuple[int, int]:
    """(parameter sets, samples per set) of the leading-index broadcast."""
    if dist == "dirichlet":
        rows = a.numel() // a.shape[-1]
        return rows, x.numel() // max(a.numel(), 1)
    return a.numel(), x.numel() // max(a.numel(), 1)


def _fp64(x: torch.Tensor) -> bool:
    return x.dtype == torch.float64


def _dirichlet_blocks(K: int) -> tuple[int, int]:
    bk = block_for(K, cap=64)
    return max(16, 1024 // bk) if bk < 1024 else 16, bk


def pdf(dist: str, x: torch.Tensor, a: torch.Tensor, b: torch.Tensor | None = None,
        is_log: bool = False, out=None) -> torch.Tensor:
    """(Log-)densities of the samples ``x`` under parameters ``a`` (and ``b``) of the
    leading shape (see the module notes)."""
    x, a = x.contiguous(), a.contiguous()
    b = a if b is None else b.contiguous()
    shape = x.shape[:-1] if dist == "dirichlet" else x.shape
    out = out if out is not None else torch.empty(shape, dtype=x.dtype, device=x.device)
    rows, inner = _layout(dist, x, a)
    if dist == "dirichlet":
        n, k = out.numel(), a.shape[-1]
        bs, bk = _dirichlet_blocks(k)
        if n:
            _dirichlet_kernel[(cdiv(n, bs),)](x, a, out, n, n // rows, k, IS_LOG=is_log,
                                              FP64=_fp64(x), BS=bs, BK=bk)
        return out
    n = x.numel()
    if n:
        block = block_for(n, cap=1024 if x.device.type == "cuda" else 256)
        _pdf_kernel[(cdiv(n, block),)](x, a, b, out, n, inner, DIST=CODES[dist],
                                       IS_LOG=is_log, FP64=_fp64(x), BLOCK=block)
    return out


def _nb_log_ref(x, k, p):
    return (torch.lgamma(x + k) - torch.lgamma(x + 1) - torch.lgamma(k) + k * torch.log(p)
            + x * torch.log1p(-p))


_LOG_PDF_REF = {
    "normal": lambda x, mu, s: -0.5 * ((x - mu) / s) ** 2 - torch.log(s)
    - 0.5 * math.log(2 * math.pi),
    "uniform": lambda x, lo, hi: (-torch.log(hi - lo)).expand(x.shape),
    "gamma": lambda x, a, b: a * torch.log(b) + (a - 1) * torch.log(x) - b * x - torch.lgamma(a),
    "exponential": lambda x, lam: torch.log(lam) - lam * x,
    "poisson": lambda x, lam: x * torch.log(lam) - lam - torch.lgamma(x + 1),
    "negative_binomial": _nb_log_ref,
    "generalized_negative_binomial": lambda x, mu, al: _nb_log_ref(x, 1 / al, 1 / (mu * al + 1)),
    "dirichlet": lambda x, a: (((a - 1) * torch.log(x)).sum(-1) + torch.lgamma(a.sum(-1))
                               - torch.lgamma(a).sum(-1)),
}


def pdf_ref(dist: str, x: torch.Tensor, a: torch.Tensor, b: torch.Tensor | None = None,
            is_log: bool = False) -> torch.Tensor:
    """Reference: torch's lgamma/log1p on the broadcast parameters (in fp32 or fp64)."""
    params = (a,) if b is None else (a, b)
    lead = tuple(a.shape)
    if dist == "dirichlet":
        view = lead[:-1] + (1,) * (x.dim() - len(lead)) + lead[-1:]
    else:
        view = lead + (1,) * (x.dim() - len(lead))
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    logp = _LOG_PDF_REF[dist](x.to(work), *(t.to(work).reshape(view) for t in params))
    return (logp if is_log else torch.exp(logp)).to(x.dtype)


def pdf_backward(dist: str, og: torch.Tensor, x: torch.Tensor, a: torch.Tensor,
                 b: torch.Tensor | None = None, is_log: bool = False, out=None) -> tuple:
    """Gradients ``(dx, da[, db])`` of ``sum(og * pdf(x, a, b))``."""
    two = b is not None
    og, x, a = og.contiguous(), x.contiguous(), a.contiguous()
    b = a if b is None else b.contiguous()
    if out is None:
        out = (torch.empty_like(x), torch.empty_like(a)) + ((torch.empty_like(b),) if two else ())
    rows, inner = _layout(dist, x, a)
    if dist == "dirichlet":
        k = a.shape[-1]
        dens = og if is_log else pdf(dist, x.to(torch.float64 if _fp64(x) else torch.float32), a)
        bs, bk = _dirichlet_blocks(k)
        if rows and inner:
            _dirichlet_bwd_kernel[(rows, cdiv(k, bk))](og, dens, x, a, out[0], out[1], inner, k,
                                                       IS_LOG=is_log, FP64=_fp64(x), BS=bs,
                                                       BK=bk)
        return out
    if rows:
        block = block_for(inner, cap=1024 if x.device.type == "cuda" else 64)
        _pdf_bwd_kernel[(rows,)](og, x, a, b, out[0], out[1], out[-1], inner, DIST=CODES[dist],
                                 IS_LOG=is_log, FLAT=dist in FLAT, TWO=two, FP64=_fp64(x),
                                 BLOCK=block)
    return out


def pdf_backward_ref(dist: str, og: torch.Tensor, x: torch.Tensor, a: torch.Tensor,
                     b: torch.Tensor | None = None, is_log: bool = False) -> tuple:
    """Reference: autograd through :func:`pdf_ref` (zeros for the sample where flat)."""
    values = (x, a) if b is None else (x, a, b)
    with torch.enable_grad():
        leaves = [t.detach().requires_grad_() for t in values]
        density = pdf_ref(dist, *leaves, is_log=is_log)
        grads = torch.autograd.grad(density, leaves, og.to(density.dtype), allow_unused=True)
    grads = [torch.zeros_like(t) if g is None else g for t, g in zip(values, grads)]
    if dist in FLAT:
        grads[0] = torch.zeros_like(x)
    return tuple(grads)


# ---------------------------------------------------------------- table entries

_RANGES = {  # (sample range, a range, b range); discrete samples are rounded
    "normal": ((-2.0, 3.0), (-1.0, 1.0), (0.5, 2.0)),
    "uniform": ((0.0, 1.0), (-1.0, 0.0), (1.0, 3.0)),
    "gamma": ((0.2, 4.0), (0.3, 6.0), (0.5, 2.0)),
    "exponential": ((0.0, 3.0), (0.25, 4.0), None),
    "poisson": ((0.0, 12.0), (0.5, 9.0), None),
    "negative_binomial": ((0.0, 12.0), (0.5, 6.0), (0.2, 0.8)),
    "generalized_negative_binomial": ((0.0, 12.0), (0.5, 8.0), (0.1, 0.9)),
    "dirichlet": ((0.05, 1.0), (0.3, 3.0), None),
}


def _make_pdf(dist: str):
    def make(dtype, dev, shape):
        gen = torch.Generator().manual_seed(len(shape))
        xr, ar, br = _RANGES[dist]
        lead = (shape[0], shape[-1]) if dist == "dirichlet" else shape[:1]

        def draw(rng, size):
            return torch.empty(size).uniform_(*rng, generator=gen).to(dev, dtype)
        x = draw(xr, shape)
        if dist in FLAT[1:]:
            x = x.round()
        b = draw(br, lead) if br else None
        return (dist, x, draw(ar, lead), b, len(shape) > 2), {}
    return make


def _make_pdf_bwd(dist: str):
    def make(dtype, dev, shape):
        (_, x, a, b, is_log), _ = _make_pdf(dist)(dtype, dev, shape)
        og_shape = shape[:-1] if dist == "dirichlet" else shape
        og = torch.randn(og_shape, generator=torch.Generator().manual_seed(3)).to(dev, dtype)
        return (dist, og, x, a, b, is_log), {}
    return make


def _traffic(dist, *tensors):
    return tensor_bytes(*(t for t in tensors if isinstance(t, torch.Tensor))) + \
        tensor_bytes(tensors[0])


_TOL = {torch.float32: (2e-5, 1e-5), torch.float64: (1e-9, 1e-10)}
_PDF_SHAPES = {"dirichlet": ((3, 5, 4), (2, 19, 3, 37))}


def _pdf_entries(dist: str) -> list[KernelSpec]:
    shapes = _PDF_SHAPES.get(dist, ((3, 37), (2, 5, 13)))
    bench = ((4096, 64, 16),) if dist == "dirichlet" else ((4096, 4096),)
    return [
        KernelSpec(name=f"pdf_{dist}", fn=pdf, ref=pdf_ref, make=_make_pdf(dist),
                   shapes=shapes, bench_shapes=bench, dtypes=(torch.float32, torch.float64),
                   tol=_TOL, family="random_pdf", bytes=_traffic),
        KernelSpec(name=f"pdf_{dist}_backward", fn=pdf_backward, ref=pdf_backward_ref,
                   make=_make_pdf_bwd(dist), shapes=shapes, bench_shapes=bench,
                   dtypes=(torch.float32, torch.float64), tol=_TOL, family="random_pdf",
                   bytes=lambda d, og, x, a, b, is_log: tensor_bytes(og, x, x)
                   + 2 * tensor_bytes(*(t for t in (a, b) if t is not None))),
    ]


KERNELS = [spec for dist in _RANGES for spec in _pdf_entries(dist)]
