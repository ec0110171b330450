"""Random operators on the Triton backend and the Philox kernels behind them
(``kernels/random.py``, ``kernels/random_pdf.py``; interpreted on CPU).

Samplers cannot equal the torch backend (Philox streams are not torch's), so each sampler op
is checked for what holds on both backends: a generator seed reproduces its outputs, shapes
and dtypes are the torch backend's, values lie in the support, and no node falls back to a
torch reference. The kernels' distributions are checked at 20000 draws with fixed seeds:
Kolmogorov-Smirnov distance to scipy's distribution (at the integers for discrete ones)
below 1.95 / sqrt(n) (a test at level 0.001), and chi-square tests for randint, multinomial
and the log-uniform classes. Densities are deterministic: outputs and gradients equal the
torch backend's.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as ss
import torch

from symgraph import config
from symgraph.kernels.random import multinomial, sample, shuffle
from symgraph.ndarray import NDArray
from symgraph.ops import random as random_ops
from symgraph.ops.base import Case, canonical_ops, get_op
from tests import device
from tests.op_harness import assert_backends_agree, bind, draw_inputs, run_forward

pytestmark = pytest.mark.filterwarnings("error:Triton kernel")

OPS = [o for o in canonical_ops() if o.forward.__module__ == random_ops.__name__]
SAMPLERS = [pytest.param(o.name, i, id=f"{o.name}-{i}") for o in OPS if o.random
            for i in range(len(o.cases))]
DENSITIES = [pytest.param(o.name, i, id=f"{o.name}-{i}") for o in OPS
             if o.name.startswith("_random_pdf_") for i in range(len(o.cases))]
DISCRETE = ("poisson", "negative_binomial", "randint", "multinomial", "zipfian")
N = 20000


def test_every_random_operator_has_a_kernel():
    assert OPS and [o.name for o in OPS if o.kernel is None] == []


def _triton_plan(op, case, values):
    with config.override(backend="triton"):
        _, exe = bind(op, case, values, grad=False)
    assert all(v.startswith("triton:") for v in exe._plan.impl.values()), exe._plan.impl
    return exe


@pytest.mark.parametrize("name,index", SAMPLERS)
def test_sampler_reproduces_with_torch_shapes_and_support(name, index):
    op = get_op(name)
    case = op.cases[index]
    values = draw_inputs(case, np.float32)
    exe = _triton_plan(op, case, values)
    got = run_forward(exe, case.train, seed=5)
    for a, b in zip(got, run_forward(exe, case.train, seed=5)):
        np.testing.assert_array_equal(a, b)
    with config.override(backend="torch"):
        _, ref = bind(op, case, values, grad=False)
    want = run_forward(ref, case.train, seed=5)
    assert [(g.shape, g.dtype) for g in got] == [(w.shape, w.dtype) for w in want]
    _check_support(name, case, values, got[0].astype(np.float64))
    if any(d in name for d in ("uniform", "normal", "gamma", "exponential")):
        assert not np.array_equal(got[0], run_forward(exe, case.train, seed=6)[0])


def _check_support(name, case, values, out):
    assert np.isfinite(out).all()
    if any(d in name for d in DISCRETE) or name.endswith("binomial"):
        assert (out == np.round(out)).all() and (out >= case.attrs.get("low", 0)).all()
    if name.startswith("_sample_uniform"):  # low > high is allowed: between the two
        low, high = (v.reshape(v.shape + (1,) * (out.ndim - v.ndim)) for v in values)
        assert (out >= np.minimum(low, high)).all() and (out <= np.maximum(low, high)).all()
    elif name.startswith("_random_uniform"):
        assert (out >= case.attrs["low"]).all() and (out < case.attrs["high"]).all()
    elif "gamma" in name or "exponential" in name:
        assert (out >= 0).all()


def test_shuffle_op_permutes_rows():
    op = get_op("_shuffle")
    x = np.arange(21, dtype=np.float32).reshape(7, 3)
    with config.override(backend="triton"):
        _, exe = bind(op, Case(((7, 3),), grad=False), [x], grad=False)
    seen = set()
    for seed in range(6):
        got = run_forward(exe, True, seed=seed)[0]
        np.testing.assert_array_equal(np.sort(got[:, 0]), x[:, 0])
        np.testing.assert_array_equal(got - got[:, :1], x - x[:, :1])
        seen.add(tuple(got[:, 0]))
    assert len(seen) > 1


def test_unique_zipfian_op_rows_are_distinct():
    op = get_op("_sample_unique_zipfian")
    exe = _triton_plan(op, op.cases[0], [])
    classes, trials = run_forward(exe, True, seed=3)
    assert all(len(set(row)) == row.size for row in classes) and (trials >= 10).all()
    assert ((classes >= 0) & (classes < 40)).all()


def test_multinomial_log_prob_and_gradient():
    """logp = log p[class]; the gradient scatters head / p[class] into the drawn classes."""
    op = get_op("_sample_multinomial")
    case = op.cases[0]
    probs = draw_inputs(case, np.float32)[0]
    with config.override(backend="triton"):
        _, exe = bind(op, case, [probs], grad=True)
    cls, logp = run_forward(exe, True, seed=4)
    np.testing.assert_allclose(logp, np.log(np.take_along_axis(probs, cls.astype(int), 1)),
                               rtol=1e-6)
    head = np.random.RandomState(2).uniform(-1, 1, logp.shape).astype(np.float32)
    exe.backward([NDArray(torch.zeros(cls.shape)), NDArray(torch.from_numpy(head))])
    want = np.zeros_like(probs)
    for r in range(probs.shape[0]):
        np.add.at(want[r], cls[r].astype(int), head[r] / probs[r, cls[r].astype(int)])
    np.testing.assert_allclose(exe.grad_dict["in0"].asnumpy(), want, rtol=1e-5, atol=1e-6)
    assert "triton:triton_multinomial_backward" in exe._plan.impl.values(), exe._plan.impl


@pytest.mark.parametrize("name,index", DENSITIES)
def test_density_matches_torch_backend(name, index):
    op = get_op(name)
    case = op.cases[index]
    exe = assert_backends_agree(op, case, draw_inputs(case, np.float32), 1e-5, 1e-6)
    labels = set(exe._plan.impl.values())
    dist = name[len("_random_pdf_"):]
    assert not [v for v in labels if v.startswith("torch:")], labels
    assert {f"triton:triton_pdf_{dist}", f"triton:triton_pdf_{dist}_backward"} <= labels


# ---------------------------------------------------------------- the kernels' distributions

def _gnb(mu, alpha):
    return ss.nbinom(1 / alpha, 1 / (1 + mu * alpha))


DISTS = [  # (dist, a, b, scipy distribution, output dtype)
    ("uniform", -1.0, 3.0, ss.uniform(-1, 4), torch.float32),
    ("uniform", 0.5, 0.75, ss.uniform(0.5, 0.25), torch.float64),
    ("normal", 2.0, 0.5, ss.norm(2, 0.5), torch.float32),
    ("normal", -1.0, 3.0, ss.norm(-1, 3), torch.float64),
    ("exponential", 4.0, None, ss.expon(scale=0.25), torch.float32),
    ("gamma", 0.3, 2.0, ss.gamma(0.3, scale=2.0), torch.float32),
    ("gamma", 7.5, 0.5, ss.gamma(7.5, scale=0.5), torch.float32),
    ("gamma", 1.0, 1.0, ss.gamma(1.0), torch.float64),
    ("poisson", 3.5, None, ss.poisson(3.5), torch.float32),
    ("poisson", 250.0, None, ss.poisson(250), torch.float32),
    ("poisson", 12.0, None, ss.poisson(12), torch.float64),
    ("negative_binomial", 3, 0.4, ss.nbinom(3, 0.4), torch.float32),
    ("generalized_negative_binomial", 5.0, 0.5, _gnb(5.0, 0.5), torch.float32),
    ("generalized_negative_binomial", 40.0, 0.05, _gnb(40.0, 0.05), torch.float32),
]


@pytest.mark.parametrize("dist,a,b,law,dtype", DISTS,
                         ids=[f"{d[0]}-{d[1]}-{str(d[4])[6:]}" for d in DISTS])
def test_sampler_kernel_distribution(dist, a, b, law, dtype):
    x = sample(dist, a, b, (N,), seed=11, dtype=dtype, device=device.TORCH)
    x = x.cpu().double().numpy()
    assert x.dtype == np.float64 and np.isfinite(x).all()
    if hasattr(law.dist, "pdf"):
        stat = ss.kstest(x, law.cdf).statistic
    else:
        assert (x == np.round(x)).all() and x.min() >= 0
        grid = np.arange(0, x.max() + 1)
        stat = np.abs(np.searchsorted(np.sort(x), grid, side="right") / N - law.cdf(grid)).max()
    assert stat < 1.95 / math.sqrt(N), (stat, x.mean(), law.mean(), x.var(), law.var())


def test_sampler_kernel_seeds_and_continued_streams():
    dev = {"device": device.TORCH}
    a = sample("gamma", 0.7, 1.0, (999,), seed=5, **dev)
    assert torch.equal(a, sample("gamma", 0.7, 1.0, (999,), seed=5, **dev))
    assert not torch.equal(a, sample("gamma", 0.7, 1.0, (999,), seed=6, **dev))
    # element k draws from counter offset + k, whatever the launch: a stream continues
    tail = sample("poisson", 30.0, None, (300,), seed=5, offset=699, **dev)
    assert torch.equal(tail, sample("poisson", 30.0, None, (999,), seed=5, **dev)[699:])


def _chi2_ok(counts, probs):
    return ss.chisquare(counts, np.asarray(probs) * counts.sum()).pvalue > 1e-3


def test_randint_kernel_is_uniform_and_in_range():
    x = sample("randint", -3, 4, (N,), seed=2, dtype=torch.int32, device=device.TORCH)
    x = x.cpu().numpy()
    assert x.min() == -3 and x.max() == 3
    assert _chi2_ok(np.bincount(x + 3), [1 / 7] * 7)
    big = sample("randint", 1 << 33, 1 << 40, (1000,), seed=2, dtype=torch.int64,
                 device=device.TORCH).cpu()
    assert big.min() >= 1 << 33 and big.max() < 1 << 40 and big.unique().numel() == 1000


def test_multinomial_kernel_frequencies():
    probs = torch.tensor([[0.1, 0.2, 0.3, 0.3], [0.5, 0.25, 0.125, 0.125]])
    cls, logp = (t.cpu() for t in multinomial(probs.to(device.TORCH), N, 8, get_prob=True))
    counts = [np.bincount(c.numpy(), minlength=5) for c in cls]
    assert _chi2_ok(counts[0], [0.1, 0.2, 0.3, 0.3, 0.1])  # past the sum (0.9): class K
    assert _chi2_ok(counts[1][:4], [0.5, 0.25, 0.125, 0.125]) and counts[1][4] == 0
    torch.testing.assert_close(logp[1], probs[1][cls[1].long()].log())


def test_shuffle_kernel_permutations_are_uniform():
    x = torch.arange(3.0, device=device.TORCH)
    seen = [tuple(shuffle(x, seed).tolist()) for seed in range(90)]
    counts = np.array([seen.count(p) for p in sorted(set(seen))])
    assert len(counts) == 6 and _chi2_ok(counts, [1 / 6] * 6)


def test_log_uniform_kernel_frequencies():
    draws = sample("log_uniform", 10, None, (N,), seed=4, dtype=torch.int64,
                   device=device.TORCH).cpu().numpy()
    want = [math.log((c + 2) / (c + 1)) / math.log(11) for c in range(10)]
    assert _chi2_ok(np.bincount(draws, minlength=10), want)
