"""Convolution and pooling layers, as MXNet 1.9.1's ``gluon/nn/conv_layers.py``.

The weight is (channels, in_channels / groups, *kernel) (``ConvNDTranspose``:
(in_channels, channels / groups, *kernel)), deferred while ``in_channels`` is 0.
Channel-last layouts (NWC, NHWC, NDHWC) are accepted by the pooling layers; the
convolution operator runs channel-first layouts only, as MXNet's CPU operator, and says so
with an ``AttrError`` when the layer runs.

Examples
--------
>>> import symgraph as mx
>>> conv = mx.gluon.nn.Conv2D(4, 3, padding=1, in_channels=2)
>>> conv.weight.shape
(4, 2, 3, 3)
>>> conv
Conv2D(2 -> 4, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
>>> mx.gluon.nn.MaxPool2D()
MaxPool2D(size=(2, 2), stride=(2, 2), padding=(0, 0), ceil_mode=False, global_pool=False, \
pool_type=max, layout=NCHW)
>>> mx.gluon.nn.Conv2D(4, (3, 3, 3))
Traceback (most recent call last):
...
AssertionError: kernel_size must be a number or a list of 2 ints
"""
from __future__ import annotations

from numbers import Number

from ..block import HybridBlock
from ..utils import _require
from .activations import Activation

__all__ = ["Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose",
           "Conv3DTranspose", "MaxPool1D", "MaxPool2D", "MaxPool3D", "AvgPool1D", "AvgPool2D",
           "AvgPool3D", "GlobalMaxPool1D", "GlobalMaxPool2D", "GlobalMaxPool3D",
           "GlobalAvgPool1D", "GlobalAvgPool2D", "GlobalAvgPool3D", "ReflectionPad2D"]

# the layouts each rank accepts, channel-first first (MXNet's assertions)
_CONV_LAYOUTS = {1: ("NCW",), 2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}
_POOL_LAYOUTS = {1: ("NCW", "NWC"), 2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}


def _tuple(value, n: int) -> tuple:
    """A number repeated ``n`` times, or the given sequence as a tuple."""
    return (value,) * n if isinstance(value, Number) else tuple(value)


