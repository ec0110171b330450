"""The recurrent-layer kernels (kernels/rnn.py) on CPU under Triton's interpreter: forward and
backward against the references for every mode, both directions, given and missing final
state gradients, tiny irregular shapes; the references against torch.nn.LSTM/GRU/RNN and
their autograd (one direction of a bidirectional layer each); the CUDA tile configs compiled
ahead of time for sm_90.
"""
from __future__ import annotations

import pytest
import torch

from symgraph.kernels import rnn, runtime
from symgraph.kernels.rnn import (
    MODES,
    rnn_layer_bwd,
    rnn_layer_bwd_ref,
    rnn_layer_fwd,
    rnn_layer_fwd_ref,
)
from tests import device

SHAPES = ((3, 2, 5), (1, 3, 4), (4, 17, 19))  # (T, N, H); 17 x 19 spans two 16-wide tiles
TOL = {torch.float32: (1e-5, 1e-5), torch.float64: (1e-10, 1e-10)}
GRAD_TOL = {torch.float32: (1e-4, 1e-4), torch.float64: (1e-10, 1e-10)}


def _operands(mode, shape, dtype=torch.float32, seed=0):
    return rnn._operands(mode, dtype, device.TORCH, shape, seed)


def _grads(mode, shape, dtype, which):
    """dy and the final-state gradients (``which``: 'both', 'dh', 'dc' or 'none')."""
    gen = torch.Generator().manual_seed(7)
    steps, n, h = shape
    dy, dh, dc = (torch.randn(s, generator=gen).to(device.TORCH, dtype) for s in
                  ((steps, n, h), (n, h), (n, h)))
    dh = dh if which in ("both", "dh") else None
    dc = dc if which in ("both", "dc") and mode == "lstm" else None
    return dy, dh, dc


def _close(got, want, tol):
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert (g is None) == (w is None), i
        if g is not None:
            assert g.shape == w.shape and g.dtype == w.dtype, (i, g.shape, w.shape)
            torch.testing.assert_close(g, w, rtol=tol[0], atol=tol[1],
                                       msg=lambda m, i=i: f"output {i}: {m}")


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("reverse", (False, True), ids=("fwd_dir", "rev_dir"))
@pytest.mark.parametrize("mode", sorted(MODES))
def test_forward_matches_reference(mode, reverse, shape):
    args = _operands(mode, shape)
    y, h_t, c_t, saved = rnn_layer_fwd(mode, *args, reverse=reverse)
    y_r, h_r, c_r, saved_r = rnn_layer_fwd_ref(mode, *args, reverse=reverse)
    _close((y, h_t, c_t), (y_r, h_r, c_r), TOL[torch.float32])
    _close(saved, saved_r, TOL[torch.float32])  # one saved layout for both
    assert y.shape == (shape[0], shape[1], shape[2])


# which final-state gradients are given: both, dhT only, dcT only (lstm), none
BWD_CASES = [(mode, which) for mode in sorted(MODES) for which in ("both", "dh", "dc", "none")
             if which != "dc" or mode == "lstm"]


@pytest.mark.parametrize("reverse", (False, True), ids=("fwd_dir", "rev_dir"))
@pytest.mark.parametrize("mode,which", BWD_CASES)
def test_backward_matches_reference(mode, which, reverse):
    shape = SHAPES[2] if which == "both" else SHAPES[0]
    args = _operands(mode, shape)
    y, _, _, saved = rnn_layer_fwd(mode, *args, reverse=reverse)
    dy, dh, dc = _grads(mode, shape, torch.float32, which)
    got = rnn_layer_bwd(mode, dy, dh, dc, *args, y, saved, reverse=reverse)
    want = rnn_layer_bwd_ref(mode, dy, dh, dc, *args, y, saved, reverse=reverse)
    _close(got, want, GRAD_TOL[torch.float32])
    assert (got[2] is None) == (mode != "lstm")


