"""``Custom``: an operator whose shapes, dtypes, forward and backward are user Python code.

A node's attributes are ``op_type`` (a name given to ``mx.operator.register``) and the
keyword arguments of the registered ``CustomOpProp``, kept as the strings MXNet passes to
the prop's constructor. The prop gives the input names (arguments, then auxiliary states),
the outputs, the shape and dtype rules and the backward dependencies; the operator it
creates (``create_operator``, once per node per executor, kept in the executor's
``Runtime.state``) runs ``forward`` and, through the hidden ``_backward_Custom`` node,
``backward`` on NDArrays that wrap the executor's tensors. Aux states are written in place.
An exception in user code becomes :class:`CustomOpError` (an MXNetError raised where the
outputs are read, as MXNet's engine raises it).

>>> import symgraph as mx
>>> x = mx.sym.Variable('x')
>>> y = mx.sym.Custom(x, op_type='custom_op', name='c')
>>> y.infer_shape(x=(2, 3))[1]
[(2, 3)]
"""
from __future__ import annotations

import itertools
import traceback
import weakref

import numpy as np
import torch

from ..attrs import Param, Params, is_user_attr
from ..base import (
    NAME_TO_FLAG,
    NAME_TO_TORCH,
    AttrError,
    DeferredError,
    DTypeError,
    ShapeError,
    dtype_name,
)
from .base import Case, OpDef, PlanHints, Special, known, merge_shape, register

PROPS: dict[str, type] = {}
"""Registered ``CustomOpProp`` classes by ``op_type`` (``mx.operator.register`` fills it)."""

# forward params by key: a backward node names its forward node's params by this key
_LIVE: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_KEYS = itertools.count()


class CustomOpError(DeferredError):
    """An exception raised in a custom operator's Python code."""


def _prop_class(op_type: str, where: str) -> type:
    if op_type not in PROPS:
        from .. import operator  # noqa: F401 - registers MXNet's built-in "custom_op"
    try:
        return PROPS[op_type]
    except KeyError:
        raise AttrError(f"Error in {where}: Cannot find custom operator {op_type} "
                        f"(registered: {sorted(PROPS)})") from None


def _user(where: str, what: str, fn, *args, **kwargs):
    """Call user code; its exceptions become a CustomOpError naming the operator."""
    try:
        return fn(*args, **kwargs)
    except Exception as err:  # any error of user code is reported alike
        tail = "".join(traceback.format_exception_only(type(err), err)).strip()
        raise CustomOpError(f"Error in {where}: {what} failed: {tail}\n"
                            f"{traceback.format_exc(limit=-3)}") from err


def parse(attrs: dict[str, str], where: str) -> Params:
    """A Custom node's params: its prop (created from the kwargs), names and dependencies."""
    kwargs = {k: v for k, v in attrs.items() if not is_user_attr(k)}
    op_type = kwargs.pop("op_type", "")
    if not op_type:
        raise AttrError(f"Error in {where}: Required argument `op_type` is missing.")
    prop = _user(where, f"creating {op_type}'s CustomOpProp", _prop_class(op_type, where),
                 **kwargs)
    names = [list(_user(where, f"{op_type}.{fn}", getattr(prop, fn))) for fn in
             ("list_arguments", "list_outputs", "list_auxiliary_states")]
    n_args, n_outs = len(names[0]), len(names[1])
    deps = set(_user(where, f"{op_type}.declare_backward_dependency",
                     prop.declare_backward_dependency, list(range(n_outs)),
                     list(range(n_outs, n_outs + n_args)),
                     list(range(n_outs + n_args, 2 * n_outs + n_args))))
    p = Params(op_type=op_type, kwargs=kwargs, prop=prop, where=where,
               arguments=tuple(names[0]), outputs=tuple(names[1]), aux=tuple(names[2]),
               top_grads=tuple(i for i in range(n_outs) if i in deps),
               out_data=tuple(i for i in range(n_outs) if n_outs + n_args + i in deps),
               key=next(_KEYS))
    _LIVE[p.key] = p
    return p


def _parse_backward(attrs: dict[str, str], where: str) -> Params:
    key = attrs.get("forward_key", "")
    fwd = _LIVE.get(int(key)) if key.isdigit() else None
    if fwd is None:
        raise AttrError(f"Error in {where}: _backward_Custom names no live Custom node "
                        f"(forward_key={key!r}); it is made by differentiation only")
    return Params(forward=fwd)


# ---------------------------------------------------------------- shape and dtype rules