def _weight_shape(op_name: str, channels: int, in_channels: int, groups: int,
                  kernel: tuple, layout: str) -> tuple:
    """The weight shape MXNet's shape inference gives for unknown data (0 = unknown)."""
    if op_name == "Deconvolution":
        inner = (in_channels, channels // groups)
    else:
        inner = (channels, in_channels // groups)
    if layout.find("C") == 1:
        return inner + kernel
    return (inner[0],) + kernel + (inner[1],)


def _check_nd(kernel_size, nd: int, layout: str, what: str = "kernel_size") -> tuple:
    layouts = _CONV_LAYOUTS[nd]
    if len(layouts) == 1:
        _require(layout in layouts, f"Only supports '{layouts[0]}' layout for now")
    else:
        _require(layout in layouts,
                f"Only supports '{layouts[0]}' and '{layouts[1]}' layout for now")
    kernel_size = _tuple(kernel_size, nd)
    noun = "int" if nd == 1 else "ints"
    _require(len(kernel_size) == nd, f"{what} must be a number or a list of {nd} {noun}")
    return kernel_size


class _Conv(HybridBlock):
    """N-D convolution (or transposed convolution with ``op_name='Deconvolution'``)."""

    def __init__(self, channels, kernel_size, strides, padding, dilation, groups, layout,
                 in_channels=0, activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", op_name="Convolution", adj=None, prefix=None,
                 params=None):
        super().__init__(prefix=prefix, params=params)
        n = len(kernel_size)
        with self.name_scope():
            self._channels = channels
            self._in_channels = in_channels
            self._op_name = op_name
            self._kwargs = {
                "kernel": kernel_size, "stride": _tuple(strides, n),
                "dilate": _tuple(dilation, n), "pad": _tuple(padding, n),
                "num_filter": channels, "num_group": groups, "no_bias": not use_bias,
                "layout": layout}
            if adj is not None:
                self._kwargs["adj"] = adj
            wshape = _weight_shape(op_name, channels, in_channels, groups, kernel_size, layout)
            self.weight = self.params.get("weight", shape=wshape, init=weight_initializer,
                                          allow_deferred_init=True)
            self.bias = self.params.get("bias", shape=(channels,), init=bias_initializer,
                                        allow_deferred_init=True) if use_bias else None
            self.act = Activation(activation, prefix=activation + "_") \
                if activation is not None else None

    def hybrid_forward(self, F, x, weight, bias=None):
        op = getattr(F, self._op_name)
        if bias is None:
            out = op(x, weight, name="fwd", **self._kwargs)
        else:
            out = op(x, weight, bias, name="fwd", **self._kwargs)
        return self.act(out) if self.act is not None else out

    def _alias(self) -> str:
        return "conv"

    def __repr__(self) -> str:
        k = self._kwargs
        n = len(k["kernel"])
        s = f"kernel_size={k['kernel']}, stride={k['stride']}"
        if k["pad"] != (0,) * n:
            s += f", padding={k['pad']}"
        if k["dilate"] != (1,) * n:
            s += f", dilation={k['dilate']}"
        if hasattr(self, "out_pad") and self.out_pad != (0,) * n:
            s += f", output_padding={self.out_pad}"
        if k["num_group"] != 1:
            s += f", groups={k['num_group']}"
        if self.bias is None:
            s += ", bias=False"
        if self.act:
            s += f", {self.act}"
        shape = self.weight.shape
        mapping = f"{shape[1] if shape[1] else None} -> {shape[0]}"
        return f"{self.__class__.__name__}({mapping}, {s})"


class Conv1D(_Conv):
    """1-D convolution over (N, C, W) data."""

    def __init__(self, channels, kernel_size, strides=1, padding=0, dilation=1, groups=1,
                 layout="NCW", activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", in_channels=0, **kwargs):
        kernel_size = _check_nd(kernel_size, 1, layout)
        op_name = kwargs.pop("op_name", "Convolution")
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, op_name, **kwargs)


class Conv2D(_Conv):
    """2-D convolution over (N, C, H, W) data."""

    def __init__(self, channels, kernel_size, strides=(1, 1), padding=(0, 0),
                 dilation=(1, 1), groups=1, layout="NCHW", activation=None, use_bias=True,
                 weight_initializer=None, bias_initializer="zeros", in_channels=0, **kwargs):
        kernel_size = _check_nd(kernel_size, 2, layout)
        op_name = kwargs.pop("op_name", "Convolution")
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, op_name, **kwargs)


class Conv3D(_Conv):
    """3-D convolution over (N, C, D, H, W) data."""

    def __init__(self, channels, kernel_size, strides=(1, 1, 1), padding=(0, 0, 0),
                 dilation=(1, 1, 1), groups=1, layout="NCDHW", activation=None,
                 use_bias=True, weight_initializer=None, bias_initializer="zeros",
                 in_channels=0, **kwargs):
        kernel_size = _check_nd(kernel_size, 3, layout)
        op_name = kwargs.pop("op_name", "Convolution")
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, op_name, **kwargs)


class _ConvTranspose(_Conv):
    """Transposed convolution: ``output_padding`` becomes the operator's ``adj``."""

    def __init__(self, nd, channels, kernel_size, strides, padding, output_padding, dilation,
                 groups, layout, activation, use_bias, weight_initializer, bias_initializer,
                 in_channels, **kwargs):
        kernel_size = _check_nd(kernel_size, nd, layout)
        output_padding = _tuple(output_padding, nd)
        noun = "int" if nd == 1 else "ints"
        _require(len(output_padding) == nd,
                f"output_padding must be a number or a list of {nd} {noun}")
        op_name = kwargs.pop("op_name", "Deconvolution")
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, op_name=op_name, adj=output_padding, **kwargs)
        self.outpad = output_padding