@pytest.mark.parametrize("mode", sorted(MODES))
def test_float64_forward_and_backward(mode):
    shape = (2, 3, 6)
    args = _operands(mode, shape, torch.float64)
    out = rnn_layer_fwd(mode, *args, reverse=True)
    ref = rnn_layer_fwd_ref(mode, *args, reverse=True)
    _close(out[:3], ref[:3], TOL[torch.float64])
    dy, dh, dc = _grads(mode, shape, torch.float64, "both")
    _close(rnn_layer_bwd(mode, dy, dh, dc, *args, out[0], out[3], reverse=True),
           rnn_layer_bwd_ref(mode, dy, dh, dc, *args, ref[0], ref[3], reverse=True),
           GRAD_TOL[torch.float64])


@pytest.mark.parametrize("mode", sorted(MODES))
def test_zero_steps(mode):
    args = _operands(mode, (0, 2, 3))
    y, h_t, c_t, saved = rnn_layer_fwd(mode, *args)
    assert y.shape == (0, 2, 3)
    torch.testing.assert_close(h_t, args[1])
    if mode == "lstm":
        torch.testing.assert_close(c_t, args[2])
    dy, dh, dc = _grads(mode, (0, 2, 3), torch.float32, "both")
    dxw, dh0, dc0, dw, db = rnn_layer_bwd(mode, dy, dh, dc, *args, y, saved)
    assert dxw.shape == args[0].shape
    torch.testing.assert_close(dh0, dh)
    assert not dw.any() and not db.any()
    if mode == "lstm":
        torch.testing.assert_close(dc0, dc)


# ---------------------------------------------------------------- against torch.nn

def _torch_layer(mode, in_size, h):
    torch.manual_seed(0)
    if mode == "lstm":
        return torch.nn.LSTM(in_size, h, bidirectional=True)
    if mode == "gru":
        return torch.nn.GRU(in_size, h, bidirectional=True)
    return torch.nn.RNN(in_size, h, nonlinearity=mode[4:], bidirectional=True)


@pytest.mark.parametrize("reverse", (False, True), ids=("fwd_dir", "rev_dir"))
@pytest.mark.parametrize("mode", sorted(MODES))
def test_kernels_match_torch_nn_and_autograd(mode, reverse):
    """cuDNN semantics and gate order: the Triton forward and backward equal one direction of
    a bidirectional torch.nn layer, its outputs and its autograd gradients."""
    steps, n, in_size, h = 3, 2, 4, 5
    layer = _torch_layer(mode, in_size, h)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(steps, n, in_size, generator=gen, requires_grad=True)
    h0 = torch.randn(2, n, h, generator=gen, requires_grad=True)
    c0 = torch.randn(2, n, h, generator=gen, requires_grad=True)
    y_t, state = layer(x, (h0, c0) if mode == "lstm" else h0)
    d, sfx = (1, "_reverse") if reverse else (0, "")
    w_ih, w_hh, b_ih, b_hh = (getattr(layer, f"{p}_l0{sfx}") for p in
                              ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))
    xw = (x @ w_ih.t() + b_ih).detach()
    c0_d = c0[d].detach() if mode == "lstm" else None
    args = (xw, h0[d].detach(), c0_d, w_hh.detach(), b_hh.detach())
    y, h_t, c_t, saved = rnn_layer_fwd(mode, *args, reverse=reverse)
    outs = [y_t[..., d * h:(d + 1) * h], (state[0] if mode == "lstm" else state)[d]]
    tol = {"rtol": 1e-5, "atol": 1e-5}
    torch.testing.assert_close(y, outs[0].detach(), **tol)
    torch.testing.assert_close(h_t, outs[1].detach(), **tol)
    if mode == "lstm":
        outs.append(state[1][d])
        torch.testing.assert_close(c_t, outs[2].detach(), **tol)
    heads = [torch.randn(o.shape, generator=gen) for o in outs]
    wrt = [x, h0, w_hh, b_hh] + ([c0] if mode == "lstm" else [])
    want = torch.autograd.grad(outs, wrt, heads)
    dxw, dh0, dc0, dw, db = rnn_layer_bwd(mode, heads[0], heads[1],
                                          heads[2] if mode == "lstm" else None, *args, y,
                                          saved, reverse=reverse)
    tol = {"rtol": 1e-4, "atol": 1e-5}
    torch.testing.assert_close(dxw @ w_ih.detach(), want[0], **tol)
    torch.testing.assert_close(dh0, want[1][d], **tol)
    torch.testing.assert_close(dw, want[2], **tol)
    torch.testing.assert_close(db, want[3], **tol)
    if mode == "lstm":
        torch.testing.assert_close(dc0, want[4][d], **tol)


