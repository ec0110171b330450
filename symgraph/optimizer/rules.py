"""MXNet 1.9.1's optimizers: each one's state and update math.

SGD, NAG, Adam, RMSProp (plain and centered) and AdaGrad run ``kernels.optimizer``: the fused
multi-tensor Triton kernel on CUDA tensors and its torch reference elsewhere. The others are
written in torch as MXNet writes them (its Python rules, or its C++ op for Signum, FTML, FTRL
and LAMB), in fp32.
"""
from __future__ import annotations

import functools
import math
import operator

import numpy as np
import torch

from ..ndarray import NDArray
from ..ndarray import zeros as _nd_zeros
from . import fields as f
from .optimizer import Optimizer, _fp16, register
from .sparse import has_sparse, run_densely, sgd_sparse, sparse_update

__all__ = ["SGD", "NAG", "Signum", "Adam", "RMSProp", "AdaGrad", "AdaDelta", "Adamax", "Nadam",
           "Ftrl", "FTML", "LAMB", "ccSGD", "Test"]


def _zeros(weight: NDArray, dtype=None, stype: str = "default") -> NDArray:
    return _nd_zeros(weight.shape, weight.context, dtype=dtype or weight.dtype, stype=stype)


def _bound(clip) -> float:
    """MXNet passes ``clip_gradient`` to its ops only when truthy; the ops clip when >= 0."""
    return float(clip) if clip else -1.0


def _clip(x: torch.Tensor, bound: float) -> torch.Tensor:
    return x.clamp(-bound, bound) if bound >= 0 else x


def _sgd_inplace(ws, gs, states, hp) -> None:
    """SGD (with momentum when a state list is given) with in-place multi-tensor torch ops.

    The same arithmetic as ``symgraph.kernels.optimizer``'s references without their temporaries and
    copies back: ``mom = momentum*mom - lr*(clip(r*g) + wd*w); w += mom``; tensors sharing
    (lr, wd) are updated together by ``torch._foreach_*`` (one call per group, not per tensor).
    """
    moms = states[0] if states else None
    for lr, wd, idx in _rate_groups(*_rate_tuples(hp, len(ws))):
        w, g, m = ws, gs, moms
        if idx is not None:
            w, g = [ws[i] for i in idx], [gs[i] for i in idx]
            m = [moms[i] for i in idx] if moms else None
        if hp.clip_gradient < 0:  # no clipping: fold the scales into alphas, no temporaries
            _sgd_unclipped(w, g, m, lr, wd, hp)
            continue
        d = torch._foreach_mul(g, hp.rescale_grad)
        torch._foreach_clamp_min_(d, -hp.clip_gradient)
        torch._foreach_clamp_max_(d, hp.clip_gradient)
        if wd:
            torch._foreach_add_(d, w, alpha=wd)
        if m is None:
            torch._foreach_add_(w, d, alpha=-lr)
            continue
        torch._foreach_mul_(m, hp.momentum)
        torch._foreach_add_(m, d, alpha=-lr)
        torch._foreach_add_(w, m)


def _rate_tuples(hp, count: int) -> tuple[tuple, tuple]:
    """``hp``'s (lrs, wds) as tuples of ``count`` values."""
    if isinstance(hp.lr, tuple) and isinstance(hp.wd, tuple) and len(hp.lr) == count:
        return hp.lr, hp.wd
    lrs, wds = zip(*hp.per_tensor(count)) if count else ((), ())
    return lrs, wds


@functools.lru_cache(maxsize=256)
def _rate_groups(lrs: tuple, wds: tuple) -> tuple:
    """``((lr, wd, positions), ...)``: the tensors sharing each (lr, wd) pair, in first-seen
    order; positions is None when one pair covers every tensor. Cached: the pairs of a model
    change only with the scheduler's learning rate."""
    if len(lrs) != len(wds):
        raise ValueError(f"{len(lrs)} lr and {len(wds)} wd values")
    groups: dict[tuple, list[int]] = {}
    for i, pair in enumerate(zip(map(float, lrs), map(float, wds))):
        groups.setdefault(pair, []).append(i)
    if len(groups) == 1:
        return tuple((lr, wd, None) for lr, wd in groups)
    return tuple((lr, wd, tuple(idx)) for (lr, wd), idx in groups.items())


