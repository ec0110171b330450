"""Control flow: ``_foreach``, ``_while_loop``, ``_cond`` (``mx.sym.contrib.foreach`` ...).

Design (MXNet's own): each is a primitive whose node carries its body as subgraph Symbols
(``Node.subgraphs``, MXNet's ``"subgraphs"`` JSON key; the params see them as
``_subgraphs``). The forward binds a subgraph once per input shapes into a sub-executor
(:mod:`symgraph.ops.control_flow_exec`) and runs it per iteration; the subgraph's nodes run
their Triton kernels under the Triton backend, so ``kernel`` is the same function. The
gradient is a hidden ``_backward_X`` op reading the output gradients and the forward's inputs
(no hidden outputs, so the node keeps MXNet's outputs and JSON): it takes each iteration's
starting states from what the training forward kept for exactly those inputs (or runs the
loop again to get them), then, last iteration first, runs the iteration's forward and the
sub-executor's backward, summing the gradients of the captured free variables (an RNN
cell's weights) over the steps. Shapes and dtypes are inferred through the subgraph. The
nodes are ``random`` (they run host-side loops: CUDA graphs leave them eager, CSE never
merges them); a subgraph drawing random numbers (Dropout) draws the same numbers again in
the backward, which replays each step from the generator state that step started with.

``foreach`` inputs are ``data..., states..., free variables...``; ``in_data_locs``,
``in_state_locs`` and ``remain_locs`` say which subgraph input each feeds; the subgraph's
outputs are ``num_out_data`` step outputs (stacked on axis 0) then the new states.

>>> import symgraph as mx
>>> step = lambda x, states: (x * states[0], [states[0] + x])
>>> outs, states = mx.sym.contrib.foreach(step, mx.sym.var('x'), [mx.sym.var('s')])
>>> exe = mx.sym.Group([outs, states[0]]).bind(mx.cpu(), {'x': mx.nd.array([1, 2, 3]),
...                                                       's': mx.nd.array([1])})
>>> [o.asnumpy().tolist() for o in exe.forward()]  # 1-D data: each step sees shape (1,)
[[[1.0], [4.0], [12.0]], [7.0]]
"""
from __future__ import annotations

import torch

from ..attrs import Param, to_attr_string
from ..base import AttrError, GraphError, ShapeError
from . import control_flow_exec as sub_exec
from .base import OpDef, register

_FOREACH_PARAMS = (
    Param("num_args", "int", lower=1), Param("num_outputs", "int", lower=0),
    Param("num_out_data", "int", lower=0), Param("in_state_locs", "shape"),
    Param("in_data_locs", "shape"), Param("remain_locs", "shape"))


def _attrs(p, params) -> dict[str, str]:
    """The string attributes of a control-flow node (for its backward node)."""
    return {q.name: to_attr_string(list(p[q.name]) if isinstance(p[q.name], tuple)
                                   else p[q.name]) for q in params}


def validate(p, heads: list[int], inputs: list[tuple[str, tuple]]) -> None:
    """The node's subgraphs and locations agree (a JSON file may say anything): subgraph
    ``k`` has ``heads[k]`` outputs and as many inputs as ``inputs[k]`` = (name, locs) has
    locations, each naming one of the node's inputs."""
    subs = p.get("_subgraphs")
    if subs is None or len(subs) != len(heads):
        raise GraphError(f"needs {len(heads)} subgraphs, has {len(subs or ())}")
    n_in = p.num_args - len(heads)
    for sub, n_heads, (name, locs) in zip(subs, heads, inputs):
        n_sub = len(sub.list_inputs())
        if len(sub.list_outputs()) != n_heads or len(locs) != n_sub:
            raise AttrError(f"{name}={list(locs)} and a subgraph of {n_sub} inputs and "
                            f"{len(sub.list_outputs())} outputs (expected {n_heads})")
        if any(not 0 <= k < n_in for k in locs):
            raise AttrError(f"{name}={list(locs)} names inputs beyond the node's {n_in}")


def _foreach_validate(p) -> None:
    locs = _foreach_locs(p)
    if sorted(locs) != list(range(p.num_args - 1)) or p.num_out_data > p.num_outputs or \
            p.num_outputs - p.num_out_data != len(p.in_state_locs):
        raise AttrError(f"in_data_locs, in_state_locs, remain_locs ({locs}) must place the "
                        f"{p.num_args - 1} inputs, one state per state output")
    validate(p, [p.num_outputs], [("subgraph inputs", locs)])


