"""``mx.sym.contrib.foreach``, ``while_loop`` and ``cond``: control flow over subgraphs.

Each front end calls the user's function on fresh variables inside
``AttrScope(__subgraph_name__=...)``, so every node the function creates is marked as part
of the body. The body is then cut out: an input entry coming from outside (a captured outer
symbol, e.g. an RNN cell's weights) becomes a subgraph variable named after that entry's
output, and the outer entry becomes an input of the control-flow node; variables created in
the body become (copied) inputs too. The node (``_foreach``, ``_while_loop``, ``_cond``, see
:mod:`symgraph.ops.control_flow`) carries the subgraphs and the input locations, as MXNet's.

>>> import symgraph as mx
>>> step = lambda x, states: (x + states[0], [states[0] * 2])
>>> outs, states = mx.sym.contrib.foreach(step, mx.sym.var('data'), [mx.sym.var('s')])
>>> outs.list_arguments()
['data', 's']
"""
from __future__ import annotations

import copy

from ..base import MXNetError
from ..ops.base import get_op
from ..ops.control_flow_exec import as_scalar, regroup
from ..ops.control_flow_exec import flatten as _flatten
from .graph import Node
from .naming import AttrScope, NameManager
from .symbol import Group, Symbol, var

_SUBGRAPH = "__subgraph_name__"


class UnusedLoopInputError(MXNetError, AssertionError):
    """A foreach body ignores one of its data or state inputs (MXNet asserts they are used)."""


def flatten(args, what: str) -> tuple[list, object]:
    """MXNet's symbol ``_flatten``: a multi-output symbol keeps its output count as format."""
    if isinstance(args, Symbol):
        n = len(args.list_outputs())
        return [args], (n if n > 1 else 0)
    return _flatten(args, what, Symbol)


def unique_name(name: str) -> str:
    """``name`` + a per-process counter, under the enclosing subgraph's name (``a$b0``)."""
    outer = AttrScope.current.get({}).get(_SUBGRAPH, "")
    if outer:
        name = f"{outer}${name}"
    AttrScope._subgraph_names[name] += 1
    return f"{name}{AttrScope._subgraph_names[name] - 1}"


def input_name(sym: Symbol) -> str:
    """The body variable standing for ``sym``: ``<node name>-<output index>``."""
    node, index = sym._outputs[0]
    return f"{node.name}-{index}"


def body_graph(outputs: list, states: list, name: str) -> Symbol:
    """The body's outputs then states as one Symbol; one that is an input, not made in the
    body, or (a state) also an output goes through ``identity``: a subgraph's heads and
    inputs are distinct nodes, and no entry is two heads (its gradient would be one head's)."""
    from . import op_api
    both = outputs + states
    inputs = set(Group(both).list_inputs()) if both else set()
    out_names = {o.name for o in outputs}

    def needs_copy(sym: Symbol, is_state: bool) -> bool:
        return sym.name in inputs or sym.attr(_SUBGRAPH) != name or \
            (is_state and sym.name in out_names)
    with AttrScope(**{_SUBGRAPH: name}):
        fixed = [op_api.invoke("identity", [o], {}) if needs_copy(o, k >= len(outputs))
                 else o for k, o in enumerate(both)]
    return Group(fixed)


def cut(graph: Symbol, name: str) -> tuple[Symbol, dict[str, tuple]]:
    """A copy of ``graph`` whose entries from outside the body are variables; returns it and
    ``{variable name: outer entry}``."""
    copies: dict[int, Node] = {}
    cut_vars: dict[str, tuple] = {}
    cut_nodes: dict[str, Node] = {}

    def inner(node: Node) -> bool:
        return node.attrs.get(_SUBGRAPH) == name

    def copy_node(node: Node) -> Node:
        if id(node) in copies:
            return copies[id(node)]
        new_inputs = []
        for src, k in node.inputs:
            if inner(src):
                new_inputs.append((copy_node(src), k))
                continue
            vname = src.output_name(k)
            if vname not in cut_nodes:
                cut_nodes[vname], cut_vars[vname] = Node(None, vname), (src, k)
            new_inputs.append((cut_nodes[vname], 0))
        new = node.with_inputs(new_inputs) if node.op is not None else node
        copies[id(node)] = new
        return new

    heads = [(copy_node(n), k) for n, k in graph._outputs]
    return Symbol(heads), cut_vars


def outer_inputs(sub: Symbol, cut_vars: dict, known: dict) -> list[tuple[str, Symbol]]:
    """The outer symbol feeding each input of ``sub`` (``known``: loop variables by name)."""
    out = []
    ig = sub._graph()
    for vid in ig.variable_ids:
        node = ig.nodes[vid]
        if node.name in known:
            out.append((node.name, known[node.name]))
        elif node.name in cut_vars:
            out.append((node.name, Symbol([cut_vars[node.name]])))
        else:  # a variable made in the body: the outer graph gets its own copy
            out.append((node.name, copy.deepcopy(Symbol([(node, 0)]))))
    return out


