"""ONNX translations of MXNet's control-flow operators: ``_foreach`` and ``_while_loop`` as
``Loop``, ``_cond`` as ``If``.

Each subgraph Symbol is translated with the exporter's own machinery (``prepare`` and
``_translate``) into the nodes of an ONNX subgraph. A subgraph input the loop carries (a
state, a loop variable) or slices (foreach data) is a body input; every other input (free
variables, parameters, inputs the loop does not change) is read from the outer scope by its
outer ONNX name, and a parameter stays a constant the subgraph's translations can read.
Value names are shared with the outer graph (one Emitter), so none is defined twice.
"""
from __future__ import annotations

import numpy as np
import torch

from ...export.graph import prepare, trace_dims
from ..emitter import CONVERTERS, Emitter, NodeCtx, converts, onnx_type


def _sub_graph(e: Emitter, n: NodeCtx, sub, vals: list[str], shapes: list[tuple],
               dtypes: list[str], consts: dict) -> tuple[list[str], list[tuple], list[str]]:
    """Translate ``sub`` (its inputs, by ``list_inputs`` position, bound to the ONNX values
    ``vals``) into ``e.nodes``: its outputs' ONNX names, shapes and dtypes."""
    from ..export import _translate
    names = sub.list_inputs()
    if len(names) != len(vals) or len(set(names)) != len(names):
        raise n.fail(f"a subgraph with inputs {names} fed {len(vals)} values")
    params = {nm: torch.from_numpy(np.ascontiguousarray(consts[k]))
              for k, nm in enumerate(names) if k in consts}
    free = {nm: k for k, nm in enumerate(names) if nm not in params}
    graph = prepare(sub, params, {nm: shapes[k] for nm, k in free.items()},
                    {nm: np.dtype(dtypes[k]) for nm, k in free.items()},
                    keep=lambda op: op.name in CONVERTERS)
    env = dict(zip(names, vals))
    if e.dynamic:  # any dim of a body input may follow a dynamic outer dim
        trace_dims(graph, {nm: tuple(range(len(shapes[k]))) for nm, k in free.items()})
        if graph.dim_sources is None:
            raise n.fail("the subgraph's shapes cannot be traced for a dynamic export")
        # a dim source names an input: the body reads it under its ONNX name
        graph.dim_sources = [s if s is None else tuple(
            d if d is None else (env.get(d[0], d[0]), d[1]) for d in s)
            for s in graph.dim_sources]
    outer = e.current
    heads = _translate(e, graph, env, False)
    e.current = outer
    entries = graph.ig.heads
    # Identity: a subgraph output is then a value of its own (not an input, not repeated)
    return ([e.one("Identity", [h]) for h in heads], [graph.shape(x) for x in entries],
            [graph.dtype(x) for x in entries])


def _call(e: Emitter, n: NodeCtx, sub, locs, vals: list[str]):
    """``sub`` fed the node inputs ``locs`` (``vals``: each node input's current value);
    an input still holding its outer value keeps its constant."""
    consts = {j: n.const(s) for j, s in enumerate(locs)
              if vals[s] == n.ins[s] and n.const(s) is not None}
    return _sub_graph(e, n, sub, [vals[s] for s in locs], [n.in_shapes[s] for s in locs],
                      [n.in_dtypes[s] for s in locs], consts)


def _truth(e: Emitter, value: str, dtype: str) -> str:
    """A bool scalar: whether the first element of ``value`` is nonzero (MXNet's test)."""
    first = e.one("Gather", [e.one("Reshape", [value, e.ints([-1])]),
                             e.scalar(0, "int64")], axis=0)
    return first if dtype == "bool" else e.cast(first, "bool")


def _info(e: Emitter, name: str, dtype: str, shape=None):
    return e.helper.make_tensor_value_info(name, onnx_type(dtype), shape)


