"""Image transforms (``mx.gluon.data.vision.transforms``, MXNet 1.9.1).

Transforms are Blocks. Those that map onto one ``_image_*`` operator are HybridBlocks
calling it through ``F.image`` (so they also run hybridized, inside a graph); those that
need a random geometry or a host-side decision (crops of random size, rotations,
``RandomApply``) are plain Blocks over :mod:`symgraph.image`. :class:`Compose` chains
them, fusing runs of HybridBlocks into one hybridized ``HybridSequential``.

>>> import symgraph as mx
>>> from symgraph.gluon.data.vision import transforms
>>> chain = transforms.Compose([transforms.Resize(4), transforms.ToTensor(),
...                             transforms.Normalize(0.5, 0.5)])
>>> out = chain(mx.nd.full((6, 8, 3), 255, dtype='uint8'))
>>> out.shape, float(out.max().asscalar())
((3, 4, 4), 1.0)
"""
from __future__ import annotations

import random

import numpy as np

from ...block import Block, HybridBlock
from ...nn import HybridSequential, Sequential

__all__ = ["Compose", "Cast", "ToTensor", "Normalize", "Rotate", "RandomRotation",
           "RandomResizedCrop", "CropResize", "CenterCrop", "Resize", "RandomFlipLeftRight",
           "RandomFlipTopBottom", "RandomBrightness", "RandomContrast", "RandomSaturation",
           "RandomHue", "RandomColorJitter", "RandomLighting", "RandomApply"]


def _pair(size):
    return (size, size) if isinstance(size, (int, float, np.integer, np.floating)) else size


class Compose(Sequential):
    """Apply ``transforms`` in order; consecutive HybridBlocks run as one hybridized
    ``HybridSequential``.

    Parameters
    ----------
    transforms : list of Block
        The transforms.

    Examples
    --------
    >>> import symgraph as mx
    >>> chain = Compose([Cast('float64'), Normalize(1.0, 2.0)])
    >>> chain(mx.nd.array([[[3.0]]])).asnumpy().tolist(), len(chain)
    ([[[1.0]]], 1)
    """

    def __init__(self, transforms):
        super().__init__()
        run: list = []
        for block in list(transforms) + [None]:
            if isinstance(block, HybridBlock):
                run.append(block)
                continue
            if len(run) == 1:
                self.add(run[0])
            elif run:
                fused = HybridSequential()
                fused.add(*run)
                fused.hybridize()
                self.add(fused)
            run = []
            if block is not None:
                self.add(block)


class Cast(HybridBlock):
    """Cast the input to ``dtype``.

    >>> import symgraph as mx
    >>> Cast('int32')(mx.nd.array([1.7])).dtype
    <class 'numpy.int32'>
    """

    def __init__(self, dtype="float32"):
        super().__init__()
        self._dtype = dtype

    def hybrid_forward(self, F, x):
        return F.cast(x, self._dtype)


class ToTensor(HybridBlock):
    """An image ``(H, W, C)`` (or a batch ``(N, H, W, C)``) with values in ``[0, 255]``
    as float32 ``(C, H, W)`` (``(N, C, H, W)``) in ``[0, 1]``.

    >>> import symgraph as mx
    >>> ToTensor()(mx.nd.full((2, 3, 1), 51, dtype='uint8')).asnumpy()[0, 0].tolist()
    [0.20000000298023224, 0.20000000298023224, 0.20000000298023224]
    """

    def hybrid_forward(self, F, x):
        return F.image.to_tensor(x)


class Normalize(HybridBlock):
    """``(x[c] - mean[c]) / std[c]`` per channel of a ``(C, H, W)`` or ``(N, C, H, W)``
    tensor; a scalar mean or std applies to every channel.

    Parameters
    ----------
    mean : float or tuple of float
        Channel means.
    std : float or tuple of float
        Channel standard deviations.

    Examples
    --------
    >>> import symgraph as mx
    >>> x = mx.nd.ones((3, 1, 1))
    >>> Normalize(mean=(0, 1, 2), std=(2, 1, 4))(x).asnumpy().ravel().tolist()
    [0.5, 0.0, -0.25]
    """

    def __init__(self, mean=0.0, std=1.0):
        super().__init__()
        self._mean = mean
        self._std = std

    def hybrid_forward(self, F, x):
        return F.image.normalize(x, mean=self._mean, std=self._std)


def _check_float32(x) -> None:
    if x.dtype != np.float32:
        raise TypeError(f"This transformation only supports float32, got {np.dtype(x.dtype)}. "
                        "Consider calling it after ToTensor")


class Rotate(Block):
    """Rotate a float32 ``(C, H, W)`` or ``(N, C, H, W)`` tensor by
    ``rotation_degrees`` (counter-clockwise), keeping its shape (see
    :func:`symgraph.image.imrotate`).

    Parameters
    ----------
    rotation_degrees : float
        The angle.
    zoom_in : bool
        Zoom in so no padding shows.
    zoom_out : bool
        Zoom out so the whole image shows.

    Examples
    --------
    >>> import symgraph as mx
    >>> x = mx.nd.array([[[0., 0., 0.], [0., 0., 1.], [0., 0., 0.]]])
    >>> Rotate(90)(x).asnumpy().round(4).tolist()
    [[[0.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]]
    """

    def __init__(self, rotation_degrees, zoom_in=False, zoom_out=False):
        super().__init__()
        self._args = (rotation_degrees, zoom_in, zoom_out)

    def forward(self, x):
        _check_float32(x)
        from .... import image
        return image.imrotate(x, *self._args)


