"""Recurrent layers (MXNet/cuDNN semantics): one direction of one layer of an LSTM, GRU or
vanilla RNN, given the input projection of every step.

``xw = x @ W_i2h^T + b_i2h`` (T, N, G*H) is computed beforehand by one big GEMM; what is left
is the recurrence over T steps with ``hw = h @ W_hh^T + b_hh`` (G*H per row), gates in
cuDNN's order::

    lstm      [i, f, g, o]  i, f, o = sigmoid(xw + hw), g = tanh(xw_g + hw_g)
                            c' = f * c + i * g            h' = o * tanh(c')
    gru       [r, z, n]     r, z = sigmoid(xw + hw),  n = tanh(xw_n + r * hw_n)
                            h' = (1 - z) * n + z * h
    rnn_tanh  h' = tanh(xw + hw)          rnn_relu  h' = relu(xw + hw)

``reverse`` walks time backwards (the second direction of a bidirectional layer); ``y[t]`` is
still the state after input step ``t``. Backward, walking the steps the other way, with
``dh`` the state gradient (``dy[t]`` plus what the later step sends back)::

    lstm      dc = dc' + dh * o * (1 - tanh(c')^2)
              d(pre) = [dc * g * i(1-i), dc * c * f(1-f), dc * i * (1-g^2),
                        dh * tanh(c') * o(1-o)]                 dc_prev = dc * f
    gru       dn = dh * (1 - z) * (1 - n^2)      dz = dh * (h - n) * z(1-z)
              dr = dn * hw_n * r(1-r)            d(hw_n) = dn * r   (the hidden part differs)
    rnn       d(pre) = dh * act'(h')
    all       dxw[t] = d(pre);  dh_prev = d(hw) @ W_hh (+ dh * z for gru)
              dW_hh = sum_t d(hw)[t]^T @ h_prev[t],  db_hh = sum_{t, n} d(hw)[t]

Kernels. Forward, one launch per step: each program owns a tile of batch rows x hidden
columns and computes that tile's G gate pre-activations ``h @ W_hh^T`` (a G-accumulator
GEMM over H with fp32 accumulation), then applies the gate math in the epilogue and writes
``h'``, ``c'`` and the activations the backward needs (the recurrent GEMM and the pointwise
step fused). The same kernel also runs the whole sequence in one persistent launch
(``persistent``, on CUDA; ``config.rnn_persistent`` at the op): after each step every
program arrives at a grid-wide counter (release) and waits for all (acquire), and the
weights stay in L2 across steps.
Backward, one launch per step (or, persistent, one for all but the first and dh0's):
the tile's ``dh`` = ``dy[t]`` + the previous
(later-in-time) step's ``d(hw) @ W_hh`` computed in the same program (GEMM over G*H), then the
gate-gradient math; one more launch gives ``dh0``. ``dW_hh`` is one GEMM over all T*N rows
(``symgraph.kernels.gemm.matmul``) and ``db_hh`` one column reduction (``symgraph.kernels.reduce``).

Storage dtypes fp32/fp16/bf16 (and fp64): states and activations are stored in the input
dtype between steps, arithmetic is fp32 (fp64 for fp64). The references do the same
rounding per step so they agree to the dtype's precision.

Bytes moved per forward step: xw[t] and the (G*H, H) weight read, h, c, activations written;
2*N*G*H*H FLOPs per step. The backward does two such GEMMs per step (dh_prev and dW_hh).
"""
from __future__ import annotations

import torch
import triton.language as tl

from .gemm import matmul
from .reduce import SUM, reduce
from .runtime import block_for, cdiv, kernel, on_cpu
from .table import KernelSpec

MODES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
_MODE_ID = {"lstm": 0, "gru": 1, "rnn_tanh": 2, "rnn_relu": 3}


def _check(mode: str, xw: torch.Tensor, h0: torch.Tensor, c0, w_hh: torch.Tensor,
           b_hh: torch.Tensor) -> tuple[int, int, int, int]:
    """(G, T, N, H) after checking every operand's shape and dtype."""
    if mode not in MODES:
        raise ValueError(f"rnn mode must be one of {sorted(MODES)}, got {mode!r}")
    g = MODES[mode]
    if h0.dim() != 2:
        raise ValueError(f"rnn {mode}: h0 must be (N, H), got {tuple(h0.shape)}")
    n, h = h0.shape
    want = {"xw": (xw, (xw.shape[0] if xw.dim() == 3 else -1, n, g * h)), "h0": (h0, (n, h)),
            "w_hh": (w_hh, (g * h, h)), "b_hh": (b_hh, (g * h,))}
    if mode == "lstm":
        if c0 is None:
            raise ValueError("rnn lstm: c0 is required")
        want["c0"] = (c0, (n, h))
    elif c0 is not None:
        raise ValueError(f"rnn {mode}: c0 must be None, got {tuple(c0.shape)}")
    for name, (t, shape) in want.items():
        if tuple(t.shape) != shape or t.dtype != xw.dtype:
            raise ValueError(f"rnn {mode}: {name} must be {xw.dtype} of shape {shape} "
                             f"(N={n}, H={h}, G={g}), got {t.dtype} {tuple(t.shape)}")
    return g, xw.shape[0], n, h


def _h_prev(hs: torch.Tensor, reverse: bool) -> torch.Tensor:
    """h_prev for every input step t, as a (T, N, H) view of the state buffer."""
    return hs[1:] if reverse else hs[:-1]


def _outputs(mode: str, hs: torch.Tensor, cs, reverse: bool) -> tuple:
    """y, hT, cT as views of the saved state buffers."""
    steps = hs.shape[0] - 1
    y = hs[:steps] if reverse else hs[1:]
    if steps == 0:  # hT = h0 (cT = c0 is the caller's)
        return y, hs[0], None
    last = 0 if reverse else steps - 1
    return y, y[last], (cs[last] if mode == "lstm" else None)


