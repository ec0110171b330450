"""``mx.onnx.import_model``: an ONNX model as a symbol with its parameters (MXNet 1.9.1's
``import_model``, ``get_model_metadata`` and ``import_to_gluon``).

The graph is walked in order; every ONNX node is translated by its entry in
:data:`~symgraph.onnx.imports.IMPORTERS`. Values are either symbols or constants:
initializers and ``Constant`` nodes stay numpy arrays while they only feed other constant
computations or attribute-like inputs (a ``Reshape`` shape, ``Clip`` bounds ...); a node whose
inputs are all constant is evaluated once (ONNX's reference runtime) instead of imported. A
constant that an op reads as a tensor becomes a variable whose value is in ``arg_params``
(or ``aux_params`` where the op keeps it as an auxiliary state, as BatchNorm's moving mean
and variance). ``onnx`` is imported only when these functions are called.
"""
from __future__ import annotations

import os
import re

import numpy as np

from ..base import MXNetError

__all__ = ["OnnxImportError", "import_model", "get_model_metadata", "import_to_gluon"]

# ops never evaluated at import even with constant inputs (their value changes per run)
_NO_FOLD = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike",
                      "RandomUniformLike", "Multinomial", "Bernoulli", "Dropout"})
_DOMAINS = ("", "ai.onnx")


class OnnxImportError(MXNetError):
    """An ONNX model cannot be imported: the message names the node, op type and reason."""


def _onnx():
    try:
        import onnx
    except ImportError:
        raise ImportError("ONNX import needs the onnx package: pip install symgraph[onnx]") \
            from None
    return onnx


def load_checked(model_file):
    """The checked ``ModelProto`` of ``model_file`` (a path or a ModelProto)."""
    onnx = _onnx()
    if isinstance(model_file, onnx.ModelProto):
        model, where = model_file, "the given ModelProto"
    else:
        path = os.fspath(model_file)
        if not os.path.isfile(path):
            raise FileNotFoundError(2, f"ONNX model file {path!r} does not exist", path)
        where = repr(path)
        try:
            model = onnx.load_model(path)
        except Exception as err:  # protobuf's DecodeError and friends
            raise OnnxImportError(f"cannot read ONNX model {where}: {err}") from None
    try:
        onnx.checker.check_model(model)
    except Exception as err:
        raise OnnxImportError(f"ONNX model {where} is not valid: {err}") from None
    return model


def model_opset(model) -> int:
    """The default-domain opset ``model`` imports."""
    versions = [o.version for o in model.opset_import if o.domain in _DOMAINS]
    return max(versions) if versions else 1


def _dims(value_info) -> tuple | None:
    """A value's shape from its type (None for an unknown dim), or None without one."""
    t = value_info.type.tensor_type
    if not t.HasField("shape"):
        return None
    return tuple(d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim)


def _known_shapes(model) -> dict:
    """Value name -> shape, from the model and ONNX's shape inference where it works."""
    onnx = _onnx()
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # inference may not know a construct; the walk infers what it needs
        inferred = model
    g = inferred.graph
    shapes = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        dims = _dims(vi)
        if dims is not None:
            shapes[vi.name] = dims
    return shapes


def _var(name: str, value: np.ndarray | None = None):
    """A variable; a parameter's carries its shape (and dtype) for shape inference."""
    import symgraph as mx
    if value is None:
        return mx.sym.var(name)
    dtype = None if value.dtype == np.float32 else value.dtype.name
    return mx.sym.var(name, shape=value.shape, dtype=dtype)


