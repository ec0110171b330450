"""LeakyReLU: the parametric ReLU family in one op (leaky, elu, selu, gelu, prelu, rrelu).

Forward (``s`` = slope)::

    leaky  x > 0 ? x : s * x            elu   x > 0 ? x : s * (exp(x) - 1)
    selu   lam * (x > 0 ? x : alpha * (exp(x) - 1))
    gelu   0.5 * x * (1 + erf(x / sqrt(2)))
    prelu  x > 0 ? x : gamma * x        (gamma broadcast as MXNet's expand_shape)
    rrelu  x > 0 ? x : m * x,  m ~ U(lower_bound, upper_bound) in training (visible output
           ``mask``), m = (lower_bound + upper_bound) / 2 in inference

The gradient is one hidden ``_backward_LeakyReLU`` node: ``dx = dy * f'(x)`` and, for
prelu, ``dgamma = sum(dy * min(x, 0))`` over the broadcast axes. For selu MXNet 1.9.1 uses
``lam * (out + alpha)`` where ``x <= 0`` (the derivative is ``lam * alpha * exp(x)``);
symgraph matches MXNet.

>>> import symgraph as mx
>>> net = mx.sym.LeakyReLU(mx.sym.Variable('data'), act_type='prelu', name='act')
>>> net.list_arguments(), net.infer_shape(data=(2, 3, 4))[0]
(['data', 'act_gamma'], [(2, 3, 4), (3,)])
>>> mx.sym.LeakyReLU(mx.sym.Variable('data'), act_type='rrelu', name='r').list_outputs()
['r_output', 'r_mask']
"""
from __future__ import annotations

import math

import torch

from ..attrs import Param
from ..base import ShapeError
from .base import Case, OpDef, Special, draw_seed, register

_ACTS = ("elu", "gelu", "leaky", "prelu", "rrelu", "selu")
_PARAMS = (
    Param("act_type", "str", "leaky", choices=_ACTS, doc="Activation function to apply."),
    Param("slope", "float", 0.25, doc="Slope for leaky and elu."),
    Param("lower_bound", "float", 0.125, doc="Lower bound of the random slope (rrelu)."),
    Param("upper_bound", "float", 0.334, doc="Upper bound of the random slope (rrelu)."),
)
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_LAMBDA = 1.0507009873554804934193349852946


def expand_shape(gamma: tuple, data: tuple) -> tuple:
    """MXNet's prelu broadcast: gamma's axes align right onto data's axes 0 and 1 only."""
    out = [1] * len(data)
    s = len(gamma) - 1
    for i in range(len(data) - 1, -1, -1):
        if s >= 0 and i <= 1 and (data[i] == gamma[s] or gamma[s] == 1):
            out[i] = gamma[s]
            s -= 1
    if s != -1:
        raise ShapeError(f"Cannot broadcast gamma to data. gamma: {tuple(gamma)}, "
                         f"data: {tuple(data)}")
    return tuple(out)


def _inputs(p):
    return ["data", "gamma"] if p.act_type == "prelu" else ["data"]


def _outputs(p):
    return ["output", "mask"] if p.act_type == "rrelu" else ["output"]


def _shape(p, shapes):
    data = shapes[0]
    if not data:
        return None
    if p.act_type != "prelu":
        return shapes, [data] * len(_outputs(p))
    if len(data) < 2:
        raise ShapeError(f"prelu needs data with a channel axis 1, got shape {tuple(data)}")
    gamma = shapes[1] or (data[1],)
    if all(gamma) and all(data):
        expand_shape(gamma, data)
    return [data, gamma], [data]


def _rrelu_mask(p, x: torch.Tensor, rt) -> torch.Tensor:
    if rt.is_train:
        u = torch.rand(x.shape, generator=rt.generator, device=x.device).to(x.dtype)
        return u * (p.upper_bound - p.lower_bound) + p.lower_bound
    return torch.full_like(x, (p.lower_bound + p.upper_bound) / 2.0)


def _forward(p, ins, aux, rt):
    x = ins[0]
    act = p.act_type
    if act == "leaky":
        return (torch.where(x > 0, x, x * p.slope),)
    if act == "elu":
        return (torch.where(x > 0, x, torch.expm1(x) * p.slope),)
    if act == "selu":
        return (_SELU_LAMBDA * torch.where(x > 0, x, torch.expm1(x) * _SELU_ALPHA),)
    if act == "gelu":
        return (0.5 * x * (1.0 + torch.erf(x * math.sqrt(0.5))),)
    if act == "prelu":
        gamma = ins[1].reshape(expand_shape(tuple(ins[1].shape), tuple(x.shape)))
        return (torch.where(x > 0, x, x * gamma),)
    mask = _rrelu_mask(p, x, rt)
    return torch.where(x > 0, x, x * mask), mask