def make_node(op_name: str, subgraphs: list, inputs: list, attrs: dict) -> Symbol:
    """The control-flow node reading ``inputs`` (single-output Symbols)."""
    op = get_op(op_name)
    node = Node(op, NameManager.current.get(None, op_name),
                {**AttrScope.current.get(None), **{k: str(v) for k, v in attrs.items()}})
    node.set_subgraphs(subgraphs)
    node.inputs = [s._outputs[0] for s in inputs]
    return Symbol([(node, i) for i in range(node.num_visible_outputs)])


def foreach(body, data, init_states, name: str = "foreach"):
    """Run ``out, states = body(data[i], states)`` over axis 0 of ``data`` as one node;
    returns (stacked outputs, final states), each regrouped as ``body`` returned them."""
    flat_data, data_fmt = flatten(data, "foreach input")
    flat_states, state_fmt = flatten(init_states, "foreach states")
    name = unique_name(name)
    with AttrScope(**{_SUBGRAPH: name}):
        in_data = [var(input_name(s)) for s in flat_data]
        in_states = [var(input_name(s)) for s in flat_states]
        sym_out, sym_states = body(regroup(in_data, data_fmt)[0],
                                   regroup(in_states, state_fmt)[0])
    sym_out, out_fmt = flatten(sym_out, "foreach output")
    sym_states, new_fmt = flatten(sym_states, "foreach loop_vars")
    if new_fmt != state_fmt:
        raise ValueError("The input and output loop_vars have different format")
    sub, cut_vars = cut(body_graph(sym_out, sym_states, name), name)
    data_names = [input_name(s) for s in flat_data]
    state_names = [input_name(s) for s in flat_states]
    known = dict(zip(data_names + state_names, flat_data + flat_states))
    ins = outer_inputs(sub, cut_vars, known)
    names = [n for n, _ in ins]
    for what, group in (("data", data_names), ("state", state_names)):
        missing = [n for n in group if n not in names]
        if missing:
            raise UnusedLoopInputError(f"the {what} arrays have to be used in the loop "
                                       f"body: {missing}")
    remain = [i for i, n in enumerate(names) if n not in known]
    ordered = flat_data + flat_states + [ins[i][1] for i in remain]
    n_out = len(sym_out) + len(sym_states)
    ret = make_node("_foreach", [sub], ordered, {
        "num_args": len(ordered) + 1, "num_outputs": n_out, "num_out_data": len(sym_out),
        "in_state_locs": [names.index(n) for n in state_names],
        "in_data_locs": [names.index(n) for n in data_names], "remain_locs": remain})
    outs, _ = regroup([ret[i] for i in range(len(sym_out))], out_fmt)
    states, _ = regroup([ret[i] for i in range(len(sym_out), n_out)], state_fmt)
    return outs, states


def _subgraph(func, args: list, name: str) -> tuple[Symbol, dict, list, object]:
    """``func(*args)``'s outputs as a cut subgraph: (graph, cut entries, flat outputs, fmt)."""
    name = unique_name(name)
    with AttrScope(**{_SUBGRAPH: name}):
        outputs = func(*args)
    flat, fmt = flatten(outputs, "cond outputs")
    sub, cut_vars = cut(body_graph(flat, [], name), name)
    return sub, cut_vars, flat, fmt


def _union_by_name(graphs: list) -> tuple[list, list]:
    """The node's inputs over several subgraphs and, per subgraph, where each of its inputs
    is among them; a graph input named like an earlier graph's outer input reuses it (as
    MXNet's cond does: by node name, so only variables are shared)."""
    inputs: list[Symbol] = []
    all_locs = []
    for sub, cut_vars in graphs:
        by_name = {s.name: k for k, s in enumerate(inputs)}
        locs = []
        for vname, sym in outer_inputs(sub, cut_vars, {}):
            if vname in by_name:
                locs.append(by_name[vname])
            else:
                locs.append(len(inputs))
                inputs.append(sym)
        all_locs.append(locs)
    return inputs, all_locs


