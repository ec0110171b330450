"""MobileNet (Howard et al., 2017, arXiv:1704.04861) and MobileNetV2 (Sandler et al.,
2018, arXiv:1801.04381), as MXNet 1.9.1's ``gluon.model_zoo.vision.mobilenet``.

>>> import symgraph as mx
>>> net = mobilenet0_25(classes=10, prefix='m_')
>>> list(net.collect_params().keys())[:2]
['m_conv0_weight', 'm_batchnorm0_gamma']
>>> net.initialize()
>>> net(mx.nd.ones((1, 3, 32, 32))).shape
(1, 10)
>>> [k for k in mobilenet_v2_0_25(prefix='m2_').collect_params().keys()][-1]
'm2_output_pred_weight'
"""
from __future__ import annotations

from ... import nn
from ...block import HybridBlock
from ..model_store import _CPU, _ROOT, _load_pretrained

__all__ = ["MobileNet", "MobileNetV2", "mobilenet1_0", "mobilenet_v2_1_0", "mobilenet0_75",
           "mobilenet_v2_0_75", "mobilenet0_5", "mobilenet_v2_0_5", "mobilenet0_25",
           "mobilenet_v2_0_25", "get_mobilenet", "get_mobilenet_v2"]


class RELU6(nn.HybridBlock):
    """``min(max(x, 0), 6)``, the activation of MobileNetV2."""

    def hybrid_forward(self, F, x):
        return F.clip(x, 0, 6, name="relu6")


def _add_conv(out, channels: int = 1, kernel: int = 1, stride: int = 1,
              pad: int = 0, num_group: int = 1, active: bool = True,
              relu6: bool = False) -> None:
    """Add a convolution (no bias), a BatchNorm and, if ``active``, ReLU or ReLU6."""
    out.add(nn.Conv2D(channels, kernel, stride, pad, groups=num_group, use_bias=False),
            nn.BatchNorm(scale=True))
    if active:
        out.add(RELU6() if relu6 else nn.Activation("relu"))


def _add_conv_dw(out, dw_channels: int, channels: int, stride: int,
                 relu6: bool = False) -> None:
    """Add a depthwise 3x3 convolution, then a pointwise one to ``channels``."""
    _add_conv(out, channels=dw_channels, kernel=3, stride=stride, pad=1,
              num_group=dw_channels, relu6=relu6)
    _add_conv(out, channels=channels, relu6=relu6)


class LinearBottleneck(nn.HybridBlock):
    """MobileNetV2's inverted residual: 1x1 expansion by ``t``, depthwise 3x3, linear 1x1
    projection; the input is added when shapes allow (stride 1, same channels).

    Parameters
    ----------
    in_channels : int
        Number of input channels.
    channels : int
        Number of output channels.
    t : int
        Expansion ratio.
    stride : int
        Stride of the depthwise convolution.
    """

    def __init__(self, in_channels: int, channels: int, t: int, stride: int, **kwargs):
        super().__init__(**kwargs)
        self.use_shortcut = stride == 1 and in_channels == channels
        expanded = in_channels * t
        with self.name_scope():
            self.out = nn.HybridSequential()
            _add_conv(self.out, expanded, relu6=True)
            _add_conv(self.out, expanded, kernel=3, stride=stride, pad=1, num_group=expanded,
                      relu6=True)
            _add_conv(self.out, channels, active=False, relu6=True)

    def hybrid_forward(self, F, x):
        out = self.out(x)
        return F.elemwise_add(out, x) if self.use_shortcut else out


def _scaled(widths, multiplier: float) -> list[int]:
    return [int(w * multiplier) for w in widths]


# MobileNet: (depthwise channels, pointwise channels, stride) of the 13 separable blocks
_V1_BLOCKS = list(zip([32, 64] + [128] * 2 + [256] * 2 + [512] * 6 + [1024],
                      [64] + [128] * 2 + [256] * 2 + [512] * 6 + [1024] * 2,
                      [1, 2] * 3 + [1] * 5 + [2, 1]))
# MobileNetV2: (input channels, output channels, expansion, stride) of the 17 bottlenecks
_V2_BLOCKS = list(zip([32] + [16] + [24] * 2 + [32] * 3 + [64] * 4 + [96] * 3 + [160] * 3,
                      [16] + [24] * 2 + [32] * 3 + [64] * 4 + [96] * 3 + [160] * 3 + [320],
                      [1] + [6] * 16,
                      [1, 2] * 2 + [1, 1, 2] + [1] * 6 + [2] + [1] * 3))


