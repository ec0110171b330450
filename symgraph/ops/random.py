"""Random sampling operators and densities (MXNet's ``src/operator/random``).

- ``_random_X`` (aliases ``random_X``; also ``uniform`` and ``normal``): samples of shape
  ``shape`` from one distribution with scalar parameters; ``ctx`` and ``dtype`` as creation
  ops have them (``dtype`` None is float32).
- ``_random_X_like``: the same, shaped and typed like the input ``data``.
- ``_sample_X`` (``sample_X``): one distribution per element of the parameter arrays; the
  output has shape ``parameters.shape + shape``.
- ``_random_randint``; ``_sample_multinomial`` (with ``get_prob`` also the log-probability of
  each draw, differentiable w.r.t. the probabilities); ``_shuffle`` (along the first axis).
- ``_random_pdf_X``: densities (``is_log``: log-densities) of samples under per-element
  parameters, differentiable through the hidden ``_backward_pdf_X`` ops.

Samplers draw from the runtime's generator (``rt.generator``: one per device,
:mod:`symgraph.random`), so ``mx.random.seed`` reproduces them. The numbers are torch's, not
MXNet's; the distributions are the same. On the Triton path (``kernel``) each launch takes a
62-bit seed drawn on the device from that generator (``draw_seed``: no host read, so these
ops are ``random="device"`` and capture as CUDA graphs) and draws from Philox
(``kernels/random.py``): the same distributions, other numbers; densities run
``kernels/random_pdf.py``. Samplers compute in float32 (float64 for float64 outputs) and
round to the output dtype. As in MXNet, sampling is not differentiated: gradients of the
parameters are zeros, and ``_shuffle`` has no gradient at all.

>>> import symgraph as mx
>>> mx.random.seed(3)
>>> a = mx.nd.random.gamma(2.0, 0.5, shape=(20000,))
>>> mx.random.seed(3)
>>> bool((a == mx.nd.random.gamma(2.0, 0.5, shape=(20000,))).min())
True
>>> round(float(a.mean().asscalar()), 1)  # alpha * beta
1.0
>>> mx.nd.random.uniform(2, 1, shape=2)
Traceback (most recent call last):
...
symgraph.base.AttrError: Error in operator _random_uniform: low must be less or equal to \
high in uniform distribution (low=2.0, high=1.0)
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..attrs import Param
from ..base import TORCH_TO_NAME, AttrError, DTypeError, MXNetError, ShapeError, to_torch_dtype
from .base import (
    Case,
    OpDef,
    PlanHints,
    draw_seed,
    known,
    merge_shape,
    register,
    same_type,
    unary_shape,
)

_FLOATS = ("float16", "float32", "float64")


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise AttrError(message)


def _check_dtype(dtype, choices: tuple[str, ...]) -> None:
    if dtype is not None and dtype not in choices:
        raise DTypeError(f"Invalid Input: '{dtype}', valid values are: "
                         f"{', '.join(('None',) + choices)}")


def _check_float_input(dtype_name: str | None, op: str) -> None:
    if dtype_name is not None and dtype_name not in _FLOATS:
        raise DTypeError(f"{op}: this operation only supports floating point types, not "
                         f"{dtype_name}")


def _named(fn: Callable, name: str) -> Callable:
    """``fn`` under ``name`` (plans label a launch ``triton:<name>``)."""
    fn.__name__ = fn.__qualname__ = name
    return fn


class _Source:
    """What a sampler draws with: the generator, the compute dtype and the device."""

    def __init__(self, rt, out_dtype: torch.dtype):
        self.gen = rt.generator
        self.dtype = torch.float64 if out_dtype == torch.float64 else torch.float32
        self.device = rt.device

    def rand(self, shape) -> torch.Tensor:
        return torch.rand(shape, generator=self.gen, dtype=self.dtype, device=self.device)

    def randn(self, shape) -> torch.Tensor:
        return torch.randn(shape, generator=self.gen, dtype=self.dtype, device=self.device)

    def full(self, value, shape) -> torch.Tensor:
        """``value`` (a number or a tensor broadcasting to ``shape``) as a dense tensor."""
        t = torch.as_tensor(value, dtype=self.dtype, device=self.device)
        return t.expand(shape).contiguous()

    def gamma(self, alpha, shape) -> torch.Tensor:
        """Gamma(alpha, 1) draws."""
        return torch._standard_gamma(self.full(alpha, shape), generator=self.gen)

    def poisson(self, rate, shape) -> torch.Tensor:
        return torch.poisson(self.full(rate, shape).clamp(min=0), generator=self.gen)


# ------------------------------------------------------------------ the distributions
# draw(src, shape, *parameters): parameters are numbers, or tensors broadcasting to shape

def _uniform(src, shape, low, high):
    return low + (high - low) * src.rand(shape)


def _normal(src, shape, loc, scale):
    return loc + scale * src.randn(shape)


def _gamma(src, shape, alpha, beta):
    return src.gamma(alpha, shape) * beta


def _exponential(src, shape, lam):
    unit = torch.empty(shape, dtype=src.dtype, device=src.device)
    return unit.exponential_(1.0, generator=src.gen) / lam


def _poisson(src, shape, lam):
    return src.poisson(lam, shape)


def _negative_binomial(src, shape, k, p):
    """Failures before the k-th success: Poisson with a Gamma(k, (1 - p) / p) rate."""
    return src.poisson(src.gamma(k, shape) * ((1.0 - p) / p), shape)


def _generalized_negative_binomial(src, shape, mu, alpha):
    """Mean mu, variance mu + alpha mu^2: Poisson with a Gamma(1 / alpha, alpha mu) rate
    (alpha = 0 is Poisson(mu))."""
    alpha, mu = src.full(alpha, shape), src.full(mu, shape)
    positive = alpha > 0
    safe = torch.where(positive, alpha, torch.ones_like(alpha))
    rate = torch.where(positive, src.gamma(1.0 / safe, shape) * safe * mu, mu)
    return src.poisson(rate, shape)


@dataclass(frozen=True)
class _Dist:
    """One distribution: its scalar parameters (``_random_X``), the input names of its
    per-element sampler (``_sample_X``), a draw function and checks of scalar values."""

    name: str
    scalars: tuple[Param, ...]
    inputs: tuple[str, ...]
    draw: Callable
    check: Callable | None
    example: dict
    short_alias: bool = False  # also registered as plain ``uniform``/``normal``


def _f(name: str, default: float, doc: str) -> Param:
    return Param(name, "float", default, doc=doc)


_DISTS = (
    _Dist("uniform", (_f("low", 0.0, "Lower bound."), _f("high", 1.0, "Upper bound.")),
          ("low", "high"), _uniform,
          lambda p: _require(p.high >= p.low, "low must be less or equal to high in uniform "
                             f"distribution (low={p.low}, high={p.high})"),
          {"low": -1.0, "high": 2.0}, short_alias=True),
    _Dist("normal", (_f("loc", 0.0, "Mean."), _f("scale", 1.0, "Standard deviation.")),
          ("mu", "sigma"), _normal,
          lambda p: _require(p.scale > 0, "scale parameter in gaussian has to be positive "
                             f"(scale={p.scale})"),
          {"loc": 1.0, "scale": 2.0}, short_alias=True),
    _Dist("gamma", (_f("alpha", 1.0, "Shape."), _f("beta", 1.0, "Scale.")),
          ("alpha", "beta"), _gamma,
          lambda p: (_require(p.alpha > 0, "alpha parameter in gamma distribution has to be "
                              f"positive (alpha={p.alpha})"),
                     _require(p.beta > 0, "beta parameter in gamma distribution has to be "
                              f"positive (beta={p.beta})")),
          {"alpha": 2.0, "beta": 0.5}),
    _Dist("exponential", (_f("lam", 1.0, "Rate."),), ("lam",), _exponential,
          lambda p: _require(p.lam > 0, "lambda parameter in exponential distribution has "
                             f"to be positive (lam={p.lam})"),
          {"lam": 2.0}),
    _Dist("poisson", (_f("lam", 1.0, "Rate."),), ("lam",), _poisson,
          lambda p: _require(p.lam >= 0, "lambda parameter in poisson distribution has to "
                             f"be non-negative (lam={p.lam})"),
          {"lam": 3.0}),
    _Dist("negative_binomial",
          (Param("k", "int", 1, doc="Number of successes to wait for."),
           _f("p", 1.0, "Success probability of each trial.")),
          ("k", "p"), _negative_binomial,
          lambda p: (_require(p.k >= 0, f"k parameter in negative binomial distribution has "
                              f"to be non-negative (k={p.k})"),
                     _require(0 < p.p <= 1, "p parameter in negative binomial distribution "
                              f"has to be in (0, 1] (p={p.p})")),
          {"k": 3, "p": 0.4}),
    _Dist("generalized_negative_binomial",
          (_f("mu", 1.0, "Mean."), _f("alpha", 1.0, "Dispersion.")),
          ("mu", "alpha"), _generalized_negative_binomial,
          lambda p: (_require(p.mu >= 0, "mu parameter in generalized negative binomial "
                              f"distribution has to be non-negative (mu={p.mu})"),
                     _require(p.alpha >= 0, "alpha parameter in generalized negative "
                              "binomial distribution has to be non-negative "
                              f"(alpha={p.alpha})")),
          {"mu": 2.0, "alpha": 0.3}),
)

_CREATION = (Param("shape", "shape_or_none", None, doc="Shape of the output."),
             Param("ctx", "str", "", doc="Device of the output (imperative calls)."),
             Param("dtype", "dtype_or_none", None,
                   doc="Output dtype: float16, float32 (None) or float64."))
_SAMPLE = (Param("shape", "shape", (), doc="Samples drawn from each distribution."),
           Param("dtype", "dtype_or_none", None,
                 doc="Output dtype: float16, float32 (None) or float64."))


def _out_shape(p) -> tuple:
    """The output shape: inference's completion of ``p.shape`` (0 = inferred) when bound."""
    return p.get("_out_shape") or tuple(p.shape or ())