class Graph:
    """The state of one import: ONNX value name -> symbol or constant, and the params."""

    def __init__(self, model):
        onnx = _onnx()
        self.opset = model_opset(model)
        self.model = model
        self.shapes = _known_shapes(model)
        self.values: dict = {}  # name -> Symbol or np.ndarray
        self.params: dict[str, np.ndarray] = {}  # variable name -> value
        self.param_of: dict[str, object] = {}  # constant value name -> its variable
        self.used: set[str] = set()
        self.to_array = onnx.numpy_helper.to_array
        g = model.graph
        for init in g.initializer:
            self.values[init.name] = self.to_array(init)
            self.used.add(init.name)
        self.init_names = set(self.values)
        self.inputs = [i.name for i in g.input if i.name not in self.values]
        self.input_shapes = {n: self.shapes.get(n) for n in self.inputs}
        for name in self.inputs:
            self.used.add(name)
            self.values[name] = _var(name)

    # ------------------------------------------------------------ what translations read
    def const(self, name: str) -> np.ndarray | None:
        """The value of ``name`` when it is a constant, else None."""
        value = self.values.get(name)
        return value if isinstance(value, np.ndarray) else None

    def sym(self, name: str):
        """``name`` as a symbol (a constant becomes a variable holding its value)."""
        value = self.values[name]
        if not isinstance(value, np.ndarray):
            return value
        if value.ndim == 0:  # MXNet's shapes have no 0-d tensors: one element is (1,)
            value = value.reshape(1)
        if name not in self.param_of:  # an initializer keeps its name, as in MXNet
            if name in self.init_names:
                self.params[name] = value
                self.param_of[name] = _var(name, value)
            else:
                self.param_of[name] = self.param(value, name)
        return self.param_of[name]

    def param(self, value: np.ndarray, hint: str):
        """A new variable holding ``value``."""
        name = self.fresh(hint)
        self.params[name] = np.asarray(value)
        return _var(name, self.params[name])

    def fresh(self, hint: str) -> str:
        """A symbol name not used yet, made from ``hint``."""
        base = name = re.sub(r"\s+", "_", hint) or "node"
        count = 1
        while name in self.used:
            name, count = f"{base}_{count}", count + 1
        self.used.add(name)
        return name

    def shape(self, name: str) -> tuple | None:
        """``name``'s shape (None for an unknown dim), or None when even its rank is unknown."""
        value = self.values.get(name)
        if isinstance(value, np.ndarray):
            return value.shape
        if name in self.shapes:
            return self.shapes[name]
        if value is None or any(s is None or None in s for s in self.input_shapes.values()):
            return None
        try:  # every data input's shape is known: infer this value's
            wanted = {k: v for k, v in self.input_shapes.items() if k in value.list_inputs()}
            wanted.update({k: v.shape for k, v in self.params.items()
                           if k in value.list_inputs()})
            _, out, _ = value.infer_shape_partial(**wanted)
        except Exception:
            return None
        if not out or not out[0]:
            return None
        return tuple(d if d else None for d in out[0])


def _attrs(node) -> dict:
    """A node's attributes as Python values."""
    from onnx import helper
    out = {}
    for a in node.attribute:
        value = helper.get_attribute_value(a)
        if isinstance(value, bytes):
            value = value.decode("utf-8")
        elif isinstance(value, list) and value and isinstance(value[0], bytes):
            value = [v.decode("utf-8") for v in value]
        out[a.name] = value
    return out


class Node:
    """One ONNX node as a translation sees it."""

    def __init__(self, proto, g: Graph, index: int):
        self.proto, self.g = proto, g
        self.op = proto.op_type
        self.label = proto.name or (proto.output[0] if proto.output else f"node{index}")
        self.ins = list(proto.input)
        self.outs = list(proto.output)
        self.a = _attrs(proto)
        self._name = None

    @property
    def name(self) -> str:
        """The symbol name of the node's (last) MXNet op: the ONNX node's name, as MXNet."""
        if self._name is None:
            self._name = self.g.fresh(self.label)
        return self._name

    def sub(self, hint: str) -> str:
        """A name for an intermediate MXNet op of this node."""
        return self.g.fresh(f"{self.label}_{hint}")

    def has(self, slot: int) -> bool:
        return slot < len(self.ins) and self.ins[slot] != ""

    def fail(self, reason: str) -> OnnxImportError:
        """The error for what this node's translation cannot import."""
        return OnnxImportError(f"cannot import ONNX node {self.label!r} ({self.op}): {reason}")


