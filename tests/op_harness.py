"""Table-driven op checks shared by the op tests: bind one op, run it, differentiate it."""
from __future__ import annotations

import numpy as np
import torch

import symgraph as mx
from symgraph.ops.base import Case, OpDef
from symgraph.symbol.op_api import invoke
from tests import device


def op_symbol(op: OpDef, case: Case):
    """One node of ``op`` with variables ``in0, in1, ...`` for its inputs and aux states."""
    from symgraph.attrs import to_attr_string
    from symgraph.symbol.graph import op_params
    attrs = {k: to_attr_string(v) for k, v in case.attrs.items()}
    if op.key_var_num_args and op.key_var_num_args not in attrs:
        attrs[op.key_var_num_args] = str(len(case.shapes))
    p = op_params(op, attrs, op.name)  # as a node parses them (Custom parses its own)
    slots = op.input_names(p) + op.aux_names(p)
    assert len(slots) == len(case.shapes), (op.name, slots, case.shapes)
    inputs = {s: mx.sym.Variable(f"in{i}") for i, s in enumerate(slots)}
    if op.key_var_num_args:
        return invoke(op.name, list(inputs.values()), attrs), slots
    return invoke(op.name, [], {**inputs, **attrs}), slots


def draw_inputs(case: Case, dtype=np.float64, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.RandomState(seed)
    out = []
    for i, shape in enumerate(case.shapes):
        if i in case.ints:
            out.append(rng.randint(0, case.ints[i], size=shape).astype(dtype))
        else:
            out.append(rng.uniform(case.low, case.high, size=shape).astype(dtype))
    return out


def bind(op: OpDef, case: Case, values: list[np.ndarray], grad: bool):
    sym, slots = op_symbol(op, case)
    names = [f"in{i}" for i in range(len(slots))]
    args = sym.list_arguments()
    reqs = {n: ("write" if grad and int(n[2:]) not in case.no_grad_inputs
                and int(n[2:]) not in case.ints else "null") for n in args}
    dtype = values[0].dtype if values else np.float64
    exe = sym.simple_bind(device.context(), grad_req=reqs, type_dict=dict.fromkeys(names, dtype),
                          **{n: v.shape for n, v in zip(names, values)})
    for n, v in zip(names, values):
        target = exe.arg_dict[n] if n in exe.arg_dict else exe.aux_dict[n]
        target._t.copy_(torch.from_numpy(v))
    return sym, exe


def run_forward(exe, train: bool, seed: int = 0) -> list[np.ndarray]:
    exe._rt.generator.manual_seed(seed)  # random ops draw the same numbers each call
    return [o.asnumpy().copy() for o in exe.forward(is_train=train)]


def numeric_grads(exe, names: list[str], heads: list[np.ndarray], train: bool,
                  eps: float = 1e-6) -> dict[str, np.ndarray]:
    """Central differences of sum(head_i * out_i) with respect to each named argument."""
    grads = {}
    for name in names:
        arr = exe.arg_dict[name]._t
        flat = arr.view(-1)
        g = np.zeros(arr.numel())
        for k in range(arr.numel()):
            orig = flat[k].item()
            flat[k] = orig + eps
            plus = sum((o * h).sum() for o, h in zip(run_forward(exe, train), heads))
            flat[k] = orig - eps
            minus = sum((o * h).sum() for o, h in zip(run_forward(exe, train), heads))
            flat[k] = orig
            g[k] = (plus - minus) / (2 * eps)
        grads[name] = g.reshape(tuple(arr.shape))
    return grads


def run_case(op: OpDef, case: Case, values: list[np.ndarray], backend: str):
    """Bind under ``backend``, run forward and backward (fixed random head gradients).

    Returns (outputs, {arg: gradient}, executor). A Triton kernel that fails and falls back to
    its reference fails the caller instead of passing as the reference.
    """
    import warnings

    from symgraph import config
    from symgraph.ndarray.ndarray import NDArray
    with config.override(backend=backend):
        grad = case.grad and op.gradient is not None
        _, exe = bind(op, case, values, grad=grad)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outs = run_forward(exe, case.train)
        grads = {}
        if grad:
            rng = np.random.RandomState(1)
            heads = [rng.uniform(-1, 1, size=o.shape).astype(o.dtype) for o in outs]
            exe.backward([NDArray(torch.from_numpy(h)) for h in heads])
            grads = {n: g.asnumpy().copy() for n, g in exe.grad_dict.items() if g is not None}
    fallbacks = [str(w.message) for w in caught if "using the torch reference" in str(w.message)]
    assert not fallbacks, fallbacks
    return outs, grads, exe


def assert_backends_agree(op: OpDef, case: Case, values: list[np.ndarray], rtol: float,
                          atol: float):
    """Triton and torch backends give the same outputs and gradients; returns the Triton
    executor (for label checks)."""
    want_outs, want_grads, _ = run_case(op, case, values, "torch")
    got_outs, got_grads, exe = run_case(op, case, values, "triton")
    for i, (g, w) in enumerate(zip(got_outs, want_outs)):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"{op.name} output {i}")
    assert sorted(got_grads) == sorted(want_grads)
    for n in want_grads:
        np.testing.assert_allclose(got_grads[n], want_grads[n], rtol=rtol, atol=atol,
                                   err_msg=f"{op.name} d/d{n}")
    return exe


def assert_no_torch_step(exe) -> dict:
    """No step of the executor's Triton plan fell back to a torch reference; its labels."""
    labels = exe._plan.impl
    assert not [v for v in labels.values() if v.startswith("torch:")], labels
    return labels


def assert_triton_case(op: OpDef, case: Case, rtol: float = 1e-5, atol: float = 1e-5) -> dict:
    """One table case on both backends: they agree, no step of the Triton plan fell back to
    a torch reference, and the op's own kernel (if it has one) ran. The plan's labels."""
    labels = assert_no_torch_step(
        assert_backends_agree(op, case, draw_inputs(case, np.float32), rtol, atol))
    if op.kernel is not None:
        assert f"triton:{op.kernel.__name__}" in labels.values(), labels
    return labels
