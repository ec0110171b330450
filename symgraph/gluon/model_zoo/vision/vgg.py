"""VGG (Simonyan and Zisserman, 2014, arXiv:1409.1556), with or without batch
normalization, as MXNet 1.9.1's ``gluon.model_zoo.vision.vgg``.

>>> net = vgg11(classes=10, prefix='v_')
>>> [k for k in net.collect_params().keys() if k.startswith('v_conv0')]
['v_conv0_weight', 'v_conv0_bias']
>>> len(vgg11_bn().collect_params('.*running_mean'))
8
"""
from __future__ import annotations

from ....initializer import Xavier
from ... import nn
from ...block import HybridBlock
from ..model_store import _CPU, _ROOT, _load_pretrained

__all__ = ["VGG", "vgg11", "vgg13", "vgg16", "vgg19", "vgg11_bn", "vgg13_bn", "vgg16_bn",
           "vgg19_bn", "get_vgg"]


class VGG(HybridBlock):
    """VGG: blocks of 3x3 convolutions (each optionally batch-normalized) closed by 2x2
    max pooling, two 4096-unit Dense layers with dropout, and the Dense ``output``.

    Parameters
    ----------
    layers : list of int
        Number of convolutions in each block.
    filters : list of int
        Channels of each block's convolutions (as long as ``layers``).
    classes : int, default 1000
        Number of classes of the output layer.
    batch_norm : bool, default False
        Add a BatchNorm after every convolution.
    """

    def __init__(self, layers, filters, classes: int = 1000, batch_norm: bool = False,
                 **kwargs):
        super().__init__(**kwargs)
        if len(layers) != len(filters):
            raise ValueError(f"layers and filters must have the same length, got "
                             f"{layers} and {filters}")
        with self.name_scope():
            self.features = self._make_features(layers, filters, batch_norm)
            for _ in range(2):
                self.features.add(nn.Dense(4096, activation="relu", weight_initializer="normal",
                                           bias_initializer="zeros"),
                                  nn.Dropout(rate=0.5))
            self.output = nn.Dense(classes, weight_initializer="normal",
                                   bias_initializer="zeros")

    def _make_features(self, layers, filters, batch_norm):
        featurizer = nn.HybridSequential(prefix="")
        for num, channels in zip(layers, filters):
            for _ in range(num):
                featurizer.add(nn.Conv2D(channels, kernel_size=3, padding=1,
                                         weight_initializer=Xavier(rnd_type="gaussian",
                                                                   factor_type="out",
                                                                   magnitude=2),
                                         bias_initializer="zeros"))
                if batch_norm:
                    featurizer.add(nn.BatchNorm())
                featurizer.add(nn.Activation("relu"))
            featurizer.add(nn.MaxPool2D(strides=2))
        return featurizer

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


# depth -> (convolutions per block, channels per block)
vgg_spec = {11: ([1, 1, 2, 2, 2], [64, 128, 256, 512, 512]),
            13: ([2, 2, 2, 2, 2], [64, 128, 256, 512, 512]),
            16: ([2, 2, 3, 3, 3], [64, 128, 256, 512, 512]),
            19: ([2, 2, 4, 4, 4], [64, 128, 256, 512, 512])}


def get_vgg(num_layers: int, pretrained: bool = False, ctx=_CPU,
            root: str = _ROOT, **kwargs) -> VGG:
    """VGG of depth ``num_layers`` (11, 13, 16 or 19); ``batch_norm=True`` adds
    BatchNorm; ``pretrained``, ``ctx``, ``root`` as
    :func:`~symgraph.gluon.model_zoo.vision.get_resnet`."""
    layers, filters = vgg_spec[num_layers]
    net = VGG(layers, filters, **kwargs)
    if pretrained:
        suffix = "_bn" if kwargs.get("batch_norm") else ""
        _load_pretrained(net, f"vgg{num_layers}{suffix}", ctx, root)
    return net


def vgg11(**kwargs) -> VGG:
    """VGG-11; arguments as :func:`get_vgg`."""
    return get_vgg(11, **kwargs)


def vgg13(**kwargs) -> VGG:
    """VGG-13; arguments as :func:`get_vgg`."""
    return get_vgg(13, **kwargs)


def vgg16(**kwargs) -> VGG:
    """VGG-16; arguments as :func:`get_vgg`."""
    return get_vgg(16, **kwargs)


def vgg19(**kwargs) -> VGG:
    """VGG-19; arguments as :func:`get_vgg`."""
    return get_vgg(19, **kwargs)


def vgg11_bn(**kwargs) -> VGG:
    """VGG-11 with batch normalization; arguments as :func:`get_vgg`."""
    kwargs["batch_norm"] = True
    return get_vgg(11, **kwargs)


def vgg13_bn(**kwargs) -> VGG:
    """VGG-13 with batch normalization; arguments as :func:`get_vgg`."""
    kwargs["batch_norm"] = True
    return get_vgg(13, **kwargs)


def vgg16_bn(**kwargs) -> VGG:
    """VGG-16 with batch normalization; arguments as :func:`get_vgg`."""
    kwargs["batch_norm"] = True
    return get_vgg(16, **kwargs)


def vgg19_bn(**kwargs) -> VGG:
    """VGG-19 with batch normalization; arguments as :func:`get_vgg`."""
    kwargs["batch_norm"] = True
    return get_vgg(19, **kwargs)