# ---------------------------------------------------------------- torch references

def _acc(t: torch.Tensor) -> torch.dtype:
    return torch.float64 if t.dtype == torch.float64 else torch.float32


def _step_ref(mode: str, xw_t, h, c, w_hh, b_hh):
    """One step in fp32: (h', c' or None, activations (N, G*H), hw_n or None)."""
    acc = _acc(xw_t)
    hw = h.to(acc) @ w_hh.to(acc).t() + b_hh.to(acc)
    x = xw_t.to(acc)
    if mode == "lstm":
        i, f, g, o = (x + hw).chunk(4, dim=1)
        i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
        c_new = f * c.to(acc) + i * g
        return o * torch.tanh(c_new), c_new, torch.cat([i, f, g, o], 1), None
    if mode == "gru":
        xr, xz, xn = x.chunk(3, dim=1)
        hr, hz, hn = hw.chunk(3, dim=1)
        r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
        n = torch.tanh(xn + r * hn)
        return (1 - z) * n + z * h.to(acc), None, torch.cat([r, z, n], 1), hn
    pre = x + hw
    return (torch.tanh(pre) if mode == "rnn_tanh" else torch.relu(pre)), None, None, None


def rnn_layer_fwd_ref(mode: str, xw: torch.Tensor, h0: torch.Tensor, c0, w_hh: torch.Tensor,
                      b_hh: torch.Tensor, reverse: bool = False):
    """Reference: per-step torch math, states rounded to the input dtype after every step.

    Returns ``(y, hT, cT, saved)`` like :func:`rnn_layer_fwd` (the same ``saved`` layout:
    lstm ``(hs, gates, cs)``, gru ``(hs, gates, hw_n)``, rnn ``(hs,)``, with ``hs`` the
    (T+1, N, H) states in time order and h0 first (last when ``reverse``)).
    """
    _, steps, _, _ = _check(mode, xw, h0, c0, w_hh, b_hh)
    dt = xw.dtype
    hs, cs, gates, hns = [None] * steps, [None] * steps, [None] * steps, [None] * steps
    h, c = h0, c0
    for t in (reversed(range(steps)) if reverse else range(steps)):
        h, c_new, a, hn = _step_ref(mode, xw[t], h, c, w_hh, b_hh)
        h = hs[t] = h.to(dt)
        if c_new is not None:
            c = cs[t] = c_new.to(dt)
        gates[t] = None if a is None else a.to(dt)
        hns[t] = None if hn is None else hn.to(dt)
    hs = torch.stack(hs + [h0] if reverse else [h0] + hs)
    if mode == "lstm":
        cs_t = torch.stack(cs) if steps else c0.new_empty((0,) + tuple(c0.shape))
        saved = (hs, _stack(gates, xw), cs_t)
    elif mode == "gru":
        saved = (hs, _stack(gates, xw), _stack(hns, h0))
    else:
        saved = (hs,)
    y, h_t, c_t = _outputs(mode, hs, saved[2] if mode == "lstm" else None, reverse)
    if mode == "lstm" and steps == 0:
        c_t = c0
    return y, h_t, c_t, saved


def _stack(ts: list, like: torch.Tensor) -> torch.Tensor:
    return torch.stack(ts) if ts else like.new_empty((0,) + tuple(like.shape[-2:]))


def rnn_layer_bwd_ref(mode: str, dy: torch.Tensor, dh_t, dc_t, xw: torch.Tensor,
                      h0: torch.Tensor, c0, w_hh: torch.Tensor, b_hh: torch.Tensor,
                      y: torch.Tensor, saved: tuple, reverse: bool = False):
    """Reference: torch autograd through :func:`rnn_layer_fwd_ref` (``y``, ``saved`` unused).

    Returns ``(dxw, dh0, dc0, dw_hh, db_hh)``; ``dc0`` is None unless lstm.
    """
    _check(mode, xw, h0, c0, w_hh, b_hh)
    leaves = [t.detach().requires_grad_(True) for t in (xw, h0, w_hh, b_hh)]
    c_leaf = c0.detach().requires_grad_(True) if mode == "lstm" else None
    with torch.enable_grad():
        y2, h_t, c_t, _ = rnn_layer_fwd_ref(mode, leaves[0], leaves[1], c_leaf, leaves[2],
                                            leaves[3], reverse)
        outs, grads = [y2], [dy]
        if dh_t is not None:
            outs.append(h_t)
            grads.append(dh_t)
        if dc_t is not None and mode == "lstm":
            outs.append(c_t)
            grads.append(dc_t)
        inputs = leaves + ([c_leaf] if c_leaf is not None else [])
        got = torch.autograd.grad(outs, inputs, grads, allow_unused=True)
    got = [torch.zeros_like(t) if g is None else g for g, t in zip(got, inputs)]
    dxw, dh0, dw, db = got[:4]
    return dxw, dh0, (got[4] if mode == "lstm" else None), dw, db


# ---------------------------------------------------------------- Triton kernels
# Nested @jit helpers do not run under the interpreter, so the per-gate GEMM tiles and the
# sigmoid/tanh formulas are written out inline (tanh(x) = 2 / (1 + exp(-2x)) - 1).