# ---------------------------------------------------------------- errors

@pytest.mark.parametrize("mode,change,message", [
    ("lstm", {"c0": None}, "c0 is required"),
    ("gru", {"c0": torch.zeros(2, 5)}, "c0 must be None"),
    ("rnn_tanh", {"w_hh": torch.zeros(5, 4)}, r"w_hh must be torch.float32 of shape \(5, 5\)"),
    ("lstm", {"xw": torch.zeros(3, 2, 15)}, r"xw must be .* shape \(3, 2, 20\)"),
    ("rnn_relu", {"b_hh": torch.zeros(5, dtype=torch.float16)}, "b_hh must be torch.float32"),
    ("elman", {}, "rnn mode must be one of"),
])
def test_bad_operands_name_the_operand_and_shapes(mode, change, message):
    xw, h0, c0, w, b = _operands(mode if mode in MODES else "rnn_tanh", (3, 2, 5))
    ops = {"xw": xw, "h0": h0, "c0": c0, "w_hh": w, "b_hh": b, **change}
    with pytest.raises(ValueError, match=message):
        rnn_layer_fwd(mode, *ops.values())


# ---------------------------------------------------------------- the CUDA configs compile

@pytest.mark.filterwarnings("ignore:TRITON_DEFAULT_FP_FUSION")
@pytest.mark.parametrize("dtype", (torch.float32, torch.float16, torch.bfloat16),
                         ids=lambda d: str(d)[6:])
@pytest.mark.parametrize("mode", ("lstm", "gru", "rnn_relu"))
def test_cuda_tile_configs_compile_for_sm90(mode, dtype):
    """The table tests compile the interpreter's 16-wide tiles; these are the GPU's."""
    steps, n, h = 2, 64, 256
    xw, h0, c0, w, b = _operands(mode, (steps, n, h), dtype)
    _, _, _, saved = rnn_layer_fwd_ref(mode, xw, h0, c0, w, b)
    meta = rnn._meta(xw, n, h, cuda=True)  # num_warps included: the GPU's configuration
    hs, gates = saved[0], saved[1] if len(saved) > 1 else saved[0]
    cs = saved[2] if len(saved) > 2 else saved[0]
    sync = torch.zeros(1, dtype=torch.int32)
    for persistent in (False, True):  # a launch per step, and one for the whole sequence
        fwd = (xw, hs, hs, w, b, gates, hs, sync, n, h, steps, 0, 1)
        runtime.aot_compile(rnn._fwd_kernel.fn, fwd, {"MODE": rnn._MODE_ID[mode],
                                                       "REVERSE": False,
                                                       "PERSISTENT": persistent, **meta}, 90)
    dy, dxw = hs[1:], torch.zeros_like(xw)
    bwd = (dy, dxw, hs, w, hs[0], hs[0], hs[0], hs[0], gates, cs, cs, hs, sync, hs[0], n, h,
           xw.shape[2], steps, 1, 0)
    flags = {"HAS_NEXT": True, "HAS_CARRY": True, "HAS_DC": True, "REVERSE": False}
    for final, persistent in ((False, False), (True, False), (False, True)):
        runtime.aot_compile(rnn._bwd_kernel.fn, bwd,
                            {"MODE": rnn._MODE_ID[mode], **flags, "FINAL": final,
                             "PERSISTENT": persistent, **meta}, 90)


def test_backward_names_a_misshapen_state_gradient():
    args = _operands("lstm", (3, 2, 5))
    y, _, _, saved = rnn_layer_fwd("lstm", *args)
    dy, dh, _ = _grads("lstm", (3, 2, 5), torch.float32, "both")
    with pytest.raises(ValueError, match=r"dcT must be of shape \(2, 5\), got \(5, 2\)"):
        rnn_layer_bwd("lstm", dy, dh, dh.t(), *args, y, saved)