def _expr(p) -> str | None:
    """Triton template for the elementwise act_types (prelu and rrelu use their references)."""
    lam, alpha = repr(_SELU_LAMBDA), repr(_SELU_ALPHA)
    em1 = "tl.where(tl.abs({0}) < 1e-5, {0} + 0.5 * {0} * {0}, tl.exp({0}) - 1.0)"
    return {
        "leaky": f"tl.where({{0}} > 0.0, {{0}}, {{0}} * {p.slope!r})",
        "elu": f"tl.where({{0}} > 0.0, {{0}}, ({em1}) * {p.slope!r})",
        "selu": f"({lam} * tl.where({{0}} > 0.0, {{0}}, ({em1}) * {alpha}))",
        "gelu": "(0.5 * {0} * (1.0 + tl.erf({0} * 0.7071067811865476)))",
    }.get(p.act_type)


def _backward_expr(p) -> str | None:
    """Triton template of dx = dy * slope for the elementwise act_types."""
    lam, alpha = repr(_SELU_LAMBDA), repr(_SELU_ALPHA)
    em1 = "tl.where(tl.abs({1}) < 1e-5, {1} + 0.5 * {1} * {1}, tl.exp({1}) - 1.0)"
    slope = {
        "leaky": f"tl.where({{1}} > 0.0, 1.0, {p.slope!r})",
        "elu": f"tl.where({{1}} > 0.0, 1.0, tl.exp({{1}}) * {p.slope!r})",
        "selu": f"({lam} * tl.where({{1}} > 0.0, 1.0, {lam} * ({em1}) * {alpha} + {alpha}))",
        "gelu": "(0.5 * (1.0 + tl.erf({1} * 0.7071067811865476)) + {1} * "
                "tl.exp(-0.5 * {1} * {1}) * 0.3989422804014327)",
    }.get(p.act_type)
    return None if slope is None else f"({{0}} * {slope})"


def _slope_grad(p, x: torch.Tensor, extra) -> torch.Tensor:
    """d out / d x for every act_type (``extra`` is gamma for prelu, the mask for rrelu)."""
    act = p.act_type
    pos = x > 0
    if act == "leaky":
        return torch.where(pos, 1.0, p.slope).to(x.dtype)
    if act == "elu":
        return torch.where(pos, torch.ones_like(x), torch.exp(x) * p.slope)
    if act == "selu":
        # MXNet's selu_grad is lam * (out + alpha) for x <= 0, not the derivative
        # lam * (out / lam + alpha): kept for parity (tests/test_ops_nn_parity.py)
        out = _SELU_LAMBDA * torch.expm1(x) * _SELU_ALPHA
        return _SELU_LAMBDA * torch.where(pos, torch.ones_like(x), out + _SELU_ALPHA)
    if act == "gelu":
        cdf = 0.5 * (1.0 + torch.erf(x * math.sqrt(0.5)))
        return cdf + x * torch.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    if act == "prelu":
        gamma = extra.reshape(expand_shape(tuple(extra.shape), tuple(x.shape)))
        return torch.where(pos, torch.ones_like(x), gamma.expand_as(x))
    return torch.where(pos, torch.ones_like(x), extra)


def _backward(p, ins, aux, rt):
    dy, x = ins[0], ins[1]
    extra = ins[2] if len(ins) > 2 else None
    dx = dy * _slope_grad(p, x, extra)
    if p.act_type != "prelu":
        return (dx,)
    full = dy * torch.clamp(x, max=0)
    bshape = expand_shape(tuple(extra.shape), tuple(x.shape))
    axes = [i for i, d in enumerate(bshape) if d == 1 and x.shape[i] != 1]
    dgamma = full.sum(dim=axes, keepdim=True) if axes else full
    return dx, dgamma.reshape(extra.shape)


def _backward_inputs(p):
    extra = {"prelu": ["gamma"], "rrelu": ["mask"]}.get(p.act_type, [])
    return ["ograd", "data"] + extra


def _backward_shape(p, shapes):
    if not all(shapes[1:]):
        return None
    return shapes, [shapes[1], shapes[2]] if p.act_type == "prelu" else [shapes[1]]


def _gradient(g, p, ins, outs, og):
    if p.act_type == "prelu":
        return g.multi("_backward_LeakyReLU", og[0], ins[0], ins[1], **p)
    if p.act_type == "rrelu":
        return [g.op("_backward_LeakyReLU", og[0], ins[0], outs[1], **p)]
    return [g.op("_backward_LeakyReLU", og[0], ins[0], **p)]


