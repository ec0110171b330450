"""MXNet 1.x's ``mx.optimizer``: optimizers, their registry and the ``Updater``.

>>> import symgraph as mx
>>> opt = mx.optimizer.create('sgd', learning_rate=0.1, rescale_grad=0.5)
>>> w, g = mx.nd.ones((2,)), mx.nd.ones((2,))
>>> opt.update(0, w, g, opt.create_state(0, w)); w.asnumpy()
array([0.95, 0.95], dtype=float32)
"""
from ..ndarray import abs as NDabs  # MXNet's name
from . import contrib
from .large_batch import LARS, LBSGD
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
from .sgd_variants import DCASGD, SGLD
from .updater import Updater, get_updater

__all__ = ["AdaDelta", "AdaGrad", "Adam", "Adamax", "DCASGD", "FTML", "Ftrl", "LARS", "LBSGD",
           "NAG", "NDabs", "Nadam", "Optimizer", "RMSProp", "SGD", "SGLD", "Signum", "LAMB",
           "Test", "Updater", "ccSGD", "create", "get_updater", "register", "contrib"]
