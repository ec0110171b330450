"""Running a control-flow operator's subgraph: sub-executors, shape and dtype inference.

A subgraph is a Symbol whose inputs (``list_inputs()``, in order) the operator feeds from
its own inputs. :func:`sub_executor` binds it once per (shapes, dtypes, device, with
gradients) and keeps the executor; each loop iteration copies its inputs into the bound
argument arrays and runs the executor's plan, so the subgraph runs the same kernels as any
bound graph (Triton ones under ``SYMGRAPH_BACKEND=triton``). Also the nesting helpers
both front ends (``mx.nd.contrib`` and ``mx.sym.contrib``) use for their arguments.
"""
from __future__ import annotations

import torch

from ..base import MXNetError, ShapeError

_EXECUTORS: dict[tuple, tuple] = {}
_MAX_EXECUTORS = 256


def _context(device: torch.device):
    from ..context import Context
    if device.type == "cuda":
        return Context("gpu", device.index or 0)
    return Context("cpu", 0)


def sub_executor(sub, shapes: list, dtypes: list, device: torch.device, grad: bool):
    """An executor of ``sub`` for these input shapes/dtypes (by ``list_inputs`` position)."""
    from .. import config  # a plan depends on the backend and fusion settings
    key = (id(sub), tuple(shapes), tuple(dtypes), str(device), grad, config.get())
    hit = _EXECUTORS.get(key)
    if hit is not None and hit[0] is sub:
        return hit[1]
    names = sub.list_inputs()
    if len(names) != len(shapes):
        raise ShapeError(f"subgraph takes {len(names)} inputs {names}, got {len(shapes)}")
    exe = distinct_heads(sub).simple_bind(_context(device), grad_req="write" if grad else "null",
                          type_dict=dict(zip(names, dtypes)), **dict(zip(names, shapes)))
    if len(_EXECUTORS) >= _MAX_EXECUTORS:
        _EXECUTORS.clear()
    _EXECUTORS[key] = (sub, exe)
    return exe


def distinct_heads(sub):
    """``sub`` with each repeated head entry copied by ``_copy``: a body may return one
    value twice (``[out, out]``), and each copy's gradient must count (autodiff gives an
    entry listed as two heads the last one's)."""
    from ..symbol.graph import Node
    from ..symbol.symbol import Symbol
    from .base import get_op
    seen, heads = set(), []
    for entry in sub._outputs:
        key = (id(entry[0]), entry[1])
        if key in seen:
            entry = (Node(get_op("_copy"), f"{entry[0].name}_repeat{len(heads)}", {},
                          [entry]), 0)
        seen.add(key)
        heads.append(entry)
    return sub if len(heads) == len(seen) else Symbol(heads)


def run(exe, sub, tensors: list, is_train: bool) -> list[torch.Tensor]:
    """One forward of ``exe`` over ``tensors`` (by ``list_inputs`` position): copies of its
    outputs (the executor's buffers are reused by the next run)."""
    feed(exe, sub, tensors)
    return [out._t.clone() for out in exe.forward(is_train=is_train)]


def feed(exe, sub, tensors: list) -> None:
    """Copy ``tensors`` into the executor's argument arrays."""
    arg_dict, aux_dict = exe.arg_dict, exe.aux_dict
    for name, t in zip(sub.list_inputs(), tensors):
        arr = arg_dict.get(name)
        arr = aux_dict[name] if arr is None else arr
        arr._t.copy_(t)


def grads(exe, sub, out_grads: list) -> list[torch.Tensor]:
    """Backward of the last forward: the gradient of each subgraph input (zeros for aux)."""
    exe.backward(out_grads=list(out_grads))
    gdict = exe.grad_dict
    out = []
    for name in sub.list_inputs():
        g = gdict.get(name)
        out.append(g._t.clone() if g is not None else torch.zeros_like(exe.aux_dict[name]._t))
    return out


