"""Optimizer updates on sparse arrays: MXNet 1.9.1's update operators called in place.

MXNet's optimizers call ``sgd_update(weight, grad, out=weight, lazy_update=...)`` and its
kin; with a row_sparse gradient those run the ops' sparse kernels
(:mod:`symgraph.ops.optimizer_sparse`), with a lazy update touching only the gradient's rows.
:func:`sparse_update` runs such an op on the arrays' values directly, the weight written in
place (no copy of the whole weight, which the imperative ``out=`` path would make), the
states (possibly row_sparse) in place. :func:`run_densely` gives the optimizers written in
Python (AdaDelta, Adamax, ...) dense stand-ins for sparse arrays and writes the results back.

>>> import symgraph as mx
>>> w = mx.nd.ones((4, 2))
>>> g = mx.nd.sparse.row_sparse_array(([[1., 1.]], [1]), shape=(4, 2))
>>> sparse_update("sgd_update", [w, g], lr=0.5, wd=0.5)
>>> w.asnumpy()[:, 0].tolist()
[1.0, 0.25, 1.0, 1.0]
"""
from __future__ import annotations

from collections.abc import Callable

from ..attrs import to_attr_string
from ..ndarray import NDArray
from ..ndarray.sparse_array import assign, value_of, wrap
from ..ops.base import Runtime, get_op
from ..sparse import dispatch
from ..symbol.graph import op_params


def leaves(*trees) -> list:
    """The NDArrays in arrays, None, and nests of tuples and lists."""
    out: list = []
    for tree in trees:
        if isinstance(tree, NDArray):
            out.append(tree)
        elif isinstance(tree, (tuple, list)):
            out.extend(leaves(*tree))
    return out


def has_sparse(*trees) -> bool:
    """Whether any array in ``trees`` has sparse storage."""
    return any(a._is_sparse for a in leaves(*trees))


def sparse_update(name: str, arrays: list, **attrs) -> None:
    """Run update op ``name`` on ``arrays`` (weight, grad, states...) as
    ``name(*arrays, out=arrays[0], **attrs)`` does: the weight and the states in place."""
    op = get_op(name)
    where = f"operator {name}"
    p = _params(op, name, attrs)
    values = [value_of(a) for a in arrays]
    if op.infer_shape(p, [tuple(v.shape) for v in values]) is None:
        raise ValueError(f"{where}: cannot infer shapes from {[v.shape for v in values]}")
    rt = Runtime(False, None, values[0].device)
    outs = dispatch.run(op, p, values, len(values), rt, where)
    if outs[0] is not values[0]:
        assign(arrays[0], outs[0])


_PARAMS: dict[tuple, object] = {}  # (op, attributes) -> parsed params (the same each step)


def _params(op, name: str, attrs: dict):
    key = (name, tuple(sorted((k, v) for k, v in attrs.items() if v is not None)))
    p = _PARAMS.get(key)
    if p is None:
        parsed = op_params(op, {k: to_attr_string(v) for k, v in key[1]}, f"operator {name}")
        p = type(parsed)({**parsed, "_out_is_input": (0,)})
        if len(_PARAMS) > 4096:  # a learning-rate schedule makes new keys
            _PARAMS.clear()
        _PARAMS[key] = p
    return p


def run_densely(update: Callable, weight: NDArray, grad: NDArray, state) -> None:
    """``update(weight, grad, state)`` with dense stand-ins for the sparse arrays; the new
    weight and states are written back into them (in their storage types)."""
    written: list = []

    def stand_in(tree):
        if isinstance(tree, NDArray) and tree._is_sparse:
            dense = wrap(dispatch.densify(tree._value, "optimizer update"), tree._ctx)
            written.append((tree, dense))
            return dense
        if isinstance(tree, (tuple, list)):
            return type(tree)(stand_in(x) for x in tree)
        return tree

    new_weight, new_grad, new_state = stand_in(weight), stand_in(grad), stand_in(state)
    update(new_weight, new_grad, new_state)
    for target, dense in written:
        if target is not grad:
            assign(target, dense._t)


def sgd_sparse(opt, weights: list, grads: list, states: list, rates: tuple,
               multi_precision: bool) -> None:
    """SGD (or NAG) of weights some of which are sparse: one update op per weight, as
    MXNet's ``SGD._update_impl`` calls them; ``rates`` is (lrs, wds)."""
    for w, g, s, lr, wd in zip(weights, grads, states, *rates):
        mom, master = (s[0], s[1]) if multi_precision else (s, None)
        name = opt._kernel_name() if mom is not None else "sgd_update"
        attrs = {"lr": lr, "wd": wd, "rescale_grad": opt.rescale_grad,
                 "clip_gradient": opt.clip_gradient or None}
        arrays = [w, g]
        if name != "sgd_update":
            attrs["momentum"] = opt.momentum
            arrays.append(mom)
        if name.startswith("sgd") and master is None:
            attrs["lazy_update"] = opt.lazy_update
        if master is not None:
            name = "mp_" + name
            arrays.append(master)
        sparse_update(name, arrays, **attrs)
