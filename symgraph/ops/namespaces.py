"""MXNet's operator namespaces: which registered operator ``mx.nd.<ns>.<name>`` and
``mx.sym.<ns>.<name>`` stand for, the same rule for both front ends.

MXNet files operators by name prefix: ``_linalg_gemm`` is ``nd.linalg.gemm``,
``_contrib_box_nms`` ``nd.contrib.box_nms``, other names starting with ``_`` live in
``_internal`` and the rest at the top level (and in ``op``). An MXNet operator symgraph
does not implement yet resolves to a function that raises ``UnsupportedError``, so
``hasattr`` agrees with MXNet and the failure names the operator.

>>> from symgraph.ops import namespaces
>>> namespaces.registry_name("linalg", "gemm2"), namespaces.registry_name("", "relu")
('_linalg_gemm2', 'relu')
>>> namespaces.registry_name("", "_plus_scalar") is None
True
"""
from __future__ import annotations

import builtins
from collections.abc import Callable

from .base import OPS, OpDef, get_op
from .mxnet_names import MXNET_OPERATORS

_BUILTINS = frozenset(vars(builtins))

# namespace -> registry-name prefix of its operators
PREFIXES = {"": "", "op": "", "_internal": "", "linalg": "_linalg_", "contrib": "_contrib_",
            "image": "_image_", "random": "_random_", "sparse": "_sparse_"}


# Python-level contrib functions MXNet defines over operators without the _contrib_ prefix
# (the optimizer wrappers are functions of their own: symgraph.contrib.optimizer_updates)
CONTRIB_EXTRA = {name: f"_{name}" for name in ("cond", "foreach", "while_loop")}


def registry_name(namespace: str, name: str) -> str | None:
    """The registry name ``namespace.name`` stands for (None: not an operator name there)."""
    if name.startswith("__"):
        return None
    if namespace == "contrib" and name in CONTRIB_EXTRA:
        return CONTRIB_EXTRA[name]
    if namespace in ("", "op") and name.startswith("_"):
        return None
    if namespace == "_internal" and not name.startswith("_"):
        return None
    return PREFIXES[namespace] + name


def missing_operator(called: str) -> Callable:
    """A function for an MXNet operator symgraph does not implement yet: calling it raises
    (``get_op``'s ``OpNotImplementedError``)."""
    def fn(*args, **kwargs):
        get_op(called)

    fn.__name__ = fn.__qualname__ = called
    fn.__doc__ = f"MXNet's operator ``{called}``: not implemented in symgraph yet (raises)."
    return fn


def lookup(namespace: str, name: str, make: Callable[[str, OpDef], Callable]):
    """``make(registry name, op)`` for the operator ``namespace.name``, a raising stand-in
    for an MXNet operator not implemented, or None when MXNet has no such operator."""
    registered = registry_name(namespace, name)
    if registered is None:
        return None
    op = OPS.get(registered)
    if op is None and namespace == "sparse" and registered in MXNET_OPERATORS:
        op = OPS.get(name)  # MXNet's _sparse_X names are aliases of X
        registered = name if op is not None else registered
    if op is not None and not op.hidden:
        return make(registered, op, None if registered == name else name)
    if registered in MXNET_OPERATORS:
        return missing_operator(registered)
    return None


def module_getattr(namespace: str, module_globals: dict, make: Callable) -> Callable:
    """A PEP 562 ``__getattr__`` for an op namespace module: functions made on first
    access and kept in the module, so later lookups are plain attribute reads."""
    module_name = module_globals["__name__"]
    cache: dict[str, Callable] = {}

    def __getattr__(name: str):
        if name in cache:
            return cache[name]
        from .. import ops  # noqa: F401 - fills the registry
        fn = lookup(namespace, name, make)
        if fn is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        fn.__module__ = module_name
        if name in _BUILTINS:  # cached aside: in the module's globals ``min``, ``sum``,
            return cache.setdefault(name, fn)  # ``round``... would shadow the builtins
        module_globals[name] = fn
        return fn

    return __getattr__


def names(namespace: str) -> list[str]:
    """Every operator name ``namespace`` offers (registered or MXNet's), for ``dir()``."""
    out = []
    prefix = PREFIXES[namespace]
    for registered in set(OPS) | MXNET_OPERATORS:
        if prefix and registered.startswith(prefix):
            out.append(registered[len(prefix):])
        elif not prefix and (registered.startswith("_") == (namespace == "_internal")):
            out.append(registered)
    return sorted(out)


# MXNet's fluent methods: ``x.<name>(*args, **kwargs)`` is ``<front end>.<name>(x, ...)`` on
# both NDArray and Symbol
FLUENT_METHODS = (
    "abs", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "argmax",
    "argmax_channel", "argmin", "argsort", "broadcast_axes", "broadcast_like", "broadcast_to",
    "cbrt", "ceil", "clip", "cos", "cosh", "degrees", "depth_to_space", "diag", "exp",
    "expand_dims", "expm1", "fix", "flatten", "flip", "floor", "log", "log10", "log1p", "log2",
    "log_softmax", "max", "mean", "min", "nanprod", "nansum", "norm", "one_hot", "ones_like",
    "pad", "pick", "prod", "radians", "rcbrt", "reciprocal", "relu", "repeat", "reshape",
    "reshape_like", "rint", "round", "rsqrt", "shape_array", "sigmoid", "sign", "sin", "sinh",
    "size_array", "slice", "slice_axis", "slice_like", "softmax", "softmin", "sort",
    "space_to_depth", "split", "sqrt", "square", "squeeze", "sum", "swapaxes", "take", "tan",
    "tanh", "tile", "topk", "transpose", "trunc", "zeros_like",
)


def _fluent(module_name: str, name: str) -> Callable:
    def method(self, *args, **kwargs):
        import importlib
        return getattr(importlib.import_module(module_name), name)(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"Fluent form of ``{module_name}.{name}`` with this object first."
    return method


def add_fluent_methods(cls: type, module_name: str) -> None:
    """Give ``cls`` every fluent method it does not define itself; each looks its function
    up in ``module_name`` when called (nothing is built here)."""
    for name in FLUENT_METHODS:
        if name not in cls.__dict__:
            setattr(cls, name, _fluent(module_name, name))
