"""MXNet 1.9.1's ``mx.optimizer.contrib``: ``GroupAdaGrad``."""
from __future__ import annotations

from ..ndarray import zeros as _nd_zeros
from . import fields as f
from .optimizer import Optimizer, register
from .sparse import has_sparse, run_densely, sparse_update

__all__ = ["GroupAdaGrad"]


@register
class GroupAdaGrad(Optimizer):
    """AdaGrad with one accumulated rate per row of a 2-D weight.

    ``g = clip(r*grad)``; ``history += mean(g², axis=1)``;
    ``w -= lr * g / sqrt(history + eps)``. Weight decay is not supported (MXNet asserts
    ``wd == 0``). The state is the ``(rows, 1)`` history.

    Examples
    --------
    >>> import symgraph as mx
    >>> opt = mx.optimizer.create('groupadagrad', learning_rate=0.1)
    >>> w = mx.nd.ones((2, 2)); s = opt.create_state(0, w); s.shape
    (2, 1)
    >>> opt.update(0, w, mx.nd.array([[3., 4.], [0., 0.]]), s); w.asnumpy().round(4)
    array([[0.9151, 0.8869],
           [1.    , 1.    ]], dtype=float32)
    >>> mx.optimizer.contrib.GroupAdaGrad(wd=0.1).update(0, w, w, s)
    Traceback (most recent call last):
    ...
    AssertionError: Weight decay is not supported for GroupAdaGrad
    """

    savable_fields = {"float_stable_eps": f.NON_NEGATIVE}
    sparse_ops = True

    def __init__(self, eps: float = 1e-5, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index, weight):
        assert len(weight.shape) == 2
        return _nd_zeros((weight.shape[0], 1), weight.context, stype=weight.stype)

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        assert wd == 0, 'Weight decay is not supported for GroupAdaGrad'
        if grad.stype == "row_sparse":  # MXNet's contrib.group_adagrad_update
            sparse_update("_contrib_group_adagrad_update", [weight, grad, state], lr=lr,
                          epsilon=self.float_stable_eps, rescale_grad=self.rescale_grad,
                          clip_gradient=self.clip_gradient or None)
        elif has_sparse(weight, state):
            run_densely(lambda w, g, s: self._dense(lr, w, g, s), weight, grad, state)
        else:
            self._dense(lr, weight, grad, state)

    def _dense(self, lr, weight, grad, state) -> None:
        g = grad._t.float() * self.rescale_grad
        if self.clip_gradient is not None:
            g = g.clamp(-self.clip_gradient, self.clip_gradient)
        history = state._t
        history.add_(g.square().mean(dim=1, keepdim=True).to(history.dtype))
        div = lr * g / (history.float() + self.float_stable_eps).sqrt()
        weight._t.copy_(weight._t.float() - div)
