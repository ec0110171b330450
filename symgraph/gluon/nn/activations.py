"""Activation layers, as MXNet 1.9.1's ``gluon/nn/activations.py``.

Examples
--------
>>> import symgraph as mx
>>> act = mx.gluon.nn.Activation('relu')
>>> act
Activation(relu)
>>> act(mx.nd.array([[-1.0, 2.0]])).asnumpy()
array([[0., 2.]], dtype=float32)
>>> mx.gluon.nn.LeakyReLU(-0.1)
Traceback (most recent call last):
...
AssertionError: Slope coefficient for LeakyReLU must be no less than 0.
"""
from __future__ import annotations

from ... import initializer
from ..block import HybridBlock
from ..utils import _require

__all__ = ["Activation", "LeakyReLU", "PReLU", "ELU", "SELU", "Swish", "GELU"]


class Activation(HybridBlock):
    """Applies an activation function (``relu``, ``sigmoid``, ``tanh``, ``softrelu``,
    ``softsign``) to the input; the block is named after it (``relu0_``)."""

    def __init__(self, activation: str, **kwargs):
        self._act_type = activation
        super().__init__(**kwargs)

    def _alias(self) -> str:
        return self._act_type

    def hybrid_forward(self, F, x):
        return F.Activation(x, act_type=self._act_type, name="fwd")

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._act_type})"


class LeakyReLU(HybridBlock):
    """``x`` for ``x >= 0``, ``alpha * x`` otherwise (``alpha >= 0``)."""

    def __init__(self, alpha: float, **kwargs):
        _require(alpha >= 0, "Slope coefficient for LeakyReLU must be no less than 0.")
        super().__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="leaky", slope=self._alpha, name="fwd")

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._alpha})"


class PReLU(HybridBlock):
    """Leaky ReLU with a learned slope ``alpha`` (``in_channels`` slopes, default one)."""

    def __init__(self, alpha_initializer=None, in_channels: int = 1, **kwargs):
        super().__init__(**kwargs)
        if alpha_initializer is None:
            alpha_initializer = initializer.Constant(0.25)
        with self.name_scope():
            self.alpha = self.params.get("alpha", shape=(in_channels,), init=alpha_initializer)

    def hybrid_forward(self, F, x, alpha):
        return F.LeakyReLU(x, gamma=alpha, act_type="prelu", name="fwd")


class ELU(HybridBlock):
    """Exponential linear unit: ``alpha * (exp(x) - 1)`` for ``x < 0``."""

    def __init__(self, alpha: float = 1.0, **kwargs):
        super().__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="elu", slope=self._alpha)


class SELU(HybridBlock):
    """Scaled exponential linear unit (Klambauer et al., 2017)."""

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="selu", name="fwd")


class GELU(HybridBlock):
    """Gaussian error linear unit (Hendrycks et al., 2016)."""

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="gelu", name="fwd")


class Swish(HybridBlock):
    """``x * sigmoid(beta * x)``."""

    def __init__(self, beta: float = 1.0, **kwargs):
        super().__init__(**kwargs)
        self._beta = beta

    def hybrid_forward(self, F, x):
        return x * F.sigmoid(self._beta * x, name="fwd")
