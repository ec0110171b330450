"""ResNet V1 (He et al., 2015, arXiv:1512.03385) and V2 (He et al., 2016,
arXiv:1603.05027), as MXNet 1.9.1's ``gluon.model_zoo.vision.resnet``: the same blocks,
parameter names and factory functions.

Examples
--------
>>> import symgraph as mx
>>> net = get_resnet(1, 18, classes=10, prefix='r18_')
>>> [k for k in net.collect_params().keys()][:3]
['r18_conv0_weight', 'r18_batchnorm0_gamma', 'r18_batchnorm0_beta']
>>> net.initialize()
>>> net(mx.nd.ones((1, 3, 32, 32))).shape
(1, 10)
"""
from __future__ import annotations

from ... import nn
from ...block import HybridBlock
from ..model_store import _CPU, _ROOT, _load_pretrained

__all__ = ["ResNetV1", "ResNetV2", "BasicBlockV1", "BasicBlockV2", "BottleneckV1",
           "BottleneckV2", "resnet18_v1", "resnet34_v1", "resnet50_v1", "resnet101_v1",
           "resnet152_v1", "resnet18_v2", "resnet34_v2", "resnet50_v2", "resnet101_v2",
           "resnet152_v2", "get_resnet"]


def _conv3x3(channels: int, stride: int, in_channels: int) -> nn.Conv2D:
    return nn.Conv2D(channels, kernel_size=3, strides=stride, padding=1, use_bias=False,
                     in_channels=in_channels)


def _sequential(*layers) -> nn.HybridSequential:
    """An unnamed HybridSequential (prefix ''): its layers take the enclosing scope's names."""
    seq = nn.HybridSequential(prefix="")
    seq.add(*layers)
    return seq


def _projection(channels: int, stride: int, in_channels: int, with_bn: bool):
    """The 1x1 convolution (V1: followed by a BatchNorm) that shapes the shortcut."""
    conv = nn.Conv2D(channels, kernel_size=1, strides=stride, use_bias=False,
                     in_channels=in_channels)
    return _sequential(conv, nn.BatchNorm()) if with_bn else conv


class BasicBlockV1(HybridBlock):
    """Two 3x3 convolutions with a shortcut, ReLU after the sum (ResNet V1 18/34).

    Parameters
    ----------
    channels : int
        Number of output channels.
    stride : int
        Stride of the first convolution (and the shortcut's projection).
    downsample : bool, default False
        Whether the shortcut is a 1x1 projection (changed shape) instead of the identity.
    in_channels : int, default 0
        Number of input channels; 0 infers it from the first input.
    """

    def __init__(self, channels: int, stride: int, downsample: bool = False,
                 in_channels: int = 0, **kwargs):
        super().__init__(**kwargs)
        self.body = _sequential(_conv3x3(channels, stride, in_channels), nn.BatchNorm(),
                                nn.Activation("relu"), _conv3x3(channels, 1, channels),
                                nn.BatchNorm())
        self.downsample = _projection(channels, stride, in_channels, True) \
            if downsample else None

    def hybrid_forward(self, F, x):
        body = self.body(x)
        residual = self.downsample(x) if self.downsample is not None else x
        return F.Activation(residual + body, act_type="relu")


class BottleneckV1(HybridBlock):
    """1x1 -> 3x3 -> 1x1 convolutions (a quarter of ``channels`` inside) with a shortcut,
    ReLU after the sum (ResNet V1 50/101/152); parameters as :class:`BasicBlockV1`."""

    def __init__(self, channels: int, stride: int, downsample: bool = False,
                 in_channels: int = 0, **kwargs):
        super().__init__(**kwargs)
        inner = channels // 4
        self.body = _sequential(
            nn.Conv2D(inner, kernel_size=1, strides=stride), nn.BatchNorm(),
            nn.Activation("relu"), _conv3x3(inner, 1, inner), nn.BatchNorm(),
            nn.Activation("relu"), nn.Conv2D(channels, kernel_size=1, strides=1),
            nn.BatchNorm())
        self.downsample = _projection(channels, stride, in_channels, True) \
            if downsample else None

    def hybrid_forward(self, F, x):
        body = self.body(x)
        residual = self.downsample(x) if self.downsample is not None else x
        return F.Activation(body + residual, act_type="relu")


class BasicBlockV2(HybridBlock):
    """Pre-activation block: BN-ReLU-3x3 conv twice, plus the shortcut (ResNet V2 18/34);
    parameters as :class:`BasicBlockV1`."""

    def __init__(self, channels: int, stride: int, downsample: bool = False,
                 in_channels: int = 0, **kwargs):
        super().__init__(**kwargs)
        self.bn1 = nn.BatchNorm()
        self.conv1 = _conv3x3(channels, stride, in_channels)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(channels, 1, channels)
        self.downsample = _projection(channels, stride, in_channels, False) \
            if downsample else None

    def hybrid_forward(self, F, x):
        residual = x
        x = F.Activation(self.bn1(x), act_type="relu")
        if self.downsample is not None:
            residual = self.downsample(x)  # V2 projects the pre-activated input
        x = F.Activation(self.bn2(self.conv1(x)), act_type="relu")
        return self.conv2(x) + residual


