"""LayerNorm: normalisation over one axis with per-element scale and shift.

Forward, over ``axis`` (statistics kept with that axis of length 1)::

    mean = x.mean(axis)    std = sqrt(x.var(axis) + eps)       (biased variance)
    out  = (x - mean) / std * gamma + beta

The hidden outputs are ``mean`` and ``std`` (MXNet's names; visible with
``output_mean_var``). Backward, with ``xhat = (x - mean) / std``, ``g = dy * gamma`` and
means over ``axis``::

    dx = (g - mean(g) - xhat * mean(g * xhat)) / std
    dgamma = sum(dy * xhat)   dbeta = sum(dy)     (over every axis but ``axis``)

The head gradients of ``mean``/``std`` are ignored, as in MXNet.

>>> import symgraph as mx
>>> ln = mx.sym.LayerNorm(mx.sym.Variable('data'), axis=1, output_mean_var=True, name='ln')
>>> ln.list_outputs()
['ln_output', 'ln_mean', 'ln_std']
>>> ln.infer_shape(data=(2, 3, 4))[:2]
([(2, 3, 4), (3,), (3,)], [(2, 3, 4), (2, 1, 4), (2, 1, 4)])
"""
from __future__ import annotations

import torch

from ..attrs import Param
from ..base import ShapeError
from .base import Case, OpDef, register

_PARAMS = (
    Param("axis", "int", -1, doc="The axis to normalise over (negative counts from the end)."),
    Param("eps", "float", 1e-5, doc="Epsilon added to the variance."),
    Param("output_mean_var", "bool", False, doc="Also output the mean and std."),
)


def _axis(p, ndim: int) -> int:
    if not -ndim <= p.axis < ndim:
        raise ShapeError(f"axis {p.axis} is out of range for data with {ndim} dimensions")
    return p.axis % ndim


def _shape(p, shapes):
    data = shapes[0]
    if not data:
        return None
    ax = _axis(p, len(data))
    c = (data[ax],)
    stat = tuple(1 if i == ax else d for i, d in enumerate(data))
    return [data, c, c], [data, stat, stat]


def _wide(x: torch.Tensor) -> torch.Tensor:
    """Compute float16 in float32 (MXNet accumulates in float32)."""
    return x.float() if x.dtype == torch.float16 else x


def _view(x: torch.Tensor, ax: int) -> list[int]:
    view = [1] * x.dim()
    view[ax] = -1
    return view


def _forward(p, ins, aux, rt):
    x, gamma, beta = ins
    ax = _axis(p, x.dim())
    xc = _wide(x)
    mean = xc.mean(dim=ax, keepdim=True)
    std = torch.sqrt(((xc - mean) ** 2).mean(dim=ax, keepdim=True) + p.eps)
    view = _view(x, ax)
    out = (xc - mean) / std * _wide(gamma).view(view) + _wide(beta).view(view)
    return out.to(x.dtype), mean.to(x.dtype), std.to(x.dtype)


def _backward(p, ins, aux, rt):
    dy, x, gamma, mean, std = (_wide(t) for t in ins)
    ax = _axis(p, x.dim())
    red = [i for i in range(x.dim()) if i != ax]
    xhat = (x - mean) / std
    g = dy * gamma.view(_view(x, ax))
    dx = (g - g.mean(dim=ax, keepdim=True) - xhat * (g * xhat).mean(dim=ax, keepdim=True)) / std
    dgamma = (dy * xhat).sum(dim=red)
    dbeta = dy.sum(dim=red)
    dt = ins[1].dtype
    return dx.to(dt), dgamma.to(dt), dbeta.to(dt)


def triton_layer_norm(p, ins, aux, rt):
    """Triton kernel for LayerNorm (``symgraph.kernels.norm.layer_norm_fwd``)."""
    from ..kernels.norm import layer_norm_fwd
    x, gamma, beta = ins
    return layer_norm_fwd(x, gamma, beta, axis=_axis(p, x.dim()), eps=p.eps)


def triton_layer_norm_backward(p, ins, aux, rt):
    """Triton kernels for _backward_LayerNorm (``symgraph.kernels.norm.layer_norm_bwd``)."""
    from ..kernels.norm import layer_norm_bwd
    dy, x, gamma, mean, std = ins
    return layer_norm_bwd(dy, x, gamma, mean, std, axis=_axis(p, x.dim()))


def _gradient(g, p, ins, outs, og):
    return g.multi("_backward_LayerNorm", og[0], ins[0], ins[1], outs[1], outs[2], **p)


register(OpDef(
    name="_backward_LayerNorm", params=_PARAMS, hidden=True,
    inputs=("ograd", "data", "gamma", "mean", "std"),
    outputs=("data_grad", "gamma_grad", "beta_grad"),
    infer_shape=lambda p, s: (s, [s[1], s[2], s[2]]) if s[1] and s[2] else None,
    forward=_backward, kernel=triton_layer_norm_backward,
    doc="Gradients of LayerNorm for data, gamma and beta from the saved mean and std."))

register(OpDef(
    name="LayerNorm", params=_PARAMS, inputs=("data", "gamma", "beta"),
    outputs=("output", "mean", "std"), num_visible=lambda p: 3 if p.output_mean_var else 1,
    infer_shape=_shape, forward=_forward, gradient=_gradient, kernel=triton_layer_norm,
    cases=(Case(((3, 5), (5,), (5,))),
           Case(((2, 3, 4), (3,), (3,)), {"axis": 1, "eps": 0.01}),
           Case(((2, 3, 4), (2,), (2,)), {"axis": -3}),
           Case(((2, 3, 4), (4,), (4,)), {"output_mean_var": True}, grad=False)),
    doc="""Layer normalization over ``axis``: ``(x - mean) / sqrt(var + eps) * gamma + beta``.

    ``gamma`` and ``beta`` have shape ``(data.shape[axis],)``. The variance is the biased
    one. With ``output_mean_var`` the outputs are (out, mean, std), the statistics keeping
    ``axis`` with length 1.
    """))