@kernel
def _fwd_kernel(xw_ptr, hs_ptr, cs_ptr, w_ptr, b_ptr, gates_ptr, hn_ptr, sync_ptr,
                N, H, T, step0, nsteps, MODE: tl.constexpr, REVERSE: tl.constexpr,
                PERSISTENT: tl.constexpr, ACC: tl.constexpr, PREC: tl.constexpr,
                UPCAST: tl.constexpr, W_RESIDENT: tl.constexpr, BLOCK_N: tl.constexpr,
                BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr):
    """Steps ``step0 .. step0 + nsteps`` (in processing order; REVERSE walks time back) on
    a BLOCK_N x BLOCK_H tile of h': the tile's G gate columns of ``h @ W_hh^T`` (one
    accumulator per gate), then the gate math (MODE: lstm, gru, tanh, relu).

    ``hs`` and ``cs`` hold T + 1 states (the initial one in the slot walked first). Launched
    per step (nsteps 1), or once for the whole sequence with PERSISTENT: every program then
    waits at a grid-wide barrier (an acquire/release counter at ``sync_ptr``) after each
    step, so the whole grid must be resident at once. W_RESIDENT (H within one BLOCK_K):
    the tile's recurrent weights are loaded once, before the steps, and stay in registers."""
    G: tl.constexpr = 4 if MODE == 0 else (3 if MODE == 1 else 1)
    rn = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    rh = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    mask = (rn[:, None] < N) & (rh[None, :] < H)
    off = rn[:, None] * H + rh[None, :]  # into (N, H) tensors
    goff = rn[:, None] * (G * H) + rh[None, :]  # into (N, G*H) tensors, gate 0
    w_ptrs0 = w_ptr + rh[None, :] * H  # W_hh^T tile of gate 0, rows k added per block
    if W_RESIDENT:
        rk_w = tl.arange(0, BLOCK_K)
        w_keep = (rk_w[:, None] < H) & (rh[None, :] < H)
        wr0 = tl.load(w_ptrs0 + rk_w[:, None], mask=w_keep, other=0.0)
        if G > 1:
            wr1 = tl.load(w_ptrs0 + rk_w[:, None] + H * H, mask=w_keep, other=0.0)
            wr2 = tl.load(w_ptrs0 + rk_w[:, None] + 2 * H * H, mask=w_keep, other=0.0)
        if G > 3:
            wr3 = tl.load(w_ptrs0 + rk_w[:, None] + 3 * H * H, mask=w_keep, other=0.0)
    dt = hs_ptr.dtype.element_ty
    state = tl.program_id(0).to(tl.int64) * 0 + N * H  # elements of one step's state (int64)
    for s in range(step0, step0 + nsteps):
        if REVERSE:
            t = T - 1 - s
            prev = t + 1
            cur = t
        else:
            t = s
            prev = t
            cur = t + 1
        h_prev = hs_ptr + prev * state
        acc0 = tl.full((BLOCK_N, BLOCK_H), 0.0, ACC)
        acc1 = tl.full((BLOCK_N, BLOCK_H), 0.0, ACC)
        acc2 = tl.full((BLOCK_N, BLOCK_H), 0.0, ACC)
        acc3 = tl.full((BLOCK_N, BLOCK_H), 0.0, ACC)
        for k0 in range(0, H, BLOCK_K):
            rk = k0 + tl.arange(0, BLOCK_K)
            a = tl.load(h_prev + rn[:, None] * H + rk[None, :],
                        mask=(rn[:, None] < N) & (rk[None, :] < H), other=0.0)
            w_ptrs = w_ptrs0 + rk[:, None]
            w_mask = (rk[:, None] < H) & (rh[None, :] < H)
            if UPCAST:  # the interpreter's dot mistreats bf16 operands
                a = a.to(tl.float32)
            if W_RESIDENT:
                w = wr0
            else:
                w = tl.load(w_ptrs, mask=w_mask, other=0.0)
            if PREC == "sum":  # fp64: products summed over K (no fp64 tl.dot everywhere)
                acc0 += tl.reduce(a[:, :, None] * w.to(a.dtype)[None, :, :], 1, SUM)
            else:
                acc0 = tl.dot(a, w.to(a.dtype), acc0, input_precision=PREC)
            if G > 1:
                if W_RESIDENT:
                    w = wr1
                else:
                    w = tl.load(w_ptrs + H * H, mask=w_mask, other=0.0)
                if PREC == "sum":
                    acc1 += tl.reduce(a[:, :, None] * w.to(a.dtype)[None, :, :], 1, SUM)
                else:
                    acc1 = tl.dot(a, w.to(a.dtype), acc1, input_precision=PREC)
                if W_RESIDENT:
                    w = wr2
                else:
                    w = tl.load(w_ptrs + 2 * H * H, mask=w_mask, other=0.0)
                if PREC == "sum":
                    acc2 += tl.reduce(a[:, :, None] * w.to(a.dtype)[None, :, :], 1, SUM)
                else:
                    acc2 = tl.dot(a, w.to(a.dtype), acc2, input_precision=PREC)
            if G > 3:
                if W_RESIDENT:
                    w = wr3
                else:
                    w = tl.load(w_ptrs + 3 * H * H, mask=w_mask, other=0.0)
                if PREC == "sum":
                    acc3 += tl.reduce(a[:, :, None] * w.to(a.dtype)[None, :, :], 1, SUM)
                else:
                    acc3 = tl.dot(a, w.to(a.dtype), acc3, input_precision=PREC)
        xw_t = xw_ptr + t * (G * state)
        gates_t = gates_ptr + t * (G * state)
        p0 = acc0 + tl.load(xw_t + goff, mask=mask, other=0.0).to(ACC) \
            + tl.load(b_ptr + rh, mask=rh < H, other=0.0).to(ACC)[None, :]
        if MODE == 0:
            p1 = acc1 + tl.load(xw_t + goff + H, mask=mask, other=0.0).to(ACC) \
                + tl.load(b_ptr + H + rh, mask=rh < H, other=0.0).to(ACC)[None, :]
            p2 = acc2 + tl.load(xw_t + goff + 2 * H, mask=mask, other=0.0).to(ACC) \
                + tl.load(b_ptr + 2 * H + rh, mask=rh < H, other=0.0).to(ACC)[None, :]
            p3 = acc3 + tl.load(xw_t + goff + 3 * H, mask=mask, other=0.0).to(ACC) \
                + tl.load(b_ptr + 3 * H + rh, mask=rh < H, other=0.0).to(ACC)[None, :]
            i = 1.0 / (1.0 + tl.exp(-p0))
            f = 1.0 / (1.0 + tl.exp(-p1))
            g = 2.0 / (1.0 + tl.exp(-2.0 * p2)) - 1.0
            o = 1.0 / (1.0 + tl.exp(-p3))
            c = f * tl.load(cs_ptr + prev * state + off, mask=mask, other=0.0).to(ACC) + i * g
            h = o * (2.0 / (1.0 + tl.exp(-2.0 * c)) - 1.0)
            tl.store(cs_ptr + cur * state + off, c.to(dt), mask=mask)
            tl.store(gates_t + goff, i.to(dt), mask=mask)
            tl.store(gates_t + goff + H, f.to(dt), mask=mask)
            tl.store(gates_t + goff + 2 * H, g.to(dt), mask=mask)
            tl.store(gates_t + goff + 3 * H, o.to(dt), mask=mask)
        elif MODE == 1:
            p1 = acc1 + tl.load(xw_t + goff + H, mask=mask, other=0.0).to(ACC) \
                + tl.load(b_ptr + H + rh, mask=rh < H, other=0.0).to(ACC)[None, :]
            hn = acc2 + tl.load(b_ptr + 2 * H + rh, mask=rh < H, other=0.0).to(ACC)[None, :]
            r = 1.0 / (1.0 + tl.exp(-p0))
            z = 1.0 / (1.0 + tl.exp(-p1))
            n = tl.load(xw_t + goff + 2 * H, mask=mask, other=0.0).to(ACC) + r * hn
            n = 2.0 / (1.0 + tl.exp(-2.0 * n)) - 1.0
            h = (1.0 - z) * n + z * tl.load(h_prev + off, mask=mask, other=0.0).to(ACC)
            tl.store(hn_ptr + t * state + off, hn.to(dt), mask=mask)
            tl.store(gates_t + goff, r.to(dt), mask=mask)
            tl.store(gates_t + goff + H, z.to(dt), mask=mask)
            tl.store(gates_t + goff + 2 * H, n.to(dt), mask=mask)
        elif MODE == 2:
            h = 2.0 / (1.0 + tl.exp(-2.0 * p0)) - 1.0
        else:
            h = tl.maximum(p0, 0.0)
        tl.store(hs_ptr + cur * state + off, h.to(dt), mask=mask)
        if PERSISTENT:  # every tile of h' written before any program reads it
            tl.debug_barrier()
            target = (s - step0 + 1) * tl.num_programs(0) * tl.num_programs(1)
            seen = tl.atomic_add(sync_ptr, 1, sem="release", scope="gpu") + 1
            while seen < target:
                seen = tl.atomic_add(sync_ptr, 0, sem="acquire", scope="gpu")
            tl.debug_barrier()