def output_names(p) -> list[str]:
    """MXNet's output names of a control-flow node: ``output``, or ``output0``, ..."""
    n = p.num_outputs
    return ["output"] if n == 1 else [f"output{i}" for i in range(n)]


def dtype_name(t: torch.Tensor) -> str:
    return str(t.dtype).replace("torch.", "")


def backward_node(g, name: str, p, params, ograds: list, ins: list) -> list:
    """The hidden backward node (``ograds..., ins...`` -> a gradient per input)."""
    entries = g.multi(name, *ograds, *ins, **_attrs(p, params))
    entries[0][0].set_subgraphs(p._subgraphs)
    return entries


def backward_shape(p, shapes):
    """A backward node's rule: its outputs have the forward inputs' shapes (or dtypes)."""
    fins = list(shapes[p.num_outputs:])
    if any(s is None or s == () for s in fins):
        return None
    return list(shapes), fins


def _foreach_locs(p) -> list[int]:
    """For each op input, the subgraph input position it feeds."""
    return list(p.in_data_locs) + list(p.in_state_locs) + list(p.remain_locs)


def _foreach_step_inputs(p, data: list, states: list, remain: list) -> list:
    """Values by subgraph input position."""
    vals: list = [None] * len(_foreach_locs(p))
    for loc, v in zip(_foreach_locs(p), [*data, *states, *remain]):
        vals[loc] = v
    return vals


def _row(d: torch.Tensor, i: int) -> torch.Tensor:
    """Step ``i``'s slice of data ``d``; a 1-D array's rows are shape (1,), as in MXNet."""
    return d[i] if d.dim() > 1 else d[i:i + 1]


def _split(p, ins: list) -> tuple[list, list, list]:
    nd, ns = len(p.in_data_locs), len(p.in_state_locs)
    return list(ins[:nd]), list(ins[nd:nd + ns]), list(ins[nd + ns:])


def _foreach_exe(p, ins: list, grad: bool):
    data, states, remain = _split(p, ins)
    vals = _foreach_step_inputs(p, [_row(d, 0) for d in data], states, remain)
    return sub_exec.sub_executor(p._subgraphs[0], [tuple(v.shape) for v in vals],
                                 [dtype_name(v) for v in vals],
                                 ins[0].device, grad)


def _foreach_forward(p, ins, aux, rt):
    sub = p._subgraphs[0]
    data, states, remain = _split(p, ins)
    exe = _foreach_exe(p, ins, grad=False)
    steps = data[0].shape[0]
    if steps == 0:  # as MXNet, which has no step to take output shapes from
        raise ShapeError(f"foreach: the data has no rows to iterate over (shape "
                         f"{tuple(data[0].shape)})")
    sub_exec.remember_rng(sub, ins[0].device)
    outs: list = [None] * p.num_out_data
    history, rng = [], []
    for i in range(steps):
        history.append(states)
        rng.append(sub_exec.rng_state(sub, ins[0].device))
        res = sub_exec.run(exe, sub, _foreach_step_inputs(
            p, [_row(d, i) for d in data], states, remain), rt.is_train)
        for k in range(p.num_out_data):
            if outs[k] is None:
                outs[k] = res[k].new_empty((steps, *res[k].shape))
            outs[k][i].copy_(res[k])
        states = res[p.num_out_data:]
    if rt.is_train:
        sub_exec.remember_steps(sub, list(ins), history, rng)
    return outs + states


def _foreach_backward(p, ins, aux, rt):
    sub, nout = p._subgraphs[0], p.num_outputs
    ograds, fins = list(ins[:nout]), list(ins[nout:])
    data, states, remain = _split(p, fins)
    exe, device = _foreach_exe(p, fins, grad=True), fins[0].device
    restore = sub_exec.rewind_rng(sub, device)
    kept = sub_exec.recall_steps(sub, fins)
    history, rng = kept if kept is not None else ([states], [])
    for i in range(0 if kept is not None else data[0].shape[0]):  # the forward's steps again
        rng.append(sub_exec.rng_state(sub, device))
        if i + 1 < data[0].shape[0]:
            res = sub_exec.run(exe, sub, _foreach_step_inputs(
                p, [_row(d, i) for d in data], history[-1], remain), True)
            history.append(res[p.num_out_data:])
    grads = _foreach_reverse(p, exe, (ograds, data, remain), history, rng)
    sub_exec.set_rng(device, restore)
    return grads