def _creation_shape(p, shapes):
    """``shape`` (0 entries are completed by inference); unknown when not given."""
    return ([], [tuple(p.shape)]) if p.shape else None


def _no_gradient(g, p, ins, outs, og):
    return [g.zeros(x) for x in ins]


def _scalar_params(d: _Dist, p) -> tuple:
    """The scalar parameters as the sampling kernel takes them: (a, b or None)."""
    values = [p[q.name] for q in d.scalars]
    return values[0], (values[1] if len(values) > 1 else None)


def _random_op(d: _Dist) -> OpDef:
    def forward(p, ins, aux, rt):
        dtype = to_torch_dtype(p.dtype or "float32")
        draws = d.draw(_Source(rt, dtype), _out_shape(p), *(p[q.name] for q in d.scalars))
        return (draws.to(dtype),)

    def kernel(p, ins, aux, rt):
        from ..kernels.random import sample
        dtype = to_torch_dtype(p.dtype or "float32")
        return (sample(d.name, *_scalar_params(d, p), _out_shape(p), draw_seed(rt), dtype,
                       device=rt.device),)

    def check(p):
        _check_dtype(p.dtype, _FLOATS)
        d.check(p)

    aliases = (f"random_{d.name}",) + ((d.name,) if d.short_alias else ())
    return OpDef(
        name=f"_random_{d.name}", aliases=aliases, params=d.scalars + _CREATION, inputs=(),
        infer_shape=_creation_shape, infer_type=lambda p, t: ([], [p.dtype or "float32"]),
        forward=forward, kernel=_named(kernel, f"triton_random_{d.name}"), check=check,
        random="device", hints=PlanHints(reads_out_shape=True),
        gradient=lambda g, p, ins, outs, og: [],
        cases=(Case((), {"shape": (3, 4), **d.example}, grad=False),
               Case((), {"shape": (5,), "dtype": "float64", **d.example}, grad=False)),
        doc=f"Samples of ``shape`` from the {d.name.replace('_', ' ')} distribution with "
            "the given scalar parameters.")