@kernel
def _bwd_kernel(dy_ptr, dxw_ptr, dhn_ptr, w_ptr, carry_in, carry_out, dc_in, dc_out,
                gates_ptr, s_ptr, hn_ptr, hs_ptr, sync_ptr, dh0_ptr, N, H, KA, T, k_hi, k_lo,
                MODE: tl.constexpr, REVERSE: tl.constexpr, HAS_NEXT: tl.constexpr,
                HAS_CARRY: tl.constexpr, HAS_DC: tl.constexpr, FINAL: tl.constexpr,
                PERSISTENT: tl.constexpr, ACC: tl.constexpr, PREC: tl.constexpr,
                UPCAST: tl.constexpr, W_RESIDENT: tl.constexpr, BLOCK_N: tl.constexpr,
                BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr):
    """Backward steps ``k_hi`` down to ``k_lo`` (k: the step's place in the forward's
    processing order) on a BLOCK_N x BLOCK_H tile of dh: ``dh = dy + carry + d(hw)_next @
    W_hh`` (the later step's gate gradients in ``dxw``, K = G*H; gru's n part in ``dhn``),
    then the gate gradients into ``dxw[t]``. ``s_ptr``: lstm's cells (T, N, H), others' ``hs``
    (T + 1 states); ``hs_ptr``: the states, for gru's h_prev. The carries (gru's dh * z,
    lstm's dc) are tile-local. FINAL: ``dh`` after step 0 (= dh0) only, to ``dh0_ptr``.
    PERSISTENT: one launch for all the steps, a grid-wide barrier after each (the next step
    reads every tile's d(hw)). W_RESIDENT (KA within one BLOCK_K): the weight tile is
    loaded once, before the steps."""
    G: tl.constexpr = 4 if MODE == 0 else (3 if MODE == 1 else 1)
    rn = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    rh = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    if W_RESIDENT:
        rk_w = tl.arange(0, BLOCK_K)
        wr = tl.load(w_ptr + rk_w[:, None] * H + rh[None, :],
                     mask=(rk_w[:, None] < KA) & (rh[None, :] < H), other=0.0)
        if MODE == 1:
            wr_n = tl.load(w_ptr + (2 * H + rk_w[:, None]) * H + rh[None, :],
                           mask=(rk_w[:, None] < H) & (rh[None, :] < H), other=0.0)
    mask = (rn[:, None] < N) & (rh[None, :] < H)
    off = rn[:, None] * H + rh[None, :]
    goff = rn[:, None] * (G * H) + rh[None, :]
    dt = dxw_ptr.dtype.element_ty
    state = tl.program_id(0).to(tl.int64) * 0 + N * H  # elements of one step's state (int64)
    for j in range(0, k_hi - k_lo + 1):
        k = k_hi - j
        if REVERSE:  # t: the input step; prev/cur: slots of h_prev/h_t in hs
            t = T - 1 - k
            prev = t + 1
            cur = t
            nxt = t - 1  # the step processed after this one in the forward
            t_before = t + 1  # the one processed before it (lstm's c_prev)
        else:
            t = k
            prev = t
            cur = t + 1
            nxt = t + 1
            t_before = t - 1
        if FINAL:
            nxt = t  # dh0: the gradients of step 0 (k_hi = k_lo = 0)
        dh = tl.full((BLOCK_N, BLOCK_H), 0.0, ACC)
        if HAS_NEXT:
            dnext = dxw_ptr + nxt * (G * state)
            for k0 in range(0, KA, BLOCK_K):  # KA = G*H (2*H for gru: r, z parts)
                rk = k0 + tl.arange(0, BLOCK_K)
                a = tl.load(dnext + rn[:, None] * (G * H) + rk[None, :],
                            mask=(rn[:, None] < N) & (rk[None, :] < KA), other=0.0)
                if W_RESIDENT:
                    w = wr
                else:
                    w = tl.load(w_ptr + rk[:, None] * H + rh[None, :],
                                mask=(rk[:, None] < KA) & (rh[None, :] < H), other=0.0)
                if UPCAST:
                    a = a.to(tl.float32)
                if PREC == "sum":  # fp64: products summed over K (no fp64 tl.dot everywhere)
                    dh += tl.reduce(a[:, :, None] * w.to(a.dtype)[None, :, :], 1, SUM)
                else:
                    dh = tl.dot(a, w.to(a.dtype), dh, input_precision=PREC)
            if MODE == 1:
                dnext_n = dhn_ptr + nxt * state
                for k0 in range(0, H, BLOCK_K):  # the n part: d(hw_n) @ W_hn
                    rk = k0 + tl.arange(0, BLOCK_K)
                    a = tl.load(dnext_n + rn[:, None] * H + rk[None, :],
                                mask=(rn[:, None] < N) & (rk[None, :] < H), other=0.0)
                    if W_RESIDENT:
                        w = wr_n
                    else:
                        w = tl.load(w_ptr + (2 * H + rk[:, None]) * H + rh[None, :],
                                    mask=(rk[:, None] < H) & (rh[None, :] < H), other=0.0)
                    if UPCAST:
                        a = a.to(tl.float32)
                    if PREC == "sum":
                        dh += tl.reduce(a[:, :, None] * w.to(a.dtype)[None, :, :], 1, SUM)
                    else:
                        dh = tl.dot(a, w.to(a.dtype), dh, input_precision=PREC)
        if HAS_CARRY:
            dh += tl.load(carry_in + off, mask=mask, other=0.0).to(ACC)
        if FINAL:
            tl.store(dh0_ptr + off, dh.to(dt), mask=mask)
        else:
            dh += tl.load(dy_ptr + t * state + off, mask=mask, other=0.0).to(ACC)
            gates_t = gates_ptr + t * (G * state)
            dxw_t = dxw_ptr + t * (G * state)
            if MODE == 0:
                i = tl.load(gates_t + goff, mask=mask, other=0.0).to(ACC)
                f = tl.load(gates_t + goff + H, mask=mask, other=0.0).to(ACC)
                g = tl.load(gates_t + goff + 2 * H, mask=mask, other=0.0).to(ACC)
                o = tl.load(gates_t + goff + 3 * H, mask=mask, other=0.0).to(ACC)
                tc = 2.0 / (1.0 + tl.exp(-2.0 * tl.load(s_ptr + t * state + off, mask=mask,
                                                         other=0.0).to(ACC))) - 1.0
                dc = dh * o * (1.0 - tc * tc)
                if HAS_DC:
                    dc += tl.load(dc_in + off, mask=mask, other=0.0).to(ACC)
                if k == 0:  # c_prev of the first step processed: c0 (in hs_ptr here)
                    c_prev = tl.load(hs_ptr + off, mask=mask, other=0.0).to(ACC)
                else:
                    c_prev = tl.load(s_ptr + t_before * state + off, mask=mask,
                                     other=0.0).to(ACC)
                tl.store(dxw_t + goff, (dc * g * i * (1.0 - i)).to(dt), mask=mask)
                tl.store(dxw_t + goff + H, (dc * c_prev * f * (1.0 - f)).to(dt), mask=mask)
                tl.store(dxw_t + goff + 2 * H, (dc * i * (1.0 - g * g)).to(dt), mask=mask)
                tl.store(dxw_t + goff + 3 * H, (dh * tc * o * (1.0 - o)).to(dt), mask=mask)
                tl.store(dc_out + off, (dc * f).to(dt), mask=mask)
            elif MODE == 1:
                r = tl.load(gates_t + goff, mask=mask, other=0.0).to(ACC)
                z = tl.load(gates_t + goff + H, mask=mask, other=0.0).to(ACC)
                n = tl.load(gates_t + goff + 2 * H, mask=mask, other=0.0).to(ACC)
                h_prev = tl.load(hs_ptr + prev * state + off, mask=mask, other=0.0).to(ACC)
                hn = tl.load(hn_ptr + t * state + off, mask=mask, other=0.0).to(ACC)
                dn = dh * (1.0 - z) * (1.0 - n * n)
                tl.store(dxw_t + goff, (dn * hn * r * (1.0 - r)).to(dt), mask=mask)
                tl.store(dxw_t + goff + H, (dh * (h_prev - n) * z * (1.0 - z)).to(dt),
                         mask=mask)
                tl.store(dxw_t + goff + 2 * H, dn.to(dt), mask=mask)
                tl.store(dhn_ptr + t * state + off, (dn * r).to(dt), mask=mask)
                tl.store(carry_out + off, (dh * z).to(dt), mask=mask)
            else:
                h = tl.load(s_ptr + cur * state + off, mask=mask, other=0.0).to(ACC)
                if MODE == 2:
                    dpre = dh * (1.0 - h * h)
                else:
                    dpre = tl.where(h > 0.0, dh, 0.0)
                tl.store(dxw_t + goff, dpre.to(dt), mask=mask)
        if PERSISTENT:  # every tile of d(hw)[t] written before the next step reads them
            tl.debug_barrier()
            target = (j + 1) * tl.num_programs(0) * tl.num_programs(1)
            seen = tl.atomic_add(sync_ptr, 1, sem="release", scope="gpu") + 1
            while seen < target:
                seen = tl.atomic_add(sync_ptr, 0, sem="acquire", scope="gpu")
            tl.debug_barrier()