def _foreach_reverse(p, exe, arrays: tuple, history: list, rng: list) -> list:
    """The backward steps, last first: each step's forward again (from its saved states and
    generator state), then the subgraph's backward."""
    sub, (ograds, data, remain) = p._subgraphs[0], arrays
    dstates = ograds[p.num_out_data:]
    ddata = [torch.empty_like(d) for d in data]
    dremain = [torch.zeros_like(r) for r in remain]
    locs = _foreach_locs(p)
    for i in reversed(range(len(history))):
        sub_exec.set_rng(data[0].device, rng[i])
        sub_exec.feed(exe, sub, _foreach_step_inputs(p, [_row(d, i) for d in data], history[i],
                                                      remain))
        exe.forward(is_train=True)
        g = sub_exec.grads(exe, sub, [o[i] for o in ograds[:p.num_out_data]] + dstates)
        gd, gs, gr = _split(p, [g[loc] for loc in locs])
        for k, v in enumerate(gd):
            _row(ddata[k], i).copy_(v)
        dstates = gs
        for acc, v in zip(dremain, gr):
            acc.add_(v)
    return ddata + list(dstates) + dremain


def _foreach_shape(p, shapes):
    _foreach_validate(p)
    data, states, remain = _split(p, list(shapes))
    if any(not d for d in data):
        return None
    steps = data[0][0]
    vals = _foreach_step_inputs(p, [tuple(d[1:]) or (1,) for d in data], states, remain)
    sub_in, sub_out, _, _ = sub_exec.infer(p._subgraphs[0], vals, [None] * len(vals))
    locs = _foreach_locs(p)
    nd = len(p.in_data_locs)
    completed = [tuple(data[k][:1]) + tuple(sub_in[locs[k]])
                 if sub_in[locs[k]] and len(data[k]) > 1 else data[k]
                 for k in range(nd)] + [sub_in[loc] for loc in locs[nd:]]
    outs = [(steps, *s) if s else () for s in sub_out[:p.num_out_data]]
    return completed, outs + list(sub_out[p.num_out_data:])


def _foreach_type(p, types):
    _foreach_validate(p)
    data, states, remain = _split(p, list(types))
    vals = _foreach_step_inputs(p, data, states, remain)
    _, _, sub_in, sub_out = sub_exec.infer(p._subgraphs[0], [()] * len(vals), vals)
    if any(t is None for t in sub_out):
        return None
    return [sub_in[loc] for loc in _foreach_locs(p)], list(sub_out)


def _foreach_grad(g, p, ins, outs, ograds):
    return backward_node(g, "_backward_foreach", p, _FOREACH_PARAMS, ograds, ins)


def _foreach_inputs(p) -> list[str]:
    return [f"arg{i}" for i in range(p.num_args - 1)]


register(OpDef(
    # hidden: a node needs its subgraphs, so only the contrib front ends (and JSON) make
    # one; its table cases are tests/test_control_flow.py's, which build those subgraphs
    name="_foreach", hidden=True, params=_FOREACH_PARAMS, inputs=_foreach_inputs,
    outputs=output_names,
    infer_shape=_foreach_shape, infer_type=_foreach_type, forward=_foreach_forward,
    kernel=_foreach_forward, gradient=_foreach_grad, random=True, key_var_num_args="num_args",
    doc="Run a subgraph over slices of the data along axis 0, carrying loop states."))

register(OpDef(
    name="_backward_foreach", params=_FOREACH_PARAMS, hidden=True,
    inputs=lambda p: [f"ograd{i}" for i in range(p.num_outputs)] + _foreach_inputs(p),
    outputs=lambda p: [f"grad{i}" for i in range(p.num_args - 1)],
    infer_shape=backward_shape, infer_type=backward_shape,
    forward=_foreach_backward, kernel=_foreach_backward, random=True,
    doc="Gradient of _foreach: the loop again, then the subgraph's backward in reverse."))

