"""Imperative operator calls: the ``nd.X`` functions, made from the op registry.

A call runs the operator's own definition on NDArrays: its params are parsed from the
keyword values as a symbol's attributes would be, its shape and dtype rules give the
outputs, and its torch reference (specialised for the shapes through ``prepare``, once per
(params, shapes, dtypes, device)) computes them. Under ``autograd.record()`` a call on
arrays that take part in differentiation goes to the recorder in :mod:`symgraph.ndarray.hooks`
(a one-node graph, :mod:`symgraph.imperative.recorded`), so ``backward`` uses the op's
gradient rule. MXNet's keywords ``out=`` (write into given arrays), ``name=`` (ignored
imperatively) and ``ctx=`` (device of ops without inputs) are accepted as MXNet accepts them.

>>> from symgraph import ndarray as nd
>>> nd.broadcast_add(nd.ones((2, 1)), nd.array([1, 2, 3])).asnumpy()
array([[2., 3., 4.],
       [2., 3., 4.]], dtype=float32)
>>> out = nd.zeros((2,))
>>> _ = nd.relu(nd.array([-1, 2]), out=out)
>>> out.asnumpy()
array([0., 2.], dtype=float32)
"""
from __future__ import annotations

import inspect
from collections.abc import Callable

import torch

from .. import profiler as _profiler
from .. import random as _random
from ..attrs import HIDDEN_KEYS, to_attr_string
from ..base import MXNetError, ShapeError
from ..context import Context, current_context
from ..ops.base import OpDef, Runtime, get_op
from ..sparse import dispatch, formats
from ..symbol.graph import op_params
from ..symbol.op_api import _docstring
from ..symbol.op_api import _signature as symbol_signature
from ..util import is_np_shape
from . import hooks
from ._out import write_out
from .ndarray import NDArray
from .sparse_array import value_of, wrap

# (op name, id(params), shapes, dtypes, device) -> (params, forward, number of visible outputs)
_PLANS: dict[tuple, tuple] = {}
_MAX_PLANS = 4096


def _split(op: OpDef, called: str, args: tuple, kwargs: dict):
    """(positional arrays, keyword arrays, attribute strings) of a call."""
    first = next((i for i, a in enumerate(args) if not isinstance(a, NDArray | None)),
                 len(args))
    arrays, extra = [a for a in args[:first] if a is not None], args[first:]
    if any(isinstance(a, NDArray) for a in extra):
        raise TypeError(f"{called}: array arguments must come before the parameters, got "
                        f"{[type(a).__name__ for a in args]}")
    names = [p.name for p in op.params]
    if len(extra) > len(names):
        raise TypeError(f"{called}: too many positional arguments ({len(extra)} after the "
                        "arrays)")
    params = {p.name for p in op.params}
    named, attrs = {}, {}
    for key, value in [*zip(names, extra), *kwargs.items()]:
        if isinstance(value, NDArray):
            named[key] = value
        elif value is None and key not in params:
            continue
        elif key in HIDDEN_KEYS and key not in params:
            attrs[f"__{key}__"] = to_attr_string(value)
        else:
            if key in attrs:
                raise TypeError(f"{called}() got multiple values for argument '{key}'")
            attrs[key] = to_attr_string(value)
    return arrays, named, attrs


def _wire(called: str, slots: list[str], arrays: list, named: dict) -> list[NDArray]:
    if len(arrays) > len(slots):
        raise MXNetError(f"{called}: {len(arrays)} array inputs given, the operator takes "
                         f"{len(slots)} ({slots})")
    given = dict(zip(slots, arrays))
    for key, value in named.items():
        if key not in slots:
            raise MXNetError(f"{called}: unexpected array argument '{key}'; inputs are {slots}")
        if key in given:
            raise MXNetError(f"{called}: input '{key}' given twice")
        given[key] = value
    missing = [s for s in slots if s not in given]
    if missing:
        raise MXNetError(f"{called}: required input {missing[0]!r} is missing; inputs are "
                         f"{slots}")
    return [given[s] for s in slots]