# ---------------------------------------------------------------- launch wrappers

def _meta(x: torch.Tensor, n: int, h: int, cuda: bool | None = None) -> dict:
    """Tile sizes, dot precision and dtype flags for the step kernels (``cuda``: compiled
    launch; by default whether ``x`` is on CUDA).

    On CUDA the tiles shrink until a step has ~128 programs (one recurrent step is too small
    to fill the GPU otherwise); under the interpreter they are the smallest tl.dot allows.
    """
    cuda = not on_cpu(x) if cuda is None else cuda
    fp64 = x.dtype == torch.float64
    meta = {"ACC": tl.float64 if fp64 else tl.float32,
            # fp64 on CUDA: products summed over K (an fp64 tl.dot fails to compile there)
            "PREC": ("sum" if cuda else "ieee") if fp64 else
                    "ieee" if x.dtype == torch.float32 else "tf32",
            "UPCAST": x.dtype == torch.bfloat16 and not cuda, "W_RESIDENT": False}
    if not cuda:
        return {**meta, "BLOCK_N": 16, "BLOCK_H": 16, "BLOCK_K": 16}
    if fp64:  # tests only: small tiles keep the summed products in registers
        return {**meta, "BLOCK_N": 16, "BLOCK_H": 16, "BLOCK_K": 8, "num_warps": 4}
    bn, bh = block_for(n, cap=64, floor=16), 64
    while cdiv(n, bn) * cdiv(h, bh) < 128 and bh > 16:
        bh //= 2
    while cdiv(n, bn) * cdiv(h, bh) < 128 and bn > 16:
        bn //= 2
    return {**meta, "BLOCK_N": bn, "BLOCK_H": bh, "BLOCK_K": 32 if fp64 else 64,
            "num_warps": 4}