def _split3(ret, p: Params, what: str) -> tuple[list, list, list]:
    if len(ret) not in (2, 3):
        raise ShapeError(f"Error in {p.where}: {p.op_type}.{what} must return 2 or 3 lists")
    ins, outs, aux = (list(ret) + [[]])[:3]
    for got, want, kind in ((ins, p.arguments, "input"), (outs, p.outputs, "output"),
                            (aux, p.aux, "aux state")):
        if len(got) != len(want):
            raise ShapeError(f"Error in {p.where}: {p.op_type}.{what} returned {len(got)} "
                             f"{kind} entries, expecting {len(want)} ({list(want)})")
    return list(ins), list(outs), list(aux)


def _infer_shape(p: Params, shapes: list):
    n = len(p.arguments)
    given = [list(s) for s in shapes[:n]]
    try:
        ret = p.prop.infer_shape(given)
    except Exception as err:  # user code
        if not all(known(s) for s in shapes[:n]):
            return None  # underdetermined: the user's rule needs the input shapes
        raise ShapeError(f"Error in {p.where}: {p.op_type}.infer_shape failed on input shapes "
                         f"{[tuple(s) for s in given]}: {type(err).__name__}: {err}") from err
    ins, outs, aux = _split3(ret, p, "infer_shape")
    ins = [tuple(int(d) for d in s) for s in ins + aux]
    done = [merge_shape(tuple(s), t, f"input {i} of {p.where}")
            for i, (s, t) in enumerate(zip(shapes, ins))]
    outs = [tuple(int(d) for d in s) for s in outs]
    if not all(known(s) for s in outs):
        return None
    return done, outs


def _np_type(name: str | None):
    return None if name is None else np.dtype(name).type


def _infer_type(p: Params, types: list):
    n = len(p.arguments)
    try:
        ret = p.prop.infer_type([_np_type(t) for t in types[:n]])
    except Exception as err:  # user code
        if any(t is None for t in types[:n]):
            return None
        raise DTypeError(f"Error in {p.where}: {p.op_type}.infer_type failed on {types[:n]}: "
                         f"{type(err).__name__}: {err}") from err
    ins, outs, aux = _split3(ret, p, "infer_type")
    names = [None if t is None else dtype_name(t) for t in ins + aux + outs]
    done = names[:len(types)]
    for i, (have, got) in enumerate(zip(types, done)):
        if have is not None and got is not None and have != got:
            raise DTypeError(f"Error in {p.where}: dtype of input {i} is {have}, "
                             f"{p.op_type}.infer_type says {got}")
    done = [have if have is not None else got for have, got in zip(types, done)]
    outs = names[len(types):]
    return (done, outs) if all(t is not None for t in outs) else None


# ---------------------------------------------------------------- running user code

def _wrap(tensors, ctx) -> list:
    from ..ndarray.ndarray import NDArray
    out = []
    for t in tensors:
        arr = None
        if t is not None:
            arr = NDArray(t)
            arr._ctx = ctx
        out.append(arr)
    return out


class _Instance:
    """A node's operator in one executor, with the output shapes/dtypes of its inputs."""

    __slots__ = ("op", "ctx", "signature", "outs")

    def __init__(self, p: Params, ins: list, device: torch.device):
        from ..context import context_of
        self.ctx = context_of(device)
        shapes = [list(t.shape) for t in ins]
        dtypes = [NAME_TO_FLAG[dtype_name(t.dtype)] for t in ins]
        _check_dense(p)
        self.op = _user(p.where, f"{p.op_type}.create_operator", p.prop.create_operator,
                        self.ctx, shapes, dtypes)
        self.signature = None
        self.outs: list = []

    def outputs(self, p: Params, ins: list) -> list:
        """(shape, torch dtype) of each output for these inputs (rules rerun on a change)."""
        sig = tuple((tuple(t.shape), t.dtype) for t in ins)
        if sig != self.signature:
            shapes = _infer_shape(p, [s for s, _ in sig])
            types = _infer_type(p, [dtype_name(d) for _, d in sig])
            if shapes is None or types is None:
                raise ShapeError(f"Error in {p.where}: {p.op_type} cannot infer its outputs "
                                 f"from inputs {[s for s, _ in sig]}")
            self.outs = [(s, NAME_TO_TORCH[t]) for s, t in zip(shapes[1], types[1])]
            self.signature = sig
        return self.outs


def _check_dense(p: Params) -> None:
    """The prop's storage types for dense inputs must be dense (sparse storage: issue #20)."""
    ret = _user(p.where, f"{p.op_type}.infer_storage_type", p.prop.infer_storage_type,
                ["default"] * len(p.arguments))
    sparse = [t for group in ret for t in group if t != "default"]
    if sparse:
        raise AttrError(f"Error in {p.where}: {p.op_type}.infer_storage_type asks for "
                        f"{sorted(set(sparse))} storage; symgraph arrays are dense only")


