"""``_cond`` and ``_while_loop`` (``mx.sym.contrib.cond`` / ``while_loop``): the branch and
loop operators over subgraphs, designed as ``_foreach`` (:mod:`symgraph.ops.control_flow`):
sub-executors run the subgraphs, a hidden backward op runs them again and then their
backward in reverse order.

``_cond``'s subgraphs are (predicate, then, else); ``cond_input_locs``,
``then_input_locs``, ``else_input_locs`` give, per subgraph input, the node input feeding
it. ``_while_loop``'s are (condition, body): the loop variable ``k`` is body input
``func_var_locs[k]``; after each step the new loop variables replace the node inputs that
held them. Step outputs are stacked into ``max_iterations`` rows (rows after the last step
are zero; MXNet leaves them uninitialised).

>>> import symgraph as mx
>>> a, b = mx.sym.var('a'), mx.sym.var('b')
>>> out = mx.sym.contrib.cond(a < b, lambda: a * 2, lambda: b * 3)
>>> out.eval(a=mx.nd.array([1]), b=mx.nd.array([2]))[0].asnumpy().tolist()
[2.0]
"""
from __future__ import annotations

import torch

from ..attrs import Param
from ..base import AttrError
from . import control_flow_exec as sub_exec
from .base import OpDef, register
from .control_flow import backward_node, backward_shape, dtype_name, output_names, validate

_COND_PARAMS = (
    Param("num_args", "int", lower=3), Param("num_outputs", "int", lower=1),
    Param("cond_input_locs", "shape"), Param("then_input_locs", "shape"),
    Param("else_input_locs", "shape"))


def _exe(sub, vals: list, grad: bool):
    return sub_exec.sub_executor(sub, [tuple(v.shape) for v in vals],
                                 [dtype_name(v) for v in vals], vals[0].device, grad)


def _call(sub, vals: list, is_train: bool) -> list[torch.Tensor]:
    return sub_exec.run(_exe(sub, vals, False), sub, vals, is_train)


def _pick(ins: list, locs) -> list:
    return [ins[k] for k in locs]


def _branch(p, ins: list, is_train: bool) -> int:
    """1 for the then-branch, 2 for the else-branch."""
    pred = _call(p._subgraphs[0], _pick(ins, p.cond_input_locs), is_train)[0]
    return 1 if bool(pred.reshape(-1)[0]) else 2


def _branch_locs(p, k: int):
    return p.then_input_locs if k == 1 else p.else_input_locs


def _cond_forward(p, ins, aux, rt):
    k = _branch(p, ins, rt.is_train)
    sub_exec.remember_rng(p._subgraphs[k], ins[0].device)
    return _call(p._subgraphs[k], _pick(ins, _branch_locs(p, k)), rt.is_train)


def _cond_backward(p, ins, aux, rt):
    ograds, fins = list(ins[:p.num_outputs]), list(ins[p.num_outputs:])
    k = _branch(p, fins, True)
    sub, locs = p._subgraphs[k], _branch_locs(p, k)
    vals = _pick(fins, locs)
    exe = _exe(sub, vals, True)
    restore = sub_exec.rewind_rng(sub, fins[0].device)
    sub_exec.feed(exe, sub, vals)
    exe.forward(is_train=True)
    out = [torch.zeros_like(t) for t in fins]
    for loc, g in zip(locs, sub_exec.grads(exe, sub, ograds)):
        out[loc].add_(g)
    sub_exec.set_rng(fins[0].device, restore)
    return out


def _through(p, values: list, k: int, locs, shapes: bool):
    """Inference through subgraph ``k``: (completed node inputs, its outputs)."""
    vals = _pick(values, locs)
    unknown = () if shapes else None
    res = sub_exec.infer(p._subgraphs[k], vals if shapes else [()] * len(vals),
                         [None] * len(vals) if shapes else vals)
    sub_in, sub_out = (res[0], res[1]) if shapes else (res[2], res[3])
    values = list(values)
    for loc, v in zip(locs, sub_in):
        if v != unknown:
            values[loc] = v
    return values, sub_out