class Conv1DTranspose(_ConvTranspose):
    """1-D transposed convolution over (N, C, W) data."""

    def __init__(self, channels, kernel_size, strides=1, padding=0, output_padding=0,
                 dilation=1, groups=1, layout="NCW", activation=None, use_bias=True,
                 weight_initializer=None, bias_initializer="zeros", in_channels=0, **kwargs):
        super().__init__(1, channels, kernel_size, strides, padding, output_padding,
                         dilation, groups, layout, activation, use_bias, weight_initializer,
                         bias_initializer, in_channels, **kwargs)


class Conv2DTranspose(_ConvTranspose):
    """2-D transposed convolution over (N, C, H, W) data."""

    def __init__(self, channels, kernel_size, strides=(1, 1), padding=(0, 0),
                 output_padding=(0, 0), dilation=(1, 1), groups=1, layout="NCHW",
                 activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", in_channels=0, **kwargs):
        super().__init__(2, channels, kernel_size, strides, padding, output_padding,
                         dilation, groups, layout, activation, use_bias, weight_initializer,
                         bias_initializer, in_channels, **kwargs)


class Conv3DTranspose(_ConvTranspose):
    """3-D transposed convolution over (N, C, D, H, W) data."""

    def __init__(self, channels, kernel_size, strides=(1, 1, 1), padding=(0, 0, 0),
                 output_padding=(0, 0, 0), dilation=(1, 1, 1), groups=1, layout="NCDHW",
                 activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", in_channels=0, **kwargs):
        super().__init__(3, channels, kernel_size, strides, padding, output_padding,
                         dilation, groups, layout, activation, use_bias, weight_initializer,
                         bias_initializer, in_channels, **kwargs)


# ---------------------------------------------------------------- pooling

class _Pooling(HybridBlock):
    """Max or average pooling; ``ceil_mode`` is MXNet's ``pooling_convention='full'``."""

    def __init__(self, pool_size, strides, padding, ceil_mode, global_pool, pool_type,
                 layout, count_include_pad=None, **kwargs):
        super().__init__(**kwargs)
        if strides is None:
            strides = pool_size
        n = len(pool_size)
        self._kwargs = {
            "kernel": pool_size, "stride": _tuple(strides, n), "pad": _tuple(padding, n),
            "global_pool": global_pool, "pool_type": pool_type, "layout": layout,
            "pooling_convention": "full" if ceil_mode else "valid"}
        if count_include_pad is not None:
            self._kwargs["count_include_pad"] = count_include_pad

    def _alias(self) -> str:
        return "pool"

    def hybrid_forward(self, F, x):
        return F.Pooling(x, name="fwd", **self._kwargs)

    def __repr__(self) -> str:
        k = self._kwargs
        return (f"{self.__class__.__name__}(size={k['kernel']}, stride={k['stride']}, "
                f"padding={k['pad']}, ceil_mode={k['pooling_convention'] == 'full'}, "
                f"global_pool={k['global_pool']}, pool_type={k['pool_type']}, "
                f"layout={k['layout']})")


def _pool_args(pool_size, nd: int, layout: str) -> tuple:
    """MXNet's layout and pool_size assertions; the pool size as a tuple."""
    layouts = _POOL_LAYOUTS[nd]
    _require(layout in layouts,
            f"Only {layouts[0]} and {layouts[1]} layouts are valid for {nd}D Pooling")
    pool_size = _tuple(pool_size, nd)
    noun = "int" if nd == 1 else "ints"
    _require(len(pool_size) == nd, f"pool_size must be a number or a list of {nd} {noun}")
    return pool_size


class MaxPool1D(_Pooling):
    """Max pooling over (N, C, W) data."""

    def __init__(self, pool_size=2, strides=None, padding=0, layout="NCW", ceil_mode=False,
                 **kwargs):
        super().__init__(_pool_args(pool_size, 1, layout), strides, padding, ceil_mode, False,
                         "max", layout, **kwargs)


class MaxPool2D(_Pooling):
    """Max pooling over (N, C, H, W) data."""

    def __init__(self, pool_size=(2, 2), strides=None, padding=0, layout="NCHW",
                 ceil_mode=False, **kwargs):
        super().__init__(_pool_args(pool_size, 2, layout), strides, padding, ceil_mode, False,
                         "max", layout, **kwargs)


class MaxPool3D(_Pooling):
    """Max pooling over (N, C, D, H, W) data."""

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding=0, ceil_mode=False,
                 layout="NCDHW", **kwargs):
        super().__init__(_pool_args(pool_size, 3, layout), strides, padding, ceil_mode, False,
                         "max", layout, **kwargs)


class AvgPool1D(_Pooling):
    """Average pooling over (N, C, W) data."""

    def __init__(self, pool_size=2, strides=None, padding=0, layout="NCW", ceil_mode=False,
                 count_include_pad=True, **kwargs):
        super().__init__(_pool_args(pool_size, 1, layout), strides, padding, ceil_mode, False,
                         "avg", layout, count_include_pad, **kwargs)


class AvgPool2D(_Pooling):
    """Average pooling over (N, C, H, W) data."""

    def __init__(self, pool_size=(2, 2), strides=None, padding=0, ceil_mode=False,
                 layout="NCHW", count_include_pad=True, **kwargs):
        super().__init__(_pool_args(pool_size, 2, layout), strides, padding, ceil_mode, False,
                         "avg", layout, count_include_pad, **kwargs)


class AvgPool3D(_Pooling):
    """Average pooling over (N, C, D, H, W) data."""

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding=0, ceil_mode=False,
                 layout="NCDHW", count_include_pad=True, **kwargs):
        super().__init__(_pool_args(pool_size, 3, layout), strides, padding, ceil_mode, False,
                         "avg", layout, count_include_pad, **kwargs)


