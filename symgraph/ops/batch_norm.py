"""BatchNorm: per-channel normalisation with batch statistics (training) or moving ones.

Forward, with ``C = data.shape[axis]`` and statistics over every other axis::

    training (not use_global_stats):  mean, var = batch mean, biased batch variance
                                      moving_x = moving_x * momentum + x * (1 - momentum)
    otherwise:                        mean, var = moving_mean, moving_var
    invstd = 1 / sqrt(var + eps)
    out = (data - mean) * invstd * gamma + beta          (gamma = 1 when fix_gamma)

The hidden outputs ``mean`` and ``var`` are MXNet's: the mean used and the *inverse
standard deviation* (not the variance). Backward, with ``xhat = (x - mean) * invstd``
and ``M`` elements per channel::

    dbeta = sum(dy)        dgamma = sum(dy * xhat)  (0 when fix_gamma)
    dx = gamma * invstd * (dy - dbeta / M - xhat * dgamma / M)   (batch statistics)
    dx = gamma * invstd * dy                                      (use_global_stats)

The head gradients of ``mean``/``var`` are ignored, as in MXNet. MXNet's CPU kernels
update the moving statistics in the *backward* pass; symgraph updates them in the training
forward, as MXNet's cuDNN path does (same values after a forward + backward step).

>>> import symgraph as mx
>>> bn = mx.sym.BatchNorm(mx.sym.Variable('data'), name='bn')
>>> bn.list_arguments(), bn.list_auxiliary_states(), bn.list_outputs()
(['data', 'bn_gamma', 'bn_beta'], ['bn_moving_mean', 'bn_moving_var'], ['bn_output'])
>>> bn.infer_shape(data=(2, 3, 4))
([(2, 3, 4), (3,), (3,)], [(2, 3, 4)], [(3,), (3,)])
>>> mx.sym.BatchNorm(mx.sym.Variable('data'), axis=-1, output_mean_var=True,
...                  name='bn').infer_shape(data=(2, 3, 4))[1]
[(2, 3, 4), (4,), (4,)]
>>> mx.sym.BatchNorm(mx.sym.Variable('data'), axis=3).infer_shape(data=(2, 3, 4))
Traceback (most recent call last):
...
symgraph.base.ShapeError: ... Channel axis out of range: axis 3 for data with 3 dimensions ...
"""
from __future__ import annotations

import torch

from ..attrs import Param
from ..base import DTypeError, ShapeError, UnsupportedError
from .base import Case, OpDef, PlanHints, Special, Storage, register

_PARAMS = (
    Param("eps", "float", 1e-3, doc="Epsilon added to the variance."),
    Param("momentum", "float", 0.9, doc="Momentum of the moving averages."),
    Param("fix_gamma", "bool", True, doc="Treat gamma as 1 (and write 1 into it)."),
    Param("use_global_stats", "bool", False, doc="Normalise with the moving statistics."),
    Param("output_mean_var", "bool", False, doc="Also output the mean and inverse std."),
    Param("axis", "int", 1, doc="The channel axis (negative counts from the end)."),
    Param("cudnn_off", "bool", False, doc="Accepted for compatibility; no effect."),
    Param("min_calib_range", "float_or_none", None, doc="Quantisation range; no effect."),
    Param("max_calib_range", "float_or_none", None, doc="Quantisation range; no effect."),
)


def channel_axis(p, ndim: int) -> int:
    """The normalised channel axis, or a ShapeError quoting it."""
    if not -ndim <= p.axis < ndim:
        raise ShapeError(f"Channel axis out of range: axis {p.axis} for data with {ndim} "
                         "dimensions")
    return p.axis % ndim


def _shape(p, shapes):
    data = shapes[0]
    if not data:
        return None
    c = (data[channel_axis(p, len(data))],)
    return [data, c, c, c, c], [data, c, c]


def _param_dtype(data: str) -> str:
    """MXNet keeps gamma, beta and the statistics in float32 for float16 data."""
    return "float32" if data == "float16" else data


def _type(p, types):
    data = types[0]
    if data is None:
        return None
    pt = _param_dtype(data)
    names = ("gamma", "beta", "moving_mean", "moving_var")
    for name, t in zip(names, types[1:]):
        if t is not None and t != pt:
            raise DTypeError(f"BatchNorm requires uniform type: expected {pt!r} for data of "
                             f"type {data!r}, given {t!r} at {name!r}")
    return [data, pt, pt, pt, pt], [data, pt, pt]


def _view(x: torch.Tensor, ax: int) -> tuple[list[int], list[int]]:
    """Axes reduced over and the broadcast shape of a per-channel vector."""
    red = [i for i in range(x.dim()) if i != ax]
    view = [1] * x.dim()
    view[ax] = -1
    return red, view


def _reset_gamma(gamma: torch.Tensor) -> None:
    """MXNet writes ones into a fixed gamma (it shows in saved parameters)."""
    if gamma._base is None:  # never through a view that aliases another value
        with torch.no_grad():  # a torch module's gamma is a leaf Parameter
            gamma.fill_(1)


