"""Inception v3 (Szegedy et al., 2015, arXiv:1512.00567), as MXNet 1.9.1's
``gluon.model_zoo.vision.inception``. It expects 299x299 inputs.

>>> net = inception_v3(prefix='i_')
>>> [k for k in net.collect_params().keys() if k.startswith('i_A1_conv0')]
['i_A1_conv0_weight']
>>> len(net.collect_params())
472
"""
from __future__ import annotations

from ... import nn
from ...block import HybridBlock
from ...contrib.nn import HybridConcurrent
from ..model_store import _CPU, _ROOT, _load_pretrained

__all__ = ["Inception3", "inception_v3"]


def _make_basic_conv(channels: int, kernel_size, strides=1, padding=0) -> nn.HybridSequential:
    """Convolution (no bias), BatchNorm (epsilon 0.001), ReLU."""
    out = nn.HybridSequential(prefix="")
    out.add(nn.Conv2D(channels, kernel_size, strides=strides, padding=padding, use_bias=False),
            nn.BatchNorm(epsilon=0.001), nn.Activation("relu"))
    return out


def _make_branch(use_pool: str | None, *convs) -> nn.HybridSequential:
    """Optional pooling (``'avg'``: 3x3/1 padded, ``'max'``: 3x3/2), then basic
    convolutions, each given as ``(channels, kernel, stride, padding)``."""
    out = nn.HybridSequential(prefix="")
    if use_pool == "avg":
        out.add(nn.AvgPool2D(pool_size=3, strides=1, padding=1))
    elif use_pool == "max":
        out.add(nn.MaxPool2D(pool_size=3, strides=2))
    for conv in convs:
        out.add(_make_basic_conv(*conv))
    return out


def _concurrent(prefix: str = "") -> HybridConcurrent:
    return HybridConcurrent(axis=1, prefix=prefix)


def _make_module(prefix: str, branches) -> HybridConcurrent:
    """Branches, each ``(pooling, conv...)``, concatenated on the channels."""
    out = _concurrent(prefix)
    with out.name_scope():
        for pool, *convs in branches:
            out.add(_make_branch(pool, *convs))
    return out


def _make_A(pool_features: int, prefix: str) -> HybridConcurrent:
    return _make_module(prefix, [
        (None, (64, 1)),
        (None, (48, 1), (64, 5, 1, 2)),
        (None, (64, 1), (96, 3, 1, 1), (96, 3, 1, 1)),
        ("avg", (pool_features, 1))])


def _make_B(prefix: str) -> HybridConcurrent:
    return _make_module(prefix, [
        (None, (384, 3, 2)),
        (None, (64, 1), (96, 3, 1, 1), (96, 3, 2)),
        ("max",)])


def _make_C(channels_7x7: int, prefix: str) -> HybridConcurrent:
    c = channels_7x7
    return _make_module(prefix, [
        (None, (192, 1)),
        (None, (c, 1), (c, (1, 7), 1, (0, 3)), (192, (7, 1), 1, (3, 0))),
        (None, (c, 1), (c, (7, 1), 1, (3, 0)), (c, (1, 7), 1, (0, 3)), (c, (7, 1), 1, (3, 0)),
         (192, (1, 7), 1, (0, 3))),
        ("avg", (192, 1))])


def _make_D(prefix: str) -> HybridConcurrent:
    return _make_module(prefix, [
        (None, (192, 1), (320, 3, 2)),
        (None, (192, 1), (192, (1, 7), 1, (0, 3)), (192, (7, 1), 1, (3, 0)), (192, 3, 2)),
        ("max",)])


def _split_3x3(stem: nn.HybridSequential) -> nn.HybridSequential:
    """``stem``, then its output through a 1x3 and a 3x1 convolution, concatenated."""
    out = nn.HybridSequential(prefix="")
    out.add(stem)
    split = _concurrent()
    split.add(_make_branch(None, (384, (1, 3), 1, (0, 1))),
              _make_branch(None, (384, (3, 1), 1, (1, 0))))
    out.add(split)
    return out


def _make_E(prefix: str) -> HybridConcurrent:
    out = _concurrent(prefix)
    with out.name_scope():
        out.add(_make_branch(None, (320, 1)))
        out.add(_split_3x3(_make_branch(None, (384, 1))))
        out.add(_split_3x3(_make_branch(None, (448, 1), (384, 3, 1, 1))))
        out.add(_make_branch("avg", (192, 1)))
    return out


def make_aux(classes: int) -> nn.HybridSequential:
    """The auxiliary classifier head of Inception v3 (not part of ``Inception3``)."""
    out = nn.HybridSequential(prefix="")
    out.add(nn.AvgPool2D(pool_size=5, strides=3), _make_basic_conv(128, 1),
            _make_basic_conv(768, 5), nn.Flatten(), nn.Dense(classes))
    return out


class Inception3(HybridBlock):
    """Inception v3: the stem, modules A1-A3, B, C1-C4, D, E1-E2, 8x8 average pooling
    and dropout in ``features``; the Dense ``output``.

    Parameters
    ----------
    classes : int, default 1000
        Number of classes of the output layer.
    """

    def __init__(self, classes: int = 1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(_make_basic_conv(32, 3, 2), _make_basic_conv(32, 3),
                              _make_basic_conv(64, 3, 1, 1),
                              nn.MaxPool2D(pool_size=3, strides=2),
                              _make_basic_conv(80, 1), _make_basic_conv(192, 3),
                              nn.MaxPool2D(pool_size=3, strides=2))
            self.features.add(_make_A(32, "A1_"), _make_A(64, "A2_"), _make_A(64, "A3_"),
                              _make_B("B_"))
            for i, channels_7x7 in enumerate([128, 160, 160, 192]):
                self.features.add(_make_C(channels_7x7, f"C{i + 1}_"))
            self.features.add(_make_D("D_"), _make_E("E1_"), _make_E("E2_"),
                              nn.AvgPool2D(pool_size=8), nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def inception_v3(pretrained: bool = False, ctx=_CPU,
                 root: str = _ROOT, **kwargs) -> Inception3:
    """Inception v3; ``pretrained``, ``ctx``, ``root`` as
    :func:`~symgraph.gluon.model_zoo.vision.get_resnet`."""
    net = Inception3(**kwargs)
    if pretrained:
        _load_pretrained(net, "inceptionv3", ctx, root)
    return net