def cond(pred, then_func, else_func, name: str = "cond"):
    """``then_func()`` if the scalar ``pred`` is nonzero, else ``else_func()``, as one node
    (both branches are subgraphs; their outputs must agree in number, shape and dtype)."""
    pred_g, pred_cut, flat, _ = _subgraph(lambda: pred, [], name + "_pred")
    if len(flat) != 1:
        raise ValueError("pred should always be a single output")
    then_g, then_cut, then_out, then_fmt = _subgraph(then_func, [], name + "_then")
    else_g, else_cut, else_out, _ = _subgraph(else_func, [], name + "_else")
    if len(then_out) != len(else_out):
        raise ValueError("Number of outputs differs between then-branch and else-branch")
    inputs, (cond_locs, then_locs, else_locs) = _union_by_name(
        [(pred_g, pred_cut), (then_g, then_cut), (else_g, else_cut)])
    ret = make_node("_cond", [pred_g, then_g, else_g], inputs, {
        "num_args": len(inputs) + 3, "num_outputs": len(then_out),
        "cond_input_locs": cond_locs, "then_input_locs": then_locs,
        "else_input_locs": else_locs})
    return regroup([ret[i] for i in range(len(then_out))], then_fmt)[0]


def _loop_graph(fn, flat_vars: list, var_fmt, name: str) -> tuple:
    """``fn(*loop_vars)`` -> (outputs, new vars, out fmt) over fresh variables, as a cut
    subgraph: (graph, cut entries, number of step outputs, out fmt)."""
    name = unique_name(name)
    with AttrScope(**{_SUBGRAPH: name}):
        fresh = regroup([var(input_name(s)) for s in flat_vars], var_fmt)[0]
        outputs, states, out_fmt = fn(fresh)
    sub, cut_vars = cut(body_graph(outputs + states, [], name), name)
    return sub, cut_vars, len(outputs), out_fmt


def _union_by_identity(graphs: list, known: dict) -> tuple[list, list]:
    """The node's inputs over several subgraphs: loop variables are shared, every other
    outer entry is an input per subgraph (as MXNet's while_loop unites them)."""
    inputs, ids, all_locs = [], {}, []
    for sub, cut_vars in graphs:
        locs = []
        for _, sym in outer_inputs(sub, cut_vars, known):
            if id(sym) not in ids:
                ids[id(sym)] = len(inputs)
                inputs.append(sym)
            locs.append(ids[id(sym)])
        all_locs.append(locs)
    return inputs, all_locs


def while_loop(cond, func, loop_vars, max_iterations=None, name: str = "while_loop"):
    """Run ``outs, loop_vars = func(*loop_vars)`` while ``cond(*loop_vars)`` holds, at most
    ``max_iterations`` times, as one node; step outputs are stacked to ``max_iterations``
    rows. Returns (outputs, final loop variables)."""
    flat_vars, var_fmt = flatten(loop_vars, "while loop_vars")
    if max_iterations is None:
        raise ValueError("max_iterations should be specified")
    max_iterations = as_scalar(max_iterations, int, "max_iteration")
    if len(loop_vars) == 0:
        raise ValueError("loop_vars should contain at least one element")

    def cond_fn(vars_):
        result = cond(*vars_)
        if not isinstance(result, Symbol):
            raise ValueError("Return of cond must be a Symbol")
        return [], [result], None

    def func_fn(vars_):
        outs, new_vars = func(*vars_)
        outs, out_fmt = flatten([] if outs is None else list(outs) if isinstance(outs, tuple)
                                else outs, "while output")
        new_vars, _ = flatten([] if new_vars is None else list(new_vars)
                              if isinstance(new_vars, tuple) else new_vars, "while loop_vars")
        if len(new_vars) != len(vars_):
            raise ValueError("The number of loop_vars should be consistent during the loop")
        return outs, new_vars, out_fmt
    cond_g, cond_cut, _, _ = _loop_graph(cond_fn, flat_vars, var_fmt, name + "_cond")
    func_g, func_cut, n_out, out_fmt = _loop_graph(func_fn, flat_vars, var_fmt, name + "_func")
    known = {input_name(s): s for s in flat_vars}
    inputs, (cond_locs, func_locs) = _union_by_identity(
        [(cond_g, cond_cut), (func_g, func_cut)], known)
    func_names = func_g.list_inputs()
    var_locs = [func_names.index(input_name(s)) if input_name(s) in func_names else -1
                for s in flat_vars]
    for k, loc in enumerate(var_locs, 1):
        if loc == -1:
            raise ValueError(f"The {k}-th loop_var doesn't involve into the computation")
    n_all = n_out + len(flat_vars)
    ret = make_node("_while_loop", [cond_g, func_g], inputs, {
        "cond_input_locs": cond_locs, "func_input_locs": func_locs,
        "func_var_locs": var_locs, "max_iterations": max_iterations,
        "num_args": len(inputs) + 2, "num_out_data": n_out, "num_outputs": n_all})
    outputs = regroup([ret[i] for i in range(n_out)], out_fmt)[0]
    return outputs, regroup([ret[i] for i in range(n_out, n_all)], var_fmt)[0]