def rnn_layer_fwd(mode: str, xw: torch.Tensor, h0: torch.Tensor, c0, w_hh: torch.Tensor,
                  b_hh: torch.Tensor, reverse: bool = False, persistent: bool = False):
    """One direction of one recurrent layer: ``(y, hT, cT, saved)``.

    ``xw`` (T, N, G*H) is the input projection of every step, ``h0``/``c0`` (N, H) the
    initial states (``c0`` None unless lstm), ``w_hh`` (G*H, H), ``b_hh`` (G*H,). ``y`` is
    (T, N, H), ``cT`` None unless lstm; ``saved`` is what :func:`rnn_layer_bwd` needs
    (``y``, ``hT`` and ``cT`` are views into it). One fused GEMM+gate launch per step, or
    with ``persistent`` one launch for all of them where the grid fits (:func:`_fits`).
    """
    g, steps, n, h = _check(mode, xw, h0, c0, w_hh, b_hh)
    xw, w_hh, b_hh = xw.contiguous(), w_hh.contiguous(), b_hh.contiguous()
    first = steps if reverse else 0  # the slot of the initial state, walked first
    hs = xw.new_empty((steps + 1, n, h))
    hs[first].copy_(h0)
    gates = xw.new_empty((steps, n, g * h)) if mode in ("lstm", "gru") else None
    cs_all = cs = None
    if mode == "lstm":
        cs_all = xw.new_empty((steps + 1, n, h))
        cs_all[first].copy_(c0)
        cs = cs_all[:steps] if reverse else cs_all[1:]
    hn = xw.new_empty((steps, n, h)) if mode == "gru" else None
    meta = _meta(xw, n, h)
    grid = (cdiv(n, meta["BLOCK_N"]), cdiv(h, meta["BLOCK_H"]))
    if n * h and steps:
        args = (xw, hs, hs if cs_all is None else cs_all, w_hh, b_hh,
                hs if gates is None else gates, hs if hn is None else hn)
        flags = {"MODE": _MODE_ID[mode], "REVERSE": reverse, **meta}
        if persistent and _fits(xw, grid):
            sync = torch.zeros(1, dtype=torch.int32, device=xw.device)
            _fwd_kernel[grid](*args, sync, n, h, steps, 0, steps, PERSISTENT=True,
                              **{**flags, **resident(meta, h)})
        else:
            for s in range(steps):
                _fwd_kernel[grid](*args, hs, n, h, steps, s, 1, PERSISTENT=False, **flags)
    saved = (hs, gates, cs) if mode == "lstm" else ((hs, gates, hn) if mode == "gru" else (hs,))
    y, h_t, c_t = _outputs(mode, hs, cs, reverse)
    if mode == "lstm" and steps == 0:
        c_t = c0.clone()
    return y, h_t, c_t, saved


RESIDENT_MAX_K = 256  # widest recurrent contraction whose weight tile stays in registers


def resident(meta: dict, k: int) -> dict:
    """A persistent launch's tile flags: where the contraction (``k``: H forward, G*H
    backward) fits one block of at most RESIDENT_MAX_K, BLOCK_K covers it and the weight
    tile is loaded once for all the steps (W_RESIDENT)."""
    block = max(16, 1 << max(k - 1, 0).bit_length())
    if meta["PREC"] == "sum" or block > RESIDENT_MAX_K:
        return {}
    return {"BLOCK_K": block, "W_RESIDENT": True}


