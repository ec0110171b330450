"""Log-likelihood of marked self-exciting (Hawkes) processes and its gradient (MXNet's
``_contrib_hawkesll``).

Per sample ``i`` with K marks, background intensities ``mu[i]``, branching ratios ``alpha``
and decays ``beta``, the points ``j < valid_length[i]`` (times ``t_j`` = cumulative
``lags``, marks ``c_j``) update the exponentially decayed state of their mark ``c``::

    d = t_j - last[c];  e = exp(-beta[c] d)
    lambda = mu[c] + alpha[c] beta[c] state[c] e          (intensity at the point)
    ll += log(lambda) - mu[c] d - alpha[c] state[c] (1 - e)
    state[c] = 1 + state[c] e;  last[c] = t_j

then every mark's compensator up to ``max_time[i]`` is subtracted and its state decayed.
The gradient (with respect to mu, alpha, beta; the state input, times and marks get none,
as in MXNet) carries ``dstate[c] = d state[c] / d beta[c]`` along the same recursion.

One program per sample runs its points in order with the K states in registers. Bytes
moved: lags and marks read once, mu/state read and state written once per sample.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from .runtime import block_for, kernel
from .table import KernelSpec, tensor_bytes


@triton.jit
def _add(a, b):
    return a + b


@kernel
def _hawkes_fwd_kernel(mu, alpha, beta, state, lags, marks, valid, max_time, ll, out_state,
                       K, T, BLOCK_K: tl.constexpr):
    i = tl.program_id(0)
    k = tl.arange(0, BLOCK_K)
    live = k < K
    mu_i = tl.load(mu + i * K + k, mask=live, other=1.0).to(tl.float32)
    a = tl.load(alpha + k, mask=live, other=0.0).to(tl.float32)
    b = tl.load(beta + k, mask=live, other=0.0).to(tl.float32)
    s = tl.load(state + i * K + k, mask=live, other=0.0).to(tl.float32)
    last = tl.full((BLOCK_K,), 0.0, tl.float32)
    t = tl.load(lags + i * T).to(tl.float32) * 0.0
    total = t
    n = tl.load(valid + i).to(tl.int32)
    for j in range(0, n):
        t += tl.load(lags + i * T + j).to(tl.float32)
        hit = (k == tl.load(marks + i * T + j).to(tl.int32)) & live
        d = t - last
        e = tl.exp(-b * d)
        lam = mu_i + a * b * s * e
        term = tl.log(tl.where(hit, lam, 1.0)) - mu_i * d - a * s * (1.0 - e)
        total += tl.reduce(tl.where(hit, term, 0.0), 0, _add)
        s = tl.where(hit, 1.0 + s * e, s)
        last = tl.where(hit, t, last)
    d = tl.load(max_time + i).to(tl.float32) - last
    e = tl.exp(-b * d)
    total -= tl.reduce(tl.where(live, mu_i * d + a * s * (1.0 - e), 0.0), 0, _add)
    tl.store(ll + i, total.to(ll.dtype.element_ty))
    tl.store(out_state + i * K + k, (e * s).to(out_state.dtype.element_ty), mask=live)


@kernel
def _hawkes_bwd_kernel(dll, mu, alpha, beta, state, lags, marks, valid, max_time, dmu, dalpha,
                       dbeta, K, T, BLOCK_K: tl.constexpr):
    i = tl.program_id(0)
    k = tl.arange(0, BLOCK_K)
    live = k < K
    mu_i = tl.load(mu + i * K + k, mask=live, other=1.0).to(tl.float32)
    a = tl.load(alpha + k, mask=live, other=0.0).to(tl.float32)
    b = tl.load(beta + k, mask=live, other=0.0).to(tl.float32)
    s = tl.load(state + i * K + k, mask=live, other=0.0).to(tl.float32)
    ds = tl.full((BLOCK_K,), 0.0, tl.float32)
    last = ds
    gm = ds
    ga = ds
    gb = ds
    t = tl.load(lags + i * T).to(tl.float32) * 0.0
    n = tl.load(valid + i).to(tl.int32)
    for j in range(0, n):
        t += tl.load(lags + i * T + j).to(tl.float32)
        hit = (k == tl.load(marks + i * T + j).to(tl.int32)) & live
        d = t - last
        e = tl.exp(-b * d)
        lam = tl.where(hit, mu_i + a * b * s * e, 1.0)
        gm = tl.where(hit, gm + 1.0 / lam - d, gm)
        ga = tl.where(hit, ga + b * s * e / lam - s * (1.0 - e), ga)
        gb = tl.where(hit, gb + a * e * (s * (1.0 - b * d) + b * ds) / lam
                      - a * (ds * (1.0 - e) + s * d * e), gb)
        ds = tl.where(hit, e * (ds - d * s), ds)
        s = tl.where(hit, 1.0 + s * e, s)
        last = tl.where(hit, t, last)
    d = tl.load(max_time + i).to(tl.float32) - last
    e = tl.exp(-b * d)
    g = tl.load(dll + i).to(tl.float32)
    tl.store(dmu + i * K + k, (g * (gm - d)).to(dmu.dtype.element_ty), mask=live)
    tl.store(dalpha + i * K + k, g * (ga - s * (1.0 - e)), mask=live)
    tl.store(dbeta + i * K + k, g * (gb - a * (ds * (1.0 - e) + s * d * e)), mask=live)


def _block(K: int) -> int:
    return block_for(K, cap=1 << 16, floor=2)


def hawkesll(mu, alpha, beta, state, lags, marks, valid_length, max_time, out=None):
    """Check, allocate, launch: (log-likelihood (N,), final states (N, K))."""
    n, k = mu.shape
    ll, st = out if out is not None else (torch.empty(n, dtype=mu.dtype, device=mu.device),
                                          torch.empty_like(mu))
    args = [x.contiguous() for x in (mu, alpha, beta, state, lags, marks, valid_length,
                                     max_time)]
    _hawkes_fwd_kernel[(n,)](*args, ll, st, k, lags.shape[1], BLOCK_K=_block(k))
    return ll, st


def hawkesll_backward(dll, mu, alpha, beta, state, lags, marks, valid_length, max_time,
                      out=None):
    """Check, allocate, launch: the gradients of sum(dll * ll) for mu, alpha and beta."""
    n, k = mu.shape
    dmu, dalpha, dbeta = out if out is not None else (
        torch.empty_like(mu), torch.empty_like(alpha), torch.empty_like(beta))
    part_a = torch.empty((n, k), dtype=torch.float32, device=mu.device)
    part_b = torch.empty_like(part_a)
    args = [x.contiguous() for x in (dll, mu, alpha, beta, state, lags, marks, valid_length,
                                     max_time)]
    _hawkes_bwd_kernel[(n,)](*args, dmu, part_a, part_b, k, lags.shape[1], BLOCK_K=_block(k))
    dalpha.copy_(part_a.sum(0))
    dbeta.copy_(part_b.sum(0))
    return dmu, dalpha, dbeta


def hawkesll_ref(mu, alpha, beta, state, lags, marks, valid_length, max_time):
    """Reference: the recursion over points, vectorised over samples (torch ops)."""
    n, k = mu.shape
    rows = torch.arange(n, device=mu.device)
    s, last = state.clone(), torch.zeros_like(mu)
    t, ll = torch.zeros(n, dtype=mu.dtype, device=mu.device), \
        torch.zeros(n, dtype=mu.dtype, device=mu.device)
    for j in range(lags.shape[1]):
        live = j < valid_length
        c = marks[:, j].long().clamp(0, k - 1)
        t = t + torch.where(live, lags[:, j], 0.0)
        d = t - last[rows, c]
        e = torch.exp(-beta[c] * d)
        s_c = s[rows, c]
        lam = mu[rows, c] + alpha[c] * beta[c] * s_c * e
        term = torch.log(torch.where(live, lam, 1.0)) - mu[rows, c] * d - alpha[c] * s_c * (1 - e)
        ll = ll + torch.where(live, term, 0.0)
        s = s.scatter(1, c[:, None], torch.where(live, 1 + s_c * e, s_c)[:, None])
        last = last.scatter(1, c[:, None], torch.where(live, t, last[rows, c])[:, None])
    d = max_time[:, None] - last
    e = torch.exp(-beta[None, :] * d)
    ll = ll - (mu * d + alpha * s * (1 - e)).sum(1)
    return ll, e * s


def hawkesll_backward_ref(dll, mu, alpha, beta, state, lags, marks, valid_length, max_time):
    """Reference: autograd through :func:`hawkesll_ref` (the state input held constant)."""
    params = [x.detach().requires_grad_(True) for x in (mu, alpha, beta)]
    with torch.enable_grad():
        ll, _ = hawkesll_ref(*params, state, lags, marks, valid_length, max_time)
        return torch.autograd.grad(ll, params, dll)


def _make(dtype, device, shape):
    n, k, t = shape
    gen = torch.Generator().manual_seed(0)

    def draw(*size, low=0.1, high=1.0):
        return (torch.rand(size, generator=gen) * (high - low) + low).to(dtype)
    marks = torch.randint(0, k, (n, t), generator=gen).to(torch.int32)
    valid = torch.randint(1, t + 1, (n,), generator=gen).to(dtype)
    args = (draw(n, k, low=0.5, high=2.0), draw(k, low=0.1, high=0.5), draw(k, low=0.5),
            draw(n, k, low=0.0, high=0.5), draw(n, t, high=3.0), marks, valid,
            draw(n, low=40.0, high=50.0))
    return tuple(x.to(device) for x in args), {}


def _make_backward(dtype, device, shape):
    args, _ = _make(dtype, device, shape)
    dll = torch.linspace(-1.0, 1.0, shape[0], dtype=dtype).to(device)
    return (dll, *args), {}


KERNELS = [
    KernelSpec(name="hawkesll", fn=hawkesll, ref=hawkesll_ref, make=_make,
               shapes=((3, 2, 5), (4, 3, 9), (1, 1, 7)), bench_shapes=((4096, 8, 64),),
               tol={torch.float32: (1e-4, 1e-4)},
               bytes=lambda mu, alpha, beta, state, lags, *a: 3 * tensor_bytes(mu)
               + 2 * tensor_bytes(lags), family="hawkes"),
    KernelSpec(name="hawkesll_backward", fn=hawkesll_backward, ref=hawkesll_backward_ref,
               make=_make_backward, shapes=((3, 2, 5), (4, 3, 9)),
               bench_shapes=((4096, 8, 64),), tol={torch.float32: (1e-3, 1e-4)},
               bytes=lambda dll, mu, alpha, beta, state, lags, *a: 3 * tensor_bytes(mu)
               + 2 * tensor_bytes(lags), family="hawkes"),
]
