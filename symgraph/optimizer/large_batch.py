"""MXNet 1.9.1's large-batch SGD optimizers: ``LARS`` and ``LBSGD``.

Both scale each layer's learning rate by a ratio of norms and then run MXNet's SGD update
(``sgd_update``/``sgd_mom_update`` or their ``mp_`` forms), here the fused SGD kernels of
:mod:`symgraph.optimizer.rules`.
"""
from __future__ import annotations

import logging
import math
import warnings

import numpy as np
import torch

from ..ndarray import zeros as _nd_zeros
from . import fields as f
from .optimizer import Optimizer, _fp16, register
from .rules import _as_lists, _bound, _fused, _sgd_params

__all__ = ["LARS", "LBSGD"]

_NO_LARS = ("gamma", "beta", "bias")  # names whose learning rate LARS leaves alone


def _sgd(opt: Optimizer, weights, grads, moms, lrs, wds, momentum: float) -> None:
    """MXNet's ``sgd_update`` (``moms`` None) or ``sgd_mom_update`` of each weight."""
    name = "sgd_update" if moms is None else "sgd_mom_update"
    hp = _sgd_params(tuple(lrs), tuple(wds), opt.rescale_grad, _bound(opt.clip_gradient),
                     momentum if moms is not None else 0.0)
    _fused(name, weights, grads, [] if moms is None else [moms], hp)


def _sgd_states(opt: Optimizer, weights, grads, states, lrs, wds, momentum: float,
                multi_precision: bool) -> None:
    """SGD with momentum states (or None), through fp32 ``(mom, master)`` states when
    ``multi_precision``; weights with and without momentum are updated apart."""
    if multi_precision:
        targets, moms = [s[1] for s in states], [s[0] for s in states]
        grads = [g.astype(np.float32) for g in grads]
    else:
        targets, moms = list(weights), list(states)
    for has_mom in (True, False):
        part = [i for i, m in enumerate(moms) if (m is not None) == has_mom]
        if part:
            _sgd(opt, [targets[i] for i in part], [grads[i] for i in part],
                 [moms[i] for i in part] if has_mom else None,
                 [lrs[i] for i in part], [wds[i] for i in part], momentum)
    if multi_precision:
        for w, master in zip(weights, targets):
            w._t.copy_(master._t)


def _momentum_state(opt: Optimizer, weight, dtype=None):
    return _nd_zeros(weight.shape, weight.context, dtype=dtype or weight.dtype) \
        if opt.momentum != 0.0 else None


