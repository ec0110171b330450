"""``mx.nd.random``: sampling functions over the random operators (:mod:`symgraph.ops.random`).

Scalar parameters call ``_random_X`` (``shape`` defaults to ``(1,)``; ``ctx`` picks the
device); NDArray parameters call ``_sample_X``, one distribution per element, with output
shape ``parameters.shape + shape``. ``X_like`` functions are the ``_random_X_like`` operators.
Every draw uses the device's generator (:func:`symgraph.random.generator`), so
``mx.random.seed`` makes results reproducible.

>>> from symgraph import ndarray as nd
>>> import symgraph as mx
>>> mx.random.seed(1); a = nd.random.normal(0, 1, shape=(2, 3))
>>> mx.random.seed(1); bool((a == nd.random.normal(0, 1, shape=(2, 3))).min())
True
>>> nd.random.poisson(nd.array([1, 10]), shape=4).shape
(2, 4)
>>> nd.random.uniform_like(nd.zeros((2, 2), dtype='float16')).dtype
<class 'numpy.float16'>
"""
from __future__ import annotations

import numbers

from ..base import numeric_types  # noqa: F401 - a name MXNet's module carries
from ..context import Context, current_context
from ..ops.namespaces import module_getattr as _module_getattr
from .ndarray import NDArray
from .register import invoke as _invoke
from .register import make_function as _make_function

__all__ = ["uniform", "normal", "randn", "poisson", "exponential", "gamma", "multinomial",
           "negative_binomial", "generalized_negative_binomial", "shuffle", "randint"]


def _call(op: str, args: tuple, attrs: dict, out: NDArray | None, ctx=None):
    """Invoke ``op`` with the attributes that are set (None = MXNet's "not given"), on
    ``ctx`` when it has no array inputs."""
    attrs = {k: v for k, v in attrs.items() if v is not None}
    if ctx is None:
        return _invoke(op, args, attrs, out)
    ctx = Context(ctx) if isinstance(ctx, str) else ctx
    with ctx:
        return _invoke(op, args, {**attrs, "ctx": ctx}, out)


def _helper(random_op: str, sample_op: str | None, params: list, shape, dtype, ctx, out,
            kwargs: dict):
    """Dispatch on the parameters' type: numbers -> ``random_op``, NDArrays -> ``sample_op``."""
    if isinstance(params[0], NDArray):
        if not all(isinstance(a, NDArray) for a in params) or sample_op is None:
            raise TypeError("Distribution parameters must all have the same type, but got "
                            f"{[type(a).__name__ for a in params]}"
                            + ("" if sample_op else f" ({random_op} takes numbers only)"))
        if shape is None and out is not None:
            shape = tuple(out.shape[params[0].ndim:])
        if dtype is None and out is not None:
            dtype = out.dtype
        return _call(sample_op, tuple(params), {"shape": shape, "dtype": dtype, **kwargs}, out)
    if isinstance(params[0], numbers.Number):
        if not all(isinstance(a, numbers.Number) for a in params):
            raise TypeError("Distribution parameters must all have the same type, but got "
                            f"{[type(a).__name__ for a in params]}")
        if out is not None:
            shape = out.shape if shape is None else shape
            dtype = out.dtype if dtype is None else dtype
            ctx = out.context if ctx is None else ctx
        shape = 1 if shape is None else shape
        return _call(random_op, tuple(params), {"shape": shape, "dtype": dtype, **kwargs}, out,
                     ctx or current_context())
    raise ValueError("Distribution parameters must be either NDArray or numbers, but got "
                     f"{type(params[0]).__name__}")