def _cond_infer(shapes: bool):
    def rule(p, values):
        validate(p, [1, p.num_outputs, p.num_outputs],
                 [("cond_input_locs", p.cond_input_locs),
                  ("then_input_locs", p.then_input_locs),
                  ("else_input_locs", p.else_input_locs)])
        values = list(values)
        values, _ = _through(p, values, 0, p.cond_input_locs, shapes)
        values, outs = _through(p, values, 1, p.then_input_locs, shapes)
        values, other = _through(p, values, 2, p.else_input_locs, shapes)
        unknown = () if shapes else None
        outs = [a if a != unknown else b for a, b in zip(outs, other)]
        if all(o == unknown for o in outs):
            return None
        return values, outs
    return rule


def _cond_grad(g, p, ins, outs, ograds):
    return backward_node(g, "_backward_cond", p, _COND_PARAMS, ograds, ins)


def _inputs(first: int):
    return lambda p: [f"arg{i}" for i in range(p.num_args - first)]


register(OpDef(
    # hidden: a node needs its subgraphs, so only the contrib front ends (and JSON) make
    # one; its table cases are tests/test_control_flow.py's, which build those subgraphs
    name="_cond", hidden=True, params=_COND_PARAMS, inputs=_inputs(3), outputs=output_names,
    infer_shape=_cond_infer(True), infer_type=_cond_infer(False), forward=_cond_forward,
    kernel=_cond_forward, gradient=_cond_grad, random=True, key_var_num_args="num_args",
    doc="Run the then- or the else-subgraph, as the predicate subgraph says."))

register(OpDef(
    name="_backward_cond", params=_COND_PARAMS, hidden=True,
    inputs=lambda p: [f"ograd{i}" for i in range(p.num_outputs)] + _inputs(3)(p),
    outputs=_inputs(3), infer_shape=backward_shape, infer_type=backward_shape,
    forward=_cond_backward, kernel=_cond_backward, random=True,
    doc="Gradient of _cond: the chosen branch's backward."))


_WHILE_PARAMS = (
    Param("num_args", "int", lower=2), Param("num_outputs", "int", lower=1),
    Param("num_out_data", "int", lower=0), Param("max_iterations", "int", lower=0),
    Param("cond_input_locs", "shape"), Param("func_input_locs", "shape"),
    Param("func_var_locs", "shape"))


def _var_slots(p) -> list[int]:
    """The node input holding each loop variable."""
    return [p.func_input_locs[k] for k in p.func_var_locs]


def _iterate(p, ins: list, is_train: bool, on_step=None) -> tuple[list, list]:
    """Run the loop: (the node inputs with the final loop variables, step outputs)."""
    vals, slots, steps = list(ins), _var_slots(p), []
    while len(steps) < p.max_iterations and \
            bool(_call(p._subgraphs[0], _pick(vals, p.cond_input_locs), is_train)[0]
                 .reshape(-1)[0]):
        if on_step is not None:
            on_step(list(vals))
        res = _call(p._subgraphs[1], _pick(vals, p.func_input_locs), is_train)
        steps.append(res[:p.num_out_data])
        for slot, new in zip(slots, res[p.num_out_data:]):
            vals[slot] = new
    return vals, steps


def _while_forward(p, ins, aux, rt):
    sub_exec.remember_rng(p._subgraphs[1], ins[0].device)
    vals, steps = _iterate(p, list(ins), rt.is_train)
    outs = []
    if not steps and p.num_out_data:  # no step ran: the outputs' shapes come from inference
        fin = _pick(list(ins), p.func_input_locs)
        _, shapes, _, types = sub_exec.infer(p._subgraphs[1], [tuple(v.shape) for v in fin],
                                             [dtype_name(v) for v in fin])
        steps = [[torch.zeros(s, dtype=getattr(torch, t), device=ins[0].device)
                  for s, t in zip(shapes[:p.num_out_data], types)]]
    for k in range(p.num_out_data):
        first = steps[0][k]
        out = first.new_zeros((p.max_iterations, *first.shape))
        for i, step in enumerate(steps):
            out[i].copy_(step[k])
        outs.append(out)
    # an input passed through untouched is copied: the plan owns each output's storage
    return outs + [vals[s] if vals[s] is not ins[s] else vals[s].clone()
                   for s in _var_slots(p)]


