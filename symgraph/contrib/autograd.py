"""``mx.contrib.autograd``: MXNet's first autograd API, kept for old scripts, over
``mx.autograd`` (:mod:`symgraph.imperative.autograd`; ``train_section`` records in training
mode).

>>> import symgraph as mx
>>> from symgraph.contrib import autograd
>>> x = mx.nd.array([1., 2.])
>>> g = mx.nd.zeros((2,))
>>> autograd.mark_variables([x], [g])
>>> with autograd.train_section():
...     y = x * x
>>> autograd.compute_gradient([y])
>>> g.asnumpy()
array([2., 4.], dtype=float32)
"""
from __future__ import annotations

import functools

from ..imperative import autograd as _ag
from ..ndarray.ndarray import NDArray


def set_is_training(is_train: bool) -> bool:
    """Turn recording and training mode on or off together; returns the previous state."""
    _ag.set_training(is_train)
    return _ag.set_recording(is_train)


class TrainingStateScope:
    """A ``with`` scope that records (and trains) when ``enter_state`` is True."""

    def __init__(self, enter_state: bool):
        self._enter, self._prev = enter_state, None

    def __enter__(self):
        self._prev = set_is_training(self._enter)

    def __exit__(self, *exc):
        if self._prev != self._enter:
            set_is_training(self._prev)


def train_section() -> TrainingStateScope:
    """Record operations for differentiation, in training mode."""
    return TrainingStateScope(True)


def test_section() -> TrainingStateScope:
    """Stop recording, in inference mode."""
    return TrainingStateScope(False)


def mark_variables(variables, gradients, grad_reqs="write") -> None:
    """Mark arrays whose gradients ``backward`` writes into ``gradients``."""
    _ag.mark_variables(variables, gradients, grad_reqs)


def backward(outputs, out_grads=None, retain_graph: bool = False) -> None:
    """Gradients of ``outputs`` into the marked variables."""
    _ag.backward(outputs, out_grads, retain_graph=retain_graph)


def compute_gradient(outputs) -> None:
    """``backward(outputs)`` (MXNet's deprecated name)."""
    backward(outputs)


def grad_and_loss(func, argnum=None):
    """A function returning ``(gradients of func wrt its arguments, func's result)``."""
    @functools.wraps(func)
    def wrapped(*args):
        chosen = _chosen(args, argnum)
        for x in chosen:
            if not isinstance(x, NDArray):
                raise TypeError("type of autograd input should be NDArray")
        grads = [x.zeros_like() for x in chosen]
        mark_variables(chosen, grads)
        with train_section():
            outputs = func(*args)
        compute_gradient([outputs] if isinstance(outputs, NDArray) else outputs)
        return grads, outputs
    return wrapped


def grad(func, argnum=None):
    """A function returning the gradients of ``func`` wrt its (``argnum``) arguments."""
    with_loss = grad_and_loss(func, argnum)

    @functools.wraps(func)
    def wrapped(*args):
        return with_loss(*args)[0]
    return wrapped


def _chosen(args, argnum) -> list:
    if argnum is None:
        return list(args)
    return [args[i] for i in ([argnum] if isinstance(argnum, int) else argnum)]