def _forward(p, ins, aux, rt):
    x, gamma, beta = ins
    moving_mean, moving_var = aux
    ax = channel_axis(p, x.dim())
    red, view = _view(x, ax)
    if p.fix_gamma:
        _reset_gamma(gamma)
    xc = x.to(moving_mean.dtype)
    if rt.is_train and not p.use_global_stats:
        mean = xc.mean(dim=red)
        var = xc.var(dim=red, unbiased=False)
        # detached: running statistics take no part in autograd (a torch module's buffers)
        moving_mean.mul_(p.momentum).add_(mean.detach(), alpha=1.0 - p.momentum)
        moving_var.mul_(p.momentum).add_(var.detach(), alpha=1.0 - p.momentum)
    else:
        mean, var = moving_mean.clone(), moving_var
    invstd = torch.rsqrt(var + p.eps)
    scale = invstd if p.fix_gamma else invstd * gamma
    out = (xc - mean.view(view)) * scale.view(view) + beta.view(view)
    return out.to(x.dtype), mean, invstd


def _backward(p, ins, aux, rt):
    dy, x, gamma, mean, invstd = ins
    ax = channel_axis(p, x.dim())
    red, view = _view(x, ax)
    dyc = dy.to(mean.dtype)
    xhat = (x.to(mean.dtype) - mean.view(view)) * invstd.view(view)
    dbeta = dyc.sum(dim=red)
    dgamma = (dyc * xhat).sum(dim=red)
    scale = invstd if p.fix_gamma else invstd * gamma
    if p.use_global_stats:
        dx = dyc * scale.view(view)
    else:
        m = x.numel() // x.shape[ax]
        dx = scale.view(view) * (dyc - (dbeta / m).view(view) - xhat * (dgamma / m).view(view))
    if p.fix_gamma:
        dgamma = torch.zeros_like(dgamma)
    return dx.to(x.dtype), dgamma, dbeta


def triton_batch_norm(p, ins, aux, rt):
    """Triton kernels for BatchNorm (``symgraph.kernels.norm.batch_norm_fwd``)."""
    from ..kernels.norm import batch_norm_fwd
    x, gamma, beta = ins
    return batch_norm_fwd(x, gamma, beta, aux[0], aux[1], axis=channel_axis(p, x.dim()),
                          eps=p.eps, momentum=p.momentum, fix_gamma=p.fix_gamma,
                          training=rt.is_train and not p.use_global_stats,
                          reset_gamma=p.fix_gamma and gamma._base is None)


def triton_batch_norm_backward(p, ins, aux, rt):
    """Triton kernels for _backward_BatchNorm (``symgraph.kernels.norm.batch_norm_bwd``)."""
    from ..kernels.norm import batch_norm_bwd
    dy, x, gamma, mean, invstd = ins
    return batch_norm_bwd(dy, x, gamma, mean, invstd, axis=channel_axis(p, x.dim()),
                          fix_gamma=p.fix_gamma, use_global_stats=p.use_global_stats)


def _gradient(g, p, ins, outs, og):
    return g.multi("_backward_BatchNorm", og[0], ins[0], ins[1], outs[1], outs[2], **p)


register(OpDef(
    name="_backward_BatchNorm", params=_PARAMS, hidden=True,
    inputs=("ograd", "data", "gamma", "mean", "invstd"),
    outputs=("data_grad", "gamma_grad", "beta_grad"),
    infer_shape=lambda p, s: (s, [s[1], s[2], s[2]]) if s[1] and s[2] else None,
    infer_type=lambda p, t: (t, [t[1], t[2], t[2]]) if t[1] and t[2] else None,
    forward=_backward, kernel=triton_batch_norm_backward,
    doc="Gradients of BatchNorm for data, gamma and beta from the saved mean and inverse std."))

def _storage(p, stypes):
    """No sparse kernel: sparse inputs run densely (fallback), except with ``fix_gamma``,
    which MXNet 1.9.1 refuses on sparse arrays (its forward writes gamma)."""
    if p.fix_gamma and any(s != "default" for s in stypes):
        raise UnsupportedError(f"BatchNorm: fix_gamma=True is not supported for sparse "
                               f"ndarrays (input storage types {stypes}); set fix_gamma=False "
                               "or cast the inputs to default storage")
    return None