def _fold(n: Node, g: Graph) -> list[np.ndarray]:
    """Evaluate a node whose inputs are all constants (ONNX's reference runtime)."""
    _onnx()
    from onnx import helper
    from onnx.reference import ReferenceEvaluator
    names = [i for i in n.ins if i]
    inputs = [helper.make_tensor_value_info(
        i, helper.np_dtype_to_tensor_dtype(g.values[i].dtype), g.values[i].shape)
        for i in names]
    outputs = [helper.make_empty_tensor_value_info(o) for o in n.outs if o]
    graph = helper.make_graph([n.proto], "fold", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", g.opset)])
    try:
        got = ReferenceEvaluator(model).run(None, {i: g.values[i] for i in names})
    except Exception as err:
        raise n.fail(f"evaluating it on its constant inputs failed: {err}") from None
    return [np.asarray(v) for v in got]


def _translate(n: Node, g: Graph) -> list:
    from .imports import IMPORTERS
    args = [i for i in n.ins if i]
    for i in args:
        if i not in g.values:
            raise n.fail(f"input {i!r} is not produced by an earlier node (an unsupported "
                         "optional output, or the graph is not in order)")
    if n.op not in _NO_FOLD and all(g.const(i) is not None for i in args) and \
            (args or n.op == "Constant"):
        return _fold(n, g)
    if n.op not in IMPORTERS:
        raise n.fail("this op type is not supported by the ONNX import")
    return list(IMPORTERS[n.op](g, n))


def build(model) -> tuple:
    """``(sym, arg_params, aux_params)`` of a checked ``ModelProto``."""
    import symgraph as mx
    g = Graph(model)
    for index, proto in enumerate(model.graph.node):
        n = Node(proto, g, index)
        if proto.domain not in _DOMAINS:
            raise n.fail(f"ops of domain {proto.domain!r} are not supported")
        got = _translate(n, g)
        for k, out in enumerate(n.outs):
            if out and k < len(got):
                g.values[out] = got[k]
                if g.shapes.get(out) == () and not isinstance(got[k], np.ndarray):
                    g.shapes[out] = (1,)  # what MXNet makes of a 0-d result
    outs = []
    for o in model.graph.output:
        if o.name not in g.values:
            raise OnnxImportError(f"graph output {o.name!r} is an output of a node the "
                                  "import does not produce")
        outs.append(g.sym(o.name))
    sym = outs[0] if len(outs) == 1 else mx.sym.Group(outs)
    args, aux = set(sym.list_arguments()), set(sym.list_auxiliary_states())
    arg_params = {k: mx.nd.array(v, dtype=v.dtype) for k, v in g.params.items() if k in args}
    aux_params = {k: mx.nd.array(v, dtype=v.dtype) for k, v in g.params.items() if k in aux}
    return sym, arg_params, aux_params


def import_model(model_file) -> tuple:
    """Import an ONNX model file into an MXNet symbol and its parameters.

    Parameters
    ----------
    model_file : str
        The ONNX model file (or an ``onnx.ModelProto``).

    Returns
    -------
    sym : Symbol
        The network; its data inputs are the graph inputs that are not initializers.
    arg_params : dict of str to NDArray
        Values of the symbol's parameter arguments.
    aux_params : dict of str to NDArray
        Values of its auxiliary states (BatchNorm's moving mean and variance).
    """
    return build(load_checked(model_file))


def get_model_metadata(model_file) -> dict:
    """Names and shapes of an ONNX model's inputs and outputs.

    Returns ``{'input_tensor_data': [(name, shape, elem_type)], 'output_tensor_data':
    [(name, shape)]}`` as MXNet 1.9.1 does (initializers left out of the inputs; a dynamic
    dim is 0; ``elem_type`` is the ONNX ``TensorProto`` element type).
    """
    model = load_checked(model_file)
    params = {t.name for t in model.graph.initializer}

    def dims(vi) -> tuple:
        return tuple(d.dim_value for d in vi.type.tensor_type.shape.dim)
    inputs = [(i.name, dims(i), i.type.tensor_type.elem_type) for i in model.graph.input
              if i.name not in params]
    outputs = [(o.name, dims(o)) for o in model.graph.output]
    return {"input_tensor_data": inputs, "output_tensor_data": outputs}


def import_to_gluon(model_file, ctx=None):
    """Import an ONNX model file as a Gluon ``SymbolBlock`` with its parameters loaded on
    ``ctx`` (a Context or a list of them; default the current context)."""
    import symgraph as mx
    from symgraph.gluon import SymbolBlock
    model = load_checked(model_file)
    sym, arg_params, aux_params = build(model)
    params = {t.name for t in model.graph.initializer}
    data = [mx.sym.var(i.name) for i in model.graph.input if i.name not in params]
    net = SymbolBlock(outputs=sym, inputs=data)
    ctx = mx.current_context() if ctx is None else ctx
    own = net.collect_params()
    for name, value in {**arg_params, **aux_params}.items():
        if name in own:
            own[name].shape = value.shape
            own[name]._load_init(value, ctx=ctx)
    return net
