"""The random operators (symgraph/ops/random.py) and their front ends ``nd.random``,
``sym.random`` and ``mx.random``: seeding, shapes and dtypes as MXNet 1.9.1 gives them (checked
against the oracle), distribution moments with fixed seeds, densities against scipy, and the
errors. Several checks are ported from MXNet's tests/python/unittest/test_random.py (named
where they are)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as ss
import torch

import symgraph as mx
from symgraph import config
from symgraph.base import AttrError, DTypeError, MXNetError, ShapeError

nd = mx.nd

# (name, scalar parameters, per-element parameter arrays, mean, variance) of each distribution
DISTS = [
    ("uniform", (-1.5, 3.0), ([0.0, 2.5], [1.0, 3.7]), lambda a, b: (a + b) / 2,
     lambda a, b: (b - a) ** 2 / 12),
    ("normal", (10.0, 0.5), ([0.0, -7.0], [1.0, 3.7]), lambda m, s: m, lambda m, s: s * s),
    ("gamma", (9.0, 0.5), ([0.5, 2.5], [1.0, 0.7]), lambda a, b: a * b, lambda a, b: a * b * b),
    ("exponential", (0.25,), ([1.0, 1 / 8.5],), lambda s: s, lambda s: s * s),
    ("poisson", (4.0,), ([25.0, 0.5],), lambda lam: lam, lambda lam: lam),
    ("negative_binomial", (3, 0.4), ([3.0, 6.0], [0.4, 0.84]), lambda k, p: k * (1 - p) / p,
     lambda k, p: k * (1 - p) / p ** 2),
    ("generalized_negative_binomial", (2.0, 0.3), ([2.0, 1.3], [1.0, 0.0]), lambda m, a: m,
     lambda m, a: m + a * m * m),
]
IDS = [d[0] for d in DISTS]


def _fn(name):
    return getattr(nd.random, name)


@pytest.fixture(autouse=True)
def _seeded():
    mx.random.seed(1234)


# ------------------------------------------------------------------ seeding
@pytest.mark.parametrize("name,scalars,arrays,mean,var", DISTS, ids=IDS)
def test_same_seed_same_numbers_both_paths(name, scalars, arrays, mean, var):
    per = [nd.array(a) for a in arrays]
    mx.random.seed(7)
    first = (_fn(name)(*scalars, shape=(50,)).asnumpy(), _fn(name)(*per, shape=4).asnumpy())
    mx.random.seed(7)
    again = (_fn(name)(*scalars, shape=(50,)).asnumpy(), _fn(name)(*per, shape=4).asnumpy())
    np.testing.assert_array_equal(first[0], again[0])
    np.testing.assert_array_equal(first[1], again[1])
    mx.random.seed(8)
    if name != "poisson":  # a few small counts may repeat; the continuous ones never do
        assert not np.array_equal(first[0], _fn(name)(*scalars, shape=(50,)).asnumpy())


def test_seed_reseeds_bound_executors_and_per_context_seeding():
    # test_random.py::test_parallel_random_seed_setting, symbolic half
    x = mx.sym.var("X")
    exe = (mx.sym.random.uniform(-1.5, 3.0, shape=(20, 20)) + x).bind(
        mx.cpu(), {"X": nd.zeros((20, 20))}, {"X": nd.zeros((20, 20))})
    mx.random.seed(3)
    exe.forward(is_train=True)
    train = exe.outputs[0].asnumpy()
    mx.random.seed(3, ctx=mx.cpu())
    exe.forward()
    np.testing.assert_array_equal(train, exe.outputs[0].asnumpy())
    assert (train >= -1.5).all() and (train < 3.0).all()


def test_seed_accepts_numpy_and_negative_ints_and_rejects_others():
    mx.random.seed(np.int64(5))
    a = nd.random.uniform(shape=3).asnumpy()
    mx.random.seed(5)
    np.testing.assert_array_equal(a, nd.random.uniform(shape=3).asnumpy())
    mx.random.seed(-(1 << 31))
    with pytest.raises(ValueError, match="seed_state must be an int"):
        mx.random.seed(1.5)


def test_mx_random_reexports_nd_random():
    for name in ("uniform", "normal", "randn", "poisson", "exponential", "gamma",
                 "multinomial", "negative_binomial", "generalized_negative_binomial",
                 "shuffle", "randint"):
        assert getattr(mx.random, name) is getattr(nd.random, name)
    from symgraph.random import randint  # noqa: F401 - MXNet scripts import it this way


# ------------------------------------------------------------------ shapes and dtypes
@pytest.mark.parametrize("name,scalars,arrays,mean,var", DISTS, ids=IDS)
def test_shapes_and_dtypes(name, scalars, arrays, mean, var):
    fn = _fn(name)
    assert fn(*scalars).shape == (1,)  # oracle: shape (1,) when neither shape nor out
    assert fn(*scalars, shape=3).shape == (3,)
    assert fn(*scalars, shape=(2, 2), dtype="float64").dtype == np.float64
    assert fn(*scalars, shape=(2,), dtype=np.float16).dtype == np.float16
    per = [nd.array(a, dtype="float16") for a in arrays]
    got = fn(*per, shape=(3, 4))
    assert got.shape == (2, 3, 4) and got.dtype == np.float32  # oracle: float32 by default
    assert fn(*per).shape == (2,)
    out = nd.zeros((2, 5), dtype="float64")
    assert fn(*per, out=out) is out and out.dtype == np.float64
    out = nd.zeros((3, 2))
    assert fn(*scalars, out=out) is out
    like = getattr(nd.random, f"{name}_like")(nd.ones((4, 3), dtype="float16"), *scalars)
    assert like.shape == (4, 3) and like.dtype == np.float16


def test_randint_and_randn():
    # test_random.py::test_randint_without_dtype, test_randint_extremes
    a = nd.random.randint(low=50000000, high=50000010)
    assert a.dtype == np.int32 and a.shape == (1,)
    assert 50000000 <= int(a.asscalar()) < 50000010
    b = nd.random.randint(-500, 199, shape=(1000,), dtype="int64").asnumpy()
    assert b.dtype == np.int64 and b.min() >= -500 and b.max() < 199
    assert nd.random.randn(2, 3).shape == (2, 3)
    assert nd.random.randn(4, loc=nd.array([1, 2]), scale=nd.array([1, 1])).shape == (2, 4)
    with pytest.raises(ShapeError, match="cannot infer"):  # oracle: randn() fails too
        nd.random.randn()


def test_multinomial_shapes_and_dtypes():
    probs = nd.array([[0.125, 0.25, 0.625], [0.0625, 0.125, 0.8125]])
    out = nd.random.multinomial(probs, shape=100, get_prob=False)
    assert isinstance(out, nd.NDArray) and out.shape == (2, 100) and out.dtype == np.int32
    y, logp = nd.random.multinomial(probs, shape=(2, 3), get_prob=True, dtype="uint8")
    assert y.shape == logp.shape == (2, 2, 3) and y.dtype == np.uint8
    assert logp.dtype == np.float32
    assert nd.random.multinomial(nd.array([0.5, 0.5])).shape == (1,)  # oracle
    assert nd.random.multinomial(probs).shape == (2,)
    # the probabilities are not normalised: a draw past their sum is class k (MXNet)
    assert nd.random.multinomial(nd.array([0.1, 0.1]), shape=50).asnumpy().min() >= 0


def test_shuffle_permutes_first_axis_and_keeps_dtype():
    data = nd.arange(0, 12).reshape((4, 3)).astype("int64")
    got = nd.random.shuffle(data).asnumpy()
    assert got.dtype == np.int64
    np.testing.assert_array_equal(np.sort(got[:, 0]), [0, 3, 6, 9])
    np.testing.assert_array_equal(got - got[:, :1], np.tile([0, 1, 2], (4, 1)))
    seen = {tuple(nd.random.shuffle(nd.arange(0, 3)).asnumpy()) for _ in range(200)}
    assert len(seen) == 6


def test_unique_zipfian():
    # test_random.py::test_unique_zipfian_generator
    classes, trials = nd._internal._sample_unique_zipfian(793472, shape=(4, 8192))
    assert classes.dtype == trials.dtype == np.int64 and trials.shape == (4,)
    for i in range(4):
        assert np.unique(classes[i].asnumpy()).size == 8192
        assert 14500 < int(trials[i].asscalar()) < 17000


# ------------------------------------------------------------------ distributions
@pytest.mark.parametrize("name,scalars,arrays,mean,var", DISTS, ids=IDS)
def test_moments(name, scalars, arrays, mean, var):
    n = 100000
    x = _fn(name)(*scalars, shape=(n,), dtype="float64").asnumpy()
    sd = np.sqrt(var(*scalars))
    assert abs(x.mean() - mean(*scalars)) < 5 * sd / np.sqrt(n)
    assert abs(x.std() - sd) < 0.02 * sd
    per = _fn(name)(*[nd.array(a) for a in arrays], shape=(n,)).asnumpy()
    for i in range(2):
        params = [a[i] for a in arrays]
        sd = np.sqrt(var(*params))
        assert abs(per[i].mean() - mean(*params)) < 5 * sd / np.sqrt(n) + 1e-3, (i, params)


def test_chi_square_of_discrete_draws():
    n = 200000
    k = np.arange(0, 12)
    for draws, pmf in [
            (nd.random.poisson(3.0, shape=(n,)), ss.poisson.pmf(k, 3.0)),
            (nd.random.negative_binomial(2, 0.4, shape=(n,)), ss.nbinom.pmf(k, 2, 0.4)),
            (nd.random.generalized_negative_binomial(2.0, 0.5, shape=(n,)),
             ss.nbinom.pmf(k, 2.0, 0.5)),
            (nd.random.randint(0, 12, shape=(n,)), np.full(12, 1 / 12)),
            (nd.random.multinomial(nd.array(np.full(12, 1 / 12)), shape=n),
             np.full(12, 1 / 12))]:
        counts = np.bincount(draws.asnumpy().astype(np.int64), minlength=13)
        observed = np.append(counts[:12], counts[12:].sum())
        expected = np.append(pmf, max(1 - pmf.sum(), 0.0)) * n
        keep = expected > 5
        _, pvalue = ss.chisquare(observed[keep], expected[keep] * observed[keep].sum()
                                 / expected[keep].sum())
        assert pvalue > 1e-4, (pmf[:3], observed[:3])


def test_multinomial_log_probabilities_and_gradient():
    # test_random.py::test_sample_multinomial with attach_grad for mark_variables
    x = nd.array([[0, 1, 2, 3, 4], [4, 3, 2, 1, 0]]) / 10.0
    x.attach_grad()
    with mx.autograd.record():
        y, prob = nd.random.multinomial(x, shape=10000, get_prob=True, dtype="float32")
        (prob * 5).backward()
    y, xn = y.asnumpy().astype(np.int64), x.asnumpy()
    for i in range(2):
        freq = np.bincount(y[i], minlength=5) / 10000
        np.testing.assert_allclose(freq, xn[i], atol=0.02)
        np.testing.assert_allclose(prob.asnumpy()[i], np.log(xn[i][y[i]]), atol=1e-5)
        want = np.bincount(y[i], weights=5.0 / xn[i][y[i]], minlength=5)
        np.testing.assert_allclose(x.grad.asnumpy()[i], want, rtol=1e-4)


def test_samplers_have_zero_gradients():
    mu, sigma = nd.array([1.0, 2.0]), nd.array([1.0, 1.0])
    mu.attach_grad()
    sigma.attach_grad()
    with mx.autograd.record():
        y = nd.random.normal(mu, sigma, shape=3)
    y.backward()
    assert not mu.grad.asnumpy().any() and not sigma.grad.asnumpy().any()


PDFS = [
    ("normal", [[0.0, 2.5]], [[1.0, 3.7]], ss.norm.pdf),
    ("uniform", [[-1.0, 2.5]], [[3.0, 3.7]], lambda x, lo, hi: ss.uniform.pdf(x, lo, hi - lo)),
    ("gamma", [[0.5, 2.5]], [[1.0, 0.7]], lambda x, a, b: ss.gamma.pdf(x, a, 0, 1 / b)),
    ("exponential", [[2.0, 0.5]], None, lambda x, lam: ss.expon.pdf(x, 0, 1 / lam)),
    ("poisson", [[3.0, 0.5]], None, ss.poisson.pmf),
    ("negative_binomial", [[3.0, 4.0]], [[0.4, 0.77]], ss.nbinom.pmf),
    ("generalized_negative_binomial", [[2.0, 2.5]], [[1.0, 0.1]],
     lambda x, mu, a: ss.nbinom.pmf(x, 1 / a, 1 / (mu * a + 1))),
]


@pytest.mark.parametrize("name,first,second,pdf", PDFS, ids=[p[0] for p in PDFS])
def test_densities_match_scipy(name, first, second, pdf):
    discrete = name in ("poisson", "negative_binomial", "generalized_negative_binomial")
    rng = np.random.RandomState(0)
    x = rng.randint(0, 6, (1, 2, 5)).astype(np.float64) if discrete \
        else rng.uniform(0.1, 2.5, (1, 2, 5))
    if name == "uniform":  # inside the support: MXNet (and symgraph) never check it
        x = rng.uniform(2.5, 3.0, (1, 2, 5))
    params = [np.array(first)] + ([np.array(second)] if second is not None else [])
    want = pdf(x, *[p[..., None] for p in params])
    op = getattr(nd, f"random_pdf_{name}")
    got = op(nd.array(x, dtype="float64"), *[nd.array(p, dtype="float64") for p in params])
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6)
    log = op(nd.array(x), *[nd.array(p) for p in params], is_log=True)
    np.testing.assert_allclose(log.asnumpy(), np.log(want), rtol=1e-4, atol=1e-5)


def test_uniform_density_ignores_the_support_as_mxnet():
    got = nd.random_pdf_uniform(nd.array([[0.5, 3.0, -1.0]]), nd.array([0.0]), nd.array([2.0]))
    np.testing.assert_allclose(got.asnumpy(), [[0.5, 0.5, 0.5]])  # oracle


def test_dirichlet_density():
    alpha = np.array([[1.5, 0.7, 2.0]])
    x = ss.dirichlet.rvs(alpha[0], size=4, random_state=1)[None]
    got = nd.random_pdf_dirichlet(nd.array(x, dtype="float64"), nd.array(alpha, dtype="float64"),
                                  is_log=True)
    assert got.shape == (1, 4)
    np.testing.assert_allclose(got.asnumpy()[0], ss.dirichlet.logpdf(x[0].T, alpha[0]),
                               rtol=1e-8)


# ------------------------------------------------------------------ symbols
def test_symbol_front_end():
    v = mx.sym.var("v")
    assert mx.sym.random.poisson(v, shape=(3,)).infer_shape(v=(2, 2))[1] == [(2, 2, 3)]
    y = mx.sym.random.randn(loc=10, scale=0.5, dtype="float16", data=mx.sym.ones((2, 2)))
    assert y.infer_type()[1] == [np.float16]  # data= ignored, as MXNet composes it
    assert (y + v).infer_shape(v=(3, 4))[1] == [(3, 4)]
    outs = mx.sym.random.multinomial(v, shape=3, name="m").list_outputs()
    assert outs == ["m_output0", "m_output1"]  # oracle: get_prob=True for symbols
    assert mx.sym.random.multinomial(v, get_prob=False, name="m").list_outputs() == \
        ["m_output"]
    assert mx.sym.random.randint(0, 5, shape=(2,)).infer_type()[1] == [np.int32]
    assert mx.sym.random.uniform_like(v).infer_type(v="float64")[1] == [np.float64]
    assert not hasattr(mx.sym.random, "pdf_normal") and hasattr(mx.sym, "random_pdf_normal")
    assert not hasattr(nd.random, "pdf_normal") and hasattr(nd._internal, "_random_pdf_normal")
    gamma = mx.sym.random.gamma(2.0, 0.5, shape=(3,))
    assert mx.sym.load_json(gamma.tojson()).tojson() == gamma.tojson()


def test_executor_draws_per_element_samples():
    mu, sigma = mx.sym.var("mu"), mx.sym.var("sigma")
    exe = mx.sym.random.normal(mu, sigma, shape=(20000,)).bind(
        mx.cpu(), {"mu": nd.array([0.0, 100.0]), "sigma": nd.array([1.0, 0.1])})
    out = exe.forward()[0].asnumpy()
    np.testing.assert_allclose(out.mean(1), [0.0, 100.0], atol=0.05)
    np.testing.assert_allclose(out.std(1), [1.0, 0.1], rtol=0.05)


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize("call,error,match", [
    (lambda: nd.random.uniform(2, 1, shape=2), AttrError, "low must be less or equal"),
    (lambda: nd.random.normal(0, 0, shape=2), AttrError, "scale parameter in gaussian"),
    (lambda: nd.random.gamma(0, 1), AttrError, "alpha parameter in gamma"),
    (lambda: nd.random.poisson(-1), AttrError, "has to be non-negative"),
    (lambda: nd.random.negative_binomial(2, 1.5), AttrError, r"has to be in \(0, 1\]"),
    (lambda: nd.random.randint(3, 3), AttrError, "high must be greater than low"),
    (lambda: nd.random.uniform(0, 1, dtype="int32"), DTypeError, "Invalid Input: 'int32'"),
    (lambda: nd.random.randint(0, 3, dtype="float32"), DTypeError, "Invalid Input"),
    (lambda: nd.random.multinomial(nd.array([0.5, 0.5]), dtype="int64"), AttrError,
     "Invalid Input"),
    (lambda: nd.random.multinomial(nd.zeros(2 ** 25), dtype="float32"), DTypeError,
     "sufficient precision"),  # test_random.py::test_sample_multinomial's bound check
    (lambda: nd.random.uniform_like(nd.ones((2,), dtype="int32")), DTypeError,
     "floating point"),
    (lambda: nd.random.uniform(nd.array([1]), 2), TypeError, "same type"),
    (lambda: nd.random.randint(nd.array([1]), nd.array([2])), TypeError, "numbers only"),
    (lambda: nd.random.uniform("a", 2), ValueError, "NDArray or numbers"),
    (lambda: nd.random.uniform(nd.array([0, 1]), nd.array([1]), shape=2), ShapeError,
     "inconsistent"),
])
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_shuffle_is_not_differentiable():
    x = mx.sym.var("x")
    with pytest.raises(MXNetError, match="_shuffle is non-differentiable"):
        mx.sym.random.shuffle(x).simple_bind(mx.cpu(), x=(3, 2))
    assert mx.sym.random.shuffle(x).simple_bind(mx.cpu(), x=(3, 2), grad_req="null")


_DEVICE_DRAWS = [  # (symbol, input shapes): each op whose ``random`` is "device"
    (lambda: mx.sym.Dropout(mx.sym.var("x"), p=0.3, mode="always"), {"x": (4, 5)}),
    (lambda: mx.sym.Dropout(mx.sym.var("x"), p=0.3, mode="always", axes=(1,)), {"x": (3, 4)}),
    (lambda: mx.sym.LeakyReLU(mx.sym.var("x"), act_type="rrelu"), {"x": (4, 5)}),  # x < 0
    (lambda: mx.sym.random.normal(shape=(3, 4)), {}),
    (lambda: mx.sym.random.randint(low=0, high=9, shape=(5,)), {}),
    (lambda: mx.sym.random.uniform_like(mx.sym.var("x")), {"x": (2, 3)}),
    (lambda: mx.sym.sample_gamma(mx.sym.var("x"), mx.sym.var("y"), shape=(2,)),
     {"x": (3,), "y": (3,)}),
    (lambda: mx.sym.sample_multinomial(mx.sym.var("x"), shape=(3,)), {"x": (2, 4)}),
    (lambda: mx.sym.shuffle(mx.sym.var("x")), {"x": (6, 2)}),
    (lambda: mx.sym.RNN(mx.sym.var("x"), mx.sym.var("w"), mx.sym.var("h"), mx.sym.var("c"),
                        state_size=3, num_layers=2, mode="lstm", p=0.5),
     {"x": (3, 2, 4), "h": (2, 2, 3), "c": (2, 2, 3)}),
]


@pytest.mark.parametrize("make, shapes", _DEVICE_DRAWS)
def test_device_draws_read_nothing_back_and_may_be_captured(make, shapes, monkeypatch):
    """Issue #22: an op marked ``random="device"`` takes its Philox seed on the device
    (``ops.base.draw_seed``) and its Triton path reads no value back to the host, so a
    CUDA graph may capture it (``cuda_graph.wanted``) and each replay draws anew."""
    from symgraph.compiler import cuda_graph
    net = make()
    with config.override(backend="triton"):
        exe = net.simple_bind(mx.cpu(), grad_req="null", **shapes)
    for arr in exe.arg_dict.values():
        arr[:] = np.random.RandomState(0).uniform(0.1, 0.9, arr.shape) * \
            (-1 if net.list_outputs()[0].startswith("leakyrelu") else 1)
    steps = exe._plan.forward_train
    assert any(s[-1].op.draws_random(s[1]) for s in steps if s[-1].op is not None)
    assert cuda_graph.wanted(torch.device("cuda"), steps)

    def host_read(*args, **kwargs):
        raise AssertionError("a device value was read back to the host")
    for attr in ("item", "tolist", "__int__", "__float__", "__bool__", "__index__"):
        monkeypatch.setattr(torch.Tensor, attr, host_read)
    exe.forward(is_train=True)
    monkeypatch.undo()
    first = exe.outputs[0].asnumpy().copy()
    exe.forward(is_train=True)
    assert not np.array_equal(first, exe.outputs[0].asnumpy())  # a new draw each run


def test_host_draws_keep_a_plan_out_of_cuda_graphs():
    from symgraph.compiler import cuda_graph
    exe = mx.sym._internal._sample_unique_zipfian(range_max=40, shape=(3, 10)).simple_bind(
        mx.cpu())
    assert not cuda_graph.wanted(torch.device("cuda"), exe._plan.forward_train)