class BottleneckV2(HybridBlock):
    """Pre-activation bottleneck: BN-ReLU before each of the 1x1, 3x3 and 1x1
    convolutions, plus the shortcut (ResNet V2 50/101/152); parameters as
    :class:`BasicBlockV1`."""

    def __init__(self, channels: int, stride: int, downsample: bool = False,
                 in_channels: int = 0, **kwargs):
        super().__init__(**kwargs)
        inner = channels // 4
        self.bn1 = nn.BatchNorm()
        self.conv1 = nn.Conv2D(inner, kernel_size=1, strides=1, use_bias=False)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(inner, stride, inner)
        self.bn3 = nn.BatchNorm()
        self.conv3 = nn.Conv2D(channels, kernel_size=1, strides=1, use_bias=False)
        self.downsample = _projection(channels, stride, in_channels, False) \
            if downsample else None

    def hybrid_forward(self, F, x):
        residual = x
        x = F.Activation(self.bn1(x), act_type="relu")
        if self.downsample is not None:
            residual = self.downsample(x)
        x = F.Activation(self.bn2(self.conv1(x)), act_type="relu")
        x = F.Activation(self.bn3(self.conv2(x)), act_type="relu")
        return self.conv3(x) + residual


def _stem(features: nn.HybridSequential, channels: int, thumbnail: bool) -> None:
    """The input layers: one 3x3 convolution (thumbnail, small images) or the 7x7/2
    convolution, BN, ReLU and 3x3/2 max pooling."""
    if thumbnail:
        features.add(_conv3x3(channels, 1, 0))
    else:
        features.add(nn.Conv2D(channels, 7, 2, 3, use_bias=False), nn.BatchNorm(),
                     nn.Activation("relu"), nn.MaxPool2D(3, 2, 1))


def _make_stage(block, num_blocks: int, channels: int, stride: int, stage_index: int,
                in_channels: int) -> nn.HybridSequential:
    """Stage ``stage_index`` (prefix ``stage<i>_``): a first block that may change stride
    and width, then ``num_blocks - 1`` blocks that keep them."""
    stage = nn.HybridSequential(prefix=f"stage{stage_index}_")
    with stage.name_scope():
        stage.add(block(channels, stride, channels != in_channels, in_channels=in_channels,
                        prefix=""))
        for _ in range(num_blocks - 1):
            stage.add(block(channels, 1, False, in_channels=channels, prefix=""))
    return stage


class ResNetV1(HybridBlock):
    """ResNet V1: ``features`` (stem, stages, global average pooling) and ``output``
    (Dense).

    Parameters
    ----------
    block : type
        ``BasicBlockV1`` or ``BottleneckV1``.
    layers : list of int
        Number of blocks in each stage.
    channels : list of int
        Width of the stem, then of each stage (one longer than ``layers``).
    classes : int, default 1000
        Number of classes of the output layer.
    thumbnail : bool, default False
        Replace the stem by one 3x3 convolution (for small images, e.g. CIFAR).
    """

    def __init__(self, block, layers, channels, classes: int = 1000, thumbnail: bool = False,
                 **kwargs):
        super().__init__(**kwargs)
        if len(layers) != len(channels) - 1:
            raise ValueError(f"channels must be one longer than layers, got layers={layers} "
                             f"and channels={channels}")
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            _stem(self.features, channels[0], thumbnail)
            for i, num_blocks in enumerate(layers):
                self.features.add(self._make_layer(block, num_blocks, channels[i + 1],
                                                   1 if i == 0 else 2, i + 1,
                                                   in_channels=channels[i]))
            self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.Dense(classes, in_units=channels[-1])

    def _make_layer(self, block, layers, channels, stride, stage_index, in_channels=0):
        return _make_stage(block, layers, channels, stride, stage_index, in_channels)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


class ResNetV2(HybridBlock):
    """ResNet V2: ``features`` (input BatchNorm, stem, pre-activation stages, BN-ReLU,
    global average pooling, flatten) and ``output`` (Dense); parameters as
    :class:`ResNetV1` with V2 blocks."""

    def __init__(self, block, layers, channels, classes: int = 1000, thumbnail: bool = False,
                 **kwargs):
        super().__init__(**kwargs)
        if len(layers) != len(channels) - 1:
            raise ValueError(f"channels must be one longer than layers, got layers={layers} "
                             f"and channels={channels}")
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.BatchNorm(scale=False, center=False))
            _stem(self.features, channels[0], thumbnail)
            in_channels = channels[0]
            for i, num_blocks in enumerate(layers):
                self.features.add(self._make_layer(block, num_blocks, channels[i + 1],
                                                   1 if i == 0 else 2, i + 1,
                                                   in_channels=in_channels))
                in_channels = channels[i + 1]
            self.features.add(nn.BatchNorm(), nn.Activation("relu"), nn.GlobalAvgPool2D(),
                              nn.Flatten())
            self.output = nn.Dense(classes, in_units=in_channels)

    def _make_layer(self, block, layers, channels, stride, stage_index, in_channels=0):
        return _make_stage(block, layers, channels, stride, stage_index, in_channels)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