def _like_type(p, types):
    _check_float_input(types[0], "random *_like")
    return same_type(p, types)


def _like_op(d: _Dist) -> OpDef:
    def forward(p, ins, aux, rt):
        data = ins[0]
        _check_float_input(TORCH_TO_NAME.get(data.dtype), f"_random_{d.name}_like")
        draws = d.draw(_Source(rt, data.dtype), tuple(data.shape),
                       *(p[q.name] for q in d.scalars))
        return (draws.to(data.dtype),)

    def kernel(p, ins, aux, rt):
        from ..kernels.random import sample
        data = ins[0]
        _check_float_input(TORCH_TO_NAME.get(data.dtype), f"_random_{d.name}_like")
        return (sample(d.name, *_scalar_params(d, p), tuple(data.shape), draw_seed(rt),
                       data.dtype, device=data.device),)

    return OpDef(
        name=f"_random_{d.name}_like", params=d.scalars, inputs=("data",),
        infer_shape=unary_shape, infer_type=_like_type, forward=forward,
        kernel=_named(kernel, f"triton_random_{d.name}_like"), check=d.check,
        random="device", gradient=_no_gradient,
        cases=(Case(((3, 4),), dict(d.example), grad=False),),
        doc=f"Samples from the {d.name.replace('_', ' ')} distribution, shaped and typed like "
            "``data``.")


