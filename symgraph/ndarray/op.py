"""Operators as free functions: ``nd.exp(x)``, ``nd.maximum(a, b)``, ``nd.concat``, ``nd.dot``.

Elementwise functions are built from :data:`UNARY_DOCS` and :data:`BINARY_DOCS` by a
plain loop over the tables below (no ``exec``); each gets its own name and docstring.
"""
from __future__ import annotations

from collections.abc import Callable

import torch

from ..base import DTypeError, ShapeError
from ..ops.namespaces import module_getattr
from . import _math, hooks
from .ndarray import NDArray
from .register import invoke, make_function, write_out


def _check_nd(fn: str, arg: str, value) -> NDArray:
    if not isinstance(value, NDArray):
        raise TypeError(f"{fn}: argument {arg} must be an NDArray, got {type(value).__name__}")
    return value


# name -> (summary, example input, example output as printed by asnumpy()).
UNARY_DOCS: dict[str, tuple[str, str, str]] = {
    "exp": ("Elementwise ``e**x``.", "[0, 1]", "array([1.       , 2.7182817], dtype=float32)"),
    "expm1": ("Elementwise ``e**x - 1``.", "[0]", "array([0.], dtype=float32)"),
    "log": ("Elementwise natural logarithm.", "[1, 4]",
            "array([0.       , 1.3862944], dtype=float32)"),
    "log1p": ("Elementwise ``log(1 + x)``.", "[0]", "array([0.], dtype=float32)"),
    "log2": ("Elementwise base-2 logarithm.", "[1, 8]", "array([0., 3.], dtype=float32)"),
    "log10": ("Elementwise base-10 logarithm.", "[1, 100]", "array([0., 2.], dtype=float32)"),
    "sqrt": ("Elementwise square root.", "[4, 9]", "array([2., 3.], dtype=float32)"),
    "rsqrt": ("Elementwise ``1 / sqrt(x)``.", "[4]", "array([0.5], dtype=float32)"),
    "square": ("Elementwise ``x * x``.", "[-2, 3]", "array([4., 9.], dtype=float32)"),
    "abs": ("Elementwise absolute value.", "[-2, 3]", "array([2., 3.], dtype=float32)"),
    "sign": ("Elementwise sign.", "[-2, 0, 3]", "array([-1.,  0.,  1.], dtype=float32)"),
    "negative": ("Elementwise ``-x``.", "[-2, 3]", "array([ 2., -3.], dtype=float32)"),
    "reciprocal": ("Elementwise ``1 / x``.", "[2, 4]", "array([0.5 , 0.25], dtype=float32)"),
    "relu": ("Elementwise ``max(x, 0)``.", "[-2, 3]", "array([0., 3.], dtype=float32)"),
    "sigmoid": ("Elementwise ``1 / (1 + exp(-x))``.", "[0]", "array([0.5], dtype=float32)"),
    "tanh": ("Elementwise hyperbolic tangent.", "[0]", "array([0.], dtype=float32)"),
    "sin": ("Elementwise sine.", "[0]", "array([0.], dtype=float32)"),
    "cos": ("Elementwise cosine.", "[0]", "array([1.], dtype=float32)"),
    "floor": ("Elementwise floor.", "[-1.5, 1.5]", "array([-2.,  1.], dtype=float32)"),
    "ceil": ("Elementwise ceiling.", "[-1.5, 1.5]", "array([-1.,  2.], dtype=float32)"),
    "round": ("Round halves away from zero.", "[-1.5, 2.5]",
              "array([-2.,  3.], dtype=float32)"),
    "rint": ("Round to the nearest integer, halves downwards (MXNet's rule).", "[-1.5, 2.5]",
             "array([-2.,  2.], dtype=float32)"),
    "fix": ("Round towards zero.", "[-1.5, 2.5]", "array([-1.,  2.], dtype=float32)"),
}

_UNARY_TEMPLATE = """{summary}

The result keeps ``data``'s dtype: integer inputs give truncated integer results, as in
MXNet.

Parameters
----------
data : NDArray

Returns
-------
NDArray

Examples
--------
>>> from symgraph import ndarray as nd
>>> nd.{name}(nd.array({example})).asnumpy()
{output}
"""