def _run_expr(templates: tuple, ins: list, x: torch.Tensor) -> tuple:
    """One generated elementwise kernel over ``ins`` (broadcast to x's shape): output ``j``
    is ``templates[j]`` of the inputs ``{0}, {1}, ...``."""
    from ..kernels.elementwise import Program, run
    names = tuple(f"x{i}" for i in range(len(ins)))
    prog = Program(len(ins), tuple((t, names) for t in templates),
                   tuple(f"t{j}" for j in range(len(templates))))
    return run(prog, ins, tuple(x.shape), x.dtype)


def triton_leaky_relu(p, ins, aux, rt):
    """LeakyReLU on Triton: the act_type's expression as a generated kernel; prelu with gamma
    broadcast into it; rrelu's training slopes from the Philox kernel seeded by the
    executor's generator (inference: the mean slope)."""
    x = ins[0]
    if p.act_type == "prelu":
        gamma = ins[1].reshape(expand_shape(tuple(ins[1].shape), tuple(x.shape)))
        return _run_expr(("tl.where({0} > 0.0, {0}, {0} * {1})",), [x, gamma], x)
    if p.act_type != "rrelu":
        return _run_expr((_expr(p),), [x], x)
    if rt.is_train:
        from ..kernels.dropout import rrelu
        return rrelu(x, p.lower_bound, p.upper_bound, draw_seed(rt))
    from ..kernels.copy import fill
    mean = (p.lower_bound + p.upper_bound) / 2.0
    out = _run_expr((f"tl.where({{0}} > 0.0, {{0}}, {{0}} * {mean!r})",), [x], x)[0]
    return out, fill(torch.empty_like(x), mean)


def triton_backward_leaky_relu(p, ins, aux, rt):
    """The LeakyReLU gradients as one generated kernel (prelu: dx and dy * min(x, 0), then
    a Triton reduce-sum over gamma's broadcast axes)."""
    dy, x = ins[0], ins[1]
    if p.act_type == "rrelu":
        return _run_expr(("({0} * tl.where({1} > 0.0, 1.0, {2}))",), [dy, x, ins[2]], x)
    if p.act_type != "prelu":
        return _run_expr((_backward_expr(p),), [dy, x], x)
    from ..kernels.copy import reduce_sum
    gamma = ins[2]
    bshape = expand_shape(tuple(gamma.shape), tuple(x.shape))
    dx, full = _run_expr(("({0} * tl.where({1} > 0.0, 1.0, {2}))", "({0} * tl.minimum({1}, 0.0))"),
                         [dy, x, gamma.reshape(bshape)], x)
    axes = [i for i, d in enumerate(bshape) if d == 1 and x.shape[i] != 1]
    return dx, (reduce_sum(full, axes) if axes else full).reshape(gamma.shape)


register(OpDef(
    name="_backward_LeakyReLU", params=_PARAMS, hidden=True, inputs=_backward_inputs,
    outputs=lambda p: ["data_grad", "gamma_grad"] if p.act_type == "prelu" else ["data_grad"],
    infer_shape=_backward_shape, forward=_backward, expr=_backward_expr,
    kernel=triton_backward_leaky_relu,
    doc="Gradients of LeakyReLU for data (and gamma for prelu)."))

register(OpDef(
    name="LeakyReLU", params=_PARAMS, inputs=_inputs, outputs=_outputs,
    infer_shape=_shape, forward=_forward, gradient=_gradient, expr=_expr,
    kernel=triton_leaky_relu,
    random=lambda p: "device" if p.act_type == "rrelu" else False,  # rrelu draws slopes
    # MXNet's initial slope, whatever the act_type
    special=Special(var_attrs={"gamma": {"__init__": '["Constant", {"value": 0.25}]'}}),
    cases=(Case(((3, 5),)),
           Case(((2, 3, 4),), {"act_type": "leaky", "slope": 0.1}),
           Case(((3, 5),), {"act_type": "elu", "slope": 0.7}),
           Case(((3, 5),), {"act_type": "selu"}, grad=False),  # MXNet's gradient is off
           Case(((2, 7),), {"act_type": "gelu"}, low=-3.0, high=3.0),
           Case(((2, 3, 4), (3,)), {"act_type": "prelu"}),
           Case(((2, 3, 2), (1,)), {"act_type": "prelu"}),
           Case(((2, 3), (2, 3)), {"act_type": "prelu"}),
           Case(((3, 4),), {"act_type": "rrelu", "lower_bound": 0.2, "upper_bound": 0.5}),
           Case(((3, 4),), {"act_type": "rrelu"}, train=False, grad=False)),
    doc="""Leaky rectified linear units: ``act_type`` is leaky, elu, selu, gelu, prelu (with a
    learned ``gamma`` input, shape ``(data.shape[1],)`` by default) or rrelu (random slopes
    in training, exposed as a second output ``mask``; their mean in inference).
    """))