def uniform(low=0, high=1, shape=None, dtype=None, ctx: Context | None = None,
            out: NDArray | None = None, **kwargs) -> NDArray:
    """Samples from the uniform distribution on ``[low, high)``.

    Parameters
    ----------
    low, high : float or NDArray
        Bounds; NDArrays give one distribution per element and an output of shape
        ``low.shape + shape``.
    shape : int or tuple, optional
        Sample shape (``(1,)`` for scalar bounds when neither it nor ``out`` is given).
    dtype : {'float32', 'float16', 'float64'}, optional
        float32 unless given (or taken from ``out``).
    ctx : Context, optional
        Device for scalar bounds (the current context by default).
    out : NDArray, optional
        Array to fill (returned).

    Examples
    --------
    >>> from symgraph import ndarray as nd
    >>> x = nd.random.uniform(-1, 1, shape=(2, 3))
    >>> x.shape, bool((x.abs() <= 1).min())
    ((2, 3), True)
    >>> nd.random.uniform(nd.array([0, 10]), nd.array([1, 11]), shape=3).shape
    (2, 3)
    >>> nd.random.uniform(0, 1, dtype='int32')
    Traceback (most recent call last):
    ...
    symgraph.base.DTypeError: Error in operator _random_uniform: Invalid Input: 'int32', \
valid values are: None, float16, float32, float64
    """
    return _helper("_random_uniform", "_sample_uniform", [low, high], shape, dtype, ctx, out,
                   kwargs)


def normal(loc=0, scale=1, shape=None, dtype=None, ctx: Context | None = None,
           out: NDArray | None = None, **kwargs) -> NDArray:
    """Samples from the normal distribution with mean ``loc`` and deviation ``scale``.

    Arguments are as for :func:`uniform`.

    Examples
    --------
    >>> from symgraph import ndarray as nd
    >>> bool(nd.random.normal(0, 1, shape=(1000,)).mean().abs() < 0.2)
    True
    >>> nd.random.normal(nd.array([0, 100]), nd.array([1, 1]), shape=2).shape
    (2, 2)
    """
    return _helper("_random_normal", "_sample_normal", [loc, scale], shape, dtype, ctx, out,
                   kwargs)


def randn(*shape, **kwargs) -> NDArray:
    """Normal samples of the shape given positionally (``loc``, ``scale``, ``dtype``,
    ``ctx``, ``out`` by keyword).

    >>> from symgraph import ndarray as nd
    >>> nd.random.randn(2, 3, loc=5).shape
    (2, 3)
    """
    loc, scale = kwargs.pop("loc", 0), kwargs.pop("scale", 1)
    dtype, ctx, out = kwargs.pop("dtype", None), kwargs.pop("ctx", None), kwargs.pop("out", None)
    if not isinstance(loc, numbers.Number | NDArray) or \
            not isinstance(scale, numbers.Number | NDArray):
        raise TypeError(f"randn: loc and scale must be numbers or NDArrays, got "
                        f"{type(loc).__name__} and {type(scale).__name__}")
    return _helper("_random_normal", "_sample_normal", [loc, scale], shape, dtype, ctx, out,
                   kwargs)


def poisson(lam=1, shape=None, dtype=None, ctx: Context | None = None,
            out: NDArray | None = None, **kwargs) -> NDArray:
    """Samples from the Poisson distribution with rate ``lam`` (float output).

    >>> from symgraph import ndarray as nd
    >>> bool((nd.random.poisson(4, shape=(50,)) >= 0).min())
    True
    """
    return _helper("_random_poisson", "_sample_poisson", [lam], shape, dtype, ctx, out, kwargs)


def exponential(scale=1, shape=None, dtype=None, ctx: Context | None = None,
                out: NDArray | None = None, **kwargs) -> NDArray:
    """Samples from the exponential distribution with mean ``scale`` (rate ``1 / scale``).

    >>> from symgraph import ndarray as nd
    >>> nd.random.exponential(nd.array([1.0, 0.5]), shape=(3,)).shape
    (2, 3)
    """
    return _helper("_random_exponential", "_sample_exponential", [1.0 / scale], shape, dtype,
                   ctx, out, kwargs)


def gamma(alpha=1, beta=1, shape=None, dtype=None, ctx: Context | None = None,
          out: NDArray | None = None, **kwargs) -> NDArray:
    """Samples from the gamma distribution with shape ``alpha`` and scale ``beta``.

    >>> from symgraph import ndarray as nd
    >>> nd.random.gamma(9, 0.5, shape=(2, 2), dtype='float64').dtype
    <class 'numpy.float64'>
    """
    return _helper("_random_gamma", "_sample_gamma", [alpha, beta], shape, dtype, ctx, out,
                   kwargs)