def _unary_function(name: str) -> Callable[[NDArray], NDArray]:
    summary, example, output = UNARY_DOCS[name]

    def fn(data: NDArray) -> NDArray:
        return _check_nd(name, "data", data)._unary(name)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = _UNARY_TEMPLATE.format(summary=summary, name=name, example=example,
                                        output=output)
    return fn


# name -> (internal op, summary). ``lhs`` and ``rhs`` may be NDArrays or scalars.
BINARY_DOCS: dict[str, tuple[str, str]] = {
    "add": ("add", "``lhs + rhs``"),
    "subtract": ("sub", "``lhs - rhs``"),
    "multiply": ("mul", "``lhs * rhs``"),
    "divide": ("div", "``lhs / rhs`` (truncating for integer dtypes)"),
    "modulo": ("mod", "``lhs % rhs`` with the divisor's sign (0 where ``rhs`` is 0)"),
    "power": ("pow", "``lhs ** rhs``"),
    "maximum": ("maximum", "the larger of ``lhs`` and ``rhs``"),
    "minimum": ("minimum", "the smaller of ``lhs`` and ``rhs``"),
    "equal": ("eq", "``lhs == rhs`` as 0/1"),
    "not_equal": ("ne", "``lhs != rhs`` as 0/1"),
    "greater": ("gt", "``lhs > rhs`` as 0/1"),
    "greater_equal": ("ge", "``lhs >= rhs`` as 0/1"),
    "lesser": ("lt", "``lhs < rhs`` as 0/1"),
    "lesser_equal": ("le", "``lhs <= rhs`` as 0/1"),
}

_SCALAR_OPS: dict[str, Callable] = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "mod": lambda a, b: a % b if b else 0,
    "pow": lambda a, b: a ** b, "maximum": max, "minimum": min,
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
}

_BINARY_TEMPLATE = """Elementwise {summary}, broadcasting (MXNet's ``nd.{name}``).

Either operand may be a scalar, which is cast to the other operand's dtype; two arrays
must share a dtype.

Parameters
----------
lhs, rhs : NDArray or scalar

Returns
-------
NDArray, or a Python scalar when both operands are scalars.

Examples
--------
>>> from symgraph import ndarray as nd
>>> nd.{name}(nd.array([[1, 4]]), nd.array([[2], [3]])).shape
(2, 2)
"""


def _binary_function(name: str) -> Callable:
    op, summary = BINARY_DOCS[name]

    def fn(lhs, rhs):
        if getattr(lhs, "_is_sparse", False) or getattr(rhs, "_is_sparse", False):
            return _sparse_binary(op, lhs, rhs)  # MXNet's broadcast/scalar operators
        if isinstance(lhs, NDArray):
            return lhs._binary(op, rhs)
        if isinstance(rhs, NDArray):
            return rhs._binary(op, lhs, reflected=True)
        if _math.is_scalar(lhs) and _math.is_scalar(rhs):
            return _SCALAR_OPS[op](lhs, rhs)
        raise TypeError(f"{name}: types {type(lhs)} and {type(rhs)} not supported")

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = _BINARY_TEMPLATE.format(summary=summary, name=name)
    return fn


def _sparse_binary(op: str, lhs, rhs) -> NDArray:
    """``nd.<binary>`` with a sparse operand: the registered operator MXNet calls."""
    from .sparse_array import binary_op
    if isinstance(lhs, NDArray):
        return binary_op(op, lhs, rhs)
    return binary_op(op, rhs, lhs, reflected=True)