def _plan(op: OpDef, p, called: str, ins: list[torch.Tensor], device: torch.device):
    """(params, forward, visible outputs) for these input shapes/dtypes (memoised)."""
    shapes = tuple(tuple(t.shape) for t in ins)
    key = (op.name, id(p), shapes, tuple(t.dtype for t in ins), device)
    hit = _PLANS.get(key)
    if hit is not None and hit[0] is p:
        return hit[1]
    out_shapes = _infer(op, p, called, shapes)
    params = p
    if op.hints.reads_out_shape:
        params = type(p)({**p, "_out_shape": tuple(out_shapes[0])})
    fn = op.forward
    if op.prepare is not None and device.type == "cpu":
        fn = op.prepare(params, [tuple(s) for s in shapes], [tuple(s) for s in out_shapes]) \
            or op.forward
    plan = (params, fn, op.visible_outputs(p))
    if len(_PLANS) >= _MAX_PLANS:
        _PLANS.clear()
    _PLANS[key] = (p, plan)
    return plan


def _infer(op: OpDef, p, called: str, shapes: tuple) -> list:
    if any(0 in s for s in shapes) and not is_np_shape():
        raise ShapeError(f"Operator {called} inferring shapes failed: input shapes "
                         f"{list(shapes)} have a 0 dimension, which MXNet's legacy shapes "
                         "read as unknown; zero-size arrays need `with mx.np_shape(True)`")
    result = op.infer_shape(p, [tuple(s) for s in shapes])
    if result is None:
        raise ShapeError(f"{called}: cannot infer the output shape from input shapes "
                         f"{list(shapes)}")
    completed, out_shapes = result
    for i, (given, want) in enumerate(zip(shapes, completed)):
        if want and tuple(want) != tuple(given):
            raise ShapeError(f"Error in operator {called}: Shape inconsistent, Provided="
                             f"{tuple(given)}, inferred shape={tuple(want)} (input {i})")
    return out_shapes


def _device(arrays: list[NDArray], ctx) -> tuple[Context, torch.device]:
    if arrays:
        first = arrays[0].context
        device = value_of(arrays[0]).device  # a sparse array's value, never its dense copy
        for a in arrays[1:]:
            if value_of(a).device != device:
                raise MXNetError(f"operands are on different contexts: {first} and "
                                 f"{a.context}")
        return first, device
    ctx = _context(ctx) if isinstance(ctx, str) else (ctx or current_context())
    return ctx, ctx.torch_device


def _context(text: str) -> Context:
    """``'gpu(1)'`` or ``'cpu'`` as a Context."""
    kind, _, rest = text.partition("(")
    return Context(kind.strip(), int(rest.rstrip(")") or 0))


def invoke(called: str, args: tuple, kwargs: dict, out=None):
    """Run operator ``called`` (a name or alias) imperatively; its visible outputs."""
    op = get_op(called)
    ctx = kwargs.pop("ctx", None)
    if ctx is not None and "ctx" in {p.name for p in op.params}:
        kwargs["ctx"] = str(ctx)  # creation ops record it, as in MXNet
    kwargs.pop("name", None)
    arrays, named, attrs = _split(op, called, args, kwargs)
    if out is not None and not (arrays or named) and "shape" not in attrs and any(
            q.name == "shape" for q in op.params):  # fill out= (MXNet's legacy _set_value)
        attrs["shape"] = str(tuple((out if isinstance(out, NDArray) else out[0]).shape))
    if op.key_var_num_args and op.key_var_num_args not in attrs:
        attrs[op.key_var_num_args] = str(len(arrays) + len(named))
    p = op_params(op, attrs, f"operator {called}")
    slots = op.input_names(p) + op.aux_names(p)
    inputs = _wire(called, slots, arrays, named)
    if out is not None and op.mutated_inputs(p):  # an update writing over its own input may
        p = _mark_written(p, inputs, out)  # compute differently (MXNet's nag_mom_update)
    context, device = _device(inputs, ctx)
    if op.special.eager is not None:  # output shape from values: fixed-shape ops run it
        results = list(op.special.eager(_EagerBuilder(context), p, inputs))
    else:
        rec = hooks.STATE.recorder
        if rec is not None and rec.tracks(*inputs):
            results = rec.apply_op(called, attrs, inputs, len(op.input_names(p)))
        elif any(a._is_sparse for a in inputs) or _sparse_from_dense(op, p, len(inputs)):
            results = _run_storage(op, p, called, inputs, context)
        else:
            results = _run(op, p, called, inputs, context, device)
    return _deliver(results, out)


def _sparse_from_dense(op: OpDef, p, n: int) -> bool:
    """Whether the op's storage rule makes a sparse output from dense inputs (cast_storage
    to csr, ...): only then does a call on dense arrays leave the dense path."""
    if op.storage is None:
        return False
    outs = op.storage.infer(p, ["default"] * n)
    return outs is not None and any(s != "default" for s in outs)


