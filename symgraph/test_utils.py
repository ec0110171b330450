"""``mx.test_utils``: the helpers MXNet's own tests and its users' test suites import.

Comparisons (``assert_almost_equal`` with MXNet's per-dtype tolerances and mismatch report),
symbol checks (forward, backward, finite differences, consistency across contexts and
dtypes), random data, statistical checks of random generators, and data helpers that never
download: datasets are read from ``./data`` when present, otherwise a clear MXNetError says
that downloads are disabled. Sparse helpers (random csr/row_sparse arrays) are in
:mod:`symgraph.test_utils_sparse`.

>>> import numpy as np, symgraph as mx
>>> mx.test_utils.assert_almost_equal(np.ones(3), np.ones(3) + 1e-9)
>>> x = mx.sym.Variable('x')
>>> out = mx.test_utils.check_symbolic_forward(2 * x, [np.ones((2, 2))], [2 * np.ones((2, 2))])
>>> out[0].asnumpy()
array([[2., 2.],
       [2., 2.]], dtype=float32)
>>> mx.test_utils.check_numeric_gradient(x * x, [np.array([1., 2.])])
"""
from __future__ import annotations

import contextlib
import functools
import gzip
import json
import numbers
import os
import platform
import sys
import time
import traceback
from collections import OrderedDict

import numpy as np
import numpy.random as rnd  # noqa: F401 - MXNet's test files use it via `from test_utils import *`
import numpy.testing as npt  # noqa: F401 - likewise

import symgraph as mx

from . import config
from .base import MXNetError, unsupported
from .context import Context, current_context
from .io import DataIter
from .ndarray import NDArray, array
from .runtime import Features
from .symbol import Symbol
from .test_utils_sparse import (  # noqa: F401 - MXNet's names
    _get_powerlaw_dataset_csr,
    _get_uniform_dataset_csr,
    _validate_csr_generation_inputs,
    assign_each,
    create_sparse_array,
    create_sparse_array_zd,
    rand_sparse_ndarray,
    shuffle_csr_column_indices,
)
from .util import get_cuda_compute_capability, getenv, setenv, use_np  # noqa: F401


def __getattr__(name: str):
    if name == "ss":  # MXNet's ``scipy.stats`` alias, imported on first use (it is slow)
        return _scipy_stats()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _scipy_stats():
    try:
        import scipy.stats
    except ImportError as err:
        raise ImportError("scipy is not available. Please check if the scipy python bindings "
                          "are installed.") from err
    return scipy.stats


class np_symbol:  # MXNet's name for mx.sym.np._Symbol
    """MXNet's NumPy-interface Symbol class; symgraph has none, so nothing is one."""


_SPARSE = ("symgraph stores every NDArray densely (stype 'default'); csr and row_sparse "
           "arrays are not implemented")


def _downloads_disabled(what: str, path: str) -> MXNetError:
    """The error for a missing data file: symgraph never downloads (an UnsupportedError,
    so an MXNetError)."""
    return unsupported(f"{what} (downloading)",
                       f"downloads are disabled; {path} is not there, put the file there yourself")


# --- contexts, dtypes and tolerances -------------------------------------------------------

def default_context() -> Context:
    """The context tests run on: the current context (``cpu(0)`` unless changed)."""
    return current_context()


def set_default_context(ctx: Context) -> None:
    """Make ``ctx`` the current (and test) context of this thread."""
    Context._default_ctx.value = ctx


def default_dtype() -> type:
    """The dtype tests create arrays with: float32."""
    return np.float32


def _per_dtype(f16, f32, f64) -> dict:
    ints = (np.bool_, np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64, np.uint64)
    return {np.dtype(np.float16): f16, np.dtype(np.float32): f32, np.dtype(np.float64): f64,
            **{np.dtype(t): 0 for t in ints}}


def default_rtols() -> dict:
    """Relative tolerance per dtype: fp16 1e-2, fp32 1e-4, fp64 1e-5, integers 0."""
    return _per_dtype(1e-2, 1e-4, 1e-5)


def default_atols() -> dict:
    """Absolute tolerance per dtype: fp16 1e-1, fp32 1e-3, fp64 1e-20, integers 0."""
    return _per_dtype(1e-1, 1e-3, 1e-20)


def default_numeric_eps() -> dict:
    """Finite-difference step per float dtype (powers of two: no bits lost in ``x + eps``)."""
    return {np.dtype(np.float16): 1.0 / 2**6, np.dtype(np.float32): 1.0 / 2**9,
            np.dtype(np.float64): 1.0 / 2**14}


def _dtype_of(dat) -> np.dtype:
    return np.dtype(dat.dtype) if hasattr(dat, "dtype") else np.asarray(dat).dtype


def effective_dtype(dat) -> np.dtype:
    """The dtype whose tolerance applies to ``dat``: float16 for float32 results on a GPU of
    compute capability 8.0+ with TF32 (NVIDIA_TF32_OVERRIDE not '0'), else ``dat.dtype``.

    >>> effective_dtype(np.ones(2, dtype=np.float32))
    dtype('float32')
    """
    dtype = _dtype_of(dat)
    ctx = getattr(dat, "ctx", None)
    if dtype == np.float32 and ctx is not None and ctx.device_type == "gpu":
        try:
            tf32 = (get_cuda_compute_capability(ctx) >= 80
                    and config.env("NVIDIA_TF32_OVERRIDE"))
        except (MXNetError, OSError, ValueError):
            tf32 = False
        return np.dtype(np.float16) if tf32 else dtype
    return dtype


def get_tolerance(dat, tol, default_tol: dict):
    """``tol`` if it is a number, else its (or ``default_tol``'s) entry for ``dat``'s dtype."""
    if isinstance(tol, numbers.Number):
        return tol
    dtype = effective_dtype(dat)
    return tol[dtype] if tol and dtype in tol else default_tol[dtype]


def get_tols(x, y, rtol, atol) -> tuple:
    """(rtol, atol) for comparing ``x`` with ``y``: the looser of the two dtypes' defaults.

    >>> get_tols(np.ones(1, np.float16), np.ones(1), None, None)
    (0.01, 0.1)
    """
    x, y = (np.array(v) if isinstance(v, numbers.Number) else v for v in (x, y))
    return (max(get_tolerance(x, rtol, default_rtols()), get_tolerance(y, rtol, default_rtols())),
            max(get_tolerance(x, atol, default_atols()), get_tolerance(y, atol, default_atols())))


_F64 = np.dtype(np.float64)


def get_atol(atol=None, dtype=_F64):
    """``atol``, or the default absolute tolerance of ``dtype``."""
    return default_atols()[np.dtype(dtype)] if atol is None else atol


def get_rtol(rtol=None, dtype=_F64):
    """``rtol``, or the default relative tolerance of ``dtype``."""
    return default_rtols()[np.dtype(dtype)] if rtol is None else rtol


def get_etol(etol=None):
    """``etol`` (tolerated share of mismatching elements), 0 by default."""
    return 0 if etol is None else etol


# --- random data ---------------------------------------------------------------------------

