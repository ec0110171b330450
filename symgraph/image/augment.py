"""``mx.image``'s augmenters: callables on (H, W, C) images, MXNet 1.9.1's classes and
``CreateAugmenter``'s standard list.

>>> import symgraph as mx
>>> augs = mx.image.CreateAugmenter((3, 4, 4), resize=6)
>>> [type(a).__name__ for a in augs]
['ResizeAug', 'CenterCropAug', 'CastAug']
>>> augs[0].dumps()
'["resizeaug", {"size": 6, "interp": 2}]'
"""
from __future__ import annotations

import json
import random
import warnings

import numpy as np

from .. import ndarray as nd
from ..ndarray import NDArray
from .functions import (
    _get_interp_method,
    center_crop,
    color_normalize,
    imresize,
    random_crop,
    random_size_crop,
    resize_short,
)

__all__ = ["Augmenter", "SequentialAug", "ResizeAug", "ForceResizeAug", "RandomCropAug",
           "RandomSizedCropAug", "CenterCropAug", "RandomOrderAug", "BrightnessJitterAug",
           "ContrastJitterAug", "SaturationJitterAug", "HueJitterAug", "ColorJitterAug",
           "LightingAug", "ColorNormalizeAug", "RandomGrayAug", "HorizontalFlipAug", "CastAug",
           "CreateAugmenter"]

_GRAY_COEF = (0.299, 0.587, 0.114)


class _Dumpable:
    """Keeps the constructor's keyword arguments (arrays as lists) for :meth:`dumps`; the
    common base of :class:`Augmenter` and ``DetAugmenter``, which MXNet keeps apart."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        for k, v in self._kwargs.items():
            if isinstance(v, NDArray):
                v = v.asnumpy()
            if isinstance(v, np.ndarray):
                self._kwargs[k] = v.tolist()

    def dumps(self) -> str:
        """The augmenter as a JSON string: ``[class name lowercased, kwargs]``."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])


class Augmenter(_Dumpable):
    """Image augmenter base class; keyword arguments are kept for :meth:`dumps`.

    >>> Augmenter(p=0.5).dumps()
    '["augmenter", {"p": 0.5}]'
    """

    def __call__(self, src):
        raise NotImplementedError("Must override implementation.")


class SequentialAug(Augmenter):
    """Apply a list of augmenters in order."""

    def __init__(self, ts):
        super().__init__()
        self.ts = ts

    def dumps(self):
        """``[name, [each augmenter's dumps()]]`` (a list, as MXNet returns)."""
        return [self.__class__.__name__.lower(), [x.dumps() for x in self.ts]]

    def __call__(self, src):
        for aug in self.ts:
            src = aug(src)
        return src


class RandomOrderAug(Augmenter):
    """Apply a list of augmenters in a random order (shuffled in place on each call)."""

    def __init__(self, ts):
        super().__init__()
        self.ts = ts

    dumps = SequentialAug.dumps

    def __call__(self, src):
        random.shuffle(self.ts)
        for aug in self.ts:
            src = aug(src)
        return src


class ResizeAug(Augmenter):
    """Resize the shorter edge to ``size``."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        return resize_short(src, self.size, self.interp)


class ForceResizeAug(Augmenter):
    """Resize to ``size`` (w, h), ignoring the aspect ratio."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        sizes = (src.shape[0], src.shape[1], self.size[1], self.size[0])
        return imresize(src, *self.size, interp=_get_interp_method(self.interp, sizes))


