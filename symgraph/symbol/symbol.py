"""The :class:`Symbol`: a list of output entries of a graph of :class:`~.graph.Node`."""
from __future__ import annotations

import warnings
from collections.abc import Sequence
from numbers import Number

from ..attrs import HIDDEN_KEYS, check_string_values, hide_keys, to_attr_string, with_plain_keys
from ..base import (
    AttrError,
    GraphError,
    MXNetError,
    NotImplementedForSymbol,
    ShapeError,
    dtype_name,
    names_from,
    unsupported,
)
from ..ops.base import known
from .graph import Entry, IndexedGraph, Node, indexed
from .infer import head_values, infer_shapes, infer_types, variable_values


class Symbol:
    """A symbolic expression: one or more outputs of a computation graph.

    Examples
    --------
    >>> import symgraph as mx
    >>> data = mx.sym.Variable('data')
    >>> fc = mx.sym.FullyConnected(data, num_hidden=10, name='fc1')
    >>> fc.list_arguments()
    ['data', 'fc1_weight', 'fc1_bias']
    >>> fc.infer_shape(data=(4, 3))[0]
    [(4, 3), (10, 3), (10,)]
    """

    __slots__ = ("_outputs", "_ig", "__weakref__")
    __hash__ = object.__hash__
    __array_priority__ = 1000.0  # numpy scalars defer to our reflected operators, as MXNet

    def __init__(self, outputs: Sequence[Entry]):
        self._outputs: list[Entry] = list(outputs)
        self._ig = None

    # ------------------------------------------------------------ structure
    def _graph(self) -> IndexedGraph:
        """The indexed graph of the outputs (cached: symbols' nodes are not rewired)."""
        return indexed(self, self._outputs)

    @property
    def name(self) -> str | None:
        """The name of a single-output symbol (``None`` for a group)."""
        nodes = {id(n) for n, _ in self._outputs}
        if len(nodes) != 1:
            return None
        return self._outputs[0][0].name

    def list_arguments(self) -> list[str]:
        """Names of the arguments (inputs that are not auxiliary states), in DFS order."""
        ig = self._graph()
        return [ig.nodes[i].name for i in ig.argument_ids]

    def list_auxiliary_states(self) -> list[str]:
        """Names of the auxiliary states (e.g. BatchNorm's ``moving_mean``)."""
        ig = self._graph()
        return [ig.nodes[i].name for i in ig.aux_state_ids]

    def list_inputs(self) -> list[str]:
        """Names of all variables: arguments and auxiliary states, in DFS order."""
        ig = self._graph()
        return [ig.nodes[i].name for i in ig.variable_ids]

    def list_outputs(self) -> list[str]:
        """Output names: ``<node>_<output>`` for ops, the variable name for variables."""
        return [node.output_name(i) for node, i in self._outputs]

    def get_internals(self) -> Symbol:
        """A group of every output of every node, in DFS order."""
        ig = self._graph()
        return Symbol([(n, i) for n in ig.nodes for i in range(n.num_visible_outputs)])

    def get_children(self) -> Symbol | None:
        """The inputs of this symbol's head node as a group (``None`` for a variable)."""
        node = self._outputs[0][0]
        if not node.inputs:
            return None
        return Symbol(node.inputs)

    def __len__(self) -> int:
        return len(self._outputs)

    def __iter__(self):
        return (Symbol([e]) for e in self._outputs)

    def __getitem__(self, index) -> Symbol:
        if isinstance(index, str):
            names = self.list_outputs()
            matches = [i for i, n in enumerate(names) if n == index]
            if not matches:
                raise ValueError(f"There is no output named {index!r}; outputs: {names}")
            if len(matches) > 1:
                raise ValueError(f"There are multiple outputs with name {index!r}")
            index = matches[0]
        if isinstance(index, slice):
            return Symbol(self._outputs[index])
        if not isinstance(index, int):
            raise TypeError(f"Symbol index must be int, str or slice, got {type(index).__name__}")
        if not -len(self._outputs) <= index < len(self._outputs):
            raise IndexError(f"Symbol index {index} out of range for {len(self._outputs)} outputs")
        return Symbol([self._outputs[index]])

    def __repr__(self) -> str:
        if len(self._outputs) == 1:
            return f"<Symbol {self.name}>"
        return f"<Symbol group [{', '.join(n.name for n, _ in self._outputs)}]>"

    def copy(self) -> Symbol:
        """A deep copy of the graph (MXNet's ``Symbol.copy``)."""
        return self.__deepcopy__({})

    def split_v2(self, indices_or_sections, axis=0, squeeze_axis=False) -> Symbol:
        """See ``sym.split_v2``."""
        from . import split_v2
        return split_v2(self, indices_or_sections, axis, squeeze_axis)

    def __copy__(self) -> Symbol:
        return Symbol(self._outputs)

    def __deepcopy__(self, memo) -> Symbol:
        mapping = copy_graph(self._outputs, {})  # once: outputs of one node stay one node
        return Symbol([(mapping[id(n)], i) for n, i in self._outputs])

    def __reduce__(self):
        """Pickled as its MXNet JSON, as MXNet does (``pickle.loads`` rebuilds the graph)."""
        from .json_io import load_json
        return (load_json, (self.tojson(),))

    def __bool__(self) -> bool:
        raise NotImplementedForSymbol(self.__bool__, "bool")

    # NDArray-only methods: MXNet's Symbol has them and raises NotImplementedForSymbol
    def asnumpy(self):
        raise NotImplementedForSymbol(self.asnumpy, None)

    def asscalar(self):
        raise NotImplementedForSymbol(self.asscalar, None)

    def as_in_context(self, *args, **kwargs):
        raise NotImplementedForSymbol(self.as_in_context, None)

    def detach(self):
        raise NotImplementedForSymbol(self.detach, None)

    def backward(self, *args, **kwargs):
        raise NotImplementedForSymbol(self.backward, None)

    def wait_to_read(self):
        raise NotImplementedForSymbol(self.wait_to_read, None)

    def gradient(self, wrt):
        raise NotImplementedForSymbol(self.gradient, None, wrt)

    handle = None  # MXNet's C handle: none here

    def astype(self, *args, **kwargs) -> Symbol:
        """``cast`` this symbol (MXNet's fluent ``astype``)."""
        from . import op_api
        return op_api.invoke("cast", [self, *args], kwargs)

    def as_nd_ndarray(self) -> Symbol:
        """This symbol (legacy symbols are what symgraph has)."""
        return self

    def as_np_ndarray(self):
        raise unsupported("Symbol.as_np_ndarray", "the NumPy-compatible interface is not "
                          "implemented")

    def optimize_for(self, backend, *args, **kwargs):
        raise unsupported(f"Symbol.optimize_for({backend!r})", "subgraph backends are "
                          "MXNet C++ extensions")

    def get_backend_symbol(self, backend):
        raise unsupported(f"Symbol.get_backend_symbol({backend!r})", "subgraph backends are "
                          "MXNet C++ extensions")

    def _gen_atomic_symbol(self) -> Symbol:
        """The head operator alone, its inputs left unconnected (MXNet's atomic symbol)."""
        head = self._outputs[0][0]
        if head.op is None:
            raise MXNetError("_gen_atomic_symbol: a variable has no operator")
        node = Node(head.op, "", dict(head.attrs))
        return Symbol([(node, i) for i in range(node.num_visible_outputs)])

    # ------------------------------------------------------------ attributes
    def attr(self, key: str) -> str | None:
        """An attribute of this (single-output) symbol's node, or ``None``; ``lr_mult`` and
        the other hidden keys also answer under their plain names, as in MXNet.

        >>> import symgraph as mx
        >>> mx.sym.Variable('w', lr_mult=2).attr('lr_mult')
        '2'
        """
        attrs = self._outputs[0][0].attrs
        value = attrs.get(key)
        if value is None and key in HIDDEN_KEYS:
            value = attrs.get(f"__{key}__")
        return value

    def list_attr(self, recursive: bool = False) -> dict[str, str]:
        """Attributes of the head node (``recursive`` lists every node's as ``name$key``)."""
        if recursive:
            return {f"{n.name}${k}": v for n in self._graph().nodes
                    for k, v in with_plain_keys(n.attrs).items()}
        return with_plain_keys(self._outputs[0][0].attrs)

    def attr_dict(self) -> dict[str, dict[str, str]]:
        """Attributes of every node that has any, by node name."""
        return {n.name: with_plain_keys(n.attrs) for n in self._graph().nodes if n.attrs}

    def _set_attr(self, **kwargs: str) -> None:
        """Set attributes of the head node; an op node re-validates its parameters."""
        check_string_values(kwargs)
        node = self._outputs[0][0]
        before = dict(node.attrs)
        node.attrs.update(hide_keys(kwargs))
        node.reset_params()
        try:
            node.params  # noqa: B018 - parse now so a bad attribute fails here
        except AttrError:
            node.attrs = before
            node.reset_params()
            raise

    # ------------------------------------------------------------ composition
    def __call__(self, *args, **kwargs) -> Symbol:
        """Compose: substitute this symbol's arguments by other symbols.

        >>> import symgraph as mx
        >>> net = mx.sym.FullyConnected(mx.sym.Variable('x'), num_hidden=2, name='fc')
        >>> net(x=mx.sym.Variable('y')).list_arguments()
        ['y', 'fc_weight', 'fc_bias']
        """
        new_name = kwargs.pop("name", None)
        if args and kwargs:
            raise TypeError("compose only accept input Symbols either as positional or "
                            "keyword arguments, not both")
        names = self.list_arguments()
        if len(args) > len(names):
            raise TypeError(f"Too many positional arguments: {len(args)} for {names}")
        subs = dict(zip(names, args)) if args else kwargs
        if kwargs:  # by name any input may be replaced, auxiliary states included
            names = self.list_inputs()
        for key, value in subs.items():
            if key not in names:
                raise MXNetError(f"Keyword argument name {key} not found. Candidate "
                                 f"arguments: {names}")
            if not isinstance(value, Symbol) or len(value) != 1:
                raise TypeError(f"Compose expects single-output Symbols, got {key}={value!r}")
        out = _substitute(self._outputs, {k: v._outputs[0] for k, v in subs.items()})
        if new_name and len({id(n) for n, _ in out}) == 1 and out[0][0].op is not None:
            out[0][0].name = new_name  # the head is a fresh copy: renaming it is safe
        return Symbol(out)

    def _compose(self, *args, **kwargs) -> None:
        """Compose in place (MXNet's ``Symbol._compose``)."""
        self._outputs = self(*args, **kwargs)._outputs

    # ------------------------------------------------------------ inference
    def _initial(self, ig: IndexedGraph, args, kwargs, attr_key: str, convert):
        names = [ig.nodes[i].name for i in ig.argument_ids]
        if args and kwargs:
            raise ValueError("Can only specify known argument shapes either by positional or "
                             "kwargs way.")
        given = dict(zip(names, args)) if args else dict(kwargs)
        by_name = {ig.nodes[i].name: i for i in ig.variable_ids}
        initial = {}
        for i in ig.variable_ids:
            hint = ig.nodes[i].attrs.get(attr_key)
            if hint is not None:
                initial[i] = convert(hint)
        for key, value in given.items():
            if value is None:
                continue
            if key not in by_name:
                raise MXNetError(f"infer: {key!r} is not an input of the symbol; inputs: "
                                 f"{list(by_name)}")
            initial[by_name[key]] = convert(value)
        return initial

    def infer_shape(self, *args, **kwargs):
        """Infer argument, output and aux shapes from some known argument shapes.

        Returns ``(arg_shapes, out_shapes, aux_shapes)``, or ``(None, None, None)`` with a
        warning when the given shapes do not determine every shape (as MXNet 1.x).
        """
        arg, out, aux = self._infer_shape(args, kwargs)
        unknown = [(n, s) for n, s in zip(self.list_arguments(), arg) if not known(s)]
        if unknown or not all(known(s) for s in out + aux):
            listing = "\n".join(f"\t{n}: {s}" for n, s in unknown)
            warnings.warn("Cannot decide shape for the following arguments (0s in shape means "
                          f"unknown dimensions). Consider providing them as input:\n{listing}",
                          stacklevel=2)
            return None, None, None
        return arg, out, aux

    def infer_shape_partial(self, *args, **kwargs):
        """Like :meth:`infer_shape` but returns what is known (``()`` for unknown shapes;
        under ``mx.util.np_shape()`` ``None`` and ``-1`` dims, as MXNet reports them)."""
        groups = self._infer_shape(args, kwargs)
        from ..util import is_np_shape
        if is_np_shape():
            return tuple([_np_shape_out(s) for s in g] for g in groups)
        return groups

    def _infer_shape(self, args, kwargs):
        ig = self._graph()
        initial = self._initial(ig, args, kwargs, "__shape__", _as_shape)
        values = infer_shapes(ig, initial)
        return (variable_values(ig, values, ig.argument_ids), head_values(ig, values),
                variable_values(ig, values, ig.aux_state_ids))

    def infer_type(self, *args, **kwargs):
        """Infer argument, output and aux dtypes (numpy types) from some known dtypes."""
        ig = self._graph()
        initial = self._initial(ig, args, kwargs, "__dtype__", _as_dtype)
        values = infer_types(ig, initial)
        groups = (variable_values(ig, values, ig.argument_ids), head_values(ig, values),
                  variable_values(ig, values, ig.aux_state_ids))
        if any(t is None for g in groups for t in g):
            return None, None, None
        return tuple([_numpy_type(t) for t in g] for g in groups)

    def infer_type_partial(self, *args, **kwargs):
        """Dtype inference returning ``None`` for the unknown ones (numpy types otherwise)."""
        ig = self._graph()
        values = infer_types(ig, self._initial(ig, args, kwargs, "__dtype__", _as_dtype))
        groups = (variable_values(ig, values, ig.argument_ids), head_values(ig, values),
                  variable_values(ig, values, ig.aux_state_ids))
        return tuple([None if t is None else _numpy_type(t) for t in g] for g in groups)

    # ------------------------------------------------------------ serialisation
    def tojson(self) -> str:
        """MXNet 1.x JSON (the ``attrs`` form with ``node_row_ptr`` and ``mxnet_version``)."""
        from .json_io import to_json
        return to_json(self)

    def save(self, fname: str, remove_amp_cast: bool = True) -> None:
        """Write :meth:`tojson` to ``fname`` atomically."""
        from .json_io import save
        save(self, fname)

    def debug_str(self) -> str:
        """A readable listing of the graph: variables, ops, their inputs and attributes."""
        from .json_io import debug_str
        return debug_str(self)

    # ------------------------------------------------------------ binding
    def simple_bind(self, ctx, grad_req="write", type_dict=None, stype_dict=None,
                    group2ctx=None, shared_arg_names=None, shared_exec=None,
                    shared_buffer=None, **kwargs):
        """Allocate arrays from inferred shapes and bind an :class:`~symgraph.executor.Executor`."""
        from ..executor import simple_bind
        return simple_bind(self, ctx, grad_req=grad_req, type_dict=type_dict,
                           shared_arg_names=shared_arg_names, shared_exec=shared_exec,
                           shared_buffer=shared_buffer, shapes=kwargs, group2ctx=group2ctx,
                           stype_dict=stype_dict)

    def bind(self, ctx, args, args_grad=None, grad_req="write", aux_states=None,
             group2ctx=None, shared_exec=None):
        """Bind given arrays (lists in argument order, or dicts by name) into an Executor."""
        from ..executor import bind
        return bind(self, ctx, args, args_grad=args_grad, grad_req=grad_req,
                    aux_states=aux_states, shared_exec=shared_exec)

    def eval(self, ctx=None, **kwargs) -> list:
        """Bind the arguments given as NDArrays by name, run forward, return the outputs.

        >>> import symgraph as mx
        >>> (mx.sym.var('x') * 2).eval(x=mx.nd.array([1, 2]))[0].asnumpy()
        array([2., 4.], dtype=float32)
        """
        from ..context import current_context
        exe = self.bind(ctx or current_context(), kwargs, grad_req="null")
        return exe.forward()

    # ------------------------------------------------------------ arithmetic
    def _binary(self, other, op: str, scalar_op: str, reverse: bool = False) -> Symbol:
        from . import op_api
        if isinstance(other, Symbol):
            a, b = (other, self) if reverse else (self, other)
            return op_api.invoke(op, [a, b], {})
        if isinstance(other, Number):
            return op_api.invoke(scalar_op, [self], {"scalar": other})
        raise TypeError(f"type {type(other).__name__} not supported")

    def __add__(self, o): return self._binary(o, "_Plus", "_PlusScalar")
    def __radd__(self, o): return self._binary(o, "_Plus", "_PlusScalar", True)
    def __sub__(self, o): return self._binary(o, "_Minus", "_MinusScalar")
    def __rsub__(self, o): return self._binary(o, "_Minus", "_RMinusScalar", True)
    def __mul__(self, o): return self._binary(o, "_Mul", "_MulScalar")
    def __rmul__(self, o): return self._binary(o, "_Mul", "_MulScalar", True)
    def __truediv__(self, o): return self._binary(o, "_Div", "_DivScalar")
    def __rtruediv__(self, o): return self._binary(o, "_Div", "_RDivScalar", True)
    def __mod__(self, o): return self._binary(o, "_Mod", "_ModScalar")
    def __rmod__(self, o): return self._binary(o, "_Mod", "_RModScalar", True)
    def __pow__(self, o): return self._binary(o, "_Power", "_PowerScalar")
    def __rpow__(self, o): return self._binary(o, "_Power", "_rpower_scalar", True)
    def __eq__(self, o): return self._binary(o, "_equal", "_equal_scalar")  # noqa: E704
    def __ne__(self, o): return self._binary(o, "_not_equal", "_not_equal_scalar")
    def __gt__(self, o): return self._binary(o, "_greater", "_greater_scalar")
    def __ge__(self, o): return self._binary(o, "_greater_equal", "_greater_equal_scalar")
    def __lt__(self, o): return self._binary(o, "_lesser", "_lesser_scalar")
    def __le__(self, o): return self._binary(o, "_lesser_equal", "_lesser_equal_scalar")
    __div__ = __truediv__
    __rdiv__ = __rtruediv__

    def __neg__(self) -> Symbol:
        return self.__mul__(-1.0)

    def __abs__(self) -> Symbol:
        from . import op_api
        return op_api.invoke("abs", [self], {})