def infer(sub, in_shapes: list, in_dtypes: list) -> tuple[list, list, list, list]:
    """Shapes and dtypes through ``sub``: (completed input shapes, output shapes,
    completed input dtypes, output dtypes); unknown shapes are ``()``, dtypes None."""
    from ..symbol.infer import infer_shapes, infer_types
    ig = sub._graph()
    var_ids = ig.variable_ids
    shapes = infer_shapes(ig, {v: tuple(s) for v, s in zip(var_ids, in_shapes) if s})
    types = infer_types(ig, {v: t for v, t in zip(var_ids, in_dtypes) if t is not None})
    ins = [ig.row_ptr[v] for v in var_ids]
    heads = [ig.entry_id(h) for h in ig.heads]
    return ([tuple(shapes[e]) for e in ins], [tuple(shapes[e]) for e in heads],
            [types[e] for e in ins], [types[e] for e in heads])


# Random draws in a subgraph (Dropout in an RNN body): the backward runs the body again and
# must draw what the forward drew, so the forward remembers the generator's state and the
# backward replays each step from the state that step started with.
_RNG_STATES: dict[int, tuple] = {}


def _draws(sub) -> bool:
    return any(n.op is not None and n.op.draws_random(n.params) for n in sub._graph().nodes)


def rng_state(sub, device: torch.device):
    """The generator state now, where ``sub`` draws random numbers (else None)."""
    from ..random import generator
    return generator(device).get_state() if _draws(sub) else None


def set_rng(device: torch.device, state) -> None:
    """Put the generator back to ``state`` (None: nothing to do)."""
    from ..random import generator
    if state is not None:
        generator(device).set_state(state)


def remember_rng(sub, device: torch.device) -> None:
    """Called by a forward: the state its draws start from."""
    state = rng_state(sub, device)
    if state is not None:
        if len(_RNG_STATES) >= _MAX_EXECUTORS:
            _RNG_STATES.clear()
        _RNG_STATES[id(sub)] = (sub, state)


def rewind_rng(sub, device: torch.device):
    """Called by a backward: move the generator to the remembered forward state; returns
    the state to restore afterwards (None: nothing was moved)."""
    hit = _RNG_STATES.get(id(sub))
    if hit is None or hit[0] is not sub:
        return None
    now = rng_state(sub, device)
    set_rng(device, hit[1])
    return now


# ------------------------------------------------ nested arguments of the front ends

def flatten(args, what: str, kind: type) -> tuple[list, object]:
    """A nested list of ``kind`` values as a flat list and its format (MXNet's ``_flatten``:
    a bare value has format 0, a list the formats of its items)."""
    if isinstance(args, kind):
        return [args], 0
    if not isinstance(args, (list, tuple)):
        raise MXNetError(f"{what} must be a (nested) list of {kind.__name__}, got "
                         f"{type(args).__name__}")
    flat, fmts = [], []
    for item in args:
        sub, fmt = flatten(item, what, kind)
        flat.extend(sub)
        fmts.append(fmt)
    return flat, fmts


def regroup(args: list, fmt) -> tuple:
    """Inverse of :func:`flatten`: (the nested value, the items left over)."""
    if isinstance(fmt, int):
        if fmt == 0:
            return args[0], args[1:]
        return args[:fmt], args[fmt:]
    out = []
    for sub in fmt:
        value, args = regroup(args, sub)
        out.append(value)
    return out, args


def as_scalar(value, type_, what: str):
    """A Python ``type_`` from an NDArray of one element or a Python number."""
    if hasattr(value, "asscalar"):
        value = value.asscalar()
    try:
        return type_(value)
    except (TypeError, ValueError):
        raise ValueError(f"Cannot convert {what} to python {type_.__name__}") from None


# The states each step of a training forward started from, kept for the backward (MXNet
# keeps them too): the backward then runs each step's forward once, not twice. Valid only
# for the very tensors (and versions) the forward read.
_STEPS: dict[int, tuple] = {}


def _signature(tensors: list) -> tuple:
    return tuple((id(t), t._version) for t in tensors)


def remember_steps(sub, ins: list, history: list, rng: list) -> None:
    """Called by a training forward: per step, its starting states and generator state."""
    if len(_STEPS) >= _MAX_EXECUTORS:
        _STEPS.clear()
    _STEPS[id(sub)] = (sub, _signature(ins), list(ins), history, rng)


def recall_steps(sub, ins: list):
    """(history, rng) a forward over exactly ``ins`` remembered, or None; forgotten after."""
    hit = _STEPS.pop(id(sub), None)
    if hit is None or hit[0] is not sub or hit[1] != _signature(ins):
        return None
    return hit[3], hit[4]