@register
class LARS(Optimizer):
    """LARS (You et al. 2017): SGD whose learning rate per layer is scaled by
    ``eta * ||w|| / (||r*g|| + wd*||w|| + eps)`` (when both norms are positive).

    Parameters whose names end in ``gamma``, ``beta`` or ``bias`` keep the plain rate, and
    only names ending in ``_weight`` get weight decay. With ``momentum_correction`` the
    momentum is scaled by ``lr / previous lr`` when a scheduler changes the rate.

    Examples
    --------
    >>> import symgraph as mx
    >>> opt = mx.optimizer.LARS(learning_rate=0.1, eta=0.5, param_idx2name={0: 'fc_weight'})
    >>> w, g = mx.nd.array([3.0, 4.0]), mx.nd.array([0.6, 0.8])
    >>> opt.update(0, w, g, opt.create_state(0, w)); w.asnumpy()  # lr 0.1 * 0.5 * 5 / 1
    array([2.85, 3.8 ], dtype=float32)
    """

    savable_fields = {"momentum": f.REAL, "momentum_correction": f.boolean,
                      "lazy_update": f.boolean, "eta": f.REAL, "eps": f.NON_NEGATIVE,
                      "skip": f.count, "last_lr": f.OPTIONAL_REAL, "cur_lr": f.OPTIONAL_REAL,
                      "aggregate_num": f.count}

    def __init__(self, momentum: float = 0.0, lazy_update: bool = True, eta: float = 0.001,
                 eps: float = 0, momentum_correction: bool = True, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.momentum_correction = momentum_correction
        self.lazy_update = lazy_update
        self.aggregate_num = 4  # MXNET_OPTIMIZER_AGGREGATION_SIZE's default
        self.eta = eta
        self.eps = eps
        self.skip = 0
        self.last_lr = None
        self.cur_lr = None

    def _get_lrs(self, indices) -> list:
        """The rates of ``indices``, remembering this call's and the previous call's base
        rate (for the momentum correction)."""
        lr = self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr
        self.last_lr = lr if self.cur_lr is None else self.cur_lr
        self.cur_lr = lr
        return self._mults(lr, indices, self.lr_mult, 'lr_mult')

    def set_wd_mult(self, args_wd_mult: dict) -> None:
        """As the base class, except that only names ending in ``_weight`` keep decay."""
        self.wd_mult = {n: 0.0 for n in self.idx2name.values() if not n.endswith('_weight')}
        self.wd_mult.update(self._sym_mults('__wd_mult__'))
        self.wd_mult.update(args_wd_mult)

    def create_state_multi_precision(self, index, weight):
        if self.multi_precision and _fp16(weight):
            master = weight.astype(np.float32)
            return (self.create_state(index, master), master)
        return super().create_state_multi_precision(index, weight)

    def create_state(self, index, weight):
        return _momentum_state(self, weight)

    def _lars_lrs(self, indices, weights, grads, lrs, wds) -> list:
        """Each rate scaled by its layer's trust ratio (``multi_lars``)."""
        names = [self.idx2name.get(i, str(i)) for i in indices]
        scaled = [k for k, n in enumerate(names) if not n.endswith(_NO_LARS)]
        if not scaled:
            return lrs
        w_norms = torch.stack([weights[k]._t.float().norm() for k in scaled]).tolist()
        g_norms = torch.stack([grads[k]._t.float().norm() for k in scaled]).tolist()
        lrs = list(lrs)
        for k, w_norm, g_norm in zip(scaled, w_norms, g_norms):
            if w_norm > 0 and g_norm > 0:
                lrs[k] = lrs[k] * self.eta * w_norm / (
                    g_norm * self.rescale_grad + wds[k] * w_norm + self.eps)
        return lrs

    def _momentum(self) -> float:
        if self.momentum_correction and self.last_lr != 0:
            return self.momentum * (self.cur_lr / self.last_lr)
        return self.momentum

    def _update_impl(self, indices, weights, grads, states, multi_precision: bool) -> None:
        indices, weights, grads, states = _as_lists(indices, weights, grads, states)
        self._update_count(indices)
        lrs, wds = self._get_lrs(indices), self._get_wds(indices)
        lrs = self._lars_lrs(indices, weights, grads, lrs, wds)
        momentum = self._momentum() if self.momentum > 0 else 0.0
        _sgd_states(self, weights, grads, states, lrs, wds, momentum, multi_precision)

    def update(self, index, weight, grad, state):
        self._update_impl(index, weight, grad, state, multi_precision=False)

    def update_multi_precision(self, index, weight, grad, state):
        first = weight[0] if isinstance(index, (tuple, list)) else weight
        self._update_impl(index, weight, grad, state,
                          multi_precision=self.multi_precision and _fp16(first))


def _warmup_mult(strategy: str, nup: int, nwup: int, maxmult: float) -> float:
    """LBSGD's learning-rate multiplier after ``nup`` of ``nwup`` warmup updates."""
    if nup >= nwup:
        return maxmult
    if nwup <= 1:
        return 1.0
    if strategy == 'linear':
        return 1.0 + (maxmult - 1) * nup / nwup
    if strategy == 'power2':
        return 1.0 + (maxmult - 1) * (nup * nup) / (nwup * nwup)
    if strategy == 'sqrt':
        return 1.0 + (maxmult - 1) * math.sqrt(float(nup) / nwup)
    return 1.0


@register
class LBSGD(Optimizer):
    """Large-batch SGD: gradients accumulated over ``batch_scale`` updates, then one SGD
    step with the rate warmed up over ``warmup_epochs`` (``'linear'``, ``'power2'``,
    ``'sqrt'``) or scaled by a LARS ratio (``warmup_strategy='lars'``).

    As in MXNet, the first gradient of a macro-batch is kept by reference, not copied.

    Examples
    --------
    >>> import symgraph as mx
    >>> opt = mx.optimizer.LBSGD(learning_rate=0.1, batch_scale=2, warmup_epochs=0)
    >>> w = mx.nd.ones((2,)); s = opt.create_state(0, w)
    >>> opt.update(0, w, mx.nd.ones((2,)), s); w.asnumpy()  # accumulated, not applied
    array([1., 1.], dtype=float32)
    >>> opt.update(0, w, mx.nd.ones((2,)), s); w.asnumpy()  # lr 0.1 * 2 on the mean grad
    array([0.8, 0.8], dtype=float32)
    """

    savable_fields = {"momentum": f.REAL, "warmup_strategy": f.text, "warmup_epochs": f.count,
                      "batch_scale": f.POSITIVE, "updates_per_epoch": f.count,
                      "init_updates": f.count, "num_epochs": f.count, "lbmult": f.REAL,
                      "cumgrads": f.CUMGRADS, "adaptive": f.boolean, "admult": f.REAL}

    def __init__(self, momentum: float = 0.0, multi_precision: bool = False,
                 warmup_strategy: str = 'linear', warmup_epochs: int = 5, batch_scale: int = 1,
                 updates_per_epoch: int = 32, begin_epoch: int = 0, num_epochs: int = 60,
                 **kwargs):
        super().__init__(**kwargs)
        logging.info('Running Large-Batch SGD Algorithm')
        logging.info('(Batch_scale=%f, warmup_epochs=%d, warmup_strategy=%s, '
                     'updates_per_epoch=%d)', batch_scale, warmup_epochs, warmup_strategy,
                     updates_per_epoch)
        self.momentum = momentum
        self.multi_precision = multi_precision
        self.warmup_strategy = warmup_strategy
        self.warmup_epochs = warmup_epochs
        self.batch_scale = batch_scale
        self.updates_per_epoch = updates_per_epoch
        self.init_updates = begin_epoch * updates_per_epoch
        self.num_epochs = num_epochs
        self.lbmult = 1
        self.cumgrads: dict = {}
        self.adaptive = False
        self.admult = 1

    def create_state(self, index, weight):
        if self.multi_precision and _fp16(weight):
            master = weight.astype(np.float32)
            return (_momentum_state(self, weight, np.float32), master)
        if _fp16(weight):
            warnings.warn("Accumulating with float16 in optimizer can lead to poor accuracy or "
                          "slow convergence. Consider using multi_precision=True option of the "
                          "SGD optimizer", stacklevel=2)
        return _momentum_state(self, weight)

    def _get_lbmult(self, nup: int) -> float:
        return _warmup_mult(self.warmup_strategy, nup,
                            self.warmup_epochs * self.updates_per_epoch,
                            float(self.batch_scale))

    def _get_lars(self, weight, g, wd: float) -> float:
        """``sqrt(|w|² / (|g|² + wd|w|² + 1e-18))`` clipped to [0.01, 100]."""
        w2, g2 = self._l2norm(weight), self._l2norm(g)
        return min(max(math.sqrt(w2 / (g2 + wd * w2 + 1e-18)), 0.01), 100.0)

    def _l2norm(self, v) -> float:
        """The squared norm (MXNet's name)."""
        return float(v._t.float().square().sum())

    def _reset_cum_gradient(self, index) -> None:
        self.cumgrads[index]['cum_grad'] = 0

    def _get_cum_gradient(self, index) -> dict:
        return self.cumgrads.get(index, {})

    def _put_cum_gradient(self, index, cgrad: dict) -> None:
        self.cumgrads[index] = cgrad

    def _cumulate_gradient(self, grad, index) -> dict:
        """Add ``grad`` to the macro-batch sum of ``index``; counts from ``init_updates``."""
        cgrad = self._get_cum_gradient(index)
        if cgrad and cgrad['num_cums'] > 0:
            cgrad = {'cum_grad': cgrad['cum_grad'] + grad, 'num_cums': cgrad['num_cums'] + 1}
        else:
            cgrad = {'cum_grad': grad, 'num_cums': self.init_updates + 1}
        self._put_cum_gradient(index, cgrad)
        return cgrad

    def update(self, index, weight, grad, state):
        lr, wd = self._get_lr(index), self._get_wd(index)
        self._update_count(index)
        cgrad = self._cumulate_gradient(grad, index)
        if cgrad['num_cums'] % self.batch_scale != 0:
            return  # MXNet runs sgd_update with lr=0 here: the weight is unchanged
        grad = cgrad['cum_grad'] / self.batch_scale
        if self.warmup_strategy == 'lars':
            lr *= self._get_lars(weight, grad, wd)
        else:
            lr *= self._get_lbmult(cgrad['num_cums'])
        momentum = self.momentum if self.momentum > 0 else 0.0
        if isinstance(state, (list, tuple)):
            _sgd_states(self, [weight], [grad], [state], [lr], [wd], momentum, True)
        else:
            _sgd_states(self, [weight], [grad], [state], [lr], [wd], momentum, False)
        self._reset_cum_gradient(index)