def random_arrays(*shapes):
    """Standard normal float32 numpy arrays, one per shape (the array itself for one shape)."""
    arrays = [np.array(np.random.randn(), dtype=default_dtype()) if len(s) == 0
              else np.random.randn(*s).astype(default_dtype()) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def random_uniform_arrays(*shapes, **kwargs) -> list:
    """Uniform numpy arrays (``low``, ``high``, ``dtype`` keywords), one per shape."""
    low, high = kwargs.pop("low", 0.0), kwargs.pop("high", 1.0)
    dtype = kwargs.pop("dtype", default_dtype())
    if kwargs:
        raise TypeError(f"Got unexpected argument/s : {kwargs.keys()}")
    return [np.random.uniform(low, high, size=s).astype(dtype) for s in shapes]


def random_sample(population, k: int) -> list:
    """``k`` elements of ``population`` in random order (numpy's RNG)."""
    assert 0 <= k <= len(population)
    chosen = population[:]
    np.random.shuffle(chosen)
    return chosen[:k]


def rand_shape_2d(dim0=10, dim1=10, allow_zero_size=False) -> tuple:
    """A random 2-d shape with dims in [1, dimK] ([0, dimK] with ``allow_zero_size``)."""
    low = 0 if allow_zero_size else 1
    return np.random.randint(low, dim0 + 1), np.random.randint(low, dim1 + 1)


def rand_shape_3d(dim0=10, dim1=10, dim2=10, allow_zero_size=False) -> tuple:
    """A random 3-d shape (see :func:`rand_shape_2d`)."""
    low = 0 if allow_zero_size else 1
    return (np.random.randint(low, dim0 + 1), np.random.randint(low, dim1 + 1),
            np.random.randint(low, dim2 + 1))


def rand_shape_nd(num_dim: int, dim=10, allow_zero_size=False) -> tuple:
    """A random shape of ``num_dim`` dims, each in [1, dim] ([0, dim] with zero sizes).

    >>> np.random.seed(0); rand_shape_nd(3)
    (6, 1, 4)
    """
    low = 0 if allow_zero_size else 1
    return tuple(int(d) for d in np.random.randint(low, dim + 1, size=num_dim))


def rand_coord_2d(x_low, x_high, y_low, y_high) -> tuple:
    """A random integer point in [x_low, x_high) x [y_low, y_high)."""
    return (np.random.randint(x_low, x_high, dtype=np.int64),
            np.random.randint(y_low, y_high, dtype=np.int64))


def rand_ndarray(shape, stype="default", density=None, dtype=None, modifier_func=None,
                 shuffle_csr_indices=False, distribution=None, ctx=None) -> NDArray:
    """A random NDArray: standard normal values for ``stype='default'`` (float32 unless
    ``dtype``), else a random sparse array (:func:`rand_sparse_ndarray`).

    >>> rand_ndarray((2, 3)).shape
    (2, 3)
    >>> rand_ndarray((4, 5), 'csr', density=0.5).stype
    'csr'
    """
    ctx = ctx or default_context()
    if stype == "default":
        return mx.nd.array(random_arrays(shape), dtype=dtype, ctx=ctx)
    arr, _ = rand_sparse_ndarray(shape, stype, density=density, modifier_func=modifier_func,
                                 dtype=dtype, shuffle_csr_indices=shuffle_csr_indices,
                                 distribution=distribution, ctx=ctx)
    return arr


def assign_each2(input1, input2, function) -> np.ndarray:
    """``function(a, b)`` over pairs of elements of two same-shaped arrays."""
    if function is None:
        return np.array(input1)
    assert input1.shape == input2.shape
    out = np.zeros(input1.shape)
    out.flat[:] = [function(a, b) for a, b in zip(np.asarray(input1).flat,
                                                   np.asarray(input2).flat)]
    return out


def create_2d_tensor(rows: int, columns: int, dtype=np.int64) -> NDArray:
    """A (rows, columns) NDArray whose row i holds i (large-tensor tests)."""
    column = mx.nd.arange(0, rows, dtype=dtype).reshape((rows, 1))
    return mx.nd.broadcast_to(column, shape=(rows, columns))


def create_vector(size: int, dtype=np.int64) -> NDArray:
    """``arange(size)`` as an NDArray (large-tensor tests)."""
    return mx.nd.arange(0, size, dtype=dtype)


def get_identity_mat(size: int) -> NDArray:
    """A float32 identity matrix NDArray."""
    return array(np.eye(size, dtype=np.float32))


def get_identity_mat_batch(size: int) -> NDArray:
    """Two stacked identity matrices, shape (2, size, size)."""
    eye = np.eye(size, dtype=np.float32)
    return array(np.stack([eye, eye]))


def np_reduce(dat, axis, keepdims, numpy_reduce_func):
    """Reduce ``dat`` over ``axis`` (int, list or None) one axis at a time with
    ``numpy_reduce_func``.

    >>> np_reduce(np.ones((2, 3, 4)), [0, 2], True, np.sum).tolist()
    [[[8.0], [8.0], [8.0]]]
    """
    axes = [axis] if isinstance(axis, int) else \
        (list(axis) if axis is not None else list(range(dat.ndim)))
    ret = dat
    for i in sorted(axes, reverse=True):
        ret = numpy_reduce_func(ret, axis=i)
    if keepdims:
        ret = ret.reshape(tuple(1 if i in axes else d for i, d in enumerate(dat.shape)))
    return ret


# --- comparisons ---------------------------------------------------------------------------

def _np(a):
    return a.asnumpy() if isinstance(a, NDArray) else a


def same(a, b) -> bool:
    """Exact equality of two numpy arrays (NDArrays are converted)."""
    return bool(np.array_equal(_np(a), _np(b)))


def checkShapes(a, b) -> None:  # MXNet's name
    """Raise AssertionError if the shapes of ``a`` and ``b`` differ."""
    if a.shape != b.shape:
        raise AssertionError(np.testing.build_err_msg(
            [a, b], err_msg=f"a.shape = {a.shape} and b.shape = {b.shape} are not equal"))


def _upcast_half(x):
    """float16 arrays as float32: numpy's float16 arithmetic is emulated and ~10x slower
    (test_optimizer.py's test_multilamb compares 8M-element float16 arrays 72 times)."""
    return x.astype(np.float32) if getattr(x, "dtype", None) == np.float16 else x


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False, use_broadcast=True) -> bool:
    """``np.allclose`` with the float64 defaults (rtol 1e-5, atol 1e-20) when not given."""
    a, b = _upcast_half(_np(a)), _upcast_half(_np(b))
    if not use_broadcast:
        checkShapes(a, b)
    return bool(np.allclose(a, b, rtol=get_rtol(rtol), atol=get_atol(atol),
                            equal_nan=equal_nan))


def locationError(a, b, index, names, maxError=False) -> str:
    """The message naming the elements of ``a`` and ``b`` at ``index``."""
    maximum = "maximum " if maxError else ""
    return (f"Location of {maximum}error: {index}, {names[0]}={a[index]:.8f}, "
            f"{names[1]}={b[index]:.8f}")


def _violation(a, b, rtol, atol) -> np.ndarray:
    """|a - b| / (atol + rtol |b|), 0 where equal (so equal infinities pass, as allclose)."""
    diff = np.where(np.equal(a, b), 0, np.abs(np.subtract(a, b, dtype=np.float64)))
    return diff / (atol + rtol * np.abs(b.astype(np.float64)) + 1e-20)