def _sample_shape(p, shapes):
    merged = ()
    for i, s in enumerate(shapes):
        merged = merge_shape(merged, s, f"parameter input {i}")
    if not merged:
        return None
    return [merged] * len(shapes), [merged + tuple(p.shape)]


def _sample_type(p, types):
    known_types = {t for t in types if t is not None}
    if len(known_types) > 1:
        raise DTypeError(f"the parameter inputs must share one dtype, got {sorted(known_types)}")
    first = next(iter(known_types), None)
    return [first] * len(types), [p.dtype or "float32"]


def _sample_op(d: _Dist) -> OpDef:
    def forward(p, ins, aux, rt):
        dtype = to_torch_dtype(p.dtype or "float32")
        src = _Source(rt, dtype)
        lead = tuple(ins[0].shape)
        view = lead + (1,) * len(p.shape)
        params = [t.to(src.dtype).reshape(view) for t in ins]
        return (d.draw(src, lead + tuple(p.shape), *params).to(dtype),)

    def kernel(p, ins, aux, rt):
        from ..kernels.random import sample
        dtype = to_torch_dtype(p.dtype or "float32")
        return (sample(d.name, ins[0], ins[1] if len(ins) > 1 else None, tuple(p.shape),
                       draw_seed(rt), dtype),)

    low, high = (0.1, 0.9) if d.name == "negative_binomial" else (0.5, 2.0)
    return OpDef(
        name=f"_sample_{d.name}", aliases=(f"sample_{d.name}",), params=_SAMPLE,
        inputs=d.inputs, infer_shape=_sample_shape, infer_type=_sample_type, forward=forward,
        kernel=_named(kernel, f"triton_sample_{d.name}"),
        check=lambda p: _check_dtype(p.dtype, _FLOATS), random="device",
        gradient=_no_gradient,
        cases=(Case(((2, 3),) * len(d.inputs), {"shape": (4,)}, low=low, high=high,
                    grad=False),
               Case(((3,),) * len(d.inputs), {"dtype": "float64"}, low=low, high=high,
                    grad=False)),
        doc=f"Samples from {d.name.replace('_', ' ')} distributions, one per element of the "
            "parameter arrays: the output shape is their shape followed by ``shape``.")


for _d in _DISTS:
    register(_random_op(_d))
    register(_like_op(_d))
    register(_sample_op(_d))


# ------------------------------------------------------------------ randint

def _randint_forward(p, ins, aux, rt):
    dtype = to_torch_dtype(p.dtype or "int32")
    out = torch.randint(p.low, p.high, _out_shape(p), generator=rt.generator,
                        dtype=torch.int64, device=rt.device)
    return (out.to(dtype),)


def _randint_kernel(p, ins, aux, rt):
    from ..kernels.random import sample
    dtype = to_torch_dtype(p.dtype or "int32")
    return (sample("randint", p.low, p.high, _out_shape(p), draw_seed(rt), dtype,
                   device=rt.device),)


def _randint_check(p):
    _check_dtype(p.dtype, ("int32", "int64"))
    _require(p.high > p.low, "high must be greater than low in randint "
             f"(low={p.low}, high={p.high})")


register(OpDef(
    name="_random_randint", aliases=("random_randint",),
    params=(Param("low", "int", doc="Lower bound (inclusive)."),
            Param("high", "int", doc="Upper bound (exclusive)."),
            *_CREATION[:2],
            Param("dtype", "dtype_or_none", None, doc="Output dtype: int32 (None) or int64.")),
    inputs=(), infer_shape=_creation_shape,
    infer_type=lambda p, t: ([], [p.dtype or "int32"]), forward=_randint_forward,
    kernel=_named(_randint_kernel, "triton_random_randint"),
    check=_randint_check, random="device", hints=PlanHints(reads_out_shape=True),
    gradient=lambda g, p, ins, outs, og: [],
    cases=(Case((), {"low": -3, "high": 7, "shape": (4, 5)}, grad=False),
           Case((), {"low": 0, "high": 2**40, "shape": (6,), "dtype": "int64"}, grad=False)),
    doc="Integers drawn uniformly from ``[low, high)``."))


