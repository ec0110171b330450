"""``mx.operator``: custom Python operators and MXNet 1.9.1's queries of the operator registry.

A ``CustomOpProp`` subclass registered with :func:`register` describes an operator (inputs,
outputs, aux states, shape and dtype rules, backward dependencies); its ``create_operator``
returns a :class:`CustomOp` whose ``forward``/``backward`` compute on NDArrays.
``mx.sym.Custom(..., op_type=name)`` and ``mx.nd.Custom`` apply it (``symgraph/ops/custom.py``).
The deprecated ``NumpyOp``/``NDArrayOp`` run on top of the same operator.

>>> import symgraph as mx
>>> class Double(mx.operator.CustomOp):
...     def forward(self, is_train, req, in_data, out_data, aux):
...         self.assign(out_data[0], req[0], in_data[0] * 2)
...     def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
...         self.assign(in_grad[0], req[0], out_grad[0] * 2)
>>> @mx.operator.register('double_doc')
... class DoubleProp(mx.operator.CustomOpProp):
...     def create_operator(self, ctx, shapes, dtypes):
...         return Double()
>>> mx.nd.Custom(mx.nd.array([1, 2]), op_type='double_doc').asnumpy()
array([2., 4.], dtype=float32)
>>> get_operator_arguments('Activation').names
['data', 'act_type']
"""
from __future__ import annotations

import collections
import ctypes
import itertools
import warnings

import numpy as np

from .base import MXNetError
from .ops.base import OPS
from .ops.custom import PROPS

c_int_p = ctypes.POINTER(ctypes.c_int)  # MXNet's ctypes alias, for CustomOp code

OperatorArguments = collections.namedtuple("OperatorArguments", ["narg", "names", "types"])
_REQS = ("null", "write", "inplace", "add")


class CustomOp:
    """Base class of operators implemented in Python (``forward``, ``backward``, ``assign``)."""

    def __init__(self):
        pass

    def forward(self, is_train, req, in_data, out_data, aux):
        """Compute ``out_data`` from ``in_data`` (lists of NDArrays); ``req`` says how to
        write each output ('null', 'write', 'inplace' or 'add'; see :meth:`assign`)."""

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        """Compute ``in_grad`` (lists of NDArrays; ``req`` per input gradient)."""

    def assign(self, dst, req, src):
        """Write ``src`` into ``dst`` as ``req`` says: 'null' nothing, 'write'/'inplace'
        overwrite, 'add' accumulate.

        >>> import symgraph as mx
        >>> dst = mx.nd.ones((2,))
        >>> CustomOp().assign(dst, 'add', mx.nd.array([1, 2]))
        >>> dst.asnumpy()
        array([2., 3.], dtype=float32)
        """
        if req == "null":
            return
        if req in ("write", "inplace"):
            dst[:] = src
        elif req == "add":
            dst[:] += src
        else:
            raise MXNetError(f"CustomOp.assign: req must be one of {_REQS}, got {req!r}")