def _begin(e: Emitter) -> list:
    """Start collecting a subgraph's nodes: the outer graph's nodes, to give to :func:`_end`."""
    outer, e.nodes = e.nodes, []
    return outer


def _end(e: Emitter, n: NodeCtx, outer: list, inputs: list, outputs: list):
    """The subgraph of the nodes collected since :func:`_begin` (the outer nodes back)."""
    body, e.nodes = e.nodes, outer
    e.current = n.name
    return e.helper.make_graph(body, e.fresh("body"), inputs, outputs)


def _check_carried(n: NodeCtx, what: str, given: list, got: list) -> None:
    """A loop-carried value keeps its shape and dtype from step to step."""
    for k, (a, b) in enumerate(zip(given, got)):
        if a != b:
            raise n.fail(f"{what} {k} changes from {a[0]} {a[1]} to {b[0]} {b[1]} in a step; "
                         f"ONNX Loop needs it fixed")


@converts("_foreach")
def foreach(e: Emitter, n: NodeCtx) -> list[str]:
    """``Loop`` over the rows of the data, carrying the states; step outputs are scans."""
    p = n.p
    nd, ns, nod = len(p.in_data_locs), len(p.in_state_locs), p.num_out_data
    locs = [*p.in_data_locs, *p.in_state_locs, *p.remain_locs]
    it, cond_in = e.fresh("iter"), e.fresh("cond_in")
    states = [e.fresh(f"state{k}") for k in range(ns)]
    outer = _begin(e)
    vals, shapes = list(n.ins), list(n.in_shapes)
    for k in range(nd):  # step i reads row i (a 1-D array's rows are shape (1,), as MXNet)
        one_d = len(n.in_shapes[k]) == 1
        vals[k] = e.one("Gather", [n.ins[k], e.unsqueeze(it, [0]) if one_d else it], axis=0)
        shapes[k] = tuple(n.in_shapes[k][1:]) or (1,)
    vals[nd:nd + ns] = states
    consts = {loc: n.const(nd + ns + j) for j, loc in enumerate(p.remain_locs)
              if n.const(nd + ns + j) is not None}
    order = sorted(range(len(locs)), key=lambda k: locs[k])  # node input per subgraph input
    outs, oshapes, otypes = _sub_graph(
        e, n, p["_subgraphs"][0], [vals[k] for k in order], [shapes[k] for k in order],
        [n.in_dtypes[k] for k in order], consts)
    _check_carried(n, "state", [(n.in_dtypes[nd + k], n.in_shapes[nd + k]) for k in range(ns)],
                   [(otypes[nod + k], oshapes[nod + k]) for k in range(ns)])
    cond_out = e.one("Identity", [cond_in])
    body = _end(e, n, outer,
                [_info(e, it, "int64", []), _info(e, cond_in, "bool", []),
                 *[_info(e, s, n.in_dtypes[nd + k]) for k, s in enumerate(states)]],
                [_info(e, cond_out, "bool", []),
                 *[_info(e, o, t) for o, t in zip(outs[nod:], otypes[nod:])],
                 *[_info(e, o, t) for o, t in zip(outs[:nod], otypes[:nod])]])
    steps = e.squeeze(e.dim_slice(n.ins[0], n.in_shapes[0], 0, 1), [0]) if e.dynamic \
        else e.scalar(n.in_shapes[0][0], "int64")
    e.node("Loop", [steps, "", *n.ins[nd:nd + ns]], [*n.outs[nod:], *n.outs[:nod]],
           body=body)
    return list(n.outs)


def _zeros(e: Emitter, n: NodeCtx, k: int) -> str:
    """Output ``k`` of the node as zeros (the rows no step writes, as symgraph leaves them)."""
    value = e.numpy_helper.from_array(np.zeros(1, dtype=np.dtype(n.out_dtypes[k])))
    return e.one("ConstantOfShape", [e.out_dims(n, k)], value=value)