@pytest.mark.filterwarnings("ignore:TRITON_DEFAULT_FP_FUSION")
def test_persistent_kernels_compile_with_an_acquire_release_barrier():
    """Issue #22: the persistent forward and backward (one launch for all steps) compile
    for sm_90 with their grid-wide barrier: a release add after each step's stores,
    acquire loads while waiting, and block barriers around it; the per-step form has none
    of them."""
    steps, n, h = 3, 32, 200
    xw, h0, c0, w, b = _operands("lstm", (steps, n, h))
    _, _, _, saved = rnn_layer_fwd_ref("lstm", xw, h0, c0, w, b)
    hs, gates, cs = saved
    meta = rnn._meta(xw, n, h, cuda=True)
    sync = torch.zeros(1, dtype=torch.int32)
    ptx = {}
    for persistent in (False, True):
        name = rnn._fwd_kernel.__name__
        runtime._compile_check["ptx"].pop(name, None)
        runtime.aot_compile(rnn._fwd_kernel.fn, (xw, hs, hs, w, b, gates, hs, sync, n, h,
                                                 steps, 0, steps),
                            {"MODE": 0, "REVERSE": True, "PERSISTENT": persistent, **meta}, 90)
        ptx[persistent] = runtime.compiled_ptx(name)[-1]
    dy, dxw = hs[1:], torch.zeros_like(xw)
    bwd = (dy, dxw, hs, w, hs[0], hs[0], hs[0], hs[0], gates, cs, cs, hs, sync, hs[0], n, h,
           xw.shape[2], steps, steps - 2, 0)
    runtime.aot_compile(rnn._bwd_kernel.fn, bwd, {
        "MODE": 0, "REVERSE": True, "HAS_NEXT": True, "HAS_CARRY": False, "HAS_DC": True,
        "FINAL": False, "PERSISTENT": True, **meta}, 90)
    ptx["backward"] = runtime.compiled_ptx(rnn._bwd_kernel.__name__)[-1]
    for kind in (True, "backward"):
        lines = ptx[kind].splitlines()
        assert any("atom." in x and ".gpu.release" in x for x in lines)  # the arrival
        assert any(".gpu.acquire" in x for x in lines)  # the wait: acquire loads of the count
        assert "bar.sync" in ptx[kind]
    assert not [x for x in ptx[False].splitlines() if "atom." in x or ".acquire" in x]


