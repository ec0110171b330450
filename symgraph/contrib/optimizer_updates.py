"""MXNet's Python-level contrib wrappers of the AdamW and LAMB update operators, written once
for both front ends (the front end is the weight's: NDArray or Symbol).

They take lists where the operators take interleaved inputs (``weights``, ``grads``, ...),
turn a scalar ``rescale_grad`` into the one-element array AdamW's operators read, and fill
``num_weights``/``num_tensors`` from the list lengths. ``mx.nd.contrib`` has all six;
``mx.sym.contrib`` has ``adamw_update`` and ``mp_adamw_update``, as in MXNet 1.9.1.

>>> import symgraph as mx
>>> w, g = mx.nd.ones((2,)), mx.nd.ones((2,))
>>> m, v = mx.nd.zeros((2,)), mx.nd.zeros((2,))
>>> _ = mx.nd.contrib.adamw_update(w, g, m, v, 1.0, lr=0.1, eta=1.0, out=w)
>>> m.asnumpy(), w.asnumpy().round(4)
(array([0.1, 0.1], dtype=float32), array([0.6838, 0.6838], dtype=float32))
>>> _ = mx.nd.contrib.adamw_update(w, g, m, v, float("nan"), lr=0.1, eta=1.0, out=w)
>>> w.asnumpy().round(4)  # a NaN rescale skips the update
array([0.6838, 0.6838], dtype=float32)
"""
from __future__ import annotations


def _front(x):
    """The front end (``symgraph.symbol`` or ``symgraph.ndarray``) of ``x``."""
    from ..symbol.symbol import Symbol
    if isinstance(x, Symbol):
        from .. import symbol
        return symbol
    from .. import ndarray
    return ndarray


def _rescale(rescale_grad, like):
    """``rescale_grad`` as a one-element array (a Symbol, or an NDArray on ``like``'s
    context)."""
    front = _front(like)
    if front.__name__.endswith("symbol"):
        if isinstance(rescale_grad, front.Symbol):
            return rescale_grad
        return front.full(shape=(1,), val=rescale_grad)
    if isinstance(rescale_grad, front.NDArray):
        return rescale_grad.as_in_context(like.context)
    return front.full(shape=(1,), val=rescale_grad, ctx=like.context)


def _interleave(*lists) -> list:
    return [x for group in zip(*lists) for x in group]


def adamw_update(weight, grad, mean, var, rescale_grad, lr, eta, beta1=0.9, beta2=0.999,
                 epsilon=1e-8, wd=0, clip_gradient=-1, out=None, name=None, **kwargs):
    """``_adamw_update`` with ``rescale_grad`` given as a scalar or an array."""
    return _front(weight)._internal._adamw_update(
        weight, grad, mean, var, _rescale(rescale_grad, weight), lr=lr, eta=eta,
        beta1=beta1, beta2=beta2, epsilon=epsilon, wd=wd, clip_gradient=clip_gradient,
        out=out, name=name, **kwargs)


def mp_adamw_update(weight, grad, mean, var, weight32, rescale_grad, lr, eta, beta1=0.9,
                    beta2=0.999, epsilon=1e-8, wd=0, clip_gradient=-1, out=None, name=None,
                    **kwargs):
    """``_mp_adamw_update`` with ``rescale_grad`` given as a scalar or an array."""
    return _front(weight)._internal._mp_adamw_update(
        weight, grad, mean, var, weight32, _rescale(rescale_grad, weight), lr=lr, eta=eta,
        beta1=beta1, beta2=beta2, epsilon=epsilon, wd=wd, clip_gradient=clip_gradient,
        out=out, name=name, **kwargs)


def multi_adamw_update(weights, grads, mean, var, rescale_grad, lrs, wds, etas, out=None,
                       name=None, size=0, **kwargs):
    """``_multi_adamw_update`` of the lists (``size``: how many, default all)."""
    inputs = _interleave(weights, grads, mean, var) + [_rescale(rescale_grad, weights[0])]
    return _front(weights[0])._internal._multi_adamw_update(
        *inputs, out=out, num_weights=size or len(weights), lrs=lrs, wds=wds, etas=etas,
        name=name, **kwargs)


def multi_mp_adamw_update(weights, grads, mean, var, weights32, rescale_grad, lrs, wds, etas,
                          out=None, name=None, size=0, **kwargs):
    """``_multi_mp_adamw_update`` of the lists (``size``: how many, default all)."""
    inputs = _interleave(weights, grads, mean, var, weights32) + \
        [_rescale(rescale_grad, weights[0])]
    return _front(weights[0])._internal._multi_mp_adamw_update(
        *inputs, out=out, num_weights=size or len(weights), lrs=lrs, wds=wds, etas=etas,
        name=name, **kwargs)


def multi_lamb_update(weights, grads, mean, var, step_count, lrs, wds, out=None,
                      num_tensors=0, **kwargs):
    """``_multi_lamb_update`` of the lists; ``step_count`` and ``lrs`` per tensor."""
    return _front(weights[0])._internal._multi_lamb_update(
        *_interleave(weights, grads, mean, var), out=out,
        num_tensors=num_tensors or len(weights), step_count=step_count,
        learning_rates=lrs, wds=wds, **kwargs)


def multi_mp_lamb_update(weights, grads, mean, var, weights32, step_count, lrs, wds, out=None,
                         num_tensors=0, **kwargs):
    """``_multi_mp_lamb_update`` of the lists; ``weights32`` are the fp32 masters."""
    return _front(weights[0])._internal._multi_mp_lamb_update(
        *_interleave(weights, grads, mean, var, weights32), out=out,
        num_tensors=num_tensors or len(weights), step_count=step_count,
        learning_rates=lrs, wds=wds, **kwargs)
