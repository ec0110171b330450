"""MXNet 1.x's ``mx.optimizer``: optimizers, their registry and the ``Updater``.

>>> import symgraph as mx
>>> opt = mx.optimizer.create('sgd', learning_rate=0.1, rescale_grad=0.5)
>>> w, g = mx.nd.ones((2,)), mx.nd.ones((2,))
>>> opt.update(0, w, g, opt.create_state(0, w)); w.asnumpy()
array([0.95, 0.95], dtype=float32)
"""
from .optimizer import Optimizer, create, register
from .rules import (
    FTML,
    LAMB,
    NAG,
    SGD,
    AdaDelta,
    AdaGrad,
    Adam,
    Adamax,
    Ftrl,
    Nadam,
    RMSProp,
    Signum,
    Test,
    ccSGD,
)
from .updater import Updater, get_updater

__all__ = ["Optimizer", "create", "register", "get_updater", "Updater", "SGD", "NAG", "Signum",
           "Adam", "RMSProp", "AdaGrad", "AdaDelta", "Adamax", "Nadam", "Ftrl", "FTML", "LAMB",
           "ccSGD", "Test"]