def _as_shape(value) -> tuple[int, ...]:
    """A given shape in symgraph's legacy form (``0`` = unknown dim, ``()`` unknown); under
    NumPy shape semantics MXNet spells unknown dims ``-1`` and unknown shapes ``None``."""
    if isinstance(value, str):  # a ``__shape__`` hint: ``var(shape=(-1, 20))`` under np_shape
        from ..attrs import _parse_tuple
        value = _parse_tuple(value)
    if not isinstance(value, (tuple, list)):
        raise ShapeError(f"shape must be a tuple, got {value!r}")
    return tuple(max(int(d), 0) if d is not None else 0 for d in value)


def _np_shape_out(shape: tuple):
    """An inferred shape as MXNet reports it under NumPy shape semantics."""
    if not shape:
        return None
    return tuple(d if d else -1 for d in shape)


def _numpy_type(name: str):
    """MXNet reports dtypes as numpy scalar types; bfloat16 (none in numpy) by its name."""
    import numpy as np
    return name if name == "bfloat16" else np.dtype(name).type


def _as_dtype(value) -> str:
    from ..base import FLAG_TO_NAME
    if isinstance(value, str) and value.isdigit():
        return FLAG_TO_NAME[int(value)]
    return dtype_name(value)


def copy_graph(heads: list[Entry], replace: dict[int, Entry]) -> dict[int, Node]:
    """Copy every op node reachable from ``heads``; variables in ``replace`` (by id) are swapped."""
    from .graph import dfs_post_order
    mapping: dict[int, Node] = {}
    entry_map: dict[int, Entry] = dict(replace)
    for node in dfs_post_order(heads):
        if id(node) in entry_map:
            continue
        if node.op is None:
            mapping[id(node)] = node
            entry_map[id(node)] = (node, 0)
            continue
        # an op parsing its own attributes (Custom) keeps per-node state: parse again
        new = Node(node.op, node.name, node.attrs,
                   params=node._params if node.op.special.parse is None else None)
        new.inputs = [_mapped(entry_map, mapping, e) for e in node.inputs]
        new.versions = node.versions
        new.subgraphs = node.subgraphs  # a control-flow node keeps its bodies
        mapping[id(node)] = new
    return mapping


