"""Every registered op, every case in its table: inference, forward, gradient (float64 FD)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import symgraph as mx  # noqa: F401 - fills the registry
from symgraph.base import TORCH_TO_NAME
from symgraph.ndarray.ndarray import NDArray
from symgraph.ops.base import canonical_ops, known

from .op_harness import bind, draw_inputs, numeric_grads, run_forward

CASES = [pytest.param(op, case, id=f"{op.name}-{i}")
         for op in canonical_ops() for i, case in enumerate(op.cases)]
# a composite op differentiates through its decomposition (expanded before autodiff)
GRAD_CASES = [p for p in CASES if p.values[1].grad and (p.values[0].gradient is not None or
                                                       p.values[0].decompose is not None)]


def test_every_public_op_has_cases():
    missing = [op.name for op in canonical_ops() if not op.hidden and not op.cases
               and op.special.eager is None]  # imperative-only ops are tested by their own files
    assert not missing, f"ops without test cases: {missing}"


def test_every_public_op_has_a_gradient_rule():
    missing = [op.name for op in canonical_ops() if not op.hidden and op.gradient is None
               and op.decompose is None and op.differentiable]
    assert not missing, f"ops without gradient rules: {missing}"


@pytest.mark.parametrize("op,case", CASES)
def test_inference_matches_forward(op, case):
    values = draw_inputs(case)
    sym, exe = bind(op, case, values, grad=False)
    arg_shapes, out_shapes, aux_shapes = sym.infer_shape(
        **{f"in{i}": v.shape for i, v in enumerate(values)})
    assert all(known(s) for s in out_shapes)
    _, out_types, _ = sym.infer_type(**{f"in{i}": v.dtype for i, v in enumerate(values)})
    outs = exe.forward(is_train=case.train)
    assert [o.shape for o in outs] == [tuple(s) for s in out_shapes]
    assert [np.dtype(o.dtype) for o in outs] == [np.dtype(t) for t in out_types]


@pytest.mark.parametrize("op,case", CASES)
def test_forward_matches_reference(op, case):
    values = draw_inputs(case, np.float32)
    sym, exe = bind(op, case, values, grad=False)
    outs = run_forward(exe, case.train)
    p = sym._outputs[0][0].params
    n_in = len(op.input_names(p))
    ins = [torch.from_numpy(v) for v in values]
    from symgraph.ops.base import Runtime
    gen = torch.Generator().manual_seed(0)
    ref = op.forward(p, ins[:n_in], [a.clone() for a in ins[n_in:]], Runtime(case.train, gen))
    for got, want in zip(outs, ref):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-6)
        assert TORCH_TO_NAME[want.dtype] == np.dtype(got.dtype).name


@pytest.mark.parametrize("op,case", GRAD_CASES)
def test_gradient_matches_finite_differences(op, case):
    values = draw_inputs(case)
    _, exe = bind(op, case, values, grad=True)
    outs = run_forward(exe, case.train)
    rng = np.random.RandomState(1)
    heads = [rng.uniform(-1, 1, size=o.shape) for o in outs]
    exe.forward(is_train=case.train)
    exe._rt.generator.manual_seed(0)
    run_forward(exe, case.train)
    exe.backward([NDArray(torch.from_numpy(h)) for h in heads])
    names = sorted(n for n, g in exe.grad_dict.items() if g is not None)
    assert names, "case has no differentiable input"
    analytic = {n: exe.grad_dict[n].asnumpy().copy() for n in names}
    numeric = numeric_grads(exe, names, heads, case.train)
    for n in names:
        np.testing.assert_allclose(analytic[n], numeric[n], rtol=case.rtol, atol=case.atol,
                                   err_msg=f"{op.name} d/d{n}")


LOSS_CASES = [p for p in CASES if p.values[1].loss is not None]


@pytest.mark.parametrize("op,case", LOSS_CASES)
def test_loss_gradient_matches_finite_differences_of_its_loss(op, case):
    """A loss head's gradient is by definition: check it against its implied loss."""
    values = draw_inputs(case)
    sym, exe = bind(op, case, values, grad=True)
    exe.forward(is_train=True)
    exe.backward()
    p = sym._outputs[0][0].params
    ins = [torch.from_numpy(v) for v in values]
    x = ins[0].clone()
    numeric = torch.zeros_like(x).view(-1)
    flat = x.view(-1)
    for k in range(flat.numel()):
        orig = flat[k].item()
        flat[k] = orig + 1e-6
        plus = float(case.loss(p, [x] + ins[1:]))
        flat[k] = orig - 1e-6
        minus = float(case.loss(p, [x] + ins[1:]))
        flat[k] = orig
        numeric[k] = (plus - minus) / 2e-6
    np.testing.assert_allclose(exe.grad_dict["in0"].asnumpy(), numeric.view(x.shape).numpy(),
                               rtol=case.rtol, atol=case.atol)
