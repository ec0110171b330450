"""Creating operator nodes, and the public ``sym.X`` functions built from the op registry.

Each function is made by a plain loop over :data:`~symgraph.ops.base.OPS` (no ``exec``)
with a real ``inspect.Signature`` and a numpydoc docstring assembled from the OpDef.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable

from ..attrs import HIDDEN_KEYS, check_string_values, hide_keys, to_attr_string
from ..base import AttrError, GraphError
from ..ops.base import OPS, OpDef, canonical_ops, get_op
from .graph import Node
from .naming import AttrScope, NameManager
from .symbol import Symbol


def _split_kwargs(op: OpDef, kwargs: dict) -> tuple[dict, dict]:
    """Separate symbol inputs from attribute values (stringified the way MXNet's frontend does)."""
    inputs, attrs = {}, {}
    params = {p.name for p in op.params}
    for key, value in kwargs.items():
        if isinstance(value, Symbol):
            inputs[key] = value
        elif value is None and key not in params:
            continue  # an input left out on purpose (weight=None)
        elif key in HIDDEN_KEYS and key not in params:
            attrs[f"__{key}__"] = to_attr_string(value)  # lr_mult=2 is an attribute
        else:
            attrs[key] = to_attr_string(value)
    return inputs, attrs


def _single(value: Symbol, where: str, slot: str):
    if len(value) != 1:
        raise GraphError(f"Error in {where}: input '{slot}' is a group of {len(value)} outputs; "
                         "compose with a single-output symbol (use sym[i])")
    return value._outputs[0]


def invoke(called: str, args: list, kwargs: dict, name: str | None = None,
           attr: dict | None = None, hint: str | None = None) -> Symbol:
    """Create the node for op ``called`` (a name or alias) and return its outputs as a Symbol;
    an unnamed node is named after ``hint`` (the function's name; default ``called``)."""
    op = get_op(called)
    kwargs = dict(kwargs)
    kwargs.pop("out", None)  # MXNet's symbol functions accept ``out=`` and ignore it
    args, kwargs = _positional_params(op, called, list(args), kwargs)
    sym_kwargs, attrs = _split_kwargs(op, kwargs)
    positional = [a for a in args if a is not None]
    if op.key_var_num_args and op.key_var_num_args not in attrs:
        attrs[op.key_var_num_args] = str(len(positional) + len(sym_kwargs))
    check_string_values(attr or {})
    name = NameManager.current.get(name, (hint or called).lower())
    node = Node(op, name, {**AttrScope.current.get(attr), **hide_keys(attrs)})
    p = node.params  # parse now: bad attributes fail at creation, as in MXNet
    slots = op.input_names(p) + op.aux_names(p)
    node.inputs = _wire_inputs(node, slots, positional, sym_kwargs)
    for i in op.mutated_inputs(p):  # MXNet (nnvm) refuses to compose these too
        if node.inputs[i][0].op is not None:
            raise GraphError(f"Error in {node.where}: input '{slots[i]}' is written in place "
                             f"and must be a variable, got an output of "
                             f"{node.inputs[i][0].name} ({node.inputs[i][0].op.name})")
    return Symbol([(node, i) for i in range(node.num_visible_outputs)])


def _positional_params(op: OpDef, called: str, args: list, kwargs: dict):
    """Non-Symbol positional arguments after the inputs fill params in declaration order."""
    first = next((i for i, a in enumerate(args) if a is not None and not isinstance(a, Symbol)),
                 len(args))
    extra = args[first:]
    if any(isinstance(a, Symbol) for a in extra):
        bad = next(a for a in extra if not isinstance(a, Symbol))
        raise TypeError(f"{called}: Argument must be Symbol instances, but got {bad!r}")
    names = [p.name for p in op.params]
    if len(extra) > len(names):
        raise TypeError(f"{called}: too many positional arguments ({len(extra)} after the inputs)")
    for name, value in zip(names, extra):
        if name in kwargs:
            raise TypeError(f"{called}() got multiple values for argument '{name}'")
        kwargs[name] = value
    if extra and first == 0 and _static_slots(op):  # sym.FullyConnected(1.5, ...)
        raise TypeError(f"Argument {_static_slots(op)[0]} must be Symbol instances, but got "
                        f"{extra[0]!r}")
    return args[:first], kwargs


def _wire_inputs(node: Node, slots: list[str], positional: list, keyword: dict) -> list:
    if len(positional) > len(slots):
        raise GraphError(f"Error in {node.where}: {len(positional)} positional inputs given, "
                         f"the op takes {slots}")
    given = dict(zip(slots, positional))
    for key, value in keyword.items():
        if key not in slots:
            raise AttrError(f"Error in {node.where}: unexpected input '{key}'; inputs are {slots}")
        if key in given:
            raise GraphError(f"Error in {node.where}: input '{key}' given twice")
        given[key] = value
    extra = node.op.special.var_attrs or {}
    entries = []
    for slot in slots:
        if slot in given:
            entry = _single(given[slot], node.where, slot)
            if entry[0].op is None:  # MXNet also marks given variables (no override)
                for key, value in extra.get(slot, {}).items():
                    entry[0].attrs.setdefault(key, value)
            entries.append(entry)
        else:  # MXNet creates the missing input as a variable carrying the op's attributes
            attrs = {**node.attrs, **extra.get(slot, {})}
            entries.append((Node(None, f"{node.name}_{slot}", attrs), 0))
    return entries


def _docstring(called: str, op: OpDef, kind: str = "Symbol") -> str:
    """numpydoc text for ``sym.<called>`` (``kind`` 'Symbol') or ``nd.<called>`` ('NDArray')."""
    lines = [op.doc.strip() or f"The {op.name} operator.", "", "Parameters", "----------"]
    p = op.params
    omitted = "created as a variable when omitted" if kind == "Symbol" else "required"
    if not op.key_var_num_args:
        for slot in _static_slots(op):
            lines += [f"{slot} : {kind}", f"    Input ({omitted})."]
    else:
        lines += [f"*args : {kind}", "    Variadic inputs."]
    for param in p:
        lines += [f"{param.name} : {param.kind}, "
                  f"{'required' if param.required else f'default={param.default!r}'}"]
        choices = f"one of {list(param.choices)}" if param.choices else ""
        if param.doc or choices:
            lines += [f"    {param.doc} {choices}".rstrip()]
    if kind == "Symbol":
        lines += ["name : str, optional", "    Node name (generated when omitted).",
                  "attr : dict, optional", "    Extra attributes."]
    else:
        lines += ["out : NDArray or list of NDArray, optional", "    Arrays the outputs are "
                  "written into (returned).", "ctx : Context, optional",
                  "    Device of an operator without array inputs."]
    lines += ["", "Returns", "-------", kind]
    return "\n".join(lines)


def _static_slots(op: OpDef) -> list[str]:
    """Input slot names under the default parameters (what signatures and docs show)."""
    from ..attrs import Params
    defaults = Params({p.name: (None if p.required else p.default) for p in op.params})
    try:
        return op.input_names(defaults) + op.aux_names(defaults)
    except (TypeError, ValueError, KeyError, AttributeError):
        return []  # names depend on a required parameter (variadic ops)


def _signature(op: OpDef) -> inspect.Signature:
    P = inspect.Parameter
    params = []
    if op.key_var_num_args or op.special.parse is not None:  # Custom: inputs named by its prop
        params.append(P("args", P.VAR_POSITIONAL))
    else:
        params += [P(s, P.POSITIONAL_OR_KEYWORD, default=None) for s in _static_slots(op)]
    for param in op.params:
        if param.name not in {q.name for q in params}:
            params.append(P(param.name, P.KEYWORD_ONLY,
                            default=None if param.required else param.default))
    params += [P("name", P.KEYWORD_ONLY, default=None), P("attr", P.KEYWORD_ONLY, default=None),
               P("kwargs", P.VAR_KEYWORD)]
    return inspect.Signature(params)


def make_function(called: str, op: OpDef, hint: str | None = None) -> Callable[..., Symbol]:
    """The public function ``sym.<called>``; ``hint`` is its name inside an op namespace
    (``sym.linalg.gemm2`` names its nodes ``gemm2N``, as MXNet does)."""
    def creator(*args, name=None, attr=None, **kwargs):
        return invoke(called, list(args), kwargs, name=name, attr=attr, hint=hint)

    creator.__name__ = creator.__qualname__ = hint or called
    creator.__doc__ = _docstring(called, op)
    creator.__signature__ = _signature(op)
    return creator


def public_functions() -> dict[str, Callable[..., Symbol]]:
    """``{name: function}`` for every registered name and alias of a non-hidden op."""
    canonical_ops()  # registry is filled at import of symgraph.ops
    return {called: make_function(called, op) for called, op in OPS.items()}