@pytest.mark.parametrize("reverse", (False, True))
@pytest.mark.parametrize("mode", ("lstm", "gru", "rnn_tanh"))
def test_one_launch_walks_every_step(mode, reverse):
    """The persistent form's step loop, interpreted: one program covering the whole state
    walks all T steps in one launch (no barrier needed with one program) and gives the
    reference's states, cells and gates."""
    steps, n, h = 3, 5, 7
    xw, h0, c0, w, b = _operands(mode, (steps, n, h))
    y, h_t, c_t, saved = rnn_layer_fwd_ref(mode, xw, h0, c0, w, b, reverse)
    g = xw.shape[2] // h
    first = steps if reverse else 0
    hs = torch.full((steps + 1, n, h), float("nan"))
    hs[first] = h0
    cs = torch.full((steps + 1, n, h), float("nan"))
    if c0 is not None:
        cs[first] = c0
    gates = torch.full((steps, n, g * h), float("nan"))
    hn = torch.full((steps, n, h), float("nan"))
    meta = rnn._meta(xw, n, h)
    assert meta["BLOCK_N"] >= n and meta["BLOCK_H"] >= h
    rnn._fwd_kernel[(1, 1)](xw, hs, cs, w, b, gates, hn, hs, n, h, steps, 0, steps,
                            MODE=rnn._MODE_ID[mode], REVERSE=reverse, PERSISTENT=False, **meta)
    torch.testing.assert_close(hs, saved[0], rtol=1e-5, atol=1e-6)
    if mode == "lstm":
        torch.testing.assert_close(cs[:steps] if reverse else cs[1:], saved[2], rtol=1e-5,
                                   atol=1e-6)
    if mode in ("lstm", "gru"):
        torch.testing.assert_close(gates, saved[1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reverse", (False, True))
@pytest.mark.parametrize("mode", ("lstm", "gru", "rnn_relu"))
def test_persistent_launches_match_the_reference(mode, reverse, monkeypatch):
    """The persistent forward and backward (one launch over the steps, the grid-wide
    barrier included), interpreted with a one-program grid, where the barrier cannot wait
    on a program that has not run: states, gradients and dh0/dc0 equal the reference."""
    monkeypatch.setattr(rnn, "_fits", lambda x, grid: True)
    steps, n, h = 4, 5, 7
    args = _operands(mode, (steps, n, h))
    meta = rnn._meta(args[0], n, h)
    assert meta["BLOCK_N"] >= n  # one program
    assert rnn.resident(meta, h)["W_RESIDENT"]  # the weights stay in registers here
    y, h_t, c_t, saved = rnn_layer_fwd(mode, *args, reverse, persistent=True)
    want = rnn_layer_fwd_ref(mode, *args, reverse)
    torch.testing.assert_close(y, want[0], rtol=1e-5, atol=1e-6)
    dy, dh, dc = _grads(mode, (steps, n, h), torch.float32, "both")
    got = rnn_layer_bwd(mode, dy, dh, dc if mode == "lstm" else None, *args, y, saved, reverse,
                        persistent=True)
    ref = rnn.rnn_layer_bwd_ref(mode, dy, dh, dc if mode == "lstm" else None, *args, y, saved,
                                reverse)
    for g, r in zip(got, ref):
        if r is not None:
            torch.testing.assert_close(g, r, rtol=1e-4, atol=1e-5)


@pytest.mark.filterwarnings("ignore:TRITON_DEFAULT_FP_FUSION")
@pytest.mark.parametrize("mode, h", (("lstm", 200), ("gru", 48), ("lstm", 48)))
def test_resident_weight_tiles_compile_for_sm90(mode, h):
    """Issue #22 item 3: a persistent launch whose recurrent contraction fits one block
    (H forward, G*H backward, at most ``RESIDENT_MAX_K``) loads its weight tile once for
    all the steps; those configurations compile for sm_90 with the GPU's tiles."""
    steps, n = 3, 32
    xw, h0, c0, w, b = _operands(mode, (steps, n, h))
    _, _, _, saved = rnn_layer_fwd_ref(mode, xw, h0, c0, w, b)
    hs, gates = saved[0], saved[1]
    cs = saved[2]
    meta = rnn._meta(xw, n, h, cuda=True)
    sync = torch.zeros(1, dtype=torch.int32)
    fwd = rnn.resident(meta, h)
    assert fwd["W_RESIDENT"] and fwd["BLOCK_K"] >= h
    runtime.aot_compile(rnn._fwd_kernel.fn, (xw, hs, hs, w, b, gates, hs, sync, n, h, steps,
                                             0, steps),
                        {"MODE": rnn._MODE_ID[mode], "REVERSE": False, "PERSISTENT": True,
                         **meta, **fwd}, 90)
    ka = 2 * h if mode == "gru" else xw.shape[2]
    bwd = rnn.resident(meta, ka)
    assert bool(bwd) == (ka <= rnn.RESIDENT_MAX_K)
    dy, dxw = hs[1:], torch.zeros_like(xw)
    runtime.aot_compile(rnn._bwd_kernel.fn, (dy, dxw, hs, w, hs[0], hs[0], hs[0], hs[0], gates,
                                             cs, cs, hs, sync, hs[0], n, h, ka, steps,
                                             steps - 2, 0),
                        {"MODE": rnn._MODE_ID[mode], "REVERSE": False, "HAS_NEXT": True,
                         "HAS_CARRY": True, "HAS_DC": True, "FINAL": False,
                         "PERSISTENT": True, **meta, **bwd}, 90)
