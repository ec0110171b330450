"""``mx.sym.random``: sampling symbols over the random operators (:mod:`symgraph.ops.random`).

Numbers as parameters make a ``_random_X`` node (its ``shape`` may be left to inference from
the graph); Symbols make a ``_sample_X`` node, one distribution per element, with output
shape ``parameters.shape + shape``. ``X_like`` functions are the ``_random_X_like`` operators.

>>> import symgraph as mx
>>> x = mx.sym.var('x')
>>> y = mx.sym.random.uniform(-1, 1) + x
>>> y.infer_shape(x=(2, 3))[1]
[(2, 3)]
>>> mx.sym.random.normal(mx.sym.var('mu'), mx.sym.var('sigma'), shape=4).infer_shape(
...     mu=(2,), sigma=(2,))[1]
[(2, 4)]
"""
from __future__ import annotations

import numbers

from ..base import numeric_types  # noqa: F401 - a name MXNet's module carries
from ..ops.base import get_op
from ..ops.namespaces import module_getattr as _module_getattr
from .op_api import invoke as _invoke
from .op_api import make_function as _make_function
from .symbol import Symbol

__all__ = ["uniform", "normal", "randn", "poisson", "exponential", "gamma", "multinomial",
           "negative_binomial", "generalized_negative_binomial", "shuffle", "randint"]


def _call(op: str, args: tuple, attrs: dict) -> Symbol:
    """A node of ``op`` with the attributes that are set (None = MXNet's "not given")."""
    name, attr = attrs.pop("name", None), attrs.pop("attr", None)
    attrs = {k: v for k, v in attrs.items() if v is not None}
    if not get_op(op).input_names(_defaults(op)):
        # MXNet composes keyword Symbols into an operator without inputs by ignoring them
        attrs = {k: v for k, v in attrs.items() if not isinstance(v, Symbol)}
    return _invoke(op, list(args), attrs, name=name, attr=attr)


def _defaults(op: str):
    from ..attrs import Params
    return Params({p.name: None if p.required else p.default for p in get_op(op).params})


def _helper(random_op: str, sample_op: str | None, params: list, shape, dtype,
            kwargs: dict) -> Symbol:
    """Dispatch on the parameters' type: numbers -> ``random_op``, Symbols -> ``sample_op``."""
    if isinstance(params[0], Symbol):
        if not all(isinstance(a, Symbol) for a in params) or sample_op is None:
            raise TypeError("Distribution parameters must all have the same type, but got "
                            f"{[type(a).__name__ for a in params]}"
                            + ("" if sample_op else f" ({random_op} takes numbers only)"))
        return _call(sample_op, tuple(params), {"shape": shape, "dtype": dtype, **kwargs})
    if isinstance(params[0], numbers.Number):
        if not all(isinstance(a, numbers.Number) for a in params):
            raise TypeError("Distribution parameters must all have the same type, but got "
                            f"{[type(a).__name__ for a in params]}")
        return _call(random_op, tuple(params), {"shape": shape, "dtype": dtype, **kwargs})
    raise ValueError("Distribution parameters must be either Symbol or numbers, but got "
                     f"{type(params[0]).__name__}")


def uniform(low=0, high=1, shape=None, dtype=None, **kwargs) -> Symbol:
    """Samples from the uniform distribution on ``[low, high)`` (numbers or Symbols; see the
    module notes); ``dtype`` float16, float32 (default) or float64.

    >>> import symgraph as mx
    >>> mx.sym.random.uniform(0, 1, shape=(2, 2)).infer_shape()[1]
    [(2, 2)]
    """
    return _helper("_random_uniform", "_sample_uniform", [low, high], shape, dtype, kwargs)


def normal(loc=0, scale=1, shape=None, dtype=None, **kwargs) -> Symbol:
    """Samples from the normal distribution with mean ``loc`` and deviation ``scale``."""
    return _helper("_random_normal", "_sample_normal", [loc, scale], shape, dtype, kwargs)


def randn(*shape, **kwargs) -> Symbol:
    """Normal samples of the shape given positionally (``loc``, ``scale``, ``dtype`` by
    keyword).

    >>> import symgraph as mx
    >>> mx.sym.random.randn(2, 3, loc=1).infer_shape()[1]
    [(2, 3)]
    """
    loc, scale, dtype = kwargs.pop("loc", 0), kwargs.pop("scale", 1), kwargs.pop("dtype", None)
    return _helper("_random_normal", "_sample_normal", [loc, scale], shape, dtype, kwargs)


def poisson(lam=1, shape=None, dtype=None, **kwargs) -> Symbol:
    """Samples from the Poisson distribution with rate ``lam``."""
    return _helper("_random_poisson", "_sample_poisson", [lam], shape, dtype, kwargs)


def exponential(scale=1, shape=None, dtype=None, **kwargs) -> Symbol:
    """Samples from the exponential distribution with mean ``scale`` (rate ``1 / scale``)."""
    return _helper("_random_exponential", "_sample_exponential", [1.0 / scale], shape, dtype,
                   kwargs)


def gamma(alpha=1, beta=1, shape=None, dtype=None, **kwargs) -> Symbol:
    """Samples from the gamma distribution with shape ``alpha`` and scale ``beta``."""
    return _helper("_random_gamma", "_sample_gamma", [alpha, beta], shape, dtype, kwargs)


def negative_binomial(k=1, p=1, shape=None, dtype=None, **kwargs) -> Symbol:
    """Samples from the negative binomial distribution (failures before the ``k``-th success,
    success probability ``p``)."""
    return _helper("_random_negative_binomial", "_sample_negative_binomial", [k, p], shape,
                   dtype, kwargs)


def generalized_negative_binomial(mu=1, alpha=1, shape=None, dtype=None, **kwargs) -> Symbol:
    """Samples from the negative binomial distribution with mean ``mu`` and dispersion
    ``alpha``."""
    return _helper("_random_generalized_negative_binomial",
                   "_sample_generalized_negative_binomial", [mu, alpha], shape, dtype, kwargs)


def multinomial(data: Symbol, shape=None, get_prob: bool = True, dtype="int32",
                **kwargs) -> Symbol:
    """Class indices drawn from the categorical distributions in the last axis of ``data``;
    with ``get_prob`` (the default for symbols) also their log-probabilities.

    >>> import symgraph as mx
    >>> with mx.name.NameManager():
    ...     mx.sym.random.multinomial(mx.sym.var('p'), shape=3).list_outputs()
    ['_sample_multinomial0_output0', '_sample_multinomial0_output1']
    """
    return _call("_sample_multinomial", (data,),
                 {"shape": shape, "get_prob": get_prob, "dtype": dtype, **kwargs})


def shuffle(data: Symbol, **kwargs) -> Symbol:
    """A random permutation of ``data`` along its first axis."""
    return _call("_shuffle", (data,), dict(kwargs))


def randint(low: int, high: int, shape=None, dtype=None, **kwargs) -> Symbol:
    """Integers drawn uniformly from ``[low, high)``; dtype int32 (default) or int64."""
    return _helper("_random_randint", None, [low, high], shape, dtype, kwargs)


_op_getattr = _module_getattr("random", globals(), _make_function)


def __getattr__(name: str):
    # MXNet files only the ``_random_X_like`` operators under sym.random
    if not name.endswith("_like"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _op_getattr(name)


def __dir__() -> list[str]:
    from ..ops.namespaces import names
    return sorted(set(globals()) | {n for n in names("random") if n.endswith("_like")})