class RandomCropAug(Augmenter):
    """Crop a random ``size`` (w, h) window."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        return random_crop(src, self.size, self.interp)[0]


class RandomSizedCropAug(Augmenter):
    """Crop a window of random area and aspect ratio, resized to ``size``."""

    def __init__(self, size, area, ratio, interp=2, **kwargs):
        super().__init__(size=size, area=area, ratio=ratio, interp=interp)
        self.size, self.ratio, self.interp = size, ratio, interp
        self.area = area
        if "min_area" in kwargs:
            warnings.warn("`min_area` is deprecated. Please use `area` instead.",
                          DeprecationWarning, stacklevel=2)
            self.area = kwargs.pop("min_area")
        if kwargs:
            raise TypeError(f"unexpected keyword arguments for `RandomSizedCropAug`: "
                            f"{sorted(kwargs)}")

    def __call__(self, src):
        return random_size_crop(src, self.size, self.area, self.ratio, self.interp)[0]


class CenterCropAug(Augmenter):
    """Crop the centred ``size`` (w, h) window."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        return center_crop(src, self.size, self.interp)[0]


class BrightnessJitterAug(Augmenter):
    """Scale by ``1 + U(-brightness, brightness)`` (in place)."""

    def __init__(self, brightness):
        super().__init__(brightness=brightness)
        self.brightness = brightness

    def __call__(self, src):
        src *= 1.0 + random.uniform(-self.brightness, self.brightness)
        return src


class ContrastJitterAug(Augmenter):
    """Blend with the image's mean gray level by ``1 + U(-contrast, contrast)``."""

    def __init__(self, contrast):
        super().__init__(contrast=contrast)
        self.contrast = contrast
        self.coef = nd.array([[list(_GRAY_COEF)]])

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.contrast, self.contrast)
        gray = src * self.coef
        gray = 3.0 * (1.0 - alpha) / gray.size * nd.sum(gray)
        src *= alpha
        src += gray
        return src


class SaturationJitterAug(Augmenter):
    """Blend with each pixel's gray level by ``1 + U(-saturation, saturation)``."""

    def __init__(self, saturation):
        super().__init__(saturation=saturation)
        self.saturation = saturation
        self.coef = nd.array([[list(_GRAY_COEF)]])

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.saturation, self.saturation)
        gray = nd.sum(src * self.coef, axis=2, keepdims=True)
        gray *= 1.0 - alpha
        src *= alpha
        src += gray
        return src


class HueJitterAug(Augmenter):
    """Rotate the hue in YIQ space by ``U(-hue, hue) * pi``."""

    def __init__(self, hue):
        super().__init__(hue=hue)
        self.hue = hue
        self.tyiq = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321],
                              [0.211, -0.523, 0.311]])
        self.ityiq = np.array([[1.0, 0.956, 0.621], [1.0, -0.272, -0.647],
                               [1.0, -1.107, 1.705]])

    def __call__(self, src):
        alpha = random.uniform(-self.hue, self.hue)
        u, w = np.cos(alpha * np.pi), np.sin(alpha * np.pi)
        bt = np.array([[1.0, 0.0, 0.0], [0.0, u, -w], [0.0, w, u]])
        t = np.dot(np.dot(self.ityiq, bt), self.tyiq).T
        return nd.dot(src, nd.array(t))


class ColorJitterAug(RandomOrderAug):
    """Brightness, contrast and saturation jitter (those > 0) in random order."""

    def __init__(self, brightness, contrast, saturation):
        ts = []
        if brightness > 0:
            ts.append(BrightnessJitterAug(brightness))
        if contrast > 0:
            ts.append(ContrastJitterAug(contrast))
        if saturation > 0:
            ts.append(SaturationJitterAug(saturation))
        super().__init__(ts)


class LightingAug(Augmenter):
    """AlexNet-style PCA lighting noise: add ``eigvec * N(0, alphastd) . eigval``."""

    def __init__(self, alphastd, eigval, eigvec):
        super().__init__(alphastd=alphastd, eigval=eigval, eigvec=eigvec)
        self.alphastd, self.eigval, self.eigvec = alphastd, eigval, eigvec

    def __call__(self, src):
        alpha = np.random.normal(0, self.alphastd, size=(3,))
        src += nd.array(np.dot(self.eigvec * alpha, self.eigval))
        return src