# ------------------------------------------------------------------ multinomial

_MULTINOMIAL_DTYPES = ("float16", "float32", "float64", "int32", "uint8")
# the largest class index each output dtype holds exactly; MXNet refuses more classes
_MAX_INDEX = {"uint8": 255, "int32": 2**31 - 1, "float16": 2**11, "float32": 2**24,
              "float64": 2**53}


def _multinomial_shape(p, shapes):
    data = shapes[0]
    if not known(data):
        return None
    if data[-1] > _MAX_INDEX[p.dtype]:
        raise DTypeError(f"dtype {p.dtype} does not have a sufficient precision to represent "
                         f"the indices of the input array ({data[-1]} classes)")
    out = (tuple(data[:-1]) + tuple(p.shape)) or (1,)
    return [data], [out] * (2 if p.get_prob else 1)


def _multinomial_type(p, types):
    return types, ([p.dtype, types[0]] if p.get_prob else [p.dtype])


def _multinomial_forward(p, ins, aux, rt):
    """Class i is drawn when cumsum(probs)[i - 1] <= u < cumsum(probs)[i], u ~ U[0, 1) (the
    probabilities are not normalised, as in MXNet)."""
    data = ins[0]
    k = data.shape[-1]
    rows = data.reshape(-1, k).to(torch.float64 if data.dtype == torch.float64
                                  else torch.float32)
    out_shape = (tuple(data.shape[:-1]) + tuple(p.shape)) or (1,)
    per_row = math.prod(p.shape)
    u = torch.rand((rows.shape[0], per_row), generator=rt.generator, dtype=rows.dtype,
                   device=data.device)
    idx = torch.searchsorted(rows.cumsum(1).contiguous(), u, right=True)
    out = idx.reshape(out_shape).to(to_torch_dtype(p.dtype))
    if not p.get_prob:
        return (out,)
    logp = torch.log(rows.gather(1, idx.clamp(max=k - 1)))
    return out, logp.reshape(out_shape).to(data.dtype)


def _multinomial_kernel(p, ins, aux, rt):
    """The Triton inverse-CDF search (prefix sums, then a binary search per draw)."""
    from ..kernels.random import multinomial
    data = ins[0]
    out_shape = (tuple(data.shape[:-1]) + tuple(p.shape)) or (1,)
    drawn = multinomial(data, math.prod(p.shape), draw_seed(rt), to_torch_dtype(p.dtype),
                        p.get_prob)
    return tuple(t.reshape(out_shape) for t in (drawn if p.get_prob else (drawn,)))


def _multinomial_gradient(g, p, ins, outs, og):
    if not p.get_prob:
        return [g.zeros(ins[0])]
    return [g.op("_backward_sample_multinomial", og[1], ins[0], outs[0])]


def _multinomial_backward(p, ins, aux, rt):
    """d log(probs[class]) / d probs: the head gradient over the drawn class's probability,
    summed into that class."""
    ograd, data, sample = ins
    k = data.shape[-1]
    rows = data.reshape(-1, k)
    idx = sample.reshape(rows.shape[0], -1).long().clamp(0, k - 1)
    contrib = ograd.reshape(idx.shape).to(rows.dtype) / rows.gather(1, idx)
    return (torch.zeros_like(rows).scatter_add_(1, idx, contrib).reshape(data.shape),)


def _multinomial_backward_kernel(p, ins, aux, rt):
    """A Triton scatter-add (atomics) of ograd / p[class] into the drawn classes."""
    from ..kernels.random import multinomial_backward
    return (multinomial_backward(*ins),)