@converts("_while_loop")
def while_loop(e: Emitter, n: NodeCtx) -> list[str]:
    """``Loop`` of at most max_iterations steps while the condition holds; each step writes
    its outputs into row ``iter`` of zero buffers of max_iterations rows (carried)."""
    p = n.p
    cond_sub, body_sub = p["_subgraphs"]
    slots = [p.func_input_locs[k] for k in p.func_var_locs]
    nod = p.num_out_data
    if len(set(slots)) != len(slots):
        raise n.fail("two loop variables are the same node input")
    if any(t == "bfloat16" for t in n.out_dtypes):
        raise n.fail("bfloat16 step outputs")
    pred, _, ptypes = _call(e, n, cond_sub, p.cond_input_locs, list(n.ins))
    first = _truth(e, pred[0], ptypes[0])
    bufs0 = [_zeros(e, n, k) for k in range(nod)]
    it, cond_in = e.fresh("iter"), e.fresh("cond_in")
    var_ins = [e.fresh(f"var{k}") for k in range(len(slots))]
    buf_ins = [e.fresh(f"rows{k}") for k in range(nod)]
    outer = _begin(e)
    vals = list(n.ins)
    for s, v in zip(slots, var_ins):
        vals[s] = v
    outs, oshapes, otypes = _call(e, n, body_sub, p.func_input_locs, vals)
    _check_carried(n, "loop variable", [(n.in_dtypes[s], n.in_shapes[s]) for s in slots],
                   [(t, s) for t, s in zip(otypes[nod:], oshapes[nod:])])
    for s, v in zip(slots, outs[nod:]):
        vals[s] = v
    pred, _, ptypes = _call(e, n, cond_sub, p.cond_input_locs, vals)
    cond_out = _truth(e, pred[0], ptypes[0])
    row = e.one("Reshape", [it, e.ints([1, 1])])
    bufs = [e.one("ScatterND", [b, row, e.unsqueeze(o, [0])]) for b, o in zip(buf_ins, outs)]
    body = _end(e, n, outer,
                [_info(e, it, "int64", []), _info(e, cond_in, "bool", []),
                 *[_info(e, v, n.in_dtypes[s]) for v, s in zip(var_ins, slots)],
                 *[_info(e, b, n.out_dtypes[k]) for k, b in enumerate(buf_ins)]],
                [_info(e, cond_out, "bool", []),
                 *[_info(e, o, n.in_dtypes[s]) for o, s in zip(outs[nod:], slots)],
                 *[_info(e, b, n.out_dtypes[k]) for k, b in enumerate(bufs)]])
    e.node("Loop", [e.scalar(p.max_iterations, "int64"), first,
                    *[n.ins[s] for s in slots], *bufs0],
           [*n.outs[nod:], *n.outs[:nod]], body=body)
    return list(n.outs)


@converts("_cond")
def cond(e: Emitter, n: NodeCtx) -> list[str]:
    """``If`` on the predicate subgraph's first element; the branches read outer values."""
    p = n.p
    pred, _, ptypes = _call(e, n, p["_subgraphs"][0], p.cond_input_locs, list(n.ins))
    first = _truth(e, pred[0], ptypes[0])
    branches, kinds = [], []
    for k, locs in ((1, p.then_input_locs), (2, p.else_input_locs)):
        outer = _begin(e)
        outs, shapes, types = _call(e, n, p["_subgraphs"][k], locs, list(n.ins))
        branches.append(_end(e, n, outer, [],
                             [_info(e, o, t) for o, t in zip(outs, types)]))
        kinds.append(list(zip(types, shapes)))
    if kinds[0] != kinds[1]:
        raise n.fail(f"the then-branch gives {kinds[0]} and the else-branch {kinds[1]}; "
                     f"the translation needs the same dtypes and shapes")
    e.node("If", [first], list(n.outs), then_branch=branches[0], else_branch=branches[1])
    return list(n.outs)