def _mismatch_report(a, b, tols: tuple, names, equal_nan, mismatches) -> str:
    """MXNet's message: the worst error, the share of mismatches, the worst location; the
    first ``mismatches[0]`` of them printed (at most ``mismatches[1]`` counted)."""
    rtol, atol = tols
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    violation = _violation(a, b, rtol, atol)
    worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(violation)), violation.shape))
    rel = np.max(violation)
    if worst == ():
        return f"Error {rel:f} exceeds tolerance rtol={rtol:e}, atol={atol:e}.\n"
    bad = np.argwhere(~np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))
    order = np.argsort(-violation[tuple(bad.T)], kind="stable")
    capped = mismatches[1] > 0 and len(bad) > mismatches[1]
    count = mismatches[1] + 1 if capped else len(bad)
    print(f"\n*** Maximum errors for vector of size {a.size}:  rtol={rtol}, atol={atol}\n")
    for i, k in enumerate(order[:min(mismatches[0], count)]):
        idx = tuple(int(j) for j in bad[k])
        print(f"{i + 1:3d}: Error {violation[idx]:f}  {locationError(a, b, idx, names)}")
    degree = "at least " if capped else ""
    return (f"Error {rel:f} exceeds tolerance rtol={rtol:e}, atol={atol:e} (mismatch "
            f"{degree}{100 * count / a.size:f}%).\n"
            f"{locationError(a, b, worst, names, maxError=True)}")


def _fail(a, b, message: str):
    with np.printoptions(threshold=4, suppress=True):
        raise AssertionError(np.testing.build_err_msg([a, b], err_msg=message))


def assert_almost_equal(a, b, rtol=None, atol=None, names=("a", "b"), equal_nan=False,
                        use_broadcast=True, mismatches=(10, 10)) -> None:
    """Assert that two arrays (numpy or NDArray) agree within ``rtol``/``atol``.

    Tolerances default per dtype (:func:`default_rtols`, :func:`default_atols`; the looser
    of the two inputs), or may be dicts of dtype -> tolerance. Bool arrays must be equal.
    The error names the worst element and the share of mismatches.

    >>> assert_almost_equal(np.array([1.0, 2.0]), np.array([1.0, 2.5]), names=('x', 'y'))
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    AssertionError: ...
    Items are not equal:
    Error 20000.000000 exceeds tolerance rtol=1.000000e-05, atol=1.000000e-20 (mismatch 50.000000%).
    Location of maximum error: (1,), x=2.00000000, y=2.50000000
    ...
    """
    if not use_broadcast:
        checkShapes(a, b)
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = _np(a), _np(b)
    if _dtype_of(a) == np.bool_ and _dtype_of(b) == np.bool_:
        np.testing.assert_equal(a, b)
        return
    if almost_equal(a, b, rtol, atol, equal_nan=equal_nan):
        return
    _fail(a, b, _mismatch_report(a, b, (rtol, atol), names, equal_nan, mismatches))