class ColorNormalizeAug(Augmenter):
    """Subtract ``mean`` and divide by ``std`` (either may be None)."""

    def __init__(self, mean, std):
        super().__init__(mean=mean, std=std)
        self.mean = mean if mean is None or isinstance(mean, NDArray) else nd.array(mean)
        self.std = std if std is None or isinstance(std, NDArray) else nd.array(std)

    def __call__(self, src):
        return color_normalize(src, self.mean, self.std)


class RandomGrayAug(Augmenter):
    """Convert to gray (kept as 3 channels) with probability ``p``."""

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p
        self.mat = nd.array([[0.21, 0.21, 0.21], [0.72, 0.72, 0.72], [0.07, 0.07, 0.07]])

    def __call__(self, src):
        if random.random() < self.p:
            src = nd.dot(src, self.mat)
        return src


class HorizontalFlipAug(Augmenter):
    """Flip left-right with probability ``p``."""

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p

    def __call__(self, src):
        if random.random() < self.p:
            src = nd.flip(src, axis=1)
        return src


class CastAug(Augmenter):
    """Cast to ``typ`` (float32 by default)."""

    def __init__(self, typ="float32"):
        super().__init__(type=typ)
        self.typ = typ

    def __call__(self, src):
        return src.astype(self.typ)


_PCA_EIGVAL = np.array([55.46, 4.794, 1.148])
_PCA_EIGVEC = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140],
                        [-0.5836, -0.6948, 0.4203]])


def _normalizer(value, default, what: str):
    """``mean``/``std``: True is ImageNet's, an array must hold 1 or 3 values."""
    if value is True:
        return nd.array(default)
    if value is not None and not (isinstance(value, (np.ndarray, NDArray))
                                  and value.shape[0] in (1, 3)):
        raise ValueError(f"CreateAugmenter: {what} must be True, None or an array of 1 or 3 "
                         f"values, got {value!r}")
    return value


def CreateAugmenter(data_shape, resize=0, rand_crop=False, rand_resize=False,
                    rand_mirror=False, mean=None, std=None, brightness=0, contrast=0,
                    saturation=0, hue=0, pca_noise=0, rand_gray=0, inter_method=2) -> list:
    """MXNet's standard augmenter list for (C, H, W) ``data_shape``: resize, crop (random
    sized, random or centre), mirror, cast to float32, colour jitter, hue, PCA noise, gray,
    normalise (``mean``/``std`` True: ImageNet's RGB statistics).

    >>> import symgraph as mx
    >>> [type(a).__name__ for a in mx.image.CreateAugmenter((3, 8, 8), rand_crop=True,
    ...                                                    rand_mirror=True, mean=True)]
    ['RandomCropAug', 'HorizontalFlipAug', 'CastAug', 'ColorNormalizeAug']
    """
    auglist: list = []
    if resize > 0:
        auglist.append(ResizeAug(resize, inter_method))
    crop_size = (data_shape[2], data_shape[1])
    if rand_resize:
        if not rand_crop:
            raise ValueError("CreateAugmenter: rand_resize needs rand_crop=True")
        auglist.append(RandomSizedCropAug(crop_size, 0.08, (3.0 / 4.0, 4.0 / 3.0),
                                          inter_method))
    elif rand_crop:
        auglist.append(RandomCropAug(crop_size, inter_method))
    else:
        auglist.append(CenterCropAug(crop_size, inter_method))
    if rand_mirror:
        auglist.append(HorizontalFlipAug(0.5))
    auglist.append(CastAug())
    if brightness or contrast or saturation:
        auglist.append(ColorJitterAug(brightness, contrast, saturation))
    if hue:
        auglist.append(HueJitterAug(hue))
    if pca_noise > 0:
        auglist.append(LightingAug(pca_noise, _PCA_EIGVAL, _PCA_EIGVEC))
    if rand_gray > 0:
        auglist.append(RandomGrayAug(rand_gray))
    mean = _normalizer(mean, [123.68, 116.28, 103.53], "mean")
    std = _normalizer(std, [58.395, 57.12, 57.375], "std")
    if mean is not None or std is not None:
        auglist.append(ColorNormalizeAug(mean, std))
    return auglist
