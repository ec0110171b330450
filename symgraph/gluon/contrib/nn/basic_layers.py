"""Contributed layers, as MXNet 1.9.1's ``gluon/contrib/nn/basic_layers.py``: containers
that concatenate their children's outputs, ``Identity``, ``SyncBatchNorm`` and the pixel
shuffles.

Examples
--------
>>> import symgraph as mx
>>> from symgraph.gluon.contrib.nn import HybridConcurrent, Identity, PixelShuffle2D
>>> net = HybridConcurrent(axis=1, prefix='cat_')
>>> with net.name_scope():
...     net.add(mx.gluon.nn.Dense(3), Identity())
>>> net.initialize()
>>> net(mx.nd.ones((2, 4))).shape
(2, 7)
>>> PixelShuffle2D((2, 3))(mx.nd.zeros((1, 12, 3, 5))).shape
(1, 2, 6, 15)
"""
from __future__ import annotations

import warnings

from .... import context
from .... import ndarray as nd
from ....base import unsupported
from ...block import Block, HybridBlock
from ...nn import BatchNorm, HybridSequential, Sequential

__all__ = ["Concurrent", "HybridConcurrent", "Identity", "SparseEmbedding", "SyncBatchNorm",
           "PixelShuffle1D", "PixelShuffle2D", "PixelShuffle3D"]


