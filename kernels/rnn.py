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
step fused). Backward, one launch per step: the tile's ``dh`` = ``dy[t]`` + the previous
(later-in-time) step's ``d(hw) @ W_hh`` computed in the same program (GEMM over G*H), then the
gate-gradient math; one more launch gives ``dh0``. ``dW_hh`` is one GEMM over all T*N rows
(``kernels.gemm.matmul``) and ``db_hh`` one column reduction (``kernels.reduce``).

Storage dtypes fp32/fp16/bf16 (and fp64): states and activations are stored in the input
dtype between steps, arithmetic is fp32 (fp64 for fp64). The references do the same
rounding per step so they agree to the dtype's precision.

Bytes moved per forward step: xw[t] and the (G*H, H) weight read, h, c, activations written;
2*N*G*H*H FLOPs per step. The backward does two such GEMMs per step (dh_prev and dW_hh).
"""
from __future__ import annotations

import torch

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
    if steps == 0:
        return y, hs[0], (cs[0] if mode == "lstm" else None)
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


# ---------------------------------------------------------------- public API

def rnn_layer_fwd(mode: str, xw: torch.Tensor, h0: torch.Tensor, c0, w_hh: torch.Tensor,
                  b_hh: torch.Tensor, reverse: bool = False):
    """One direction of one recurrent layer: ``(y, hT, cT, saved)``.

    ``xw`` (T, N, G*H) is the input projection of every step, ``h0``/``c0`` (N, H) the
    initial states (``c0`` None unless lstm), ``w_hh`` (G*H, H), ``b_hh`` (G*H,). ``y`` is
    (T, N, H), ``cT`` None unless lstm; ``saved`` is what :func:`rnn_layer_bwd` needs.
    """
    # TODO(kernels): Triton step kernels; the reference stands in until they land
    return rnn_layer_fwd_ref(mode, xw, h0, c0, w_hh, b_hh, reverse)


def rnn_layer_bwd(mode: str, dy: torch.Tensor, dh_t, dc_t, xw: torch.Tensor, h0: torch.Tensor,
                  c0, w_hh: torch.Tensor, b_hh: torch.Tensor, y: torch.Tensor, saved: tuple,
                  reverse: bool = False):
    """Gradients ``(dxw, dh0, dc0, dw_hh, db_hh)`` of :func:`rnn_layer_fwd`'s outputs.

    ``dy`` (T, N, H); ``dh_t``/``dc_t`` (N, H) or None (zeros); ``dc0`` None unless lstm.
    """
    # TODO(kernels): Triton step kernels; the reference stands in until they land
    return rnn_layer_bwd_ref(mode, dy, dh_t, dc_t, xw, h0, c0, w_hh, b_hh, y, saved, reverse)


KERNELS: list[KernelSpec] = []
