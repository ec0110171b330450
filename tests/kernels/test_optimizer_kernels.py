"""Fused multi-tensor optimizer kernels against MXNet 1.9.1 (``tests/fixtures/optimizer``,
written by ``mx.optimizer.<Name>.update`` three steps over three tensors), run in place
under Triton's interpreter on CPU; plus the wrapper's in-place/``out=`` contract and errors.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from symgraph.kernels import optimizer as opt
from symgraph.kernels.optimizer import UpdateParams, adam_lr

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "optimizer" / "optimizer.npz"
# case -> (wrapper, number of states, UpdateParams fields taken from the MXNet arguments)
CASES = {
    "sgd": (opt.sgd_update, 0, {}),
    "sgd_mom": (opt.sgd_mom_update, 1, {"momentum": "momentum"}),
    "nag": (opt.nag_mom_update, 1, {"momentum": "momentum"}),
    "adam": (opt.adam_update, 2, {"beta1": "beta1", "beta2": "beta2", "epsilon": "epsilon"}),
    "rmsprop": (opt.rmsprop_update, 1, {"gamma1": "gamma1", "epsilon": "epsilon"}),
    "rmspropalex": (opt.rmspropalex_update, 3, {"gamma1": "gamma1", "gamma2": "gamma2",
                                                 "epsilon": "epsilon",
                                                 "clip_weights": "clip_weights"}),
    "adagrad": (opt.adagrad_update, 1, {"epsilon": "eps"}),
}


@pytest.fixture(scope="module")
def mxnet_record():
    with np.load(FIXTURE, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def _params(cfg: dict, count: int, step: int, fields: dict) -> UpdateParams:
    """MXNet optimizer arguments (with lr/wd multipliers) as one step's UpdateParams."""
    lrs = [cfg["learning_rate"] * cfg["lr_mult"].get(str(i), 1.0) for i in range(count)]
    wds = [cfg["wd"] * cfg["wd_mult"].get(str(i), 1.0) for i in range(count)]
    kw = {ours: cfg[theirs] for ours, theirs in fields.items()}
    if cfg["optimizer"] == "adam":  # MXNet's optimizer.Adam folds bias correction into lr
        lrs = [adam_lr(lr, cfg["beta1"], cfg["beta2"], step + 1) for lr in lrs]
    return UpdateParams(lr=lrs, wd=wds, rescale_grad=cfg["rescale_grad"],
                        clip_gradient=cfg["clip_gradient"], **kw)


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_mxnet_optimizer(case, mxnet_record):
    fn, nstates, fields = CASES[case]
    cfg = json.loads(str(mxnet_record[f"{case}/config"]))
    count = sum(1 for k in mxnet_record if k.startswith(f"{case}/w0/"))
    weights = [torch.from_numpy(mxnet_record[f"{case}/w0/{i}"].copy()) for i in range(count)]
    states = [[torch.zeros_like(w) for w in weights] for _ in range(nstates)]
    for step in range(3):
        grads = [torch.from_numpy(mxnet_record[f"{case}/grad/{step}/{i}"].copy())
                 for i in range(count)]
        got = fn(weights, grads, *states, _params(cfg, count, step, fields))
        assert all(g is t for g, t in zip(got, weights + [s for st in states for s in st]))
    for i, w in enumerate(weights):
        torch.testing.assert_close(w, torch.from_numpy(mxnet_record[f"{case}/w/{i}"]),
                                   rtol=1e-5, atol=1e-6, msg=lambda m, i=i: f"weight {i}: {m}")
        for k in range(nstates):
            torch.testing.assert_close(states[k][i],
                                       torch.from_numpy(mxnet_record[f"{case}/state{k}/{i}"]),
                                       rtol=1e-5, atol=1e-6,
                                       msg=lambda m, i=i, k=k: f"state {k} of {i}: {m}")


def _problem(sizes=(37, 15, 129), scale=1.0):
    gen = torch.Generator().manual_seed(7)
    ws = [torch.randn(n, generator=gen) for n in sizes]
    gs = [scale * torch.randn(n, generator=gen) for n in sizes]
    ms = [0.1 * torch.randn(n, generator=gen) for n in sizes]
    return ws, gs, ms


def test_out_leaves_inputs_untouched():
    ws, gs, ms = _problem()
    before = [t.clone() for t in ws + ms]
    hp = UpdateParams(lr=0.1, wd=0.01, momentum=0.9)
    outs = tuple(torch.full_like(t, float("nan")) for t in ws + ms)
    got = opt.sgd_mom_update(ws, gs, ms, hp, out=outs)
    assert all(g is o for g, o in zip(got, outs))
    for t, b in zip(ws + ms, before):
        torch.testing.assert_close(t, b, rtol=0, atol=0)
    want = opt.sgd_mom_update_ref(ws, gs, ms, hp)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)


def test_negative_clip_gradient_does_not_clip():
    """MXNet clips only when clip_gradient >= 0; -1 (its default) leaves big grads alone."""
    ws, gs, _ = _problem(scale=100.0)
    hp = UpdateParams(lr=0.01, clip_gradient=-1.0)
    want = opt.sgd_update_ref(ws, gs, hp)
    got = opt.sgd_update(ws, gs, hp)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    assert max((w - g).abs().max().item() for w, g in zip(want, _problem()[0])) > 1.0


def test_empty_and_zero_size_tensors():
    assert opt.sgd_update([], [], UpdateParams(lr=0.1)) == ()
    ws, gs, ms = _problem(sizes=(0, 5))
    got = opt.sgd_mom_update(ws, gs, ms, UpdateParams(lr=0.1, momentum=0.9))
    want = opt.sgd_mom_update_ref(*_problem(sizes=(0, 5)), UpdateParams(lr=0.1, momentum=0.9))
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)


def test_errors_name_tensor_and_shapes():
    ws, gs, ms = _problem()
    with pytest.raises(ValueError, match=r"tensor 1: weight \(15,\)"):
        opt.sgd_mom_update(ws, [gs[0], gs[2], gs[1]], ms, UpdateParams(lr=0.1))
    with pytest.raises(ValueError, match="3 tensors but 2 lr"):
        opt.sgd_update(ws, gs, UpdateParams(lr=[0.1, 0.2]))
    with pytest.raises(ValueError, match="3 weights, 2 grads"):
        opt.sgd_update(ws, gs[:2], UpdateParams(lr=0.1))