exp = _unary_function("exp")
expm1 = _unary_function("expm1")
log = _unary_function("log")
log1p = _unary_function("log1p")
log2 = _unary_function("log2")
log10 = _unary_function("log10")
sqrt = _unary_function("sqrt")
rsqrt = _unary_function("rsqrt")
square = _unary_function("square")
abs = _unary_function("abs")
sign = _unary_function("sign")
negative = _unary_function("negative")
reciprocal = _unary_function("reciprocal")
relu = _unary_function("relu")
sigmoid = _unary_function("sigmoid")
tanh = _unary_function("tanh")
sin = _unary_function("sin")
cos = _unary_function("cos")
floor = _unary_function("floor")
ceil = _unary_function("ceil")
round = _unary_function("round")
rint = _unary_function("rint")
fix = _unary_function("fix")

add = _binary_function("add")
subtract = _binary_function("subtract")
multiply = _binary_function("multiply")
divide = _binary_function("divide")
modulo = _binary_function("modulo")
power = _binary_function("power")
maximum = _binary_function("maximum")
minimum = _binary_function("minimum")
equal = _binary_function("equal")
not_equal = _binary_function("not_equal")
greater = _binary_function("greater")
greater_equal = _binary_function("greater_equal")
lesser = _binary_function("lesser")
lesser_equal = _binary_function("lesser_equal")


def clip(data: NDArray, a_min, a_max) -> NDArray:
    """Clamp every element of ``data`` into ``[a_min, a_max]``.

    >>> from symgraph import ndarray as nd
    >>> nd.clip(nd.array([1, 5, 9]), 2, 6).asnumpy()
    array([2., 5., 6.], dtype=float32)
    """
    return _check_nd("clip", "data", data).clip(a_min, a_max)


def reshape(data: NDArray, shape, reverse: bool = False) -> NDArray:
    """``data.reshape(shape, reverse=reverse)`` with MXNet's special codes.

    >>> from symgraph import ndarray as nd
    >>> nd.reshape(nd.zeros((2, 3, 4)), shape=(0, -1)).shape
    (2, 12)
    """
    return _check_nd("reshape", "data", data).reshape(shape, reverse=reverse)


def transpose(data: NDArray, axes=None) -> NDArray:
    """A copy with axes permuted by ``axes`` (reversed by default).

    >>> from symgraph import ndarray as nd
    >>> nd.transpose(nd.zeros((2, 3, 4)), axes=(2, 0, 1)).shape
    (4, 2, 3)
    """
    return _check_nd("transpose", "data", data).transpose(axes)


def _check_joinable(fn: str, data: tuple, axis: int, same_shape: bool) -> list[torch.Tensor]:
    if not data:
        raise ShapeError(f"{fn} needs at least one array")
    arrays = [_check_nd(fn, f"data[{i}]", a)._t for i, a in enumerate(data)]
    first = arrays[0]
    for i, t in enumerate(arrays[1:], start=1):
        if t.dtype != first.dtype:
            raise DTypeError(f"Non-uniform data type in {fn}, expected data type "
                             f"{_math.dtype_str(first.dtype)}, got data type "
                             f"{_math.dtype_str(t.dtype)} for input {i}")
        other = list(t.shape)
        expected = list(first.shape)
        if not same_shape and len(other) == len(expected) and 0 <= axis < len(other):
            other[axis] = expected[axis]
        if other != expected:
            raise ShapeError(f"Incompatible input shape in {fn}: input 0 has shape "
                             f"{tuple(first.shape)}, input {i} has shape {tuple(t.shape)}")
    return arrays


def concat(*data: NDArray, dim: int = 1, **kwargs) -> NDArray:
    """Join arrays along axis ``dim`` (MXNet's default is 1).

    >>> from symgraph import ndarray as nd
    >>> nd.concat(nd.ones((2, 2)), nd.zeros((2, 1))).asnumpy()
    array([[1., 1., 0.],
           [1., 1., 0.]], dtype=float32)
    >>> nd.concat(nd.ones((2, 2)), nd.zeros((3, 2)))
    Traceback (most recent call last):
    ...
    symgraph.base.ShapeError: Incompatible input shape in concat: input 0 has shape (2, 2), \
input 1 has shape (3, 2)
    """
    kwargs.pop("num_args", None)
    if kwargs:
        raise TypeError(f"concat got unexpected keywords {sorted(kwargs)}")
    ndim = data[0].ndim if data and isinstance(data[0], NDArray) else 0
    axis = dim + ndim if dim < 0 else dim
    arrays = _check_joinable("concat", data, axis, same_shape=False)
    if not 0 <= axis < ndim:
        raise ShapeError(f"concat: dim {dim} is out of range for arrays of {ndim} dims")
    return NDArray(torch.cat(arrays, dim=axis))