def _instance(p: Params, rt, ins: list) -> _Instance:
    if rt.state is None:
        rt.state = {}
    hit = rt.state.get(("Custom", p.key))
    if hit is None:
        hit = rt.state[("Custom", p.key)] = _Instance(p, ins, rt.device)
    return hit


def _run(p: Params, inst: _Instance, what: str, train: bool, **arrays) -> None:
    from .. import autograd
    from ..profiler import custom_op_scope  # MXNet's "Custom Operator" profile entries
    with autograd.pause(train_mode=train), inst.ctx, \
            custom_op_scope(p.op_type, backward=what == "backward"):
        _user(p.where, f"CustomOp.{what} of {p.op_type}", getattr(inst.op, what), **arrays)


def _forward(p: Params, ins, aux, rt):
    inst = _instance(p, rt, list(ins) + list(aux))
    outs = [torch.zeros(s, dtype=d, device=rt.device) for s, d in inst.outputs(p, list(ins))]
    _run(p, inst, "forward", rt.is_train, is_train=rt.is_train, req=["write"] * len(outs),
         in_data=_wrap(ins, inst.ctx), out_data=_wrap(outs, inst.ctx),
         aux=_wrap(aux, inst.ctx))
    return outs


def _backward(bp: Params, ins, aux, rt):
    p = bp.forward
    n_args, n_outs = len(p.arguments), len(p.outputs)
    ins = list(ins)
    top, data = ins[:len(p.top_grads)], ins[len(p.top_grads):len(p.top_grads) + n_args]
    outs = ins[len(p.top_grads) + n_args:]
    inst = _instance(p, rt, data + list(aux))
    out_grad, out_data = [None] * n_outs, [None] * n_outs
    for i, t in zip(p.top_grads, top):
        out_grad[i] = t
    for i, t in zip(p.out_data, outs):
        out_data[i] = t
    in_grad = [torch.zeros_like(t) for t in data]
    w = inst.ctx
    _run(p, inst, "backward", True, req=["write"] * n_args, out_grad=_wrap(out_grad, w),
         in_data=_wrap(data, w), out_data=_wrap(out_data, w), in_grad=_wrap(in_grad, w),
         aux=_wrap(aux, w))
    return in_grad


def _gradient(g, p: Params, ins, outs, ograds):
    top = [ograds[i] if ograds[i] is not None else g.zeros(outs[i]) for i in p.top_grads]
    n = len(p.arguments)
    if not n:
        return [None] * len(ins)
    grads = g.multi("_backward_Custom", *top, *ins[:n], *[outs[i] for i in p.out_data],
                    *ins[n:], forward_key=p.key)
    return grads + [None] * len(p.aux)


def _backward_shape(bp: Params, shapes: list):
    p = bp.forward
    data = shapes[len(p.top_grads):len(p.top_grads) + len(p.arguments)]
    return (shapes, [tuple(s) for s in data]) if all(known(s) for s in data) else None


def _backward_type(bp: Params, types: list):
    p = bp.forward
    data = types[len(p.top_grads):len(p.top_grads) + len(p.arguments)]
    return (types, list(data)) if all(t is not None for t in data) else None


def _backward_inputs(bp: Params) -> list[str]:
    p = bp.forward
    return ([f"ograd_{p.outputs[i]}" for i in p.top_grads] + list(p.arguments)
            + [f"out_{p.outputs[i]}" for i in p.out_data])


register(OpDef(
    name="Custom", special=Special(parse=parse), forward=_forward, infer_shape=_infer_shape,
    infer_type=_infer_type, params=(Param("op_type", "str", doc="Name of the registered "
                                          "CustomOpProp; other keywords go to its constructor"),),
    inputs=lambda p: list(p.arguments), aux=lambda p: list(p.aux),
    outputs=lambda p: list(p.outputs), gradient=_gradient, random=True,
    hints=PlanHints(mutates_aux=True),
    cases=(Case(((3, 4),), {"op_type": "custom_op"}),),
    doc="Apply a custom operator implemented in Python (``mx.operator.CustomOp``).",
))
register(OpDef(
    name="_backward_Custom", special=Special(parse=_parse_backward), forward=_backward,
    infer_shape=_backward_shape, infer_type=_backward_type, inputs=_backward_inputs,
    aux=lambda bp: list(bp.forward.aux), outputs=lambda bp: list(bp.forward.arguments),
    hidden=True, random=True,
))
