"""MXNet 1.9.1's SGD variants written in Python there: ``SGLD`` and ``DCASGD``.

Both follow MXNet's Python update rules statement by statement, computing in the weight's
dtype (fp16 promoted to fp32), so float64 weights are updated in float64 as MXNet does.
"""
from __future__ import annotations

import math

import torch

from ..ndarray import NDArray
from ..ndarray import random as _nd_random
from . import fields as f
from .optimizer import Optimizer, register

__all__ = ["SGLD", "DCASGD"]


def _work(t: torch.Tensor) -> torch.Tensor:
    """``t`` in the dtype the update is computed in (fp16 promoted to fp32)."""
    return t.float() if t.dtype == torch.float16 else t


def _rescaled(opt: Optimizer, grad: NDArray, dtype: torch.dtype) -> torch.Tensor:
    """``clip(grad * rescale_grad)`` as MXNet's Python rules write it (clip when not None)."""
    g = grad._t.to(dtype) * opt.rescale_grad
    if opt.clip_gradient is not None:
        g = g.clamp(-opt.clip_gradient, opt.clip_gradient)
    return g


@register
class SGLD(Optimizer):
    """Stochastic Gradient Langevin Dynamics: half an SGD step plus Gaussian noise.

    ``w += -lr/2 * (clip(r*g) + wd*w)``, then ``w += N(0, sqrt(lr))`` drawn with
    ``mx.nd.random.normal`` (so ``mx.random.seed`` fixes the noise). No state.

    Examples
    --------
    >>> import symgraph as mx
    >>> opt = mx.optimizer.create('sgld', learning_rate=1e-10)  # noise of deviation 1e-5
    >>> w = mx.nd.ones((2,))
    >>> opt.update(0, w, mx.nd.ones((2,)), opt.create_state(0, w)); w.asnumpy().round(3)
    array([1., 1.], dtype=float32)
    """

    savable_fields = {"lr": f.Real(0.0, optional=True)}  # the noise's deviation is sqrt(lr)

    def create_state(self, index, weight):
        return None

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        w = _work(weight._t)
        g = _rescaled(self, grad, w.dtype)
        weight._t.copy_(w - lr / 2 * (g + wd * w))
        noise = _nd_random.normal(0, math.sqrt(lr), shape=weight.shape, dtype=weight.dtype,
                                  ctx=weight.context)
        weight._t.add_(noise._t)


@register
class DCASGD(Optimizer):
    """Delay-compensated asynchronous SGD (Zheng et al. 2016).

    ``step = -lr * (g + wd*w + lamda * g*g * (w - w_prev))`` with ``g = clip(r*grad)``;
    with momentum ``mom = momentum*mom + step`` is the step. The state is
    ``(momentum or None, previous weight)``.

    MXNet 1.9.1 fails on its own momentum branch (it tests an NDArray's truth value);
    here the momentum update runs as that branch is written.

    Examples
    --------
    >>> import symgraph as mx
    >>> opt = mx.optimizer.DCASGD(learning_rate=0.1, lamda=0.5)
    >>> w = mx.nd.array([1.0]); s = opt.create_state(0, w)
    >>> opt.update(0, w, mx.nd.array([2.0]), s); w.asnumpy()
    array([0.8], dtype=float32)
    >>> s[1].asnumpy()
    array([1.], dtype=float32)
    """

    savable_fields = {"momentum": f.REAL, "weight_previous": f.dict_of(f.array),
                      "lamda": f.REAL}

    def __init__(self, momentum: float = 0.0, lamda: float = 0.04, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.weight_previous: dict = {}
        self.lamda = lamda

    def create_state(self, index, weight):
        if self.momentum == 0.0:
            return (None, weight.copy())
        from ..ndarray import zeros
        return (zeros(weight.shape, weight.context, dtype=weight.dtype), weight.copy())

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        w = _work(weight._t)
        g = _rescaled(self, grad, w.dtype)
        mom, previous = state
        prev = _work(previous._t)
        step = -lr * (g + wd * w + self.lamda * g * g * (w - prev))
        if mom is not None:
            mom._t.copy_(self.momentum * _work(mom._t) + step)
            step = _work(mom._t)
        previous._t.copy_(weight._t)
        weight._t.copy_(w + step)
