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

from collections.abc import Callable

from ..base import OpNotImplementedError
from .base import OPS, OpDef
from .mxnet_names import MXNET_OPERATORS

# namespace -> registry-name prefix of its operators
PREFIXES = {"": "", "op": "", "_internal": "", "linalg": "_linalg_", "contrib": "_contrib_",
            "image": "_image_", "random": "_random_", "sparse": "_sparse_"}


def registry_name(namespace: str, name: str) -> str | None:
    """The registry name ``namespace.name`` stands for (None: not an operator name there)."""
    if name.startswith("__"):
        return None
    if namespace in ("", "op") and name.startswith("_"):
        return None
    if namespace == "_internal" and not name.startswith("_"):
        return None
    return PREFIXES[namespace] + name


def missing_operator(called: str) -> Callable:
    """A function for an MXNet operator symgraph does not implement yet: calling it raises."""
    def fn(*args, **kwargs):
        raise OpNotImplementedError(f"operator {called!r} is not supported by symgraph: "
                                    "MXNet 1.9.1 has it, symgraph does not implement it "
                                    "yet (the operators issue tracks it)")

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
    if op is not None and not op.hidden:
        return make(registered, op)
    if registered in MXNET_OPERATORS:
        return missing_operator(registered)
    return None


def module_getattr(namespace: str, module_globals: dict, make: Callable) -> Callable:
    """A PEP 562 ``__getattr__`` for an op namespace module: functions made on first
    access and kept in the module, so later lookups are plain attribute reads."""
    module_name = module_globals["__name__"]

    def __getattr__(name: str):
        from .. import ops  # noqa: F401 - fills the registry
        fn = lookup(namespace, name, make)
        if fn is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        fn.__module__ = module_name
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