def stack(*data: NDArray, axis: int = 0, **kwargs) -> NDArray:
    """Join arrays of one shape along a new axis ``axis``.

    >>> from symgraph import ndarray as nd
    >>> nd.stack(nd.zeros((2,)), nd.ones((2,)), axis=1).asnumpy()
    array([[0., 1.],
           [0., 1.]], dtype=float32)
    """
    kwargs.pop("num_args", None)
    if kwargs:
        raise TypeError(f"stack got unexpected keywords {sorted(kwargs)}")
    return NDArray(torch.stack(_check_joinable("stack", data, axis, same_shape=True), dim=axis))


def dot(lhs: NDArray, rhs: NDArray, transpose_a: bool = False,
        transpose_b: bool = False, **kwargs) -> NDArray:
    """MXNet's ``dot``: contract the last axis of ``lhs`` with the first axis of ``rhs``.

    N-D operands are flattened to matrices the way MXNet does; ``transpose_a``
    contracts ``lhs``'s first axis instead and ``transpose_b`` ``rhs``'s last axis.
    Two vectors give shape ``(1,)``.

    >>> from symgraph import ndarray as nd
    >>> a = nd.array([[1, 2, 3], [4, 5, 6]])
    >>> nd.dot(a, a, transpose_b=True).asnumpy()
    array([[14., 32.],
           [32., 77.]], dtype=float32)
    >>> nd.dot(nd.zeros((2, 3, 4)), nd.zeros((4, 5))).shape
    (2, 3, 5)
    >>> nd.dot(a, a)
    Traceback (most recent call last):
    ...
    symgraph.base.ShapeError: dot shape error: (2, 3) X (2, 3) (contracted sizes 3 vs. 2)
    """
    kwargs.pop("forward_stype", None)
    if kwargs:
        raise TypeError(f"dot got unexpected keywords {sorted(kwargs)}")
    a, b = _check_nd("dot", "lhs", lhs), _check_nd("dot", "rhs", rhs)
    return NDArray(_math.dot(a._t, b._t, transpose_a, transpose_b))


# functions written here whose autograd recording is the registered operator's
_RECORDED_AS = {"concat": "Concat", "stack": "stack", "dot": "dot", "clip": "clip",
                "reshape": "Reshape", "transpose": "transpose"}


def _imperative(fn: Callable) -> Callable:
    """MXNet's keywords on a function written here: ``out=`` (the result is written into
    it, and it is returned) and ``name=`` (ignored imperatively). Under ``record()`` the
    call runs as the registered operator, so it is differentiated; so does a call on sparse
    arrays, so the operator's storage rule applies."""
    registered = _RECORDED_AS.get(fn.__name__)

    def call(*args, out=None, name=None, **kwargs):
        rec = hooks.STATE.recorder
        arrays = [a for a in args if isinstance(a, NDArray)]
        if registered and (any(a._is_sparse for a in arrays) or
                           kwargs.get("forward_stype") not in (None, "default") or
                           (rec is not None and rec.tracks(*arrays))):
            return invoke(registered, args, kwargs, out)  # sparse: the op's storage rule
        result = fn(*args, **kwargs)
        return result if out is None else write_out(result, out)

    call.__name__ = call.__qualname__ = fn.__name__
    call.__doc__, call.__wrapped__ = fn.__doc__, fn
    return call


for _name in [*UNARY_DOCS, *BINARY_DOCS, "clip", "reshape", "transpose", "concat", "stack",
              "dot"]:
    globals()[_name] = _imperative(globals()[_name])


def __getattr__(name: str):
    """Operators without a function above are made from the registry (``nd.op.X``)."""
    return module_getattr("op", globals(), make_function)(name)