register(OpDef(
    name="_sample_multinomial", aliases=("sample_multinomial",),
    params=(Param("shape", "shape", (), doc="Samples drawn from each distribution."),
            Param("get_prob", "bool", False, doc="Also return the log-probability of each "
                  "draw (for differentiating through the draw, e.g. REINFORCE)."),
            Param("dtype", "dtype", "int32", choices=_MULTINOMIAL_DTYPES,
                  doc="Dtype of the drawn class indices.")),
    inputs=("data",), outputs=lambda p: ["output0", "output1"] if p.get_prob else ["output"],
    infer_shape=_multinomial_shape, infer_type=_multinomial_type,
    forward=_multinomial_forward, kernel=_named(_multinomial_kernel, "triton_multinomial"),
    random="device", gradient=_multinomial_gradient,
    cases=(Case(((2, 5),), {"shape": (3,), "get_prob": True}, low=0.05, high=0.4,
                no_grad_inputs=()),
           Case(((6,),), {"dtype": "float32"}, low=0.05, high=0.3, grad=False),
           Case(((2, 3, 4),), {"shape": (2, 2), "dtype": "uint8"}, low=0.05, high=0.4,
                grad=False)),
    doc="Class indices drawn from the categorical distributions over the last axis of "
        "``data`` (probabilities); the output shape is ``data.shape[:-1] + shape``."))

register(OpDef(
    name="_backward_sample_multinomial", inputs=("ograd", "data", "sample"), hidden=True,
    infer_shape=lambda p, s: (s, [s[1]]) if s[1] else None,
    infer_type=lambda p, t: (t, [t[1]]), forward=_multinomial_backward,
    kernel=_named(_multinomial_backward_kernel, "triton_multinomial_backward"),
    doc="Gradient of ``_sample_multinomial``'s log-probabilities w.r.t. the probabilities."))


# ------------------------------------------------------------------ unique zipfian

def _zipfian_row(draw: Callable, n: int, device) -> tuple[torch.Tensor, int]:
    """``n`` distinct classes in the order first drawn from P(c) ~ log((c + 2) / (c + 1)),
    and how many draws that took; ``draw(count, drawn)`` gives the next ``count`` draws."""
    draws = torch.empty(0, dtype=torch.int64, device=device)
    chunk = 2 * n
    while True:
        draws = torch.cat([draws, draw(chunk, len(draws))])
        classes, inverse = torch.unique(draws, return_inverse=True)
        if len(classes) >= n:
            break
        chunk *= 2
    positions = torch.arange(len(draws), device=device)
    first = torch.full((len(classes),), len(draws), dtype=torch.int64, device=device)
    first = first.scatter_reduce_(0, inverse, positions, "amin").sort().values[:n]
    return draws[first], int(first[-1]) + 1


def _unique_zipfian_forward(p, ins, aux, rt):
    log_range = math.log(p.range_max + 1)

    def draw(count, drawn):
        u = torch.rand(count, generator=rt.generator, dtype=torch.float64, device=rt.device)
        return ((u * log_range).exp() - 1).long() % p.range_max
    return _zipfian_rows([_zipfian_row(draw, p.shape[1], rt.device)
                          for _ in range(p.shape[0])], rt.device)


def _zipfian_rows(rows: list, device) -> tuple[torch.Tensor, torch.Tensor]:
    trials = torch.tensor([t for _, t in rows], dtype=torch.int64, device=device)
    return torch.stack([r for r, _ in rows]), trials


def _unique_zipfian_kernel(p, ins, aux, rt):
    """Each row's draws from a Triton log-uniform kernel (one seed per row, the stream
    continued across chunks); the first-occurrence bookkeeping stays in torch."""
    from ..kernels.random import sample

    def row(seed):
        return _zipfian_row(lambda count, drawn: sample(
            "log_uniform", p.range_max, None, (count,), seed, torch.int64, offset=drawn,
            device=rt.device), p.shape[1], rt.device)
    return _zipfian_rows([row(draw_seed(rt)) for _ in range(p.shape[0])], rt.device)


def _unique_zipfian_check(p):
    _require(p.shape is not None and len(p.shape) == 2, "shape must be 2-D (batch_size, "
             f"num_sampled), got {p.shape}")
    _require(0 < p.shape[1] <= p.range_max, f"cannot draw {p.shape[1]} distinct classes "
             f"from range_max={p.range_max}")


register(OpDef(
    name="_sample_unique_zipfian",
    params=(Param("range_max", "int", doc="Number of classes."),
            Param("shape", "shape_or_none", None, doc="(batch_size, num_sampled).")),
    inputs=(), outputs=("output0", "output1"),
    infer_shape=lambda p, s: ([], [tuple(p.shape), tuple(p.shape[:1])]),
    infer_type=lambda p, t: ([], ["int64", "int64"]), forward=_unique_zipfian_forward,
    kernel=_named(_unique_zipfian_kernel, "triton_unique_zipfian"),
    check=_unique_zipfian_check, random=True, gradient=lambda g, p, ins, outs, og: [],
    cases=(Case((), {"range_max": 40, "shape": (3, 10)}, grad=False),),
    doc="Per row, ``num_sampled`` distinct classes of ``[0, range_max)`` drawn from the "
        "log-uniform (Zipfian) distribution, and the number of draws each row took."))