_C = ((3,), (3,), (3,), (3,))
register(OpDef(
    name="BatchNorm", params=_PARAMS, inputs=("data", "gamma", "beta"),
    aux=("moving_mean", "moving_var"), outputs=("output", "mean", "var"),
    num_visible=lambda p: 3 if p.output_mean_var else 1,
    infer_shape=_shape, infer_type=_type, forward=_forward, gradient=_gradient,
    hints=PlanHints(mutates_aux=True), kernel=triton_batch_norm, storage=Storage(_storage),
    special=Special(var_attrs={"moving_mean": {"__init__": '["zero", {}]'},
                               "moving_var": {"__init__": '["one", {}]'}}),
    cases=(Case(((4, 3, 2),) + _C, {"fix_gamma": False}),
           Case(((4, 3, 2),) + _C),
           Case(((3, 2, 2, 3),) + _C, {"fix_gamma": False, "axis": -1}),
           Case(((5, 3),) + _C, {"fix_gamma": False, "use_global_stats": True},
                low=0.1, high=1.0),
           Case(((2, 3, 2, 2),) + _C, {"fix_gamma": False, "eps": 0.01, "momentum": 0.5},
                low=0.1, high=1.0, train=False, grad=False),
           Case(((4, 3, 2),) + _C, {"fix_gamma": False, "output_mean_var": True},
                grad=False)),
    doc="""Batch normalization over the channel axis ``axis`` (MXNet 1.x ``BatchNorm``).

    Training (``is_train`` and not ``use_global_stats``) normalises with the batch mean and
    biased variance and updates ``moving_mean``/``moving_var`` in place:
    ``moving = moving * momentum + batch * (1 - momentum)``; otherwise the moving statistics
    are used. ``fix_gamma`` treats gamma as 1, writes 1 into it and gives it a zero gradient.
    With ``output_mean_var`` the outputs are (out, mean, inverse std); gamma, beta and
    the moving statistics have shape ``(data.shape[axis],)``.
    """))


# ------------------------------------------------ BatchNorm_v1, SyncBatchNorm, BatchNormWithReLU
# Composites over BatchNorm. The first two are MXNet's older forms: channel axis 1 and a hidden
# ``var`` output holding the variance itself (recovered as 1 / invstd^2 - eps); SyncBatchNorm in
# one process is BatchNorm (``ndev``/``key`` accepted). BatchNormWithReLU applies relu to the
# output (MXNet's fused oneDNN op).

def _bn_node(b, p, ins, axis: int):
    keys = ("eps", "momentum", "fix_gamma", "use_global_stats")
    return b.multi("BatchNorm", *ins, axis=axis, name="bn", **{k: p[k] for k in keys})


def _decompose_v1(b, p, ins):
    out, mean, invstd = _bn_node(b, p, ins, axis=1)
    inv_var = b.op("square", invstd, name="invstd_sq")
    var = b.op("_minus_scalar", b.op("reciprocal", inv_var, name="var_eps"), scalar=p.eps,
               name="var")
    return [out, mean, var]


def _decompose_relu(b, p, ins):
    out, mean, invstd = _bn_node(b, p, ins, axis=p.axis)
    return [b.op("relu", out, name="relu"), mean, invstd]


def _v1_shape(p, shapes):
    data = shapes[0]
    if data and len(data) < 2:
        raise ShapeError(f"BatchNorm: data must have a channel axis 1, got shape {data}")
    if not data:
        return None
    c = (data[1],)
    return [data, c, c, c, c], [data, c, c]


_V1_PARAMS = _PARAMS[:5]
_SYNC_PARAMS = _V1_PARAMS + (
    Param("ndev", "int", 1, doc="Number of devices synchronised (one process: no effect)."),
    Param("key", "str", doc="Hash key of the layer for synchronisation (no effect)."))
_COMMON = dict(inputs=("data", "gamma", "beta"), aux=("moving_mean", "moving_var"),
               outputs=("output", "mean", "var"),
               num_visible=lambda p: 3 if p.output_mean_var else 1, infer_type=_type,
               special=Special(var_attrs={"moving_mean": {"__init__": '["zero", {}]'},
                                          "moving_var": {"__init__": '["one", {}]'}}))
_V1_CASES = (Case(((4, 3, 2, 2),) + _C, {"fix_gamma": False}),
             Case(((5, 3),) + _C, {"fix_gamma": False, "use_global_stats": True},
                  low=0.1, high=1.0),
             Case(((4, 3, 2),) + _C, {"output_mean_var": True}, grad=False))

register(OpDef(
    name="BatchNorm_v1", params=_V1_PARAMS, decompose=_decompose_v1, infer_shape=_v1_shape,
    cases=_V1_CASES, **_COMMON,
    doc="MXNet's first BatchNorm: channel axis 1; the hidden outputs are the mean and the "
        "variance (not the inverse standard deviation)."))

register(OpDef(
    name="_contrib_SyncBatchNorm", params=_SYNC_PARAMS, decompose=_decompose_v1,
    infer_shape=_v1_shape,
    cases=tuple(Case(c.shapes, {**c.attrs, "key": "bn0"}, grad=c.grad, low=c.low, high=c.high)
                for c in _V1_CASES), **_COMMON,
    doc="Synchronized BatchNorm; in one process the statistics are those of the local batch "
        "(BatchNorm_v1's semantics). ``ndev`` and ``key`` are accepted."))

register(OpDef(
    name="_contrib_BatchNormWithReLU", params=_PARAMS, decompose=_decompose_relu,
    infer_shape=_shape,
    cases=(Case(((4, 3, 2),) + _C, {"fix_gamma": False}),
           Case(((3, 2, 2, 3),) + _C, {"axis": -1, "output_mean_var": True}, grad=False)),
    **_COMMON,
    doc="BatchNorm followed by relu on its output (hidden outputs as BatchNorm's)."))