def negative_binomial(k=1, p=1, shape=None, dtype=None, ctx: Context | None = None,
                      out: NDArray | None = None, **kwargs) -> NDArray:
    """Samples from the negative binomial distribution: failures before the ``k``-th success
    of trials succeeding with probability ``p`` (float output).

    >>> from symgraph import ndarray as nd
    >>> nd.random.negative_binomial(3, 0.4, shape=5).shape
    (5,)
    """
    return _helper("_random_negative_binomial", "_sample_negative_binomial", [k, p], shape,
                   dtype, ctx, out, kwargs)


def generalized_negative_binomial(mu=1, alpha=1, shape=None, dtype=None,
                                  ctx: Context | None = None, out: NDArray | None = None,
                                  **kwargs) -> NDArray:
    """Samples from the negative binomial distribution with mean ``mu`` and dispersion
    ``alpha`` (variance ``mu + alpha * mu**2``).

    >>> from symgraph import ndarray as nd
    >>> nd.random.generalized_negative_binomial(2.0, 0.3, shape=(2, 2)).shape
    (2, 2)
    """
    return _helper("_random_generalized_negative_binomial",
                   "_sample_generalized_negative_binomial", [mu, alpha], shape, dtype, ctx,
                   out, kwargs)


def multinomial(data: NDArray, shape=None, get_prob: bool = False, out=None,
                dtype="int32", **kwargs):
    """Class indices drawn from the categorical distributions in the last axis of ``data``.

    Parameters
    ----------
    data : NDArray
        Probabilities, ``(..., k)``.
    shape : int or tuple, optional
        Draws per distribution; the output shape is ``data.shape[:-1] + shape``.
    get_prob : bool
        Also return the log-probability of each draw (differentiable w.r.t. ``data``).
    dtype : {'int32', 'uint8', 'float16', 'float32', 'float64'}
        Dtype of the indices.

    Examples
    --------
    >>> from symgraph import ndarray as nd
    >>> nd.random.multinomial(nd.array([0.0, 1.0]), shape=3).asnumpy().tolist()
    [1, 1, 1]
    >>> y, logp = nd.random.multinomial(nd.array([[1.0, 0.0]]), get_prob=True)
    >>> y.shape, logp.asnumpy().tolist()
    ((1,), [0.0])
    """
    return _call("_sample_multinomial", (data,),
                 {"shape": shape, "get_prob": get_prob, "dtype": dtype, **kwargs}, out)


def shuffle(data: NDArray, **kwargs) -> NDArray:
    """A random permutation of ``data`` along its first axis.

    >>> from symgraph import ndarray as nd
    >>> sorted(nd.random.shuffle(nd.arange(5)).asnumpy().tolist())
    [0.0, 1.0, 2.0, 3.0, 4.0]
    """
    out = kwargs.pop("out", None)
    return _call("_shuffle", (data,), kwargs, out)


def randint(low: int, high: int, shape=None, dtype=None, ctx: Context | None = None,
            out: NDArray | None = None, **kwargs) -> NDArray:
    """Integers drawn uniformly from ``[low, high)``; dtype int32 (default) or int64.

    >>> from symgraph import ndarray as nd
    >>> x = nd.random.randint(-2, 3, shape=(100,))
    >>> x.dtype, int(x.min().asscalar()) >= -2, int(x.max().asscalar()) < 3
    (<class 'numpy.int32'>, True, True)
    """
    return _helper("_random_randint", None, [low, high], shape, dtype, ctx, out, kwargs)


_op_getattr = _module_getattr("random", globals(), _make_function)


def __getattr__(name: str):
    # MXNet files only the ``_random_X_like`` operators under nd.random (``uniform_like``);
    # the other ``_random_*`` operators are in nd._internal
    if not name.endswith("_like"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _op_getattr(name)


def __dir__() -> list[str]:
    from ..ops.namespaces import names
    return sorted(set(globals()) | {n for n in names("random") if n.endswith("_like")})