def _sgd_unclipped(w, g, m, lr: float, wd: float, hp) -> None:
    """``lr*(r*g + wd*w)`` expanded as ``lr*r*g + lr*wd*w``: the same update in float32
    tolerance, as one fused pass where torch has one (``_fused_sgd``), else in as many
    ``_foreach`` passes as torch.optim.SGD."""
    r = hp.rescale_grad
    if _FUSED_SGD is not None and r != 0 and w[0].device.type == "cpu":
        _fused_sgd(w, g, m, lr, wd, r, hp.momentum)
        return
    if m is None:
        if wd:
            torch._foreach_mul_(w, 1.0 - lr * wd)
        torch._foreach_add_(w, g, alpha=-lr * r)
        return
    torch._foreach_mul_(m, hp.momentum)
    torch._foreach_add_(m, g, alpha=-lr * r)
    if wd:
        torch._foreach_add_(m, w, alpha=-lr * wd)
    torch._foreach_add_(w, m)


# torch.optim.SGD(fused=True)'s multi-tensor kernel: one pass over (w, g, m) per tensor
_FUSED_SGD = getattr(torch, "_fused_sgd_", None)


def _fused_sgd(w, g, m, lr: float, wd: float, r: float, momentum: float) -> None:
    """MXNet's ``m = momentum*m - lr*(r*g + wd*w); w += m`` (or ``w -= lr*(r*g + wd*w)``
    without momentum) through torch's fused SGD, whose rule is ``g' = g + wd_t*w;
    b = momentum*b + (1 - dampening)*g'; w -= lr_t*b``: with ``wd_t = wd/r``,
    ``dampening = 1 + lr*r`` and ``lr_t = -1`` its buffer is MXNet's momentum state
    (without momentum: ``lr_t = lr*r``, no buffer). ``g`` is only read."""
    if m is None:
        _FUSED_SGD(w, g, [], weight_decay=wd / r, momentum=0.0, lr=lr * r, dampening=0.0,
                   nesterov=False, maximize=False, is_first_step=False)
        return
    _FUSED_SGD(w, g, m, weight_decay=wd / r, momentum=momentum, lr=-1.0,
               dampening=1.0 + lr * r, nesterov=False, maximize=False, is_first_step=False)


_CPU_INPLACE = {"sgd_update": _sgd_inplace, "sgd_mom_update": _sgd_inplace}
_dtype_of = operator.attrgetter("dtype")


def _gather(weights, grads, states) -> tuple:
    """``(ws, gs, ss, route)``: the torch tensors of NDArray weights, grads and state lists,
    and where they can be updated: ``"cuda"`` (Triton), ``"float32"`` (in-place torch ops for
    the rules in ``_CPU_INPLACE``) or ``"ref"`` (the kernels' references)."""
    ws, gs = [w._t for w in weights], [g._t for g in grads]
    ss = [[s._t for s in group] for group in states]
    tensors = ws + gs + [t for group in ss for t in group]
    if ws and ws[0].is_cuda and all(map(torch.Tensor.is_contiguous, tensors)):
        return ws, gs, ss, "cuda"
    if set(map(_dtype_of, tensors)) == {torch.float32}:
        return ws, gs, ss, "float32"
    return ws, gs, ss, "ref"


def _launch(name: str, ws, gs, ss, route: str, hp) -> None:
    """``kernels.optimizer.<name>`` in place on what :func:`_gather` returned."""
    if route == "float32" and name in _CPU_INPLACE:
        _CPU_INPLACE[name](ws, gs, ss, hp)
        return
    from ..kernels import optimizer as kops
    if route == "cuda":
        getattr(kops, name)(ws, gs, *ss, hp)
        return
    out = getattr(kops, name + "_ref")(ws, gs, *ss, hp)
    for dst, src in zip(ws + sum(ss, []), out):
        dst.copy_(src)


def _fused(name: str, weights, grads, states, hp) -> None:
    """``kernels.optimizer.<name>`` in place on NDArrays: Triton on CUDA, torch otherwise."""
    _launch(name, *_gather(weights, grads, states), hp)


def _hp(**kw):
    from ..kernels.optimizer import UpdateParams
    return UpdateParams(**kw)


@functools.lru_cache(maxsize=256)
def _sgd_params(lrs: tuple, wds: tuple, rescale_grad: float, clip_gradient: float,
                momentum: float):
    """The ``UpdateParams`` of one SGD call (cached: they repeat from batch to batch)."""
    return _hp(lr=lrs, wd=wds, rescale_grad=rescale_grad, clip_gradient=clip_gradient,
               momentum=momentum)