class Concurrent(Sequential):
    """Feeds the input to every child and concatenates their outputs along ``axis``
    (children run one after the other in Python).

    >>> import symgraph as mx
    >>> net = Concurrent(axis=0)
    >>> net.add(Identity(), Identity())
    >>> net(mx.nd.ones((2, 3))).shape
    (4, 3)
    """

    def __init__(self, axis: int = -1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def forward(self, x):
        return nd.concat(*[block(x) for block in self._children.values()], dim=self.axis)


class HybridConcurrent(HybridSequential):
    """Feeds the input to every child and concatenates their outputs along ``axis``, in
    one graph (see the module's example)."""

    def __init__(self, axis: int = -1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def hybrid_forward(self, F, x):
        return F.concat(*[block(x) for block in self._children.values()], dim=self.axis)


class Identity(HybridBlock):
    """Returns its input: the skip branch of a ``HybridConcurrent``.

    >>> import symgraph as mx
    >>> Identity()(mx.nd.array([1, 2])).asnumpy()
    array([1., 2.], dtype=float32)
    """

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F, x):
        return x


class SparseEmbedding(Block):
    """An embedding with row-sparse weight and gradient (not supported: symgraph stores
    dense arrays only; ``nn.Embedding`` computes the same values).

    >>> SparseEmbedding(10, 4)
    Traceback (most recent call last):
    ...
    symgraph.base.UnsupportedError: mx.gluon.contrib.nn.SparseEmbedding is not supported by \
symgraph: row_sparse parameters and gradients are not implemented (dense storage only); \
use gluon.nn.Embedding
    """

    def __init__(self, input_dim: int, output_dim: int, dtype="float32",
                 weight_initializer=None, **kwargs):
        raise unsupported("mx.gluon.contrib.nn.SparseEmbedding",
                          "row_sparse parameters and gradients are not implemented (dense "
                          "storage only); use gluon.nn.Embedding")


class SyncBatchNorm(BatchNorm):
    """Batch normalization whose statistics MXNet computes over all devices' batches.

    symgraph runs a Gluon block on one device at a time, so this is ``BatchNorm`` over
    axis 1 with the batch of the device it runs on; ``num_devices`` is kept (and shown in
    the repr) but does not change the result.

    >>> import warnings
    >>> bn = SyncBatchNorm(in_channels=3, num_devices=1, prefix='sbn_')
    >>> bn
    SyncBatchNorm(eps=1e-05, momentum=0.9, fix_gamma=False, use_global_stats=False, \
ndev=1, key='sbn_', in_channels=3)
    >>> sorted(bn.collect_params().keys())
    ['sbn_beta', 'sbn_gamma', 'sbn_running_mean', 'sbn_running_var']
    """

    def __init__(self, in_channels: int = 0, num_devices: int | None = None,
                 momentum: float = 0.9, epsilon: float = 1e-5, center: bool = True,
                 scale: bool = True, use_global_stats: bool = False,
                 beta_initializer="zeros", gamma_initializer="ones",
                 running_mean_initializer="zeros", running_variance_initializer="ones",
                 **kwargs):
        super().__init__(axis=1, momentum=momentum, epsilon=epsilon, center=center,
                         scale=scale, use_global_stats=use_global_stats,
                         beta_initializer=beta_initializer, gamma_initializer=gamma_initializer,
                         running_mean_initializer=running_mean_initializer,
                         running_variance_initializer=running_variance_initializer,
                         in_channels=in_channels, **kwargs)
        if num_devices is None:
            num_devices = self._get_num_devices()
        self._bn_kwargs = {"axis": 1, "eps": epsilon, "momentum": momentum,
                           "fix_gamma": not scale, "use_global_stats": use_global_stats}
        # MXNet's operator arguments, shown by the repr
        self._kwargs = {"eps": epsilon, "momentum": momentum, "fix_gamma": not scale,
                        "use_global_stats": use_global_stats, "ndev": num_devices,
                        "key": self.prefix}

    def _get_num_devices(self) -> int:
        warnings.warn("Caution using SyncBatchNorm: if not using all the GPUs, please "
                      "mannually set num_devices", UserWarning, stacklevel=3)
        return max(context.num_gpus(), 1)

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        # one device: the cross-device statistics are this batch's
        return F.BatchNorm(x, gamma, beta, running_mean, running_var, name="fwd",
                           **self._bn_kwargs)


def _factors(factor, n: int) -> tuple:
    """``factor`` (an int or ``n`` ints) as a tuple of ``n`` ints."""
    try:
        return (int(factor),) * n
    except TypeError:
        factors = tuple(int(f) for f in factor)
        if len(factors) != n:
            raise ValueError(f"wrong length {len(factors)}: expected {n} factors, "
                             f"got {factor}") from None
        return factors


class PixelShuffle1D(HybridBlock):
    """Moves groups of ``factor`` channels into the width: ``(N, f*C, W)`` ->
    ``(N, C, W*f)``.

    >>> import symgraph as mx
    >>> PixelShuffle1D(2)(mx.nd.zeros((1, 8, 3))).shape
    (1, 4, 6)
    """

    def __init__(self, factor):
        super().__init__()
        self._factor = int(factor)

    def hybrid_forward(self, F, x):
        x = F.reshape(x, (0, -4, -1, self._factor, 0))   # (N, C, f, W)
        x = F.transpose(x, (0, 1, 3, 2))                  # (N, C, W, f)
        return F.reshape(x, (0, 0, -3))                   # (N, C, W*f)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._factor})"


class PixelShuffle2D(HybridBlock):
    """Moves groups of ``f1*f2`` channels into ``f1 x f2`` blocks of pixels:
    ``(N, f1*f2*C, H, W)`` -> ``(N, C, H*f1, W*f2)`` (see the module's example)."""

    def __init__(self, factor):
        super().__init__()
        self._factors = _factors(factor, 2)

    def hybrid_forward(self, F, x):
        f1, f2 = self._factors
        x = F.reshape(x, (0, -4, -1, f1 * f2, 0, 0))    # (N, C, f1*f2, H, W)
        x = F.reshape(x, (0, 0, -4, f1, f2, 0, 0))      # (N, C, f1, f2, H, W)
        x = F.transpose(x, (0, 1, 4, 2, 5, 3))          # (N, C, H, f1, W, f2)
        return F.reshape(x, (0, 0, -3, -3))             # (N, C, H*f1, W*f2)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._factors})"


class PixelShuffle3D(HybridBlock):
    """Moves groups of ``f1*f2*f3`` channels into ``f1 x f2 x f3`` blocks of voxels:
    ``(N, f1*f2*f3*C, D, H, W)`` -> ``(N, C, D*f1, H*f2, W*f3)``.

    >>> import symgraph as mx
    >>> PixelShuffle3D((2, 3, 4))(mx.nd.zeros((1, 48, 3, 5, 7))).shape
    (1, 2, 6, 15, 28)
    """

    def __init__(self, factor):
        super().__init__()
        self._factors = _factors(factor, 3)

    def hybrid_forward(self, F, x):
        f1, f2, f3 = self._factors
        x = F.reshape(x, (0, -4, -1, f1 * f2 * f3, 0, 0, 0))    # (N, C, f1*f2*f3, D, H, W)
        x = F.reshape(x, (0, 0, -4, f1, f2 * f3, 0, 0, 0))      # (N, C, f1, f2*f3, D, H, W)
        x = F.reshape(x, (0, 0, 0, -4, f2, f3, 0, 0, 0))        # (N, C, f1, f2, f3, D, H, W)
        x = F.transpose(x, (0, 1, 5, 2, 6, 3, 7, 4))            # (N, C, D, f1, H, f2, W, f3)
        return F.reshape(x, (0, 0, -3, -3, -3))                 # (N, C, D*f1, H*f2, W*f3)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._factors})"