class CustomOpProp:
    """Base class of a custom operator's description (``need_top_grad``: whether backward
    reads the output gradients; False for loss layers)."""

    def __init__(self, need_top_grad=True):
        self.need_top_grad_ = need_top_grad

    def infer_shape(self, in_shape):
        """(input shapes, output shapes[, aux shapes]); by default every output and no aux."""
        return in_shape, (in_shape[0],) * len(self.list_outputs()), ()

    def infer_type(self, in_type):
        """(input dtypes, output dtypes[, aux dtypes]); by default the first input's."""
        return in_type, [in_type[0]] * len(self.list_outputs()), \
            [in_type[0]] * len(self.list_auxiliary_states())

    def infer_storage_type(self, in_stype):
        """Storage types: dense ('default') only (sparse storage is not implemented)."""
        _dense_only(in_stype, "infer_storage_type")
        return in_stype, ["default"] * len(self.list_outputs()), \
            ["default"] * len(self.list_auxiliary_states())

    def infer_storage_type_backward(self, ograd_stype, in_stype, out_stype, igrad_stype,
                                    aux_stype):
        """Backward storage types: dense only."""
        _dense_only(ograd_stype, "infer_storage_type_backward")
        lists = [ograd_stype, in_stype, out_stype, igrad_stype, aux_stype]
        return tuple(["default"] * len(x) for x in lists)

    def list_outputs(self):
        """Output names."""
        return ["output"]

    def list_arguments(self):
        """Argument (input) names."""
        return ["data"]

    def list_auxiliary_states(self):
        """Auxiliary state names (inputs after the arguments, updated in place)."""
        return []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Ids of the blobs backward reads: output gradients (when ``need_top_grad``),
        inputs and outputs."""
        deps = list(out_grad) if self.need_top_grad_ else []
        return deps + list(in_data) + list(out_data)

    def create_operator(self, ctx, in_shapes, in_dtypes):
        """The :class:`CustomOp` computing this operator for these input shapes/dtypes."""
        return CustomOp()


def _dense_only(stypes, what: str) -> None:
    for i, stype in enumerate(stypes):
        if stype not in ("default", "undefined"):
            raise MXNetError(f"CustomOpProp.{what}: storage type {stype!r} of entry {i} is not "
                             "supported (dense 'default' storage only)")


def register(reg_name):
    """Register a ``CustomOpProp`` subclass under ``reg_name`` (the ``op_type`` of
    ``mx.sym.Custom``/``mx.nd.Custom``); used as a decorator, returns the class."""
    def do_register(prop_cls):
        PROPS[str(reg_name)] = prop_cls
        return prop_cls
    return do_register


register("custom_op")(CustomOpProp)

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
    variadic = bool(op.key_var_num_args) or op.special.parse is not None  # Custom: prop's inputs
    inputs = ["data"] if variadic else _static_slots(op)
    kind = "NDArray-or-Symbol[]" if variadic else "NDArray-or-Symbol"
    names = inputs + [p.name for p in op.params]
    describe = (lambda p: _KINDS[p.kind]) if op.special.parse is not None else _describe
    types = [kind] * len(inputs) + [describe(p) for p in op.params]
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


# ---------------------------------------------------------------- deprecated Python ops

_PYTHON_OPS = itertools.count()


class PythonOp:
    """MXNet's deprecated base of ``NumpyOp``/``NDArrayOp`` (use :class:`CustomOp`).

    ``get_symbol(*args, **kwargs)`` (or calling the instance) makes a ``Custom`` node that
    runs this object's ``forward(in_data, out_data)``/``backward(out_grad, in_data,
    out_data, in_grad)``.
    """

    _numpy = False  # NumpyOp: the methods see numpy arrays, written back after the call

    def __init__(self, need_top_grad=True):
        self.info_ = None
        self.need_top_grad_ = need_top_grad
        warnings.warn("PythonOp has been deprecated. Please use CustomOp", stacklevel=2)

    def __call__(self, *args, **kwargs):
        return self.get_symbol(*args, **kwargs)

    def get_symbol(self, *args, **kwargs):
        """A Symbol applying this operator to ``args``."""
        if type(self) is PythonOp:
            raise NotImplementedError("Must override this")
        if self.info_ is None:
            self.info_ = f"_python_op{next(_PYTHON_OPS)}"
            register(self.info_)(_python_prop(self))
        from . import symbol
        return symbol.Custom(*args, op_type=self.info_, **kwargs)

    def forward(self, in_data, out_data):
        """Compute ``out_data`` from ``in_data``."""
        out_data[0][:] = in_data[0]

    def backward(self, out_grad, in_data, out_data, in_grad):
        """Compute ``in_grad``."""
        in_grad[0][:] = 1.0

    def infer_shape(self, in_shape):
        """(input shapes, output shapes)."""
        return in_shape, [in_shape[0]]

    def list_outputs(self):
        """Output names."""
        return ["output"]

    def list_arguments(self):
        """Argument names."""
        return ["data"]

    def need_top_grad(self):
        """Whether backward reads the output gradients (False for loss layers)."""
        return self.need_top_grad_

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Ids of the blobs backward reads."""
        deps = list(out_grad) if self.need_top_grad() else []
        return deps + list(in_data) + list(out_data)


class NumpyOp(PythonOp):
    """Deprecated: a :class:`PythonOp` whose methods compute on numpy arrays.

    >>> import warnings, symgraph as mx
    >>> class Twice(mx.operator.NumpyOp):
    ...     def forward(self, in_data, out_data):
    ...         out_data[0][:] = 2 * in_data[0]
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter('ignore')
    ...     y = Twice()(mx.sym.Variable('x'))
    >>> y.eval(x=mx.nd.array([1, 2]))[0].asnumpy()
    array([2., 4.], dtype=float32)
    """

    _numpy = True

    def __init__(self, need_top_grad=True):
        super().__init__(need_top_grad)
        warnings.warn("NumpyOp has been deprecated. Please use CustomOp", stacklevel=2)


class NDArrayOp(PythonOp):
    """Deprecated: a :class:`PythonOp` whose methods compute on NDArrays."""

    def __init__(self, need_top_grad=True):
        super().__init__(need_top_grad)
        warnings.warn("NDArrayOp has been deprecated. Please use CustomOp", stacklevel=2)


def _call_python(pyop: PythonOp, method: str, **arrays) -> None:
    """Call ``pyop.method`` on NDArrays, or on numpy copies written back (NumpyOp)."""
    if not pyop._numpy:
        getattr(pyop, method)(**arrays)
        return
    host = {k: [None if a is None else a.asnumpy() for a in v] for k, v in arrays.items()}
    getattr(pyop, method)(**host)
    written = "out_data" if method == "forward" else "in_grad"
    for dst, src in zip(arrays[written], host[written]):
        dst[:] = np.asarray(src)


def _python_prop(pyop: PythonOp) -> type:
    """A CustomOpProp class running ``pyop``."""
    class _Op(CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            _call_python(pyop, "forward", in_data=in_data, out_data=out_data)

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            _call_python(pyop, "backward", out_grad=out_grad, in_data=in_data,
                         out_data=out_data, in_grad=in_grad)

    class _Prop(CustomOpProp):
        def __init__(self):
            super().__init__(pyop.need_top_grad())

        def list_arguments(self):
            return pyop.list_arguments()

        def list_outputs(self):
            return pyop.list_outputs()

        def infer_shape(self, in_shape):
            return pyop.infer_shape(in_shape)

        def declare_backward_dependency(self, out_grad, in_data, out_data):
            return pyop.declare_backward_dependency(out_grad, in_data, out_data)

        def create_operator(self, ctx, in_shapes, in_dtypes):
            return _Op()
    return _Prop