def _fits(x: torch.Tensor, grid: tuple) -> bool:
    """Whether a persistent launch can run: on CUDA, with every program of the grid on the
    GPU at once (the barrier needs them all resident; one per multiprocessor at most)."""
    if on_cpu(x):
        return False
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    return grid[0] * grid[1] <= sms


def rnn_layer_bwd(mode: str, dy: torch.Tensor, dh_t, dc_t, xw: torch.Tensor, h0: torch.Tensor,
                  c0, w_hh: torch.Tensor, b_hh: torch.Tensor, y: torch.Tensor, saved: tuple,
                  reverse: bool = False, persistent: bool = False):
    """Gradients ``(dxw, dh0, dc0, dw_hh, db_hh)`` of :func:`rnn_layer_fwd`'s outputs.

    ``dy`` (T, N, H); ``dh_t``/``dc_t`` (N, H) or None (zeros); ``dc0`` None unless lstm.
    One fused GEMM+gate-gradient launch per step (plus one for dh0), then one GEMM for
    ``dw_hh`` and a column sum for ``db_hh`` over all steps.
    """
    g, steps, n, h = _check(mode, xw, h0, c0, w_hh, b_hh)
    for name, t, shape in (("dy", dy, (steps, n, h)), ("dhT", dh_t, (n, h)), ("dcT", dc_t, (n, h))):
        if t is not None and tuple(t.shape) != shape:
            raise ValueError(f"rnn {mode}: {name} must be of shape {shape}, got "
                             f"{tuple(t.shape)}")
    w_hh = w_hh.contiguous()
    hs = saved[0]
    dxw = xw.new_empty((steps, n, g * h))
    dhn = xw.new_empty((steps, n, h)) if mode == "gru" else None
    dh0, dc0 = xw.new_empty((n, h)), (xw.new_empty((n, h)) if mode == "lstm" else None)
    if n * h:
        grads = tuple(None if t is None else t.contiguous() for t in (dy, dh_t, dc_t))
        _bwd_steps(mode, grads, (w_hh, None if c0 is None else c0.contiguous(), saved),
                   (dxw, dhn, dh0, dc0), reverse, persistent)
    elif dc0 is not None:
        dc0.zero_()
    if mode == "lstm" and steps == 0:
        dc0 = torch.zeros_like(h0) if dc_t is None else dc_t.clone()
    dw, db = _weight_grads(mode, dxw, dhn, _h_prev(hs, reverse), (g * h, h))
    return dxw, dh0, dc0, dw, db


def _bwd_steps(mode: str, grads: tuple, state: tuple, outs: tuple, reverse: bool,
               persistent: bool) -> None:
    """Launch the backward: the last processed step first (it starts from dhT/dcT), then
    the others (one launch each, or one persistent launch), then dh0's."""
    (dy, dh_t, dc_t), (w_hh, c0, saved), (dxw, dhn, dh0, dc0) = grads, state, outs
    steps, n, h = dy.shape
    meta = _meta(dxw, n, h)
    grid = (cdiv(n, meta["BLOCK_N"]), cdiv(h, meta["BLOCK_H"]))
    carry = dhn.new_empty((n, h)) if mode == "gru" else None  # gru: dh * z sent to h_prev
    ka = 2 * h if mode == "gru" else dxw.shape[2]
    hs = saved[0]
    fixed = (dy, dxw, dhn, w_hh, None, carry, None, dc0,
             saved[1] if mode in ("lstm", "gru") else None,
             saved[2] if mode == "lstm" else hs, saved[2] if mode == "gru" else None,
             c0 if mode == "lstm" else hs)  # lstm: c0 (step 0's c_prev); others: the states

    def launch(k_hi: int, k_lo: int, c_in, d_in, has_next: bool, final: bool = False,
               sync=None) -> None:
        ptrs = fixed[:4] + (c_in,) + fixed[5:6] + (d_in,) + fixed[7:] + (sync, dh0)
        _bwd_kernel[grid](*_or(ptrs, dh0), n, h, ka, steps, k_hi, k_lo,
                          MODE=_MODE_ID[mode], REVERSE=reverse, HAS_NEXT=has_next,
                          HAS_CARRY=c_in is not None, HAS_DC=d_in is not None, FINAL=final,
                          PERSISTENT=sync is not None,
                          **(meta if sync is None else {**meta, **resident(meta, ka)}))
    if steps:
        launch(steps - 1, steps - 1, dh_t, dc_t, False)
    if steps > 1 and persistent and _fits(dy, grid):
        launch(steps - 2, 0, carry, dc0, True, sync=torch.zeros(1, dtype=torch.int32,
                                                                 device=dy.device))
    else:
        for k in reversed(range(steps - 1)):
            launch(k, k, carry, dc0, True)
    launch(0, 0, carry if steps else dh_t, None, steps > 0, final=True)


def _or(ptrs: tuple, dummy: torch.Tensor) -> tuple:
    """Unused pointer arguments (None) replaced by a tensor the kernel never touches."""
    return tuple(dummy if p is None else p for p in ptrs)


def _weight_grads(mode: str, dxw: torch.Tensor, dhn, h_prev: torch.Tensor, shape: tuple):
    """dW_hh = sum_t d(hw)[t]^T @ h_prev[t] (one GEMM over T*N rows), db_hh its column sum."""
    steps, n, gh = dxw.shape
    dw, db = dxw.new_empty(shape), dxw.new_empty((gh,))
    if dxw.numel() == 0:
        return dw.zero_(), db.zero_()
    rows, hp = dxw.reshape(steps * n, gh), h_prev.reshape(steps * n, -1)
    reduce(rows, (0,), "sum", out=db)
    if mode != "gru":
        return matmul(rows.t(), hp, out=dw), db
    h = gh // 3
    matmul(rows[:, :2 * h].t(), hp, out=dw[:2 * h])
    matmul(dhn.reshape(steps * n, h).t(), hp, out=dw[2 * h:])
    reduce(dhn.reshape(steps * n, h), (0,), "sum", out=db[2 * h:])
    return dw, db