class RandomRotation(Block):
    """Rotate by an angle drawn uniformly from ``angle_limits``, with probability
    ``rotate_with_proba`` (float32 ``(C, H, W)`` or ``(N, C, H, W)`` input).

    Parameters
    ----------
    angle_limits : tuple of 2 floats
        Lowest and highest angle in degrees.
    zoom_in, zoom_out : bool
        As for :class:`Rotate`.
    rotate_with_proba : float
        Probability of rotating at all.

    Examples
    --------
    >>> import symgraph as mx
    >>> x = mx.nd.ones((1, 4, 4))
    >>> RandomRotation((-5, 5), rotate_with_proba=0.0)(x) is x
    True
    """

    def __init__(self, angle_limits, zoom_in=False, zoom_out=False, rotate_with_proba=1.0):
        super().__init__()
        lower, upper = angle_limits
        if lower >= upper:
            raise ValueError(f"`angle_limits` must be an ordered tuple, got {angle_limits}")
        if not 0 <= rotate_with_proba <= 1:
            raise ValueError("Probability of rotating the image should be between 0 and 1, "
                             f"got {rotate_with_proba}")
        self._args = (angle_limits, zoom_in, zoom_out)
        self._rotate_with_proba = rotate_with_proba

    def forward(self, x):
        if np.random.random() > self._rotate_with_proba:
            return x
        _check_float32(x)
        from .... import image
        return image.random_rotate(x, *self._args)


class RandomResizedCrop(Block):
    """A crop of random area (``scale`` of the image's) and aspect ratio (``ratio``),
    resized to ``size``, of an ``(H, W, C)`` image.

    Parameters
    ----------
    size : int or tuple of (W, H)
        Output size.
    scale : tuple of 2 floats
        Range of the crop's area as a fraction of the image's.
    ratio : tuple of 2 floats
        Range of the crop's aspect ratio (width / height).
    interpolation : int
        OpenCV interpolation of the resize (1: bilinear).

    Examples
    --------
    >>> import symgraph as mx
    >>> RandomResizedCrop((5, 3))(mx.nd.ones((20, 30, 3), dtype='uint8')).shape
    (3, 5, 3)
    """

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=1):
        super().__init__()
        self._args = (_pair(size), scale, ratio, interpolation)

    def forward(self, x):
        from .... import image
        return image.random_size_crop(x, *self._args)[0]


class CropResize(HybridBlock):
    """The region ``x, y, width, height`` of an ``(H, W, C)`` or ``(N, H, W, C)`` image,
    resized to ``size`` when one is given.

    Parameters
    ----------
    x, y : int
        Left and top edge of the crop.
    width, height : int
        Size of the crop.
    size : int or tuple of (W, H), optional
        Size after resizing.
    interpolation : int, optional
        OpenCV interpolation of the resize.

    Examples
    --------
    >>> import symgraph as mx
    >>> CropResize(1, 0, 2, 3)(mx.nd.ones((4, 4, 3))).shape
    (3, 2, 3)
    """

    def __init__(self, x, y, width, height, size=None, interpolation=None):
        super().__init__()
        self._x, self._y, self._width, self._height = x, y, width, height
        self._size = size
        self._interpolation = interpolation

    def hybrid_forward(self, F, x):
        out = F.image.crop(x, x=self._x, y=self._y, width=self._width, height=self._height)
        if self._size:
            kwargs = {} if self._interpolation is None else {"interp": self._interpolation}
            out = F.image.resize(out, size=self._size, keep_ratio=False, **kwargs)
        return out


class CenterCrop(Block):
    """The centre ``size`` of an ``(H, W, C)`` image (upsampled first when the image is
    smaller).

    Parameters
    ----------
    size : int or tuple of (W, H)
        Output size.
    interpolation : int
        OpenCV interpolation used when resizing.

    Examples
    --------
    >>> import symgraph as mx
    >>> CenterCrop((4, 2))(mx.nd.ones((6, 6, 3), dtype='uint8')).shape
    (2, 4, 3)
    """

    def __init__(self, size, interpolation=1):
        super().__init__()
        self._args = (_pair(size), interpolation)

    def forward(self, x):
        from .... import image
        return image.center_crop(x, *self._args)[0]


