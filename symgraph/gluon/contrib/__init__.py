"""``mx.gluon.contrib``: MXNet 1.9.1's contributed Gluon layers.

``nn`` (concatenating containers, ``Identity``, ``SyncBatchNorm``, pixel shuffles) and
``rnn`` (``LSTMPCell``, ``VariationalDropoutCell``) are provided; ``estimator``, ``data``
and ``cnn`` are the raising stand-ins of :mod:`symgraph.unsupported`.

>>> import symgraph as mx
>>> from symgraph.gluon.contrib import nn
>>> net = nn.HybridConcurrent(axis=1)
>>> net.add(nn.Identity(), nn.Identity())
>>> net(mx.nd.ones((2, 3))).shape
(2, 6)
>>> from symgraph.gluon.contrib import estimator
>>> estimator.Estimator(net=None, loss=None)
Traceback (most recent call last):
...
symgraph.base.UnsupportedError: mx.gluon.contrib.estimator.Estimator is not supported by \
symgraph: the Gluon Estimator training loop is not implemented
"""
from __future__ import annotations

from ... import unsupported
from . import nn, rnn

cnn = unsupported.module("gluon.contrib.cnn")
data = unsupported.module("gluon.contrib.data")
estimator = unsupported.module("gluon.contrib.estimator")

__all__ = ["nn", "rnn", "cnn", "data", "estimator"]
