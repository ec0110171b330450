"""DenseNet-BC (Huang et al., 2016, arXiv:1608.06993), as MXNet 1.9.1's
``gluon.model_zoo.vision.densenet``.

>>> net = densenet121(prefix='d_')
>>> [k for k in net.collect_params().keys() if k.startswith('d_stage1_conv0')]
['d_stage1_conv0_weight']
>>> len(net.features)
15
"""
from __future__ import annotations

from ... import nn
from ...block import HybridBlock
from ...contrib.nn import HybridConcurrent, Identity
from ..model_store import _CPU, _ROOT, _load_pretrained

__all__ = ["DenseNet", "densenet121", "densenet161", "densenet169", "densenet201"]


def _bn_relu_conv(seq: nn.HybridSequential, channels: int, kernel_size: int,
                  padding: int = 0) -> None:
    seq.add(nn.BatchNorm(), nn.Activation("relu"),
            nn.Conv2D(channels, kernel_size=kernel_size, padding=padding, use_bias=False))


def _make_dense_layer(growth_rate: int, bn_size: int, dropout: float) -> HybridConcurrent:
    """The input concatenated with ``growth_rate`` new channels (1x1 bottleneck of
    ``bn_size * growth_rate`` channels, then 3x3)."""
    new_features = nn.HybridSequential(prefix="")
    _bn_relu_conv(new_features, bn_size * growth_rate, 1)
    _bn_relu_conv(new_features, growth_rate, 3, padding=1)
    if dropout:
        new_features.add(nn.Dropout(dropout))
    out = HybridConcurrent(axis=1, prefix="")
    out.add(Identity(), new_features)
    return out


def _make_dense_block(num_layers: int, bn_size: int, growth_rate: int, dropout: float,
                      stage_index: int) -> nn.HybridSequential:
    block = nn.HybridSequential(prefix=f"stage{stage_index}_")
    with block.name_scope():
        for _ in range(num_layers):
            block.add(_make_dense_layer(growth_rate, bn_size, dropout))
    return block


def _make_transition(num_output_features: int) -> nn.HybridSequential:
    """BN-ReLU-1x1 convolution to ``num_output_features`` channels, 2x2 average pooling."""
    out = nn.HybridSequential(prefix="")
    _bn_relu_conv(out, num_output_features, 1)
    out.add(nn.AvgPool2D(pool_size=2, strides=2))
    return out


class DenseNet(HybridBlock):
    """DenseNet-BC: stem, dense blocks joined by transitions that halve the channels,
    BN-ReLU and 7x7 average pooling in ``features``; the Dense ``output``.

    Parameters
    ----------
    num_init_features : int
        Channels of the first convolution.
    growth_rate : int
        Channels each dense layer adds (``k`` in the paper).
    block_config : list of int
        Number of dense layers in each block.
    bn_size : int, default 4
        Bottleneck width, in multiples of ``growth_rate``.
    dropout : float, default 0
        Dropout rate after each dense layer.
    classes : int, default 1000
        Number of classes of the output layer.
    """

    def __init__(self, num_init_features: int, growth_rate: int, block_config,
                 bn_size: int = 4, dropout: float = 0, classes: int = 1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.Conv2D(num_init_features, kernel_size=7, strides=2, padding=3,
                                     use_bias=False),
                              nn.BatchNorm(), nn.Activation("relu"),
                              nn.MaxPool2D(pool_size=3, strides=2, padding=1))
            num_features = num_init_features
            for i, num_layers in enumerate(block_config):
                self.features.add(_make_dense_block(num_layers, bn_size, growth_rate, dropout,
                                                    i + 1))
                num_features += num_layers * growth_rate
                if i != len(block_config) - 1:
                    num_features //= 2
                    self.features.add(_make_transition(num_features))
            self.features.add(nn.BatchNorm(), nn.Activation("relu"), nn.AvgPool2D(pool_size=7),
                              nn.Flatten())
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


# depth -> (channels of the first convolution, growth rate, dense layers per block)
densenet_spec = {121: (64, 32, [6, 12, 24, 16]),
                 161: (96, 48, [6, 12, 36, 24]),
                 169: (64, 32, [6, 12, 32, 32]),
                 201: (64, 32, [6, 12, 48, 32])}


def get_densenet(num_layers: int, pretrained: bool = False, ctx=_CPU,
                 root: str = _ROOT, **kwargs) -> DenseNet:
    """DenseNet-BC of depth ``num_layers`` (121, 161, 169 or 201); ``pretrained``,
    ``ctx``, ``root`` as :func:`~symgraph.gluon.model_zoo.vision.get_resnet`."""
    num_init_features, growth_rate, block_config = densenet_spec[num_layers]
    net = DenseNet(num_init_features, growth_rate, block_config, **kwargs)
    if pretrained:
        _load_pretrained(net, f"densenet{num_layers}", ctx, root)
    return net


def densenet121(**kwargs) -> DenseNet:
    """DenseNet-BC-121; arguments as :func:`get_densenet`."""
    return get_densenet(121, **kwargs)


def densenet161(**kwargs) -> DenseNet:
    """DenseNet-BC-161; arguments as :func:`get_densenet`."""
    return get_densenet(161, **kwargs)


def densenet169(**kwargs) -> DenseNet:
    """DenseNet-BC-169; arguments as :func:`get_densenet`."""
    return get_densenet(169, **kwargs)


def densenet201(**kwargs) -> DenseNet:
    """DenseNet-BC-201; arguments as :func:`get_densenet`."""
    return get_densenet(201, **kwargs)