class MobileNet(HybridBlock):
    """MobileNet: a 3x3/2 convolution, 13 depthwise-separable blocks, global average
    pooling and flatten in ``features``; the Dense ``output``.

    Parameters
    ----------
    multiplier : float, default 1.0
        Width multiplier of every layer (at least 0.25).
    classes : int, default 1000
        Number of classes of the output layer.
    """

    def __init__(self, multiplier: float = 1.0, classes: int = 1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            with self.features.name_scope():
                _add_conv(self.features, channels=int(32 * multiplier), kernel=3, pad=1,
                          stride=2)
                for dw, pw, stride in _V1_BLOCKS:
                    dw, pw = _scaled([dw, pw], multiplier)
                    _add_conv_dw(self.features, dw_channels=dw, channels=pw, stride=stride)
                self.features.add(nn.GlobalAvgPool2D(), nn.Flatten())
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


class MobileNetV2(nn.HybridBlock):
    """MobileNetV2: a 3x3/2 convolution, 17 linear bottlenecks, a 1x1 convolution to 1280
    channels (more when ``multiplier`` > 1) and global average pooling in ``features``
    (prefix ``features_``); a 1x1 convolution to ``classes`` and flatten in ``output``
    (prefix ``output_``). Parameters as :class:`MobileNet`.
    """

    def __init__(self, multiplier: float = 1.0, classes: int = 1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="features_")
            with self.features.name_scope():
                _add_conv(self.features, int(32 * multiplier), kernel=3, stride=2, pad=1,
                          relu6=True)
                for in_c, c, t, stride in _V2_BLOCKS:
                    in_c, c = _scaled([in_c, c], multiplier)
                    self.features.add(LinearBottleneck(in_channels=in_c, channels=c, t=t,
                                                       stride=stride))
                last_channels = int(1280 * multiplier) if multiplier > 1.0 else 1280
                _add_conv(self.features, last_channels, relu6=True)
                self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.HybridSequential(prefix="output_")
            with self.output.name_scope():
                self.output.add(nn.Conv2D(classes, 1, use_bias=False, prefix="pred_"),
                                nn.Flatten())

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def _version_suffix(multiplier: float) -> str:
    """MXNet's file-name spelling of a multiplier: ``1.0``, ``0.75``, ``0.5``, ``0.25``."""
    suffix = f"{multiplier:.2f}"
    return suffix[:-1] if suffix in ("1.00", "0.50") else suffix


def get_mobilenet(multiplier: float, pretrained: bool = False, ctx=_CPU,
                  root: str = _ROOT, **kwargs) -> MobileNet:
    """MobileNet of width ``multiplier``; ``pretrained``, ``ctx``, ``root`` as
    :func:`~symgraph.gluon.model_zoo.vision.get_resnet`."""
    net = MobileNet(multiplier, **kwargs)
    if pretrained:
        _load_pretrained(net, f"mobilenet{_version_suffix(multiplier)}", ctx, root)
    return net


def get_mobilenet_v2(multiplier: float, pretrained: bool = False, ctx=_CPU,
                     root: str = _ROOT, **kwargs) -> MobileNetV2:
    """MobileNetV2 of width ``multiplier``; ``pretrained``, ``ctx``, ``root`` as
    :func:`~symgraph.gluon.model_zoo.vision.get_resnet`."""
    net = MobileNetV2(multiplier, **kwargs)
    if pretrained:
        _load_pretrained(net, f"mobilenetv2_{_version_suffix(multiplier)}", ctx, root)
    return net


def mobilenet1_0(**kwargs) -> MobileNet:
    """MobileNet, width 1.0; arguments as :func:`get_mobilenet`."""
    return get_mobilenet(1.0, **kwargs)


def mobilenet0_75(**kwargs) -> MobileNet:
    """MobileNet, width 0.75; arguments as :func:`get_mobilenet`."""
    return get_mobilenet(0.75, **kwargs)


def mobilenet0_5(**kwargs) -> MobileNet:
    """MobileNet, width 0.5; arguments as :func:`get_mobilenet`."""
    return get_mobilenet(0.5, **kwargs)


def mobilenet0_25(**kwargs) -> MobileNet:
    """MobileNet, width 0.25; arguments as :func:`get_mobilenet`."""
    return get_mobilenet(0.25, **kwargs)


def mobilenet_v2_1_0(**kwargs) -> MobileNetV2:
    """MobileNetV2, width 1.0; arguments as :func:`get_mobilenet_v2`."""
    return get_mobilenet_v2(1.0, **kwargs)


def mobilenet_v2_0_75(**kwargs) -> MobileNetV2:
    """MobileNetV2, width 0.75; arguments as :func:`get_mobilenet_v2`."""
    return get_mobilenet_v2(0.75, **kwargs)


def mobilenet_v2_0_5(**kwargs) -> MobileNetV2:
    """MobileNetV2, width 0.5; arguments as :func:`get_mobilenet_v2`."""
    return get_mobilenet_v2(0.5, **kwargs)


def mobilenet_v2_0_25(**kwargs) -> MobileNetV2:
    """MobileNetV2, width 0.25; arguments as :func:`get_mobilenet_v2`."""
    return get_mobilenet_v2(0.25, **kwargs)
