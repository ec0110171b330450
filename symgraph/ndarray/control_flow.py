"""``mx.nd.contrib.foreach``, ``while_loop`` and ``cond``: MXNet's control flow on NDArrays.

Imperatively these are plain Python loops and branches over NDArray calls, as in MXNet:
under ``autograd.record()`` every call inside the body is recorded, so gradients reach the
loop inputs, the states and any array the body captures.

>>> import symgraph as mx
>>> step = lambda x, states: (x + states[0], [states[0] * 2])
>>> outs, states = mx.nd.contrib.foreach(step, mx.nd.ones((3, 2)), [mx.nd.ones((2,))])
>>> outs.asnumpy().tolist(), states[0].asnumpy().tolist()
([[2.0, 2.0], [3.0, 3.0], [5.0, 5.0]], [8.0, 8.0])
"""
from __future__ import annotations

from ..ops.control_flow_exec import as_scalar, flatten, regroup
from . import op
from .ndarray import NDArray
from .utils import zeros


def foreach(body, data, init_states):
    """Run ``out, states = body(data[i], states)`` for each ``i`` along axis 0; the outputs
    of all steps are stacked, the states of the last step returned."""
    flat_data, _ = flatten(data, "foreach input", NDArray)
    flatten(init_states, "foreach states", NDArray)
    single = isinstance(data, NDArray)
    steps = data.shape[0] if single else flat_data[0].shape[0]
    states, outputs, out_fmt = init_states, [], 0
    for i in range(steps):
        outs, states = body(data[i] if single else [d[i] for d in data], states)
        outs, out_fmt = flatten(outs, "foreach output", NDArray)
        outputs.append(outs)
    stacked = [op.stack(*items, axis=0) for items in zip(*outputs)]
    if not stacked:
        return [], states
    return regroup(stacked, out_fmt)[0], states


def _step(func, loop_vars: list) -> tuple[list, object, list]:
    """One ``func`` call: (flat step outputs, their format, the new loop variables)."""
    out, new_vars = func(*loop_vars)
    out = [] if out is None else (list(out) if isinstance(out, tuple) else out)
    new_vars = [] if new_vars is None else new_vars
    new_vars = list(new_vars) if isinstance(new_vars, (list, tuple)) else [new_vars]
    if len(new_vars) != len(loop_vars):
        raise ValueError("The length of loop_vars should be consistent during the loop")
    flat, fmt = flatten(out, "while output", NDArray)
    return flat, fmt, new_vars


def while_loop(cond, func, loop_vars, max_iterations=None):
    """Run ``outs, loop_vars = func(*loop_vars)`` while ``cond(*loop_vars)`` holds, at most
    ``max_iterations`` times; step outputs are stacked and padded to ``max_iterations``
    rows (the padding is uninitialised, as MXNet's)."""
    if max_iterations is None:
        raise ValueError("max_iterations should be specified")
    max_iterations = as_scalar(max_iterations, int, "max_iteration")
    if len(loop_vars) == 0:
        raise ValueError("loop_vars should contain at least one element")
    single = isinstance(loop_vars, NDArray)
    loop_vars = [loop_vars] if single else list(loop_vars)
    outputs, out_fmt, steps = [], None, 0
    while steps < max_iterations and as_scalar(cond(*loop_vars), bool, "Return value of cond"):
        flat, out_fmt, loop_vars = _step(func, loop_vars)
        if outputs and len(flat) != len(outputs[0]):
            raise ValueError("Number of elements in step_output should be the same in each step")
        outputs.append(flat)
        steps += 1
    stacked = []
    for items in zip(*outputs):
        rows = [x.expand_dims(0) for x in items]
        if steps != max_iterations:
            rows.append(zeros((max_iterations - steps, *items[0].shape),
                              ctx=items[0].context, dtype=items[0].dtype))
        stacked.append(op.concat(*rows, dim=0))
    if out_fmt is not None:
        stacked, _ = regroup(stacked, out_fmt)
    return stacked, (loop_vars[0] if single else loop_vars)


def cond(pred, then_func, else_func):
    """``then_func()`` if the one-element ``pred`` is nonzero, else ``else_func()``."""
    return then_func() if as_scalar(pred, bool, "pred") else else_func()