# ------------------------------------------------------------------ shuffle

def _shuffle_forward(p, ins, aux, rt):
    x = ins[0]
    perm = torch.randperm(x.shape[0], generator=rt.generator, device=x.device)
    return (x.index_select(0, perm),)


def _shuffle_kernel(p, ins, aux, rt):
    """Philox keys sorted into a permutation; the rows moved by the Triton gather."""
    from ..kernels.random import shuffle
    return (shuffle(ins[0], draw_seed(rt)),)


def _shuffle_gradient(g, p, ins, outs, og):
    raise MXNetError("Operator _shuffle is non-differentiable because it didn't register "
                     "FGradient attribute.")


register(OpDef(
    name="_shuffle", aliases=("shuffle",), infer_shape=unary_shape,
    forward=_shuffle_forward, kernel=_named(_shuffle_kernel, "triton_shuffle"), random="device",
    gradient=_shuffle_gradient,
    cases=(Case(((5, 3),), grad=False), Case(((7,),), grad=False)),
    doc="A random permutation of ``data`` along its first axis (any dtype)."))


# ------------------------------------------------------------------ densities

def _nb_log(x, k, p):
    return (torch.lgamma(x + k) - torch.lgamma(x + 1) - torch.lgamma(k) + k * torch.log(p)
            + x * torch.log1p(-p))


@dataclass(frozen=True)
class _Pdf:
    """A density: its parameter inputs, its log-density (torch, differentiable) and whether
    MXNet gives no gradient w.r.t. the samples (discrete distributions, uniform)."""

    name: str
    params: tuple[str, ...]
    log_density: Callable
    flat_in_sample: bool = False
    low: float = 0.5  # the range of the test cases' inputs
    high: float = 2.0
    case_shape: tuple = (2, 3)  # (2, 2) draws uniform's bounds in order: low < high


_PDFS = (
    _Pdf("normal", ("mu", "sigma"),
         lambda x, mu, sigma: (-0.5 * ((x - mu) / sigma) ** 2 - torch.log(sigma)
                               - 0.5 * math.log(2 * math.pi))),
    _Pdf("uniform", ("low", "high"),
         lambda x, low, high: (-torch.log(high - low)).expand(x.shape), flat_in_sample=True,
         low=0.0, high=3.0, case_shape=(2, 2)),
    _Pdf("gamma", ("alpha", "beta"),
         lambda x, a, b: a * torch.log(b) + (a - 1) * torch.log(x) - b * x - torch.lgamma(a)),
    _Pdf("exponential", ("lam",), lambda x, lam: torch.log(lam) - lam * x),
    _Pdf("poisson", ("lam",),
         lambda x, lam: x * torch.log(lam) - lam - torch.lgamma(x + 1), flat_in_sample=True),
    _Pdf("negative_binomial", ("k", "p"), _nb_log, flat_in_sample=True, low=0.2, high=0.8),
    _Pdf("generalized_negative_binomial", ("mu", "alpha"),
         lambda x, mu, alpha: _nb_log(x, 1 / alpha, 1 / (mu * alpha + 1)),
         flat_in_sample=True, low=0.2, high=0.8),
    _Pdf("dirichlet", ("alpha",),
         lambda x, a: (((a - 1) * torch.log(x)).sum(-1) + torch.lgamma(a.sum(-1))
                       - torch.lgamma(a).sum(-1)),
         low=0.2, high=0.8),
)


def _pdf_value(pdf: _Pdf, is_log: bool, x: torch.Tensor, params: list) -> torch.Tensor:
    """The (log-)density of each sample, parameters broadcast over the trailing sample
    dimensions (dirichlet: the last axis holds the categories)."""
    lead = tuple(params[0].shape)
    if pdf.name == "dirichlet":
        view = lead[:-1] + (1,) * (x.dim() - len(lead)) + lead[-1:]
    else:
        view = lead + (1,) * (x.dim() - len(lead))
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    logp = pdf.log_density(x.to(work), *(t.to(work).reshape(view) for t in params))
    return (logp if is_log else torch.exp(logp)).to(x.dtype)


