"""MXNet 1.x's ``mx.nd``: the imperative NDArray, its operators and ``.params`` I/O.

>>> from symgraph import ndarray as nd
>>> x = nd.arange(6).reshape((2, 3))
>>> nd.dot(x, x.T).asnumpy()
array([[ 5., 14.],
       [14., 50.]], dtype=float32)
"""
import importlib as _importlib

from .. import unsupported as _unsupported
from ..ops.namespaces import module_getattr as _module_getattr
from ..ops.namespaces import names as _names
from . import _internal, contrib, image, linalg, random, sparse  # noqa: F401 - namespaces
from . import _internal as gen__internal  # noqa: F401 - MXNet's generated-module names
from . import contrib as gen_contrib  # noqa: F401
from . import image as gen_image  # noqa: F401
from . import linalg as gen_linalg  # noqa: F401
from . import op as gen_op  # noqa: F401
from . import sparse as gen_sparse  # noqa: F401
from .helpers import (  # noqa: F401 - MXNet's Python-level functions
    concatenate,
    eye,
    from_dlpack,
    from_numpy,
    get_indexing_dispatch_code,
    get_oshape_of_gather_nd_op,
    histogram,
    imdecode,
    indexing_key_expand_implicit_axes,
    linspace,
    logical_and,
    logical_or,
    logical_xor,
    moveaxis,
    onehot_encode,
    split_v2,
    to_dlpack_for_read,
    to_dlpack_for_write,
    true_divide,
)
from .io import ParamsFormatError, load, load_frombuffer, save
from .ndarray import NDArray
from .op import (
    abs,
    add,
    ceil,
    clip,
    concat,
    cos,
    divide,
    dot,
    equal,
    exp,
    expm1,
    fix,
    floor,
    greater,
    greater_equal,
    lesser,
    lesser_equal,
    log,
    log1p,
    log2,
    log10,
    maximum,
    minimum,
    modulo,
    multiply,
    negative,
    not_equal,
    power,
    reciprocal,
    relu,
    reshape,
    rint,
    round,
    rsqrt,
    sigmoid,
    sign,
    sin,
    sqrt,
    square,
    stack,
    subtract,
    tanh,
    transpose,
)
from .register import make_function as _make_function
from .utils import arange, array, empty, full, ones, waitall, zeros

# MXNet's NumPy-interface namespaces: stand-ins that raise when used
np = numpy = _unsupported.module("ndarray.numpy")
npx = numpy_extension = _unsupported.module("ndarray.numpy_extension")

random_uniform = random.uniform  # MXNet 1.x's older spellings
random_normal = random.normal

# every other operator (nd.broadcast_add, nd.FullyConnected...) is made from the registry
# on first access; the namespaces nd.linalg, nd.contrib, nd.image, nd._internal, nd.sparse
# are submodules made the same way
_op_getattr = _module_getattr("", globals(), _make_function)
# MXNet's names of the layer above NDArray (symgraph.imperative imports this package's
# modules, so they are looked up on first use, as symgraph's own top-level modules are)
_ABOVE = {"CachedOp": "symgraph.imperative.cached_graph"}


def __getattr__(name: str):
    if name in _ABOVE:
        return getattr(_importlib.import_module(_ABOVE[name]), name)
    return _op_getattr(name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_ABOVE) | set(_names("")))

__all__ = [
    "NDArray", "ParamsFormatError", "random", "random_uniform", "random_normal",
    "array", "empty", "zeros", "ones", "full", "arange", "waitall",
    "save", "load", "load_frombuffer",
    "concat", "stack", "dot", "reshape", "transpose", "clip",
    "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "square", "abs",
    "sign", "negative", "reciprocal", "relu", "sigmoid", "tanh", "sin", "cos", "floor",
    "ceil", "round", "rint", "fix",
    "add", "subtract", "multiply", "divide", "modulo", "power", "maximum", "minimum",
    "equal", "not_equal", "greater", "greater_equal", "lesser", "lesser_equal",
]

from ..ops.namespaces import add_fluent_methods as _add_fluent_methods  # noqa: E402

_add_fluent_methods(NDArray, __name__)