class _GlobalPooling(_Pooling):
    """Pooling over all spatial axes."""

    def __init__(self, nd: int, pool_type: str, layout: str, **kwargs):
        _pool_args(1, nd, layout)
        super().__init__((1,) * nd, None, 0, True, True, pool_type, layout, **kwargs)


class GlobalMaxPool1D(_GlobalPooling):
    """Global max pooling over (N, C, W) data."""

    def __init__(self, layout="NCW", **kwargs):
        super().__init__(1, "max", layout, **kwargs)


class GlobalMaxPool2D(_GlobalPooling):
    """Global max pooling over (N, C, H, W) data."""

    def __init__(self, layout="NCHW", **kwargs):
        super().__init__(2, "max", layout, **kwargs)


class GlobalMaxPool3D(_GlobalPooling):
    """Global max pooling over (N, C, D, H, W) data."""

    def __init__(self, layout="NCDHW", **kwargs):
        super().__init__(3, "max", layout, **kwargs)


class GlobalAvgPool1D(_GlobalPooling):
    """Global average pooling over (N, C, W) data."""

    def __init__(self, layout="NCW", **kwargs):
        super().__init__(1, "avg", layout, **kwargs)


class GlobalAvgPool2D(_GlobalPooling):
    """Global average pooling over (N, C, H, W) data."""

    def __init__(self, layout="NCHW", **kwargs):
        super().__init__(2, "avg", layout, **kwargs)


class GlobalAvgPool3D(_GlobalPooling):
    """Global average pooling over (N, C, D, H, W) data."""

    def __init__(self, layout="NCDHW", **kwargs):
        super().__init__(3, "avg", layout, **kwargs)


class ReflectionPad2D(HybridBlock):
    """Reflection padding of (N, C, H, W) data; needs the ``pad`` operator, which symgraph
    does not have yet (``OpNotImplementedError`` when the layer runs)."""

    def __init__(self, padding=0, **kwargs):
        super().__init__(**kwargs)
        if isinstance(padding, Number):
            padding = (0, 0, 0, 0, padding, padding, padding, padding)
        _require(len(padding) == 8)
        self._padding = padding

    def hybrid_forward(self, F, x):
        # raises OpNotImplementedError until the operators issue adds pad
        return F.pad(x, mode="reflect", pad_width=self._padding)