def _mark_written(p, inputs: list[NDArray], out):
    """``p`` with ``_out_is_input``: the indices of the inputs ``out=`` also names."""
    targets = [out] if isinstance(out, NDArray) else list(out)
    written = tuple(i for i, a in enumerate(inputs) if any(a is t for t in targets))
    return type(p)({**p, "_out_is_input": written}) if written else p


class _EagerBuilder:
    """What an ``OpDef.eager`` rule may do: call registered ops, read and make arrays."""

    def __init__(self, context: Context):
        self.context = context

    def op(self, name: str, *arrays: NDArray, **attrs) -> NDArray:
        return invoke(name, arrays, attrs)

    def value(self, array: NDArray) -> torch.Tensor:
        return array._t

    def array(self, tensor: torch.Tensor) -> NDArray:
        arr = NDArray(tensor)
        arr._ctx = self.context
        return arr

    def constant(self, tensor: torch.Tensor, *inputs: NDArray) -> NDArray:
        """``tensor`` as an array made from ``inputs`` with a zero gradient to them (an
        empty result): under autograd a backward through it reaches them."""
        arr = self.array(tensor)
        rec = hooks.STATE.recorder
        if rec is not None and rec.tracks(*inputs):
            rec.constant(arr, inputs)
        return arr


def _run(op: OpDef, p, called: str, inputs: list[NDArray], context: Context,
         device: torch.device) -> list[NDArray]:
    ins = [a._t for a in inputs]
    params, fn, visible = _plan(op, p, called, ins, device)
    n_reg = len(ins) - len(op.aux_names(p))
    rt = Runtime(hooks.STATE.training, _random.generator(context), device)
    if _profiler.ACTIVE.imperative:
        outs = _profiler.call_imperative(op.name, fn, params, ins[:n_reg], ins[n_reg:], rt,
                                         device=device)
    else:
        outs = fn(params, ins[:n_reg], ins[n_reg:], rt)
    results = []
    for t in list(outs)[:visible]:
        if any(t is x or (t.data_ptr() == x.data_ptr() and t.numel()) for x in ins):
            t = t.clone()  # an imperative op returns a new array, never a view of its input
        arr = NDArray(t)
        arr._ctx = context
        results.append(arr)
    return results


def _run_storage(op: OpDef, p, called: str, inputs: list[NDArray],
                 context: Context) -> list[NDArray]:
    """A call on sparse inputs, or of an op with sparse kernels: storage dispatch."""
    values = [value_of(a) for a in inputs]
    out_shapes = _infer(op, p, called, tuple(tuple(v.shape) for v in values))
    if op.hints.reads_out_shape:
        p = type(p)({**p, "_out_shape": tuple(out_shapes[0])})
    n_reg = len(values) - len(op.aux_names(p))
    rt = Runtime(hooks.STATE.training, _random.generator(context), context.torch_device)
    outs = dispatch.run(op, p, values, n_reg, rt, f"operator {called}")
    results = []
    for value in outs[:op.visible_outputs(p)]:
        if any(_shares(value, v) for v in values):
            value = formats.clone(value)  # a new array, never a view of an input
        results.append(wrap(value, context))
    return results


def _shares(value, other) -> bool:
    """Whether ``value`` (its values tensor) is ``other``'s storage."""
    a = value if isinstance(value, torch.Tensor) else value.data
    b = other if isinstance(other, torch.Tensor) else other.data
    return a is b or (a.numel() > 0 and a.data_ptr() == b.data_ptr())


def _deliver(results: list[NDArray], out):
    if out is None:
        return results[0] if len(results) == 1 else results
    return write_out(results, out)


def _signature(op: OpDef) -> inspect.Signature:
    params = list(symbol_signature(op).parameters.values())
    P = inspect.Parameter
    extra = [P("out", P.KEYWORD_ONLY, default=None)]
    return inspect.Signature(params[:-1] + extra + params[-1:])


def make_function(called: str, op: OpDef, hint: str | None = None) -> Callable:
    """The public function ``nd.<called>`` (``hint``: its name inside an op namespace)."""
    def fn(*args, out=None, **kwargs):
        return invoke(called, args, kwargs, out)

    fn.__name__ = fn.__qualname__ = hint or called
    fn.__doc__ = _docstring(called, op, "NDArray")
    fn.__signature__ = _signature(op)
    return fn