def _while_backward(p, ins, aux, rt):
    ograds, fins = list(ins[:p.num_outputs]), list(ins[p.num_outputs:])
    sub, locs, slots = p._subgraphs[1], p.func_input_locs, _var_slots(p)
    device = fins[0].device
    restore = sub_exec.rewind_rng(sub, device)
    history: list = []  # per step: (node inputs, generator state) it started with
    _iterate(p, fins, True, lambda vals: history.append((vals, sub_exec.rng_state(sub, device))))
    out = [torch.zeros_like(t) for t in fins]
    dvars = ograds[p.num_out_data:]
    for i in reversed(range(len(history))):
        vals = _pick(history[i][0], locs)
        sub_exec.set_rng(device, history[i][1])
        exe = _exe(sub, vals, True)
        sub_exec.feed(exe, sub, vals)
        exe.forward(is_train=True)
        g = sub_exec.grads(exe, sub, [o[i] for o in ograds[:p.num_out_data]] + dvars)
        dvars = [g[k] for k in p.func_var_locs]
        for j, (loc, gj) in enumerate(zip(locs, g)):
            if j not in p.func_var_locs:
                out[loc].add_(gj)
    for slot, d in zip(slots, dvars):
        out[slot].add_(d)
    sub_exec.set_rng(device, restore)
    return out


def _while_infer(shapes: bool):
    def rule(p, values):
        validate(p, [1, p.num_outputs], [("cond_input_locs", p.cond_input_locs),
                                          ("func_input_locs", p.func_input_locs)])
        if p.num_outputs - p.num_out_data != len(p.func_var_locs) or \
                any(not 0 <= k < len(p.func_input_locs) for k in p.func_var_locs):
            raise AttrError(f"func_var_locs={list(p.func_var_locs)} must give a body input "
                            f"per loop variable ({p.num_outputs - p.num_out_data})")
        values = list(values)
        values, _ = _through(p, values, 0, p.cond_input_locs, shapes)
        values, outs = _through(p, values, 1, p.func_input_locs, shapes)
        unknown = () if shapes else None
        data = [((p.max_iterations, *o) if o != unknown else o) if shapes else o
                for o in outs[:p.num_out_data]]
        var_outs = [values[s] for s in _var_slots(p)]
        var_outs = [v if v != unknown else o for v, o in zip(var_outs, outs[p.num_out_data:])]
        if any(o == unknown for o in data + var_outs):
            return None
        return values, data + var_outs
    return rule


def _while_grad(g, p, ins, outs, ograds):
    return backward_node(g, "_backward_while_loop", p, _WHILE_PARAMS, ograds, ins)


register(OpDef(
    # hidden: a node needs its subgraphs, so only the contrib front ends (and JSON) make
    # one; its table cases are tests/test_control_flow.py's, which build those subgraphs
    name="_while_loop", hidden=True, params=_WHILE_PARAMS, inputs=_inputs(2), outputs=output_names,
    infer_shape=_while_infer(True), infer_type=_while_infer(False), forward=_while_forward,
    kernel=_while_forward, gradient=_while_grad, random=True, key_var_num_args="num_args",
    doc="Run the body subgraph while the condition subgraph holds, at most max_iterations."))

register(OpDef(
    name="_backward_while_loop", params=_WHILE_PARAMS, hidden=True,
    inputs=lambda p: [f"ograd{i}" for i in range(p.num_outputs)] + _inputs(2)(p),
    outputs=_inputs(2), infer_shape=backward_shape, infer_type=backward_shape,
    forward=_while_backward, kernel=_while_backward, random=True,
    doc="Gradient of _while_loop: the loop again, then the body's backward in reverse."))
