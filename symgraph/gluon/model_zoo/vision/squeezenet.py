"""SqueezeNet 1.0 (Iandola et al., 2016, arXiv:1602.07360) and 1.1 (the SqueezeNet
repository's cheaper variant), as MXNet 1.9.1's ``gluon.model_zoo.vision.squeezenet``.

>>> net = squeezenet1_1(prefix='s_')
>>> [k for k in net.collect_params().keys()][:4]
['s_conv0_weight', 's_conv0_bias', 's_conv1_weight', 's_conv1_bias']
"""
from __future__ import annotations

from ... import nn
from ...block import HybridBlock
from ...contrib.nn import HybridConcurrent
from ..model_store import _CPU, _ROOT, _load_pretrained

__all__ = ["SqueezeNet", "squeezenet1_0", "squeezenet1_1"]


def _conv_relu(channels: int, kernel_size: int, padding: int = 0) -> nn.HybridSequential:
    out = nn.HybridSequential(prefix="")
    out.add(nn.Conv2D(channels, kernel_size, padding=padding), nn.Activation("relu"))
    return out


def _make_fire(squeeze_channels: int, expand1x1_channels: int,
               expand3x3_channels: int) -> nn.HybridSequential:
    """A fire module: a 1x1 squeeze, then 1x1 and 3x3 expansions concatenated."""
    out = nn.HybridSequential(prefix="")
    out.add(_conv_relu(squeeze_channels, 1))
    paths = HybridConcurrent(axis=1, prefix="")
    paths.add(_conv_relu(expand1x1_channels, 1), _conv_relu(expand3x3_channels, 3, 1))
    out.add(paths)
    return out


def _pool():
    return nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True)


# version -> the stem convolution (channels, kernel, stride), then the layers after its
# ReLU: "pool" or a fire module's squeeze width (its expansions are 4 times as wide)
_LAYOUT = {"1.0": ((96, 7, 2), ["pool", 16, 16, 32, "pool", 32, 48, 48, 64, "pool", 64]),
           "1.1": ((64, 3, 2), ["pool", 16, 16, "pool", 32, 32, "pool", 48, 48, 64, 64])}


class SqueezeNet(HybridBlock):
    """SqueezeNet: stem convolution, fire modules and max poolings, dropout in
    ``features``; a 1x1 convolution to ``classes``, ReLU and 13x13 average pooling in
    ``output`` (so inputs are 224x224).

    Parameters
    ----------
    version : str
        ``'1.0'`` or ``'1.1'``.
    classes : int, default 1000
        Number of classes.
    """

    def __init__(self, version: str, classes: int = 1000, **kwargs):
        super().__init__(**kwargs)
        if version not in _LAYOUT:
            raise ValueError(f"Unsupported SqueezeNet version {version}: 1.0 or 1.1 expected")
        (channels, kernel, stride), layers = _LAYOUT[version]
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.Conv2D(channels, kernel_size=kernel, strides=stride),
                              nn.Activation("relu"))
            for layer in layers:
                self.features.add(_pool() if layer == "pool" else
                                  _make_fire(layer, 4 * layer, 4 * layer))
            self.features.add(nn.Dropout(0.5))
            self.output = nn.HybridSequential(prefix="")
            self.output.add(nn.Conv2D(classes, kernel_size=1), nn.Activation("relu"),
                            nn.AvgPool2D(13), nn.Flatten())

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def get_squeezenet(version: str, pretrained: bool = False, ctx=_CPU,
                   root: str = _ROOT, **kwargs) -> SqueezeNet:
    """SqueezeNet ``version`` (``'1.0'`` or ``'1.1'``); ``pretrained``, ``ctx``, ``root``
    as :func:`~symgraph.gluon.model_zoo.vision.get_resnet`."""
    net = SqueezeNet(version, **kwargs)
    if pretrained:
        _load_pretrained(net, f"squeezenet{version}", ctx, root)
    return net


def squeezenet1_0(**kwargs) -> SqueezeNet:
    """SqueezeNet 1.0; arguments as :func:`get_squeezenet`."""
    return get_squeezenet("1.0", **kwargs)


def squeezenet1_1(**kwargs) -> SqueezeNet:
    """SqueezeNet 1.1; arguments as :func:`get_squeezenet`."""
    return get_squeezenet("1.1", **kwargs)