def _mapped(entry_map: dict[int, Entry], mapping: dict[int, Node], entry: Entry) -> Entry:
    node, index = entry
    if node.op is None and id(node) in entry_map:
        return entry_map[id(node)]
    return (mapping[id(node)], index)


def _substitute(heads: list[Entry], by_name: dict[str, Entry]) -> list[Entry]:
    from .graph import dfs_post_order
    replace = {id(n): by_name[n.name] for n in dfs_post_order(heads)
               if n.op is None and n.name in by_name}
    mapping = copy_graph(heads, replace)
    out = []
    for node, index in heads:
        out.append(replace[id(node)] if id(node) in replace else (mapping[id(node)], index))
    return out


def Group(symbols: Sequence[Symbol]) -> Symbol:  # MXNet's name
    """Group several symbols into one with all their outputs.

    >>> import symgraph as mx
    >>> g = mx.sym.Group([mx.sym.Variable('a'), mx.sym.Variable('b')])
    >>> g.list_outputs()
    ['a', 'b']
    """
    if not symbols or any(not isinstance(s, Symbol) for s in symbols):
        raise TypeError("Expected a non-empty list of symbols as input")
    return Symbol([e for s in symbols for e in s._outputs])


def Variable(name: str, attr=None, shape=None, lr_mult=None, wd_mult=None, dtype=None,
             init=None, stype=None, **kwargs) -> Symbol:
    """Create a symbolic variable.

    >>> import symgraph as mx
    >>> v = mx.sym.Variable('w', shape=(2, 3), lr_mult=0.5)
    >>> sorted(v.list_attr().items())
    [('__lr_mult__', '0.5'), ('__shape__', '(2, 3)'), ('lr_mult', '0.5')]
    """
    from .naming import AttrScope
    if not isinstance(name, str):
        raise TypeError("Expect a string for variable `name`")
    check_string_values(attr or {})
    attr = AttrScope.current.get(attr)
    extra = {"__shape__": shape, "__lr_mult__": lr_mult, "__wd_mult__": wd_mult,
             "__init__": init if init is None or isinstance(init, str) else init.dumps(),
             "__storage_type__": None if stype is None else _STYPES.get(stype, stype)}
    if dtype is not None:
        from ..base import NAME_TO_FLAG
        extra["__dtype__"] = NAME_TO_FLAG[dtype_name(dtype)]
    for key, value in kwargs.items():
        if not (key.startswith("__") and key.endswith("__")):
            raise ValueError(f"Attribute name={key} is not supported. Additional attributes "
                             "must start and end with double underscores, e.g, __yourattr__")
        extra[key] = value
    attr.update({k: to_attr_string(v) for k, v in extra.items() if v is not None})
    return Symbol([(Node(None, name, attr), 0)])


var = Variable

_STYPES = {"default": 0, "row_sparse": 1, "csr": 2}


def check_unique_names(ig: IndexedGraph) -> None:
    """Raise ``GraphError`` when two distinct variables share a name."""
    seen: dict[str, Node] = {}
    for i in ig.variable_ids:
        node = ig.nodes[i]
        if node.name in seen and seen[node.name] is not node:
            raise GraphError(f"Duplicate argument name {node.name!r}: two different variables "
                             "in the graph share it")
        seen[node.name] = node


# names MXNet's mxnet/symbol/symbol.py defines that symgraph's package holds
__getattr__ = names_from(__name__, 'symgraph.symbol', (
    'arange', 'eye', 'full', 'histogram', 'hypot', 'linspace', 'load', 'load_json', 'maximum',
    'minimum', 'ones', 'pow', 'power', 'split_v2', 'zeros',
))
