"""``mx.operator``: MXNet 1.9.1's queries of the operator registry.

Custom Python operators (``CustomOp``, ``CustomOpProp``, ``register``, ``NumpyOp``,
``NDArrayOp``, ``PythonOp``) are not implemented yet (the data/tools issue): those names
can be subclassed, and using them raises ``UnsupportedError``.

>>> from symgraph.operator import get_operator_arguments
>>> get_operator_arguments('Activation').names
['data', 'act_type']
"""
from __future__ import annotations

import collections

from .base import MXNetError
from .ops.base import OPS
from .unsupported import _stub

_WHY = ("custom Python operators (CustomOp, register) are not implemented yet "
        "(data/tools issue)")

OperatorArguments = collections.namedtuple("OperatorArguments", ["narg", "names", "types"])

PythonOp = _stub("mx.operator.PythonOp", _WHY)
NumpyOp = _stub("mx.operator.NumpyOp", _WHY)
NDArrayOp = _stub("mx.operator.NDArrayOp", _WHY)
CustomOp = _stub("mx.operator.CustomOp", _WHY)
CustomOpProp = _stub("mx.operator.CustomOpProp", _WHY)
register = _stub("mx.operator.register", _WHY)

_KINDS = {"bool": "boolean", "bool_or_none": "boolean or None", "shape": "Shape(tuple)",
          "shape_or_none": "Shape or None", "float": "float", "int": "int", "str": "string"}


def get_all_registered_operators() -> list[str]:
    """Every registered operator name (aliases included), sorted.

    Returns
    -------
    list of str

    >>> 'Activation' in get_all_registered_operators()
    True
    """
    return sorted(OPS)


def get_operator_arguments(op_name: str) -> OperatorArguments:
    """The operator's inputs and parameters, with MXNet's type descriptions.

    Parameters
    ----------
    op_name : str
        A registered operator name.

    Returns
    -------
    OperatorArguments
        ``(narg, names, types)``: inputs first (``NDArray-or-Symbol``), then parameters.

    >>> get_operator_arguments('Activation').types[1]
    "{'relu', 'sigmoid', 'softrelu', 'softsign', 'tanh'}, required"
    >>> get_operator_arguments('nope')
    Traceback (most recent call last):
    ...
    symgraph.base.MXNetError: Operator nope is not registered
    """
    op = OPS.get(op_name)
    if op is None:
        raise MXNetError(f"Operator {op_name} is not registered")
    from .symbol.op_api import _static_slots
    inputs = ["data"] if op.key_var_num_args else _static_slots(op)
    kind = "NDArray-or-Symbol[]" if op.key_var_num_args else "NDArray-or-Symbol"
    names = inputs + [p.name for p in op.params]
    types = [kind] * len(inputs) + [_describe(p) for p in op.params]
    return OperatorArguments(len(names), names, types)


def _describe(param) -> str:
    """MXNet's type text of a parameter: ``int, required``, ``boolean, optional, default=0``."""
    if param.choices:
        kind = "{" + ", ".join(repr(c) for c in sorted(param.choices, key=str)) + "}"
    else:
        kind = _KINDS.get(param.kind, param.kind)
    if param.required:
        return f"{kind}, required"
    value = param.default
    if isinstance(value, bool):
        value = int(value)
    elif isinstance(value, tuple):
        value = list(value)
    return f"{kind}, optional, default={value}"