# ---------------------------------------------------------------- table entries
# shape = (T, N, H); each entry's wrapper returns (y, hT[, cT]) or (dxw, dh0[, dc0], dw, db)

def _operands(mode: str, dtype, device, shape: tuple, seed: int = 0) -> tuple:
    """Seeded (xw, h0, c0, w_hh, b_hh), drawn on CPU; w_hh scaled by 1/sqrt(H)."""
    gen = torch.Generator().manual_seed(seed)
    steps, n, h = shape
    g = MODES[mode]

    def rand(*s, scale=1.0):
        return (torch.randn(s, generator=gen) * scale).to(device=device, dtype=dtype)
    return (rand(steps, n, g * h), rand(n, h), rand(n, h) if mode == "lstm" else None,
            rand(g * h, h, scale=h ** -0.5), rand(g * h, scale=0.5))


def _fwd_entry(mode: str, fn):
    def entry(xw, h0, c0, w_hh, b_hh, reverse, out=None):
        y, h_t, c_t, _ = fn(mode, xw, h0, c0, w_hh, b_hh, reverse)
        return _into((y, h_t) + ((c_t,) if mode == "lstm" else ()), out)
    entry.__name__ = entry.__qualname__ = f"rnn_{mode}_fwd{'' if fn is rnn_layer_fwd else '_ref'}"
    return entry


def _bwd_entry(mode: str, fn):
    def entry(dy, dh_t, dc_t, xw, h0, c0, w_hh, b_hh, y, saved, reverse, out=None):
        got = fn(mode, dy, dh_t, dc_t, xw, h0, c0, w_hh, b_hh, y, saved, reverse)
        return _into(tuple(t for t in got if t is not None), out)
    entry.__name__ = entry.__qualname__ = f"rnn_{mode}_bwd{'' if fn is rnn_layer_bwd else '_ref'}"
    return entry


def _into(got: tuple, out) -> tuple:
    """The results, copied into ``out`` when given (the table tests poison outputs)."""
    if out is None:
        return got
    for o, g in zip(out, got):
        o.copy_(g)
    return tuple(out)


def _make_fwd(mode: str, reverse: bool):
    def make(dtype, device, shape):
        return _operands(mode, dtype, device, shape) + (reverse,), {}
    return make


def _make_bwd(mode: str, reverse: bool, with_dh: bool):
    """Backward operands: head gradients, the forward's inputs and its (reference) saved."""
    def make(dtype, device, shape):
        xw, h0, c0, w_hh, b_hh = _operands(mode, dtype, device, shape)
        y, _, _, saved = rnn_layer_fwd_ref(mode, xw, h0, c0, w_hh, b_hh, reverse)
        gen = torch.Generator().manual_seed(1)
        dy, dh_t, dc_t = (torch.randn(s, generator=gen).to(device=device, dtype=dtype)
                          for s in (y.shape, h0.shape, h0.shape))
        return (dy, dh_t if with_dh else None, dc_t if mode == "lstm" else None, xw, h0, c0,
                w_hh, b_hh, y, saved, reverse), {}
    return make


def _fwd_flops(xw, h0, *rest):
    """2 * T * N * G*H * H (the recurrent GEMMs; the input projection is not counted)."""
    return 2 * xw.numel() * h0.shape[1]


def _bwd_flops(dy, dh_t, dc_t, xw, h0, *rest):
    """Twice the forward's: dh_prev = d(hw) @ W_hh per step and dW_hh over all steps."""
    return 4 * xw.numel() * h0.shape[1]


_DT = (torch.float32, torch.float16, torch.bfloat16)
_FWD_TOL = {torch.float32: (1e-5, 1e-5), torch.float16: (1e-2, 1e-2),
            torch.bfloat16: (3e-2, 3e-2)}
_BWD_TOL = {torch.float32: (1e-4, 1e-4), torch.float16: (2e-2, 2e-2),
            torch.bfloat16: (5e-2, 5e-2)}
_SHAPES = ((3, 2, 5), (2, 3, 19))
_BENCH = ((64, 64, 512), (32, 128, 1024))
# (mode, reverse, dh_T given): every mode both ways across fwd/bwd, dhT None in some
_VARIANTS = (("lstm", False, True), ("gru", True, False), ("rnn_tanh", False, False),
             ("rnn_relu", True, True))



def _entries(mode: str, reverse: bool, with_dh: bool) -> list[KernelSpec]:
    """The forward entry (``reverse``) and the backward entry (the other direction)."""
    common = {"shapes": _SHAPES, "bench_shapes": _BENCH, "dtypes": _DT, "family": "rnn"}
    return [
        KernelSpec(name=f"rnn_{mode}_fwd", fn=_fwd_entry(mode, rnn_layer_fwd),
                   ref=_fwd_entry(mode, rnn_layer_fwd_ref), make=_make_fwd(mode, reverse),
                   tol=_FWD_TOL, flops=_fwd_flops, **common),
        KernelSpec(name=f"rnn_{mode}_bwd", fn=_bwd_entry(mode, rnn_layer_bwd),
                   ref=_bwd_entry(mode, rnn_layer_bwd_ref),
                   make=_make_bwd(mode, not reverse, with_dh), tol=_BWD_TOL, flops=_bwd_flops,
                   **common),
    ]


KERNELS = [spec for variant in _VARIANTS for spec in _entries(*variant)]