class Resize(HybridBlock):
    """Resize an ``(H, W, C)`` image or an ``(N, H, W, C)`` batch to ``size``; an int
    size with ``keep_ratio`` sets the short edge.

    Parameters
    ----------
    size : int or tuple of (W, H)
        Output size.
    keep_ratio : bool
        Keep the aspect ratio when ``size`` is an int.
    interpolation : int
        OpenCV interpolation (1: bilinear).

    Examples
    --------
    >>> import symgraph as mx
    >>> Resize(4, keep_ratio=True)(mx.nd.ones((8, 16, 3), dtype='uint8')).shape
    (4, 8, 3)
    """

    def __init__(self, size, keep_ratio=False, interpolation=1):
        super().__init__()
        self._keep = keep_ratio
        self._size = size
        self._interpolation = interpolation

    def hybrid_forward(self, F, x):
        return F.image.resize(x, size=self._size, keep_ratio=self._keep,
                              interp=self._interpolation)


class RandomFlipLeftRight(HybridBlock):
    """Flip an ``(H, W, C)`` image left to right with probability 0.5.

    >>> import symgraph as mx
    >>> RandomFlipLeftRight()(mx.nd.ones((2, 3, 1))).shape
    (2, 3, 1)
    """

    def hybrid_forward(self, F, x):
        return F.image.random_flip_left_right(x)


class RandomFlipTopBottom(HybridBlock):
    """Flip an ``(H, W, C)`` image top to bottom with probability 0.5.

    >>> import symgraph as mx
    >>> RandomFlipTopBottom()(mx.nd.ones((2, 3, 1))).shape
    (2, 3, 1)
    """

    def hybrid_forward(self, F, x):
        return F.image.random_flip_top_bottom(x)


class _RandomFactor(HybridBlock):
    """A jitter op taking a factor from ``[max(0, 1 - amount), 1 + amount]``."""

    _op = ""

    def __init__(self, amount):
        super().__init__()
        self._args = (max(0, 1 - amount), 1 + amount)

    def hybrid_forward(self, F, x):
        low, high = self._args
        return getattr(F.image, self._op)(x, min_factor=low, max_factor=high)


class RandomBrightness(_RandomFactor):
    """Scale brightness by a factor from ``[max(0, 1 - brightness), 1 + brightness]``.

    >>> import symgraph as mx
    >>> RandomBrightness(0.0)(mx.nd.full((1, 1, 3), 7.0)).asnumpy().ravel().tolist()
    [7.0, 7.0, 7.0]
    """

    _op = "random_brightness"


class RandomContrast(_RandomFactor):
    """Scale contrast by a factor from ``[max(0, 1 - contrast), 1 + contrast]``.

    >>> import symgraph as mx
    >>> RandomContrast(0.5)(mx.nd.ones((2, 2, 3))).shape
    (2, 2, 3)
    """

    _op = "random_contrast"


class RandomSaturation(_RandomFactor):
    """Scale saturation by a factor from ``[max(0, 1 - saturation), 1 + saturation]``.

    >>> import symgraph as mx
    >>> RandomSaturation(0.5)(mx.nd.ones((2, 2, 3))).shape
    (2, 2, 3)
    """

    _op = "random_saturation"


class RandomHue(_RandomFactor):
    """Shift hue by a factor from ``[max(0, 1 - hue), 1 + hue]``.

    >>> import symgraph as mx
    >>> RandomHue(0.5)(mx.nd.ones((2, 2, 3))).shape
    (2, 2, 3)
    """

    _op = "random_hue"


class RandomColorJitter(HybridBlock):
    """Jitter brightness, contrast, saturation and hue (each by a factor from
    ``[max(0, 1 - v), 1 + v]``), in a random order.

    Parameters
    ----------
    brightness, contrast, saturation, hue : float
        How much to jitter each.

    Examples
    --------
    >>> import symgraph as mx
    >>> RandomColorJitter(0.1, 0.1, 0.1, 0.1)(mx.nd.ones((2, 2, 3))).shape
    (2, 2, 3)
    """

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        super().__init__()
        self._args = (brightness, contrast, saturation, hue)

    def hybrid_forward(self, F, x):
        brightness, contrast, saturation, hue = self._args
        return F.image.random_color_jitter(x, brightness=brightness, contrast=contrast,
                                           saturation=saturation, hue=hue)


class RandomLighting(HybridBlock):
    """AlexNet's PCA lighting noise with intensity ``alpha`` on an ``(H, W, 3)`` image.

    >>> import symgraph as mx
    >>> RandomLighting(0.0)(mx.nd.full((1, 1, 3), 9.0)).asnumpy().ravel().tolist()
    [9.0, 9.0, 9.0]
    """

    def __init__(self, alpha):
        super().__init__()
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        return F.image.random_lighting(x, alpha_std=self._alpha)


class RandomApply(Sequential):
    """Apply ``transforms`` with probability ``p`` (Python's ``random`` decides, as in
    MXNet), else return the input.

    Parameters
    ----------
    transforms : Block
        The transform (a :class:`Compose` for several).
    p : float
        Probability of applying it.

    Examples
    --------
    >>> import symgraph as mx
    >>> x = mx.nd.ones((2, 2, 3))
    >>> RandomApply(Cast('float64'), p=0.0)(x) is x
    True
    """

    def __init__(self, transforms, p=0.5):
        super().__init__()
        self.transforms = transforms
        self.p = p

    def forward(self, x):
        if self.p < random.random():
            return x
        return self.transforms(x)