# depth -> (block kind, blocks per stage, widths of the stem and the stages)
resnet_spec = {18: ("basic_block", [2, 2, 2, 2], [64, 64, 128, 256, 512]),
               34: ("basic_block", [3, 4, 6, 3], [64, 64, 128, 256, 512]),
               50: ("bottle_neck", [3, 4, 6, 3], [64, 256, 512, 1024, 2048]),
               101: ("bottle_neck", [3, 4, 23, 3], [64, 256, 512, 1024, 2048]),
               152: ("bottle_neck", [3, 8, 36, 3], [64, 256, 512, 1024, 2048])}
resnet_net_versions = [ResNetV1, ResNetV2]
resnet_block_versions = [{"basic_block": BasicBlockV1, "bottle_neck": BottleneckV1},
                         {"basic_block": BasicBlockV2, "bottle_neck": BottleneckV2}]


def get_resnet(version: int, num_layers: int, pretrained: bool = False, ctx=_CPU,
               root: str = _ROOT, **kwargs) -> HybridBlock:
    """ResNet V1 or V2 of depth ``num_layers``.

    Parameters
    ----------
    version : int
        1 or 2.
    num_layers : int
        18, 34, 50, 101 or 152.
    pretrained : bool, default False
        Load the pretrained weights ``resnet<depth>_v<version>`` from ``root`` (they must
        be there already: symgraph does not download them).
    ctx : Context, default CPU
        Where to load the pretrained weights.
    root : str, default ``$MXNET_HOME/models``
        Folder of the pretrained weights.
    **kwargs
        ``classes``, ``thumbnail``, ``prefix``, ``params`` of the network.

    >>> get_resnet(3, 18)
    Traceback (most recent call last):
    ...
    ValueError: Invalid resnet version: 3. Options are 1 and 2.
    """
    if num_layers not in resnet_spec:
        raise ValueError(f"Invalid number of layers: {num_layers}. Options are "
                         f"{list(resnet_spec)}")
    if version not in (1, 2):
        raise ValueError(f"Invalid resnet version: {version}. Options are 1 and 2.")
    block_type, layers, channels = resnet_spec[num_layers]
    block_class = resnet_block_versions[version - 1][block_type]
    net = resnet_net_versions[version - 1](block_class, layers, channels, **kwargs)
    if pretrained:
        _load_pretrained(net, f"resnet{num_layers}_v{version}", ctx, root)
    return net


def resnet18_v1(**kwargs) -> HybridBlock:
    """ResNet-18 V1; arguments as :func:`get_resnet`."""
    return get_resnet(1, 18, **kwargs)


def resnet34_v1(**kwargs) -> HybridBlock:
    """ResNet-34 V1; arguments as :func:`get_resnet`."""
    return get_resnet(1, 34, **kwargs)


def resnet50_v1(**kwargs) -> HybridBlock:
    """ResNet-50 V1; arguments as :func:`get_resnet`."""
    return get_resnet(1, 50, **kwargs)


def resnet101_v1(**kwargs) -> HybridBlock:
    """ResNet-101 V1; arguments as :func:`get_resnet`."""
    return get_resnet(1, 101, **kwargs)


def resnet152_v1(**kwargs) -> HybridBlock:
    """ResNet-152 V1; arguments as :func:`get_resnet`."""
    return get_resnet(1, 152, **kwargs)


def resnet18_v2(**kwargs) -> HybridBlock:
    """ResNet-18 V2; arguments as :func:`get_resnet`."""
    return get_resnet(2, 18, **kwargs)


def resnet34_v2(**kwargs) -> HybridBlock:
    """ResNet-34 V2; arguments as :func:`get_resnet`."""
    return get_resnet(2, 34, **kwargs)


def resnet50_v2(**kwargs) -> HybridBlock:
    """ResNet-50 V2; arguments as :func:`get_resnet`."""
    return get_resnet(2, 50, **kwargs)


def resnet101_v2(**kwargs) -> HybridBlock:
    """ResNet-101 V2; arguments as :func:`get_resnet`."""
    return get_resnet(2, 101, **kwargs)


def resnet152_v2(**kwargs) -> HybridBlock:
    """ResNet-152 V2; arguments as :func:`get_resnet`."""
    return get_resnet(2, 152, **kwargs)