def assert_allclose(a, b, rtol=1e-07, atol=0, equal_nan=True) -> None:
    """:func:`assert_almost_equal` with numpy's ``assert_allclose`` defaults."""
    assert_almost_equal(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def assert_almost_equal_with_err(a, b, rtol=None, atol=None, etol=None, names=("a", "b"),
                                 equal_nan=False, mismatches=(10, 10)) -> None:
    """Like :func:`assert_almost_equal`, but up to a share ``etol`` of the elements may
    differ.

    >>> assert_almost_equal_with_err(np.array([1., 2., 3., 9.]), np.arange(1., 5.), etol=0.3)
    """
    etol = get_etol(etol)
    if etol <= 0:
        assert_almost_equal(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
        return
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = np.asarray(_np(a)), np.asarray(_np(b))
    close = np.isclose(a, b, rtol=rtol, atol=atol)
    if 1 - np.count_nonzero(close) / close.size > etol:
        _fail(a, b, _mismatch_report(a, b, (rtol, atol), names, equal_nan, mismatches))


def assert_almost_equal_ignore_nan(a, b, rtol=None, atol=None, names=("a", "b")) -> None:
    """:func:`assert_almost_equal` with elements that are NaN in either array left out."""
    a, b = np.copy(_np(a)), np.copy(_np(b))
    nan_mask = np.logical_or(np.isnan(a), np.isnan(b))
    a[nan_mask] = 0
    b[nan_mask] = 0
    assert_almost_equal(a, b, rtol, atol, names)


def assert_exception(f, exception_type, *args, **kwargs) -> None:
    """Assert that ``f(*args, **kwargs)`` raises ``exception_type``.

    >>> assert_exception(int, ValueError, 'x')
    """
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError(f"{getattr(f, '__name__', f)} did not raise "
                         f"{getattr(exception_type, '__name__', exception_type)}")


def retry(n: int):
    """Decorator: rerun a stochastic test up to ``n`` times while it fails an assertion."""
    assert n > 0

    def decorate(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            for i in range(n):
                try:
                    f(*args, **kwargs)
                    return
                except AssertionError:
                    if i == n - 1:
                        raise
                    mx.nd.waitall()
        return wrapper
    return decorate


def same_array(array1: NDArray, array2: NDArray) -> bool:
    """Whether two NDArrays share memory (a change to one shows in the other)."""
    array1[:] += 1
    if not same(array1.asnumpy(), array2.asnumpy()):
        array1[:] -= 1
        return False
    array1[:] -= 1
    return same(array1.asnumpy(), array2.asnumpy())


def compare_ndarray_tuple(t1, t2, rtol=None, atol=None) -> None:
    """Assert two (nested tuples of) arrays are almost equal; None on either side passes."""
    if t1 is None or t2 is None:
        return
    if isinstance(t1, tuple):
        for s1, s2 in zip(t1, t2):
            compare_ndarray_tuple(s1, s2, rtol, atol)
    else:
        assert_almost_equal(t1, t2, rtol=rtol, atol=atol)


def same_symbol_structure(sym1: Symbol, sym2: Symbol) -> bool:
    """Whether two symbols run the same op at every node position."""
    nodes1, nodes2 = (json.loads(s.tojson())["nodes"] for s in (sym1, sym2))
    return all(n1["op"] == n2["op"] for n1, n2 in zip(nodes1, nodes2))


def collapse_sum_like(a: np.ndarray, shape) -> np.ndarray:
    """Sum ``a`` over the axes broadcasting added to ``shape`` (a gradient of broadcast).

    >>> collapse_sum_like(np.ones((2, 3, 4)), (3, 1)).tolist()
    [[8.0], [8.0], [8.0]]
    """
    assert len(a.shape) >= len(shape)
    if np.prod(shape) == 0 or a.size == 0:
        return np.zeros(shape, dtype=a.dtype)
    lead = len(a.shape) - len(shape)
    axes = list(range(lead))
    for i, s in enumerate(shape):
        if s != a.shape[i + lead]:
            assert s == 1
            axes.append(i + lead)
    return np.sum(a, axis=tuple(axes)).reshape(shape)


# --- environment and process helpers -------------------------------------------------------

@contextlib.contextmanager
def environment(*args):
    """Set environment variables for a ``with`` block or a decorated function, restoring
    them afterwards (also on error). Pass ``name, value`` or a dict; None unsets.

    >>> with environment('MXNET_TEST_VAR', '1'):
    ...     getenv('MXNET_TEST_VAR')
    '1'
    >>> getenv('MXNET_TEST_VAR') is None
    True
    """
    if len(args) == 1 and isinstance(args[0], dict):
        env_vars = args[0]
    else:
        assert len(args) == 2, "Expecting one dict arg or two args: env var name and value"
        env_vars = {args[0]: args[1]}
    snapshot = {name: getenv(name) for name in env_vars}
    for name, value in env_vars.items():
        setenv(name, value)
    try:
        yield
    finally:
        mx.nd.waitall()
        for name, value in snapshot.items():
            setenv(name, value)


@contextlib.contextmanager
def discard_stderr():
    """Send the process's stderr (file descriptor 2, C libraries included) to /dev/null."""
    try:
        fileno = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # stderr is not a real file
        yield
        return
    saved = os.dup(fileno)
    with open(os.devnull, "w") as bit_bucket:
        os.dup2(bit_bucket.fileno(), fileno)
        try:
            yield
        finally:
            os.dup2(saved, fileno)
            os.close(saved)


def is_cd_run() -> bool:
    """Whether this is a Continuous Delivery run (CD_JOB=1)."""
    return config.env("CD_JOB")


def is_aarch64_run() -> bool:
    """Whether this machine is aarch64."""
    return platform.machine() == "aarch64"


def list_gpus() -> range:
    """Indices of the visible GPUs (``range(0)`` without CUDA)."""
    return range(mx.util.get_gpu_count())


def has_tvm_ops() -> bool:
    """Whether operators compiled with TVM exist: never in symgraph."""
    return Features().is_enabled("TVM_OP")


def is_op_runnable() -> bool:
    """Whether the current context can run every operator: True (symgraph builds no
    TVM operators, whose GPU versions need compute capability 5.3)."""
    if current_context().device_type == "gpu" and Features().is_enabled("TVM_OP"):
        return get_cuda_compute_capability(current_context()) >= 53
    return True


# --- symbol checks -------------------------------------------------------------------------

def _to_nd(v, ctx, dtype):
    if not isinstance(v, np.ndarray):
        return v
    return array(v, ctx=ctx, dtype=v.dtype if isinstance(dtype, str) else dtype)


def _parse_location(sym: Symbol, location, ctx, dtype=np.float32) -> OrderedDict:
    """Argument values (list in argument order, or dict by name) as NDArrays by name."""
    assert isinstance(location, (dict, list, tuple))
    if isinstance(location, dict):
        if set(location) != set(sym.list_arguments()):
            raise ValueError("Symbol arguments and keys of the given location do not match."
                             f"symbol args:{set(sym.list_arguments())}, "
                             f"location.keys():{set(location)}")
    else:
        location = dict(zip(sym.list_arguments(), location))
    return OrderedDict(sorted((k, _to_nd(v, ctx, dtype)) for k, v in location.items()))


def _parse_aux_states(sym: Symbol, aux_states, ctx, dtype=np.float32):
    """Aux state values (list or dict) as NDArrays by name; None stays None."""
    if aux_states is None:
        return None
    names = sym.list_auxiliary_states()
    if isinstance(aux_states, dict):
        if set(aux_states) != set(names):
            raise ValueError("Symbol aux_states names and given aux_states do not match."
                             f"symbol aux_names:{set(names)}, "
                             f"aux_states.keys:{set(aux_states)}")
    else:
        aux_states = dict(zip(names, aux_states))
    return {k: array(v, ctx=ctx, dtype=v.dtype if isinstance(dtype, str) else dtype)
            for k, v in aux_states.items()}


def simple_forward(sym: Symbol, ctx=None, is_train=False, **inputs):
    """Run ``sym`` on numpy inputs given by name; numpy output(s).

    >>> simple_forward(mx.sym.var('x') + 1, x=np.array([1., 2.]))
    array([2., 3.], dtype=float32)
    """
    exe = sym.bind(ctx or default_context(), args={k: array(v) for k, v in inputs.items()})
    exe.forward(is_train=is_train)
    outputs = [x.asnumpy() for x in exe.outputs]
    return outputs[0] if len(outputs) == 1 else outputs


def numeric_grad(executor, location, aux_states=None, eps=1e-4, use_forward_train=True,
                 dtype=np.float32) -> dict:
    """Central differences of the sum of ``executor``'s first output, per argument in
    ``location`` (numpy arrays by name); aux states are reset before every forward."""
    assert dtype in (np.float16, np.float32, np.float64)
    grads = {k: np.zeros(v.shape, dtype=dtype) for k, v in location.items()}
    for k, v in location.items():
        executor.arg_dict[k][:] = array(v, dtype=dtype)
    for k, v in location.items():
        if np.asarray(v).dtype.kind != "f":
            continue
        point = np.array(v, order="C")
        for i in range(point.size):
            sums = []
            for step in (eps / 2.0, -eps / 2.0):
                bumped = point.copy()
                bumped.flat[i] += step
                executor.arg_dict[k][:] = array(bumped, dtype=dtype)
                for key, val in (aux_states or {}).items():
                    executor.aux_dict[key][:] = array(val, dtype=dtype)
                executor.forward(is_train=use_forward_train)
                sums.append(executor.outputs[0].asnumpy())
            grads[k].flat[i] = (sums[0] - sums[1]).sum() / eps
        executor.arg_dict[k][:] = array(point, dtype=dtype)
    return grads


def _grad_reqs(sym: Symbol, grad_nodes) -> tuple[list, dict]:
    if grad_nodes is None:
        grad_nodes = sym.list_arguments()
    if isinstance(grad_nodes, dict):
        return list(grad_nodes), dict(grad_nodes)
    if isinstance(grad_nodes, (list, tuple)):
        return list(grad_nodes), dict.fromkeys(grad_nodes, "write")
    raise ValueError(f"grad_nodes must be None, a list or a dict, got {grad_nodes!r}")


def _check_grads(name: str, req: str, got, want, before, checks: tuple):
    """Compare a gradient by its grad_req: 'write' as is, 'add' less the array's old value,
    'null' must leave the old value; ``checks`` is (rtol, atol, equal_nan)."""
    rtol, atol, equal_nan = checks
    names = (f"EXPECTED_{name}", f"BACKWARD_{name}")
    got = _np(got)
    if req == "write":
        assert_almost_equal(want, got, rtol, atol, names, equal_nan=equal_nan)
    elif req == "add":
        assert_almost_equal(want, got - before, rtol, atol, names, equal_nan=equal_nan)
    elif req == "null":
        assert_almost_equal(before, got, rtol, atol, names, equal_nan=equal_nan)
    else:
        raise ValueError(f"Invalid grad_req {req} for argument {name}")


def _sparse_grads(grads: dict, before: dict, stypes: dict | None) -> None:
    """Replace the gradient arrays named in ``stypes`` by empty sparse arrays of that storage
    type (MXNet's ``grad_stype_dict``/``grad_stypes``); their starting value is then zero."""
    for name, stype in (stypes or {}).items():
        if name in grads and stype not in (None, "default"):
            g = grads[name]
            grads[name] = mx.nd.zeros(g.shape, g.context, g.dtype, stype)
            before[name] = np.zeros(g.shape)


def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=None, rtol=None,
                           atol=None, grad_nodes=None, use_forward_train=True, ctx=None,
                           grad_stype_dict=None, dtype=np.float32) -> None:
    """Check ``sym``'s gradients against finite differences.

    The output is multiplied by a random projection (elements in [0.1, 1.1)) so one scalar,
    ``sum(proj * sym)``, is differentiated. ``grad_nodes`` lists the arguments to check (or
    maps them to a grad_req); ``numeric_eps`` defaults per dtype (:func:`default_numeric_eps`).
    ``location`` may hold sparse arrays (perturbed in their storage type) and
    ``grad_stype_dict`` names arguments whose gradient array is sparse.
    """
    assert dtype in (np.float16, np.float32, np.float64)
    ctx = ctx or default_context()
    location = _parse_location(sym, location, ctx, dtype)
    location_npy = {k: v.asnumpy() for k, v in location.items()}
    aux_states = _parse_aux_states(sym, aux_states, ctx, dtype)
    aux_npy = None if aux_states is None else {k: v.asnumpy() for k, v in aux_states.items()}
    grad_nodes, grad_req = _grad_reqs(sym, grad_nodes)
    _, out_shapes, _ = sym.infer_shape(**{k: v.shape for k, v in location.items()})
    out = mx.sym.make_loss(sym * mx.sym.Variable("__random_proj"))  # head gradient 1
    proj = np.random.rand(*out_shapes[0]) + 0.1
    args = dict(location, __random_proj=array(proj, ctx=ctx, dtype=dtype))
    grads_npy = {k: np.random.normal(0, 0.01, size=args[k].shape) for k in grad_nodes}
    grads_npy["__random_proj"] = np.random.normal(0, 0.01, size=out_shapes[0])
    grads = {k: array(v, ctx=ctx, dtype=dtype) for k, v in grads_npy.items()}
    _sparse_grads(grads, grads_npy, grad_stype_dict)
    executor = out.bind(ctx, grad_req=grad_req, args=args, args_grad=grads,
                        aux_states=aux_states)
    executor.forward(is_train=True)
    eps = get_tolerance(executor.outputs[0], numeric_eps, default_numeric_eps())
    if dtype in (np.float32, np.float16):  # small steps need high precision
        assert eps >= 1e-5
    executor.backward()
    numeric = numeric_grad(executor, location_npy, aux_npy, eps=eps,
                           use_forward_train=use_forward_train, dtype=dtype)
    for name in grad_nodes:
        _check_grads(name, grad_req[name], grads[name], numeric[name], grads_npy[name],
                     (rtol, atol, False))


def check_symbolic_forward(sym, location, expected, rtol=None, atol=None, aux_states=None,
                           ctx=None, equal_nan=False, dtype=np.float32) -> list:
    """Run an inference forward of ``sym`` at ``location`` and compare with ``expected``
    (a list in output order or a dict by output name); returns the output NDArrays."""
    assert dtype == "asnumpy" or dtype in (np.float16, np.float32, np.float64)
    ctx = ctx or default_context()
    location = _parse_location(sym, location, ctx, dtype)
    aux_states = _parse_aux_states(sym, aux_states, ctx, dtype)
    if isinstance(expected, dict):
        expected = [expected[k] for k in sym.list_outputs()]
    executor = sym.bind(ctx=ctx, args=location, grad_req="null", aux_states=aux_states)
    outputs = executor.forward(is_train=False)
    for name, want, got in zip(sym.list_outputs(), expected, outputs):
        assert_almost_equal(want, got, rtol, atol, (f"EXPECTED_{name}", f"FORWARD_{name}"),
                            equal_nan=equal_nan)
    return executor.outputs


def _out_grads(out_grads, ctx, dtype):
    if isinstance(out_grads, (list, tuple)):
        return [_to_nd(g, ctx, dtype) for g in out_grads]
    if isinstance(out_grads, dict):
        return {k: _to_nd(g, ctx, dtype) for k, g in out_grads.items()}
    assert out_grads is None
    return None


def check_symbolic_backward(sym, location, out_grads, expected, rtol=None, atol=None,
                            aux_states=None, grad_req="write", ctx=None, grad_stypes=None,
                            equal_nan=False, dtype=np.float32) -> dict:
    """Run forward(is_train=True) and backward(``out_grads``); compare the gradients with
    ``expected`` (list in argument order or dict by name) according to ``grad_req``.
    Gradient arrays start with random values, so 'add' and 'null' are checked too.
    ``grad_stypes`` names arguments whose gradient array is sparse (compared densely).
    Returns the gradient NDArrays by name."""
    assert dtype == "asnumpy" or dtype in (np.float16, np.float32, np.float64)
    ctx = ctx or default_context()
    location = _parse_location(sym, location, ctx, dtype)
    aux_states = _parse_aux_states(sym, aux_states, ctx, dtype)
    if isinstance(expected, (list, tuple)):
        expected = dict(zip(sym.list_arguments(), expected))
    before = {k: np.random.normal(size=v.shape) for k, v in sorted(expected.items())}
    grads = {k: array(v, ctx=ctx, dtype=expected[k].dtype if dtype == "asnumpy" else dtype)
             for k, v in before.items()}
    _sparse_grads(grads, before, grad_stypes)
    if isinstance(grad_req, str):
        grad_req = dict.fromkeys(sym.list_arguments(), grad_req)
    elif isinstance(grad_req, (list, tuple)):
        grad_req = dict(zip(sym.list_arguments(), grad_req))
    executor = sym.bind(ctx=ctx, args=location, args_grad=grads, aux_states=aux_states,
                        grad_req=grad_req)
    executor.forward(is_train=True)
    executor.backward(_out_grads(out_grads, ctx, dtype))
    for name in expected:
        _check_grads(name, grad_req[name], grads[name], expected[name], before[name],
                     (rtol, atol, equal_nan))
    return grads


def check_speed(sym, location=None, ctx=None, N=20, grad_req=None, typ="whole",
                **kwargs) -> float:
    """Seconds per forward+backward (``typ='whole'``) or forward (``'forward'``) of ``sym``,
    averaged over ``N`` runs after a warm-up; shapes from ``location`` or ``kwargs``."""
    ctx = ctx or default_context()
    if typ not in ("whole", "forward"):
        raise ValueError('typ can only be "whole" or "forward".')
    if location is None:
        exe = sym.simple_bind(grad_req=grad_req or "write", ctx=ctx, **kwargs)
        location = {k: np.random.normal(size=a.shape, scale=1.0) for k, a in exe.arg_dict.items()}
    else:
        assert isinstance(location, dict), f'Expect dict, get "location"={location}'
        exe = sym.simple_bind(grad_req=grad_req or "write", ctx=ctx,
                              **{k: v.shape for k, v in location.items()})
    for name, value in location.items():
        exe.arg_dict[name][:] = value.astype(exe.arg_dict[name].dtype)

    def run():
        exe.forward(is_train=typ == "whole")
        if typ == "whole":
            exe.backward(out_grads=exe.outputs)
    run()
    mx.nd.waitall()
    tic = time.time()
    for _ in range(N):
        run()
    mx.nd.waitall()
    return (time.time() - tic) / N


def _smaller_dtype(dt1, dt2):
    """The less precise of two dtypes (``dt1`` if ``dt2`` is None)."""
    return dt1 if dt2 is None or np.dtype(dt1).itemsize < np.dtype(dt2).itemsize else dt2


def _consistency_inputs(exe, arg_params, aux_params, scale, use_uniform, rand_type):
    """Random arguments (in sorted-name order, for reproducibility) where not given; aux 0."""
    for name, arr in sorted(exe.arg_dict.items()):
        if name not in arg_params:
            if use_uniform:
                value = np.random.uniform(-0.92 * scale, 0.92 * scale, size=arr.shape)
            else:
                value = np.random.normal(size=arr.shape, scale=scale)
            arg_params[name] = value.astype(rand_type)
    for name in exe.aux_dict:
        aux_params.setdefault(name, 0)


def _compare_or_report(arr, want, checks: tuple, label: str) -> None:
    """assert_almost_equal with ``checks`` = (rtol, atol, equal_nan, raise_on_err); a failure
    is printed with ``label`` and raised only if ``raise_on_err``."""
    rtol, atol, equal_nan, raise_on_err = checks
    try:
        assert_almost_equal(arr, want, rtol=rtol, atol=atol, equal_nan=equal_nan)
    except AssertionError as err:
        print(label)
        traceback.print_exc()
        if raise_on_err:
            raise
        print(str(err))


def check_consistency(sym, ctx_list, scale=1.0, grad_req="write", arg_params=None,
                      aux_params=None, rtol=None, atol=None, raise_on_err=True,
                      ground_truth=None, equal_nan=False, use_uniform=False,
                      rand_type=np.float64) -> dict:
    """Check that ``sym`` (or one symbol per entry) gives the same outputs and gradients
    under every ``ctx_list`` entry (``{'ctx': ..., <arg>: shape, 'type_dict': {...}}``).

    The first executor with the most precise output is the reference (or ``ground_truth``);
    the others must match within the tolerances of their dtypes. Returns the reference
    arrays by output and argument name.

    >>> fc = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=2, name='fc')
    >>> gt = check_consistency(fc, [{'ctx': mx.cpu(), 'data': (3, 4),
    ...                              'type_dict': {'data': dt}} for dt in (np.float64, np.float32)])
    >>> sorted(gt)
    ['data', 'fc_bias', 'fc_output', 'fc_weight']
    """
    assert len(ctx_list) > 1
    syms = [sym] * len(ctx_list) if isinstance(sym, Symbol) else list(sym)
    assert len(syms) == len(ctx_list)
    output_names, arg_names = syms[0].list_outputs(), syms[0].list_arguments()
    exes = []
    for s, spec in zip(syms, ctx_list):
        assert s.list_arguments() == arg_names and s.list_outputs() == output_names
        exes.append(s.simple_bind(grad_req=grad_req, **spec))
    arg_params = {} if arg_params is None else arg_params
    aux_params = {} if aux_params is None else aux_params
    _consistency_inputs(exes[0], arg_params, aux_params, scale, use_uniform, rand_type)
    for exe in exes:
        for name, arr in exe.arg_dict.items():
            arr[:] = arg_params[name]
        for name, arr in exe.aux_dict.items():
            arr[:] = aux_params[name]
        if grad_req == "add":
            for arr in exe.grad_arrays:
                if arr is not None:
                    arr[:] = 0
    dtypes = [np.dtype(exe.outputs[0].dtype) for exe in exes]
    gt_idx = max(range(len(exes)), key=lambda i: (dtypes[i].itemsize, -i))
    gt = ground_truth
    if gt is None:
        gt = exes[gt_idx].output_dict.copy()
        if grad_req != "null":
            gt.update(exes[gt_idx].grad_dict)
    for exe in exes:
        exe.forward(is_train=False)
    for i, exe in enumerate(exes):
        for name, arr in zip(output_names, exe.outputs if i != gt_idx else []):
            _compare_or_report(arr, gt[name], (rtol, atol, equal_nan, raise_on_err),
                               f"Predict Err: ctx {i} vs ctx {gt_idx} at {name}")
    if grad_req != "null":
        _consistency_backward(exes, gt, gt_idx, dtypes, output_names + arg_names,
                              (rtol, atol, equal_nan, raise_on_err))
    return gt


def _consistency_backward(exes, gt, gt_idx, dtypes, names, checks) -> None:
    """Forward(train) and backward on every executor with the first executor's outputs (in
    the least precise dtype) as head gradients; compare outputs and gradients with ``gt``."""
    rtol, atol, equal_nan, raise_on_err = checks
    for exe in exes:
        exe.forward(is_train=True)
    least = [o.dtype for o in exes[0].outputs]
    for exe in exes:
        least = [_smaller_dtype(o.dtype, dt) for o, dt in zip(exe.outputs, least)]
    golden = [o.asnumpy().astype(dt) for o, dt in zip(exes[0].outputs, least)]
    for exe in exes:
        exe.backward([array(g, ctx=exe._ctx, dtype=o.dtype) for g, o in zip(golden, exe.outputs)])
    for i, exe in enumerate(exes):
        if i == gt_idx:
            continue
        for name, arr in zip(names, exe.outputs + exe.grad_arrays):
            want = gt[name]
            if want is None:
                assert arr is None
                continue
            rt, at = rtol, atol
            small, small_gt = _smaller_dtype(arr.dtype, dtypes[i]), \
                _smaller_dtype(want.dtype, dtypes[gt_idx])
            if small != arr.dtype or small_gt != want.dtype:
                rt, at = get_tols(arr.astype(small), want.astype(small_gt), rtol, atol)
            _compare_or_report(arr, want, (rt, at, equal_nan, raise_on_err),
                               f"Train Err: {np.dtype(arr.dtype).name} {arr.context} ctx {i} vs "
                               f"{np.dtype(want.dtype).name} ctx {gt_idx} at {name}")


# --- optimizers and Gluon ------------------------------------------------------------------

def _uniform_pair(shape, dtype, stype: str, density=None):
    """(opt1's dense array, opt2's array of ``stype``) holding the same random values:
    uniform for ``'default'``, :func:`rand_ndarray` for a sparse ``stype`` (``density``:
    1 for weights, which MXNet's sparse updates need whole)."""
    ctx = default_context()
    if stype == "default":
        a = mx.nd.random.uniform(shape=shape, ctx=ctx, dtype=dtype)
        return a.copyto(ctx), a
    if stype not in ("row_sparse", "csr"):
        raise ValueError(f"compare_optimizer: storage type {stype!r} not supported")
    a = rand_ndarray(shape, stype, density=density, dtype=dtype)
    return a.copyto(ctx).tostype("default"), a


def compare_optimizer(opt1, opt2, shape, dtype, w_stype="default", g_stype="default",
                      rtol=1e-4, atol=1e-5, compare_states=True, ntensors=1) -> None:
    """Check that two optimizers make the same update (and states) from the same random
    weight and gradient; with a list of shapes ``opt2`` updates ``ntensors`` at once.
    ``w_stype``/``g_stype`` give ``opt2``'s weight and gradient a sparse storage type
    (``opt1`` gets dense copies): a whole row_sparse/csr weight, a random-density gradient."""
    if isinstance(shape, list):
        _compare_multi_tensor(opt1, opt2, shape, dtype, (rtol, atol, compare_states), ntensors)
        return
    assert ntensors == 1
    w1, w2 = _uniform_pair(shape, dtype, w_stype, density=1)
    g1, g2 = _uniform_pair(shape, dtype, g_stype)
    state1 = opt1.create_state_multi_precision(0, w1)
    state2 = opt2.create_state_multi_precision(0, w2)
    if compare_states:
        compare_ndarray_tuple(state1, state2)
    opt1.update_multi_precision(0, w1, g1, state1)
    opt2.update_multi_precision(0, w2, g2, state2)
    if compare_states:
        compare_ndarray_tuple(state1, state2, rtol=rtol, atol=atol)
    assert_almost_equal(w1, w2, rtol=rtol, atol=atol)


def _compare_multi_tensor(opt1, opt2, shapes, dtype, checks: tuple, ntensors: int):
    """``opt1`` one tensor at a time as the reference for ``opt2``'s multi-tensor update;
    ``checks`` is (rtol, atol, compare_states)."""
    rtol, atol, compare_states = checks
    pairs = [(_uniform_pair(s, dtype, "default"), _uniform_pair(s, dtype, "default"))
             for s in shapes]
    w1, w2 = [p[0][0] for p in pairs], [p[0][1] for p in pairs]
    g1, g2 = [p[1][0] for p in pairs], [p[1][1] for p in pairs]
    state2 = [opt2.create_state_multi_precision(0, w2[i]) for i in range(ntensors)]
    opt2.update_multi_precision(list(range(ntensors)), w2, g2, state2)
    for i in range(ntensors):
        state1 = opt1.create_state_multi_precision(i, w1[i])
        opt1.update_multi_precision(i, w1[i], g1[i], state1)
        if compare_states:
            compare_ndarray_tuple(state1, state2[i], rtol, atol)
        compare_ndarray_tuple(w1[i], w2[i], rtol, atol)


def _params_initializer(values: dict):
    """An initializer writing saved numpy values into parameters by name."""
    class _SavedValues(mx.init.Initializer):
        def __call__(self, desc, arr):
            arr[:] = values[str(desc)]
    return _SavedValues()


def check_gluon_hybridize_consistency(net_builder, data_l, numpy_func=None, test_grad=True,
                                      rtol=1E-4, atol=1E-4) -> None:
    """Check a HybridBlock gives the same outputs (and input gradients) hybridized or not.

    ``net_builder(prefix=...)`` builds the block; every variant starts from the parameters
    of the first; ``numpy_func``, if given, is the reference for the output.
    """
    saved_out, saved_grads, init = None, None, None
    for hybridize in (False, True):
        for use_autograd in ((False, True) if test_grad else (False,)):
            net = net_builder(prefix="net_")
            net.initialize() if init is None else net.initialize(init)
            if hybridize:
                net.hybridize()
            inputs = [x.copy() for x in data_l]
            out = _gluon_run(net, inputs, use_autograd)
            if init is None:
                init = _params_initializer({k: v.data().asnumpy()
                                            for k, v in net.collect_params().items()})
            if saved_out is None:
                saved_out = out.asnumpy()
            assert_almost_equal(out.asnumpy(), saved_out, rtol=rtol, atol=atol)
            if use_autograd:
                grads = [x.grad.asnumpy() for x in inputs]
                saved_grads = saved_grads or grads
                for got, want in zip(grads, saved_grads):
                    assert_almost_equal(got, want, rtol=rtol, atol=atol)
    if numpy_func is not None:
        want = numpy_func(*[x.asnumpy() for x in data_l])
        assert_almost_equal(saved_out, want, rtol=rtol, atol=atol)


def _gluon_run(net, inputs, use_autograd):
    if not use_autograd:
        return net(*inputs)
    for x in inputs:
        x.attach_grad()
    with mx.autograd.record():
        out = net(*inputs)
    out.backward(out)
    return out


# --- data ----------------------------------------------------------------------------------

def download(url, fname=None, dirname=None, overwrite=False, retries=5) -> str:
    """Return the local path MXNet would download ``url`` to, if the file is already there;
    symgraph never downloads, so a missing (or ``overwrite``) file raises MXNetError."""
    assert retries >= 0, "Number of retries should be at least 0"
    fname = fname if fname is not None else url.split("/")[-1]
    if dirname is not None:
        fname = os.path.join(dirname, fname)
    if os.path.exists(fname) and not overwrite:
        return fname
    raise _downloads_disabled(f"download({url!r})", fname)


def download_model(model_name, dst_dir="./", meta_info=None) -> tuple:
    """``(path prefix, 0)`` of a model whose ``-symbol.json`` and ``-0000.params`` are in
    ``dst_dir``; ``(None, 0)`` for a name missing from a given ``meta_info``."""
    if meta_info is not None and model_name not in dict(meta_info):
        return (None, 0)
    prefix = os.path.join(dst_dir, model_name)
    _require(f"download_model({model_name!r})", prefix + "-symbol.json", prefix + "-0000.params")
    return (prefix, 0)


_MNIST_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


def _read_idx(path: str) -> np.ndarray:
    """An array from an IDX file (MNIST's format; gzip if the name ends in .gz)."""
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        raw = f.read()
    if raw[:2] != b"\0\0" or raw[2] != 0x08:
        raise MXNetError(f"{path} is not an IDX file of unsigned bytes")
    ndim = raw[3]
    shape = tuple(int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim))
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


def _mnist_file(name: str) -> str:
    """MNIST's ``name`` where MXNet puts it: ``./name.gz`` (get_mnist) or ``data/name``."""
    for path in (name + ".gz", os.path.join("data", name)):
        if os.path.exists(path):
            return path
    raise _downloads_disabled("get_mnist", os.path.join("data", name))


def get_mnist() -> dict:
    """MNIST as numpy: ``train_data``/``test_data`` float32 (N, 1, 28, 28) in [0, 1],
    ``train_label``/``test_label`` int8, read from ``./*-ubyte.gz`` or ``data/*-ubyte``."""
    out = {}
    for key, prefix in (("train", "train"), ("test", "t10k")):
        out[f"{key}_label"] = _read_idx(_mnist_file(f"{prefix}-labels-idx1-ubyte")).view(np.int8)
        images = _read_idx(_mnist_file(f"{prefix}-images-idx3-ubyte"))
        out[f"{key}_data"] = images.reshape(len(images), 1, 28, 28).astype(np.float32) / 255
    return out


def _require(what: str, *paths: str) -> None:
    for path in paths:
        if not os.path.exists(path):
            raise _downloads_disabled(what, path)


def get_mnist_ubyte() -> None:
    """Make sure ``data/`` holds MNIST's four ubyte files (never downloads them)."""
    os.makedirs("data", exist_ok=True)
    _require("get_mnist_ubyte", *(os.path.join("data", name) for name in _MNIST_FILES))


def get_mnist_pkl() -> None:
    """Make sure ``data/mnist.pkl.gz`` exists (never downloads it)."""
    os.makedirs("data", exist_ok=True)
    _require("get_mnist_pkl", os.path.join("data", "mnist.pkl.gz"))


def get_cifar10() -> None:
    """Make sure ``data/cifar`` holds CIFAR-10's .rec/.lst files (never downloads them)."""
    os.makedirs("data", exist_ok=True)
    _require("get_cifar10", *(os.path.join("data", "cifar", name)
                              for name in ("train.rec", "test.rec", "train.lst", "test.lst")))


def get_zip_data(data_dir, url, data_origin_name) -> None:
    """Make sure ``data_dir/data_origin_name`` exists (never downloads or extracts)."""
    _require(f"get_zip_data({url!r})", os.path.join(data_dir, data_origin_name))


def get_bz2_data(data_dir, data_name, url, data_origin_name) -> None:
    """Make sure the extracted ``data_dir/data_name`` exists (never downloads)."""
    _require(f"get_bz2_data({url!r})", os.path.join(data_dir, data_name))


def get_im2rec_path(home_env="MXNET_HOME") -> str:
    """Path of ``tools/im2rec.py`` under ``$home_env``, else symgraph's own
    (``symgraph/tools/im2rec.py``, MXNet's options); IOError if absent."""
    root = config.getenv(home_env) or os.path.dirname(mx.__file__)
    for path in (os.path.join(root, "tools", "im2rec.py"),
                 os.path.join(root, "..", "..", "tools", "im2rec.py")):
        if os.path.isfile(path):
            return path
    raise OSError("Could not find path to tools/im2rec.py")


def get_mnist_iterator(batch_size, input_shape, num_parts=1, part_index=0) -> tuple:
    """(train, validation) ``mx.io.MNISTIter`` over ``data/``'s MNIST files (never
    downloaded); a 3-d ``input_shape`` gives image batches, otherwise flat rows."""
    get_mnist_ubyte()
    return tuple(mx.io.MNISTIter(image=f"data/{prefix}-images-idx3-ubyte",
                                 label=f"data/{prefix}-labels-idx1-ubyte",
                                 input_shape=input_shape, batch_size=batch_size,
                                 shuffle=shuffle, flat=len(input_shape) != 3,
                                 num_parts=num_parts, part_index=part_index)
                 for prefix, shuffle in (("train", True), ("t10k", False)))


class DummyIter(DataIter):
    """Returns the first batch of ``real_iter`` forever (for speed tests)."""

    def __init__(self, real_iter):
        super().__init__(real_iter.batch_size)
        self.real_iter = real_iter
        self.provide_data = real_iter.provide_data
        self.provide_label = real_iter.provide_label
        self.the_batch = next(real_iter)

    def next(self):
        """The first batch of the real iterator, again; never StopIteration."""
        return self.the_batch


# --- statistical checks of random generators -----------------------------------------------

def gen_buckets_probs_with_ppf(ppf, nbuckets: int) -> tuple:
    """``nbuckets`` equally likely buckets ``(ppf(i/n), ppf((i+1)/n))`` and their probabilities.

    >>> gen_buckets_probs_with_ppf(lambda p: p * 2, 2)
    ([(0.0, 1.0), (1.0, 2.0)], [0.5, 0.5])
    """
    assert nbuckets > 0
    probs = [1.0 / nbuckets] * nbuckets
    buckets = [(ppf(i / float(nbuckets)), ppf((i + 1) / float(nbuckets)))
               for i in range(nbuckets)]
    return buckets, probs


def mean_check(generator, mu, sigma, nsamples=1000000) -> bool:
    """Whether the mean of ``generator(nsamples)`` is within 3 sigma/sqrt(n) of ``mu``."""
    mean = np.array(generator(nsamples)).mean()
    return bool(mu - 3 * sigma / np.sqrt(nsamples) < mean < mu + 3 * sigma / np.sqrt(nsamples))


def var_check(generator, sigma, nsamples=1000000) -> bool:
    """Whether the sample variance is within 3 sqrt(2 sigma^4 / (n-1)) of ``sigma**2``."""
    var = np.array(generator(nsamples)).var(ddof=1)
    bound = 3 * np.sqrt(2 * sigma ** 4 / (nsamples - 1))
    return bool(sigma ** 2 - bound < var < sigma ** 2 + bound)


def _bucket_counts(samples, buckets) -> np.ndarray:
    """Samples per bucket: ranges ``(lo, hi)`` (ascending, disjoint) or discrete values."""
    if not isinstance(buckets[0], (list, tuple)):
        samples = np.asarray(samples)
        return np.array([(samples == value).sum() for value in buckets], dtype=np.int64)
    edges = np.zeros(2 * len(buckets), dtype=np.float32)
    for i, (lo, hi) in enumerate(buckets):
        assert lo <= hi
        if i < len(buckets) - 1:
            assert hi <= buckets[i + 1][0]
        edges[2 * i:2 * i + 2] = lo, hi
    ids = np.searchsorted(edges, np.asarray(samples), side="right") // 2
    return np.array([(ids == i).sum() for i in range(len(buckets))], dtype=np.int64)


def chi_square_check(generator, buckets, probs, nsamples=1000000) -> tuple:
    """Chi-square test of ``generator(nsamples)`` against bucket probabilities ``probs``.

    Returns (p value, observed counts, expected counts); a continuous distribution takes
    ``(low, high)`` buckets, a discrete one takes its values.

    >>> np.random.seed(0)
    >>> p, obs, exp = chi_square_check(lambda n: np.random.randint(0, 2, n), [0, 1], [.5, .5])
    >>> bool(p > 0.05), exp.tolist()
    (True, [500000, 500000])
    """
    ss = _scipy_stats()
    assert isinstance(buckets, list)
    samples = generator(nsamples)
    assert len(probs) == len(buckets)
    expected = (nsamples * np.array(probs, dtype=np.float32)).astype(np.int32)
    observed = _bucket_counts(samples, buckets)
    # Pearson's statistic on the truncated expected counts, as scipy computed it before it
    # began rejecting expected counts whose sum differs from the observed one
    stat = ((observed - expected) ** 2 / expected).sum()
    return float(ss.chi2.sf(stat, len(buckets) - 1)), observed, expected


def verify_generator(generator, buckets, probs, nsamples=1000000, nrepeat=5, success_rate=0.2,
                     alpha=0.05) -> list:
    """Run :func:`chi_square_check` ``nrepeat`` times; AssertionError unless at least
    ``success_rate`` of the p values exceed ``alpha``. Returns the p values."""
    results = [chi_square_check(generator, buckets, probs, nsamples) for _ in range(nrepeat)]
    p_values = [r[0] for r in results]
    if (np.array(p_values) > alpha).sum() < nrepeat * success_rate:
        raise AssertionError(
            f"Generator test fails, Chi-square p={p_values}, obs_freq={[r[1] for r in results]}, "
            f"expected_freq={[r[2] for r in results]}.\nbuckets={buckets}, probs={probs}")
    return p_values


# --- matrices for linear-algebra tests -----------------------------------------------------

def new_matrix_with_real_eigvals_2d(n: int) -> np.ndarray:
    """A well-conditioned n x n matrix with real eigenvalues in [-10, 10]."""
    while True:  # a Householder reflection times a diagonal, until well conditioned
        v = np.random.uniform(-1.0, 1.0, (n, 1))
        reflect = np.eye(n) - 2 * (v / np.linalg.norm(v)) @ (v / np.linalg.norm(v)).T
        q = reflect @ np.diag(np.random.uniform(-1.0, 1.0, n))
        if np.linalg.cond(q, 2) < 3:
            break
    return np.linalg.inv(q) @ np.diag(np.random.uniform(-10.0, 10.0, n)) @ q


def new_matrix_with_real_eigvals_nd(shape) -> np.ndarray:
    """A batch of :func:`new_matrix_with_real_eigvals_2d` matrices of ``shape``."""
    n = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([new_matrix_with_real_eigvals_2d(shape[-1]) for _ in range(n)]).reshape(shape)


def new_orthonormal_matrix_2d(n: int) -> np.ndarray:
    """A random n x n orthonormal matrix."""
    x = np.random.randn(n, n)
    return np.linalg.qr(x.T @ x)[0]


def new_sym_matrix_with_real_eigvals_2d(n: int) -> np.ndarray:
    """A random symmetric n x n matrix with eigenvalues in [-10, 10]."""
    q = new_orthonormal_matrix_2d(n)
    return q.T @ np.diag(np.random.uniform(-10.0, 10.0, n)) @ q


def new_sym_matrix_with_real_eigvals_nd(shape) -> np.ndarray:
    """A batch of :func:`new_sym_matrix_with_real_eigvals_2d` matrices of ``shape``."""
    n = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([new_sym_matrix_with_real_eigvals_2d(shape[-1])
                     for _ in range(n)]).reshape(shape)
