"""Connectionist temporal classification: loss and its gradient (MXNet's ``CTCLoss``).

Data ``x`` (T, N, C) are unnormalised scores; ``lp = log_softmax(x)`` over C. A label row
of length ``L`` is extended with blanks to ``S = 2L + 1`` states ``l'(s)`` (blank at even s).
In log space, for ``t < T_b`` (the item's data length)::

    alpha_0(s) = lp[0, l'(s)]                    for s < 2, else -inf
    alpha_t(s) = lse(alpha_{t-1}(s), alpha_{t-1}(s-1), [alpha_{t-1}(s-2)]) + lp[t, l'(s)]
    beta_{T-1}(s) = 0                            for s >= S - 2, else -inf
    beta_t(s) = lse(beta_{t+1}(s') + lp[t+1, l'(s')]  for s' in (s, s+1, [s+2]))

where the bracketed skip is allowed when ``l'(s) != blank`` and ``l'(s) != l'(s-2)``.
``loss = -lse(alpha_{T-1}(S-1), alpha_{T-1}(S-2))`` and, with the state posteriors
``gamma_t(s) = exp(alpha_t(s) + beta_t(s) + loss)``, the gradient with respect to ``x`` is
``softmax(x)[t, c] - sum_{s: l'(s) = c} gamma_t(s)`` (0 for t >= T_b).

One program per batch item runs the recursions (alpha and beta kept in (T, N, S) scratch);
a second kernel, one program per (t, item), forms the gradient row. Bytes moved: the
log-probabilities are read about 3 times (recursions, gradient), the gradient written once.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from .philox import device
from .runtime import block_for, kernel
from .softmax import softmax_fwd
from .table import KernelSpec, tensor_bytes

NEG = tl.constexpr(float("-inf"))


@triton.jit
def _min_combine(a, b):
    return tl.minimum(a, b)


@triton.jit
def _max_combine(a, b):
    return tl.maximum(a, b)


@triton.jit
def _add_combine(a, b):
    return a + b


@device
def _lse3(a, b, c):
    """log(exp(a) + exp(b) + exp(c)), -inf when all are -inf."""
    m = tl.maximum(tl.maximum(a, b), c)
    empty = m == float("-inf")
    safe = tl.where(empty, 0.0, m)
    total = tl.where(empty, 1.0, tl.exp(a - safe) + tl.exp(b - safe) + tl.exp(c - safe))
    return tl.where(empty, float("-inf"), safe + tl.log(total))


@device
def _ext(label, b, s, n_states, max_len, blank):
    """The blank-extended label of states ``s`` (blank outside the row)."""
    odd = (s % 2 == 1) & (s < n_states) & (s >= 0)
    v = tl.load(label + b * max_len + (s - 1) // 2, mask=odd, other=0.0).to(tl.int32)
    return tl.where(odd, v, blank)


@kernel
def _ctc_lengths_kernel(label, label_len, data_len, lens, T, L, pad, HAS_LLEN: tl.constexpr,
                        HAS_DLEN: tl.constexpr, BLOCK_L: tl.constexpr):
    """lens[b] = (data length, label length): given, or T and the first padding index."""
    b = tl.program_id(0)
    if HAS_LLEN:
        n_lab = tl.load(label_len + b).to(tl.int32)
    else:
        j = tl.arange(0, BLOCK_L)
        row = tl.load(label + b * L + j, mask=j < L, other=0.0).to(tl.int32)
        n_lab = tl.reduce(tl.where((row == pad) & (j < L), j, L), 0, _min_combine)
    if HAS_DLEN:
        n_t = tl.load(data_len + b).to(tl.int32)
    else:
        n_t = T
    tl.store(lens + 2 * b, tl.minimum(tl.maximum(n_t, 1), T))
    tl.store(lens + 2 * b + 1, tl.minimum(tl.maximum(n_lab, 0), L))


@kernel
def _ctc_alpha_beta_kernel(lp, label, lens, alpha, beta, loss, N, C, L, S, blank,
                           BLOCK_S: tl.constexpr):
    """One program per item: the alpha and beta recursions over its time steps."""
    b = tl.program_id(0)
    n_t = tl.load(lens + 2 * b)
    n_s = 2 * tl.load(lens + 2 * b + 1) + 1
    s = tl.arange(0, BLOCK_S)
    live = s < n_s
    lab = _ext(label, b, s, n_s, L, blank)
    skip = (s >= 2) & (lab != blank) & (lab != _ext(label, b, s - 2, n_s, L, blank))
    row = N * S
    emit = tl.load(lp + b * C + lab, mask=live, other=NEG)
    tl.store(alpha + b * S + s, tl.where(live & (s < 2), emit, NEG), mask=s < S)
    for t in range(1, n_t):
        tl.debug_barrier()
        prev = alpha + (t - 1) * row + b * S
        a0 = tl.load(prev + s, mask=live, other=NEG)
        a1 = tl.load(prev + s - 1, mask=live & (s >= 1), other=NEG)
        a2 = tl.load(prev + s - 2, mask=live & skip, other=NEG)
        emit = tl.load(lp + (t * N + b) * C + lab, mask=live, other=NEG)
        tl.store(alpha + t * row + b * S + s, tl.where(live, _lse3(a0, a1, a2) + emit, NEG),
                 mask=s < S)
    last = (n_t - 1) * row + b * S
    end = live & (s >= n_s - 2)
    tl.store(beta + last + s, tl.where(end, 0.0, NEG), mask=s < S)
    tl.debug_barrier()
    fin = tl.load(alpha + last + s, mask=end, other=NEG)
    top = tl.reduce(fin, 0, _max_combine)
    safe = tl.where(top == float("-inf"), 0.0, top)
    total = tl.reduce(tl.exp(fin - safe), 0, _add_combine)
    total = tl.where(top == float("-inf"), top, safe + tl.log(tl.maximum(total, 1.0)))
    tl.store(loss + b, -total)
    lab1 = _ext(label, b, s + 1, n_s, L, blank)
    lab2 = _ext(label, b, s + 2, n_s, L, blank)
    skip2 = (s + 2 < n_s) & (lab2 != blank) & (lab2 != lab)
    for i in range(0, n_t - 1):
        t = n_t - 2 - i
        tl.debug_barrier()
        nxt = beta + (t + 1) * row + b * S
        e = lp + ((t + 1) * N + b) * C
        b0 = tl.load(nxt + s, mask=live, other=NEG) + tl.load(e + lab, mask=live, other=NEG)
        m1 = s + 1 < n_s
        b1 = tl.load(nxt + s + 1, mask=m1, other=NEG) + tl.load(e + lab1, mask=m1, other=NEG)
        b2 = tl.load(nxt + s + 2, mask=skip2, other=NEG) + tl.load(e + lab2, mask=skip2,
                                                                     other=NEG)
        tl.store(beta + t * row + b * S + s, tl.where(live, _lse3(b0, b1, b2), NEG),
                 mask=s < S)


@kernel
def _ctc_grad_kernel(lp, label, lens, alpha, beta, loss, grad, N, C, L, S, blank,
                     BLOCK_S: tl.constexpr, BLOCK_C: tl.constexpr):
    """One program per (t, item): softmax minus the summed state posteriors of each class."""
    t = tl.program_id(0)
    b = tl.program_id(1)
    n_t = tl.load(lens + 2 * b)
    n_s = 2 * tl.load(lens + 2 * b + 1) + 1
    s = tl.arange(0, BLOCK_S)
    live = (s < n_s) & (s * 0 + t < n_t)
    lab = _ext(label, b, s, n_s, L, blank)
    at = (t * N + b) * S
    nll = tl.load(loss + b)
    post = tl.load(alpha + at + s, mask=live, other=NEG) + tl.load(beta + at + s, mask=live,
                                                                   other=NEG) + nll
    finite = (s.to(tl.float32) * 0.0 + nll) < float("inf")  # an impossible alignment: 0
    gamma = tl.where(live & finite, tl.exp(post), 0.0)
    for c0 in range(0, C, BLOCK_C):
        c = c0 + tl.arange(0, BLOCK_C)
        hit = lab[None, :] == c[:, None]
        occ = tl.reduce(tl.where(hit, gamma[None, :], 0.0), 1, _add_combine)
        prob = tl.exp(tl.load(lp + (t * N + b) * C + c, mask=c < C, other=NEG))
        g = tl.where(c * 0 + t < n_t, prob - occ, 0.0)
        tl.store(grad + (t * N + b) * C + c, g.to(grad.dtype.element_ty), mask=c < C)


def ctc_loss(x: torch.Tensor, label: torch.Tensor, data_len: torch.Tensor | None = None,
             label_len: torch.Tensor | None = None, blank_last: bool = False, out=None):
    """Check, allocate, launch: (loss (N,), grad like ``x``) of CTC over scores (T, N, C)."""
    steps, batch, classes = x.shape
    max_len = label.shape[1]
    blank = classes - 1 if blank_last else 0
    lp = softmax_fwd(x.contiguous(), axis=-1, log=True, dtype=torch.float32)
    loss, grad = out if out is not None else (
        torch.empty(batch, dtype=x.dtype, device=x.device), torch.empty_like(x))
    label = label.contiguous()
    lens = torch.empty((batch, 2), dtype=torch.int32, device=x.device)
    _ctc_lengths_kernel[(batch,)](
        label, label if label_len is None else label_len.contiguous(),
        label if data_len is None else data_len.contiguous(), lens, steps, max_len,
        -1 if blank_last else 0, HAS_LLEN=label_len is not None, HAS_DLEN=data_len is not None,
        BLOCK_L=block_for(max_len, cap=1 << 20, floor=2))
    states = 2 * max_len + 1
    alpha = torch.empty((steps, batch, states), dtype=torch.float32, device=x.device)
    beta = torch.empty_like(alpha)
    nll = torch.empty(batch, dtype=torch.float32, device=x.device)
    block_s = block_for(states, cap=1 << 20, floor=2)
    _ctc_alpha_beta_kernel[(batch,)](lp, label, lens, alpha, beta, nll, batch, classes, max_len,
                                     states, blank, BLOCK_S=block_s)
    block_c = max(2, min(block_for(classes, cap=256, floor=2), 8192 // block_s))
    _ctc_grad_kernel[(steps, batch)](lp, label, lens, alpha, beta, nll, grad, batch, classes,
                                     max_len, states, blank, BLOCK_S=block_s, BLOCK_C=block_c)
    loss.copy_(nll)
    return loss, grad


def ctc_loss_ref(x, label, data_len=None, label_len=None, blank_last=False):
    """Reference: torch's CTC loss on log_softmax(x) and its autograd gradient."""
    steps, batch, classes = x.shape
    blank, pad = (classes - 1, -1) if blank_last else (0, 0)
    lab = label.to(torch.int64)
    if label_len is None:
        is_pad = torch.cat([lab == pad, torch.ones_like(lab[:, :1], dtype=torch.bool)], 1)
        lengths = is_pad.to(torch.int8).argmax(dim=1)
    else:
        lengths = label_len.to(torch.int64)
    lengths = lengths.clamp(0, lab.shape[1])
    t_len = torch.full((batch,), steps, dtype=torch.int64) if data_len is None else \
        data_len.to(torch.int64).clamp(1, steps).cpu()
    inside = torch.arange(steps)[:, None, None] < t_len[None, :, None]
    xd = torch.where(inside.to(x.device), x.detach().to(torch.float64), 0.0)
    xd.requires_grad_(True)  # steps past a length (NaN in MXNet's test) get no gradient
    with torch.enable_grad():
        lp = torch.log_softmax(xd, dim=-1)
        targets = lab.clamp(min=0) if lab.shape[1] else torch.zeros((batch, 1), dtype=torch.int64)
        loss = torch.nn.functional.ctc_loss(lp, targets, t_len, lengths.cpu(), blank=blank,
                                            reduction="none", zero_infinity=False)
        grad, = torch.autograd.grad(loss.sum(), xd)
    return loss.detach().to(x.dtype), grad.to(x.dtype)


def _make(dtype, device, shape):
    steps, batch, classes, max_len = shape
    gen = torch.Generator().manual_seed(0)
    x = torch.randn((steps, batch, classes), generator=gen).to(dtype=dtype, device=device)
    label = torch.randint(1, classes, (batch, max_len), generator=gen).to(torch.float32)
    lengths = torch.randint(1, max_len + 1, (batch,), generator=gen)
    label[torch.arange(max_len)[None, :] >= lengths[:, None]] = 0
    data_len = torch.randint(max(2 * max_len, 1), steps + 1, (batch,), generator=gen)
    return (x, label.to(device), data_len.to(torch.float32).to(device)), {}


KERNELS = [
    KernelSpec(name="ctc_loss", fn=ctc_loss, ref=ctc_loss_ref, make=_make,
               shapes=((9, 3, 5, 3), (6, 2, 4, 2), (12, 2, 7, 4)),
               bench_shapes=((100, 32, 64, 20),),
               tol={torch.float32: (1e-4, 1e-4)},
               bytes=lambda x, *a: 4 * tensor_bytes(x), family="ctc"),
]