def _pdf_shape(pdf: _Pdf):
    def rule(p, shapes):
        x, merged = shapes[0], ()
        for name, s in zip(pdf.params, shapes[1:]):
            merged = merge_shape(merged, s, f"parameter {name}")
        if not (known(x) and known(merged)):
            return None
        if pdf.name == "dirichlet":
            ok = len(x) >= len(merged) and x[:len(merged) - 1] == merged[:-1] \
                and x[-1] == merged[-1]
            out = x[:-1]
        else:
            ok, out = x[:len(merged)] == merged, x
        if not ok:
            raise ShapeError(f"sample shape {x} does not extend the parameter shape {merged}")
        return [x] + [merged] * len(pdf.params), [out]
    return rule


def _pdf_backward(pdf: _Pdf):
    def forward(p, ins, aux, rt):
        ograd, *values = ins
        with torch.enable_grad():
            leaves = [t.detach().requires_grad_() for t in values]
            density = _pdf_value(pdf, p.is_log, leaves[0], leaves[1:])
            grads = torch.autograd.grad(density, leaves, ograd.to(density.dtype),
                                        allow_unused=True)
        out = [torch.zeros_like(t) if gr is None else gr for t, gr in zip(values, grads)]
        if pdf.flat_in_sample:
            out[0] = torch.zeros_like(values[0])
        return tuple(out)
    return forward


def _pdf_kernel(pdf: _Pdf):
    def kernel(p, ins, aux, rt):
        from ..kernels.random_pdf import pdf as launch
        x, a, *b = ins
        return (launch(pdf.name, x, a, b[0] if b else None, p.is_log),)
    return _named(kernel, f"triton_pdf_{pdf.name}")


def _pdf_backward_kernel(pdf: _Pdf):
    def kernel(p, ins, aux, rt):
        from ..kernels.random_pdf import pdf_backward
        og, x, a, *b = ins
        return pdf_backward(pdf.name, og, x, a, b[0] if b else None, p.is_log)
    return _named(kernel, f"triton_pdf_{pdf.name}_backward")


def _pdf_gradient(pdf: _Pdf):
    def gradient(g, p, ins, outs, og):
        grads = g.multi(f"_backward_pdf_{pdf.name}", og[0], *ins, is_log=p.is_log)
        if pdf.flat_in_sample:
            grads[0] = g.zeros(ins[0])
        return grads
    return gradient


def _pdf_cases(pdf: _Pdf) -> tuple[Case, ...]:
    n = len(pdf.params)
    if pdf.name == "dirichlet":
        shapes = ((2, 4, 3), (2, 3))
    else:
        shapes = (pdf.case_shape,) + ((2,),) * n
    no_sample = (0,) if pdf.flat_in_sample else ()
    return tuple(Case(shapes, {"is_log": is_log}, low=pdf.low, high=pdf.high,
                      no_grad_inputs=no_sample, rtol=1e-3, atol=1e-6)
                 for is_log in (False, True))


_IS_LOG = (Param("is_log", "bool", False, doc="Return log-densities instead."),)

for _pdf in _PDFS:
    register(OpDef(
        name=f"_random_pdf_{_pdf.name}", aliases=(f"random_pdf_{_pdf.name}",), params=_IS_LOG,
        inputs=("sample",) + _pdf.params, infer_shape=_pdf_shape(_pdf),
        forward=lambda p, ins, aux, rt, _pdf=_pdf: (_pdf_value(_pdf, p.is_log, ins[0],
                                                               list(ins[1:])),),
        kernel=_pdf_kernel(_pdf), gradient=_pdf_gradient(_pdf), cases=_pdf_cases(_pdf),
        doc=f"The {_pdf.name.replace('_', ' ')} density (``is_log``: log-density) of each "
            "sample; the parameter arrays' shape is the leading part of the samples' shape."))
    register(OpDef(
        name=f"_backward_pdf_{_pdf.name}", params=_IS_LOG, hidden=True,
        inputs=("ograd", "sample") + _pdf.params, outputs=("sample",) + _pdf.params,
        infer_shape=lambda p, s: (s, list(s[1:])) if all(s[1:]) else None,
        forward=_pdf_backward(_pdf), kernel=_pdf_backward_kernel(_pdf),
        doc=f"Gradients of ``_random_pdf_{_pdf.name}`` w.r.t. samples and parameters."))