def _as_lists(indices, weights, grads, states):
    if not isinstance(indices, (tuple, list)):
        return [indices], [weights], [grads], [states]
    return list(indices), list(weights), list(grads), list(states)


@register
class SGD(Optimizer):
    """SGD with optional momentum: ``mom = momentum*mom - lr*(clip(r*g) + wd*w); w += mom``.

    Parameters
    ----------
    momentum : float
        The momentum (no state when 0).
    lazy_update : bool
        With a row_sparse gradient, update only its rows of the weight and the momentum
        (the momentum then has the weight's storage type); else every row decays.

    Examples
    --------
    >>> import symgraph as mx
    >>> opt = mx.optimizer.SGD(learning_rate=0.5)
    >>> w, g = mx.nd.ones((2,)), mx.nd.ones((2,))
    >>> opt.update(0, w, g, opt.create_state(0, w)); w.asnumpy()
    array([0.5, 0.5], dtype=float32)
    """

    savable_fields = {"momentum": f.REAL, "lazy_update": f.boolean, "aggregate_num": f.count}
    sparse_ops = True

    def __init__(self, momentum: float = 0.0, lazy_update: bool = True, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.lazy_update = lazy_update
        self.aggregate_num = 4  # MXNET_OPTIMIZER_AGGREGATION_SIZE's default

    def create_state_multi_precision(self, index, weight):
        if self.multi_precision and _fp16(weight):
            weight_master_copy = weight.astype(np.float32)
            return (self.create_state(index, weight_master_copy), weight_master_copy)
        return super().create_state_multi_precision(index, weight)

    def create_state(self, index, weight):
        if self.momentum == 0.0:
            return None
        return _zeros(weight, stype=weight.stype if self.lazy_update else "default")

    def _kernel_name(self) -> str:
        return "sgd_mom_update" if self.momentum > 0 else "sgd_update"

    def _update_impl(self, indices, weights, grads, states, multi_precision=False):
        indices, weights, grads, states = _as_lists(indices, weights, grads, states)
        self._update_count(indices)
        self._apply(weights, grads, states, self._get_lrs(indices), self._get_wds(indices),
                    multi_precision)

    def _update_aggregated(self, indices, weights, grads, states):
        """All the ``Updater``'s same-dtype weights in one multi-tensor update.

        Counted and rated ``aggregate_num`` at a time as MXNet's chunked calls; the update
        itself is per tensor, so one call over every chunk computes the same values.
        """
        if type(self).update_multi_precision is not SGD.update_multi_precision:
            super()._update_aggregated(indices, weights, grads, states)  # a subclass's rule
            return
        lrs, wds = self._aggregated_rates(indices)
        self._apply(weights, grads, states, lrs, wds,
                    self.multi_precision and _fp16(weights[0]))

    def _apply(self, weights, grads, states, lrs, wds, multi_precision) -> None:
        sparse = [i for i, wgs in enumerate(zip(weights, grads, states)) if has_sparse(*wgs)]
        if sparse:  # MXNet's per-weight sparse ops; the dense weights stay in one fused call
            def pick(xs, idx):
                return [xs[i] for i in idx]
            sgd_sparse(self, pick(weights, sparse), pick(grads, sparse), pick(states, sparse),
                       (pick(lrs, sparse), pick(wds, sparse)), multi_precision)
            dense = [i for i in range(len(weights)) if i not in set(sparse)]
            if not dense:
                return
            weights, grads, states, lrs, wds = (pick(xs, dense) for xs in
                                                (weights, grads, states, lrs, wds))
        if multi_precision:
            masters = [s[1] for s in states]
            moms = [s[0] for s in states]
            grads = [g.astype(np.float32) for g in grads]
            self._run(masters, grads, moms, lrs, wds)
            for w, w32 in zip(weights, masters):
                w._t.copy_(w32._t)
        else:
            self._run(weights, grads, states, lrs, wds)

    def _run(self, weights, grads, moms, lrs, wds) -> None:
        """Weights with a momentum state in one fused call, those without in another."""
        with_mom = [i for i, m in enumerate(moms) if m is not None]
        if len(with_mom) in (0, len(moms)):  # the usual case: every weight alike
            self._run_part(weights, grads, moms if with_mom else None, lrs, wds)
            return
        plain = [i for i, m in enumerate(moms) if m is None]
        for part, has_mom in ((with_mom, True), (plain, False)):
            ws, gs, ms, part_lrs, part_wds = ([xs[i] for i in part]
                                              for xs in (weights, grads, moms, lrs, wds))
            self._run_part(ws, gs, ms if has_mom else None, part_lrs, part_wds)

    def _run_part(self, weights, grads, moms, lrs, wds) -> None:
        name = self._kernel_name() if moms is not None else "sgd_update"
        _fused(name, weights, grads, [moms] if name != "sgd_update" else [],
               self._params(moms is not None, lrs, wds))

    def _params(self, has_mom: bool, lrs, wds):
        momentum = max(self.momentum, 0.0) if has_mom else 0.0
        return _sgd_params(tuple(lrs), tuple(wds), self.rescale_grad,
                           _bound(self.clip_gradient), momentum)

    def _prepare_aggregated(self, indices, weights, grads, states):
        if type(self).update_multi_precision is not SGD.update_multi_precision \
                or _fp16(weights[0]) or not _uniform_states(states) \
                or has_sparse(weights, grads):
            return super()._prepare_aggregated(indices, weights, grads, states)
        return _SGDStep(self, indices, weights, grads, states)

    def update(self, index, weight, grad, state):
        self._update_impl(index, weight, grad, state, multi_precision=False)

    def update_multi_precision(self, index, weight, grad, state):
        first = weight[0] if isinstance(index, (tuple, list)) else weight
        self._update_impl(index, weight, grad, state,
                          multi_precision=self.multi_precision and _fp16(first))


def _uniform_states(states) -> bool:
    """Every state an NDArray (momentum), or every state None."""
    kinds = {type(s) for s in states}
    return kinds == {type(None)} or kinds == {NDArray}


class _SGDStep:
    """An aggregated SGD update of fixed arrays, their tensors gathered and checked once.

    The ``Updater`` prepares one per list of indices and prepares it again when an array or
    its tensor changes; the hyperparameters are read from the optimizer at every call.
    """

    def __init__(self, opt: SGD, indices, weights, grads, states):
        self.opt, self.arrays = opt, (indices, weights, grads, states)
        self.has_mom = states[0] is not None
        self.name, self.tensors = None, ()

    def __call__(self) -> None:
        opt = self.opt
        name = opt._kernel_name() if self.has_mom else "sgd_update"
        if name != self.name:  # the first call, or the momentum changed sign
            _, weights, grads, states = self.arrays
            self.name = name
            self.tensors = _gather(weights, grads, [states] if name != "sgd_update" else [])
        lrs, wds = opt._aggregated_rates(self.arrays[0])
        _launch(name, *self.tensors, opt._params(self.has_mom, lrs, wds))


@register
class ccSGD(SGD):  # MXNet's name
    """Deprecated alias of :class:`SGD` (MXNet's ``ccSGD``).

    >>> type(ccSGD()).__mro__[1].__name__
    'SGD'
    """


@register
class NAG(SGD):
    """Nesterov accelerated SGD (MXNet's ``nag_mom_update``; plain SGD without momentum).

    >>> import symgraph as mx
    >>> opt = mx.optimizer.NAG(momentum=0.9, learning_rate=0.1)
    >>> w, g = mx.nd.ones((1,)), mx.nd.ones((1,))
    >>> opt.update(0, w, g, opt.create_state(0, w)); round(float(w.asnumpy()[0]), 4)
    0.81
    """

    savable_fields = {"aggregate_num": f.no_aggregation}

    def __init__(self, momentum: float = 0.0, **kwargs):
        super().__init__(momentum=momentum, **kwargs)
        self.aggregate_num = 0

    def _kernel_name(self) -> str:
        return "nag_mom_update" if self.momentum > 0 else "sgd_update"

    def update_multi_precision(self, index, weight, grad, state):
        mp = self.multi_precision and _fp16(weight) and isinstance(state, (tuple, list))
        self._update_impl(index, weight, grad, state, multi_precision=mp)


@register
class Signum(Optimizer):
    """signSGD / Signum: step ``lr`` along the sign of the gradient (or of its momentum).

    >>> import symgraph as mx
    >>> opt = mx.optimizer.Signum(learning_rate=0.1, momentum=0.0)
    >>> w, g = mx.nd.ones((2,)), mx.nd.array([3., -2.])
    >>> opt.update(0, w, g, opt.create_state(0, w)); w.asnumpy()
    array([0.9, 1.1], dtype=float32)
    """

    savable_fields = {"momentum": f.REAL, "wd_lh": f.REAL}

    def __init__(self, learning_rate: float = 0.01, momentum: float = 0.9, wd_lh: float = 0.0,
                 **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = momentum
        self.wd_lh = wd_lh

    def create_state(self, index, weight):
        return _zeros(weight, stype=weight.stype) if self.momentum != 0.0 else None

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        w, g = weight._t.float(), grad._t.float()
        if state is not None:
            m = max(self.momentum, 0.0)
            mom = m * state._t.float() - (1 - m) * wd * w \
                - (1 - m) * _clip(self.rescale_grad * g, _bound(self.clip_gradient))
            state._t.copy_(mom)
            new = (1.0 - lr * self.wd_lh) * w + lr * torch.sign(mom)
        else:  # signsgd_update ignores clip_gradient and rescale_grad
            new = (1.0 - lr * wd) * w - lr * torch.sign(g)
        weight._t.copy_(new)


@register
class Adam(Optimizer):
    """Adam with MXNet's bias correction folded into the learning rate.

    >>> import symgraph as mx
    >>> opt = mx.optimizer.Adam(learning_rate=0.1)
    >>> w, g = mx.nd.ones((1,)), mx.nd.ones((1,))
    >>> opt.update(0, w, g, opt.create_state(0, w)); round(float(w.asnumpy()[0]), 4)
    0.9
    """

    savable_fields = {"beta1": f.DECAY, "beta2": f.DECAY, "epsilon": f.NON_NEGATIVE,
                      "lazy_update": f.boolean}
    sparse_ops = True

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, lazy_update: bool = True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.lazy_update = lazy_update

    def create_state(self, index, weight):
        stype = weight.stype if self.lazy_update else "default"
        return (_zeros(weight, stype=stype), _zeros(weight, stype=stype))

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        lr *= math.sqrt(1.0 - self.beta2 ** t) / (1.0 - self.beta1 ** t)
        if has_sparse(weight, grad, state):
            sparse_update("adam_update", [weight, grad, *state], lr=lr, wd=wd,
                          beta1=self.beta1, beta2=self.beta2, epsilon=self.epsilon,
                          rescale_grad=self.rescale_grad, clip_gradient=self.clip_gradient or None,
                          lazy_update=self.lazy_update)
            return
        hp = _hp(lr=lr, wd=wd, rescale_grad=self.rescale_grad, beta1=self.beta1,
                 beta2=self.beta2, epsilon=self.epsilon,
                 clip_gradient=_bound(self.clip_gradient))
        _fused("adam_update", [weight], [grad], [[state[0]], [state[1]]], hp)


@register
class RMSProp(Optimizer):
    """RMSProp (Tieleman & Hinton), or Graves' centered version with ``centered=True``.

    >>> import symgraph as mx
    >>> opt = mx.optimizer.RMSProp(learning_rate=0.1, centered=True)
    >>> [s.shape for s in opt.create_state(0, mx.nd.ones((2,)))]
    [(2,), (2,), (2,)]
    """

    savable_fields = {"gamma1": f.UNIT, "gamma2": f.UNIT, "centered": f.boolean,
                      "epsilon": f.NON_NEGATIVE, "clip_weights": f.BOUND}

    def __init__(self, learning_rate: float = 0.001, gamma1: float = 0.9, gamma2: float = 0.9,
                 epsilon: float = 1e-8, centered: bool = False, clip_weights=None, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1, self.gamma2 = gamma1, gamma2
        self.centered = centered
        self.epsilon = epsilon
        self.clip_weights = clip_weights

    def create_state(self, index, weight):
        count = 3 if self.centered else 1
        return tuple(_zeros(weight, np.float32, weight.stype) for _ in range(count))

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        hp = _hp(lr=lr, wd=wd, rescale_grad=self.rescale_grad, gamma1=self.gamma1,
                 gamma2=self.gamma2, epsilon=self.epsilon,
                 clip_gradient=_bound(self.clip_gradient), clip_weights=_bound(self.clip_weights))
        name = "rmspropalex_update" if self.centered else "rmsprop_update"
        _fused(name, [weight], [grad], [[s] for s in state], hp)


@register
class AdaGrad(Optimizer):
    """AdaGrad: ``history += g²; w -= lr * (g / sqrt(history + eps) + wd*w)``.

    >>> import symgraph as mx
    >>> opt = mx.optimizer.AdaGrad(learning_rate=0.1)
    >>> w, g = mx.nd.ones((1,)), mx.nd.ones((1,))
    >>> opt.update(0, w, g, opt.create_state(0, w)); round(float(w.asnumpy()[0]), 4)
    0.9
    """

    savable_fields = {"float_stable_eps": f.NON_NEGATIVE}
    sparse_ops = True

    def __init__(self, eps: float = 1e-7, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index, weight):
        return _zeros(weight, np.float32, weight.stype)

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        if grad.stype == "row_sparse":  # MXNet's sparse.adagrad_update (wd must be 0)
            sparse_update("_sparse_adagrad_update", [weight, grad, state], lr=lr, wd=wd,
                          epsilon=self.float_stable_eps, rescale_grad=self.rescale_grad,
                          clip_gradient=self.clip_gradient or None)
        elif has_sparse(weight, state):
            run_densely(functools.partial(self._dense, lr, wd), weight, grad, state)
        else:
            self._dense(lr, wd, weight, grad, state)

    def _dense(self, lr, wd, weight, grad, state) -> None:
        clip = -1.0 if self.clip_gradient is None else float(self.clip_gradient)
        hp = _hp(lr=lr, wd=wd, rescale_grad=self.rescale_grad, epsilon=self.float_stable_eps,
                 clip_gradient=clip)
        _fused("adagrad_update", [weight], [grad], [[state]], hp)


def _py_grad(opt: Optimizer, grad: NDArray, weight: NDArray | None = None,
             wd: float = 0.0) -> torch.Tensor:
    """MXNet's Python rules: ``clip(g * rescale_grad [+ wd*w])``, clip when not None."""
    g = grad._t.float() * opt.rescale_grad
    if weight is not None:
        g = g + wd * weight._t.float()
    if opt.clip_gradient is not None:
        g = g.clamp(-opt.clip_gradient, opt.clip_gradient)
    return g


@register
class AdaDelta(Optimizer):
    """AdaDelta (Zeiler 2012); no learning rate.

    >>> import symgraph as mx
    >>> len(mx.optimizer.AdaDelta().create_state(0, mx.nd.ones((2,))))
    2
    """

    savable_fields = {"rho": f.UNIT, "epsilon": f.NON_NEGATIVE}

    def __init__(self, rho: float = 0.90, epsilon: float = 1e-5, **kwargs):
        super().__init__(**kwargs)
        self.rho, self.epsilon = rho, epsilon

    def create_state(self, index, weight):
        return (_zeros(weight, np.float32), _zeros(weight, np.float32))

    def update(self, index, weight, grad, state):
        wd = self._get_wd(index)
        self._update_count(index)
        g = _py_grad(self, grad)
        acc_g, acc_delta = state[0]._t, state[1]._t
        acc_g.mul_(self.rho).add_((1.0 - self.rho) * g * g)
        delta = (acc_delta + self.epsilon).sqrt() / (acc_g + self.epsilon).sqrt() * g
        acc_delta.mul_(self.rho).add_((1.0 - self.rho) * delta * delta)
        w = weight._t.float()
        weight._t.copy_(w - (delta + wd * w))


@register
class Adamax(Optimizer):
    """AdaMax, Adam's infinity-norm variant.

    >>> import symgraph as mx
    >>> opt = mx.optimizer.Adamax(learning_rate=0.1)
    >>> w, g = mx.nd.ones((1,)), mx.nd.ones((1,))
    >>> opt.update(0, w, g, opt.create_state(0, w)); round(float(w.asnumpy()[0]), 4)
    0.9
    """

    savable_fields = {"beta1": f.DECAY, "beta2": f.UNIT}

    def __init__(self, learning_rate: float = 0.002, beta1: float = 0.9, beta2: float = 0.999,
                 **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2 = beta1, beta2

    def create_state(self, index, weight):
        return (_zeros(weight), _zeros(weight))

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        lr /= (1.0 - self.beta1 ** t)
        g = _py_grad(self, grad, weight, wd)
        m_t, u_t = state[0]._t, state[1]._t
        m_t.mul_(self.beta1).add_((1.0 - self.beta1) * g)
        u_t.copy_(torch.maximum(self.beta2 * u_t, g.abs()))
        weight._t.copy_(weight._t.float() - lr * m_t / u_t)


@register
class Nadam(Optimizer):
    """Nesterov Adam (Dozat 2016) with MXNet's momentum schedule (one per optimizer).

    >>> import symgraph as mx
    >>> mx.optimizer.Nadam().m_schedule
    1.0
    """

    savable_fields = {"beta1": f.DECAY, "beta2": f.DECAY, "epsilon": f.NON_NEGATIVE,
                      "schedule_decay": f.REAL, "m_schedule": f.UNIT}

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, schedule_decay: float = 0.004, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.schedule_decay = schedule_decay
        self.m_schedule = 1.0

    def create_state(self, index, weight):
        return (_zeros(weight), _zeros(weight))

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        g = _py_grad(self, grad, weight, wd)
        momentum_t = self.beta1 * (1. - 0.5 * pow(0.96, t * self.schedule_decay))
        momentum_t_1 = self.beta1 * (1. - 0.5 * pow(0.96, (t + 1) * self.schedule_decay))
        self.m_schedule = self.m_schedule * momentum_t
        m_schedule_next = self.m_schedule * momentum_t_1
        m_t, v_t = state[0]._t, state[1]._t
        m_t.mul_(self.beta1).add_((1. - self.beta1) * g)
        v_t.mul_(self.beta2).add_((1. - self.beta2) * g * g)
        grad_prime = g / (1. - self.m_schedule)
        m_t_prime = m_t / (1. - m_schedule_next)
        v_t_prime = v_t / (1. - pow(self.beta2, t))
        m_t_bar = (1. - momentum_t) * grad_prime + momentum_t_1 * m_t_prime
        weight._t.copy_(weight._t.float() - lr * m_t_bar / (v_t_prime.sqrt() + self.epsilon))


@register
class Ftrl(Optimizer):
    """FTRL-Proximal (McMahan et al. 2013), MXNet's ``ftrl_update``.

    >>> import symgraph as mx
    >>> mx.optimizer.create('ftrl').lr
    0.1
    """

    savable_fields = {"lamda1": f.REAL, "beta": f.NON_NEGATIVE, "lr": f.POSITIVE_LR}  # w / lr
    sparse_ops = True

    def __init__(self, lamda1: float = 0.01, learning_rate: float = 0.1, beta: float = 1,
                 **kwargs):
        super().__init__(**kwargs)
        self.lamda1, self.beta = lamda1, beta
        self.lr = learning_rate

    def create_state(self, index, weight):
        return (_zeros(weight, np.float32, weight.stype), _zeros(weight, np.float32, weight.stype))

    def update(self, index, weight, grad, state):
        self._update_count(index)
        wd, lr = self._get_wd(index), self._get_lr(index)
        if has_sparse(weight, grad, state):
            sparse_update("ftrl_update", [weight, grad, *state], lr=lr, wd=wd,
                          lamda1=self.lamda1, beta=self.beta, rescale_grad=self.rescale_grad,
                          clip_gradient=self.clip_gradient or None)
            return
        g = _clip(self.rescale_grad * grad._t.float(), _bound(self.clip_gradient))
        z, n = state[0]._t, state[1]._t
        w = weight._t.float()
        z.add_(g - ((n + g * g).sqrt() - n.sqrt()) * w / lr)
        n.add_(g * g)
        new = (torch.sign(z) * self.lamda1 - z) / ((self.beta + n.sqrt()) / lr + wd) \
            * (z.abs() > self.lamda1)
        weight._t.copy_(new)


@register
class FTML(Optimizer):
    """Follow the Moving Leader (Zheng & Kwok 2017), MXNet's ``ftml_update``.

    >>> import symgraph as mx
    >>> len(mx.optimizer.FTML().create_state(0, mx.nd.ones((2,))))
    3
    """

    savable_fields = {"beta1": f.DECAY, "beta2": f.DECAY, "epsilon": f.NON_NEGATIVE,
                      "lr": f.POSITIVE_LR}  # divides by lr

    def __init__(self, beta1: float = 0.6, beta2: float = 0.999, epsilon: float = 1e-8,
                 **kwargs):
        super().__init__(**kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon

    def create_state(self, index, weight):
        return (_zeros(weight), _zeros(weight), _zeros(weight))

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        w = weight._t.float()
        g = _clip(self.rescale_grad * grad._t.float() + wd * w, _bound(self.clip_gradient))
        d, v, z = (s._t for s in state)
        v.copy_(self.beta2 * v + (1 - self.beta2) * g * g)
        d_t = (1 - self.beta1 ** t) / lr * ((v / (1 - self.beta2 ** t)).sqrt() + self.epsilon)
        z.copy_(self.beta1 * z + (1 - self.beta1) * g - (d_t - self.beta1 * d) * w)
        d.copy_(d_t)
        weight._t.copy_(-z / d_t)


@register
class LAMB(Optimizer):
    """LAMB (You et al. 2019): Adam's step scaled by ``||w|| / ||step||`` per tensor.

    >>> import symgraph as mx
    >>> mx.optimizer.LAMB().epsilon
    1e-06
    """

    savable_fields = {"beta1": f.DECAY, "beta2": f.DECAY, "epsilon": f.NON_NEGATIVE,
                      "lower_bound": f.OPTIONAL_REAL, "upper_bound": f.OPTIONAL_REAL,
                      "bias_correction": f.boolean, "aggregate_num": f.count}

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-6, lower_bound=None, upper_bound=None,
                 bias_correction: bool = True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.lower_bound, self.upper_bound = lower_bound, upper_bound
        self.bias_correction = bias_correction
        self.aggregate_num = 45  # MXNet's default; lists are updated one tensor at a time

    def create_state(self, index, weight):
        return (_zeros(weight), _zeros(weight))

    def _step(self, index, weight, grad, state, master=None) -> None:
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        target = master if master is not None else weight
        w = target._t.float()
        step = self._direction(w, grad._t, state, t, wd)
        r1, r2 = w.norm(), step.norm()
        if self.lower_bound:
            r1 = torch.clamp(r1, min=self.lower_bound)
        if self.upper_bound:
            r1 = torch.clamp(r1, max=self.upper_bound)
        ratio = torch.where((r1 == 0) | (r2 == 0), torch.ones_like(r1), r1 / r2)
        target._t.sub_(step.mul_(ratio * lr))
        if master is not None:
            weight._t.copy_(master._t)

    def _direction(self, w: torch.Tensor, grad: torch.Tensor, state, t: int,
                   wd: float) -> torch.Tensor:
        """Update the moments in place; ``m_hat / (sqrt(v_hat) + eps) + wd*w`` (a new
        tensor; MXNet's ``lamb_update_phase1``)."""
        g = grad.float() * self.rescale_grad
        bound = _bound(self.clip_gradient)
        if bound >= 0:
            g.clamp_(-bound, bound)
        mean, var = state[0]._t, state[1]._t
        mean.mul_(self.beta1).add_(g, alpha=1 - self.beta1)
        var.mul_(self.beta2).addcmul_(g, g, value=1 - self.beta2)
        c1, c2 = (1 - self.beta1 ** t, 1 - self.beta2 ** t) if self.bias_correction \
            else (1.0, 1.0)
        m, v = torch.div(mean.float(), c1), torch.div(var.float(), c2)
        return m.div_(v.sqrt_().add_(self.epsilon)).add_(w, alpha=wd)

    def update(self, index, weight, grad, state):
        for args in zip(*_as_lists(index, weight, grad, state)):
            self._step(*args)

    def update_multi_precision(self, index, weight, grad, state):
        for i, w, g, s in zip(*_as_lists(index, weight, grad, state)):
            if self.multi_precision and _fp16(w):
                self._step(i, w, g, s[1], master=s[0])
            else:
                self._step(i, w, g, s)


@register
class Test(Optimizer):
    """MXNet's test optimizer: ``w += g * rescale_grad``; the state keeps a copy of ``w``.

    >>> import symgraph as mx
    >>> mx.optimizer.create('test').create_state(0, mx.nd.ones((2,))).shape
    (2,)
    """

    def create_state(self, index, weight):
        return _zeros(weight, np.float32)

    def update(self, index, weight, grad, state):
        weight._t.add_(grad._t * self.rescale_grad)
        state._t.copy_(weight._t)
