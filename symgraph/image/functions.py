"""``mx.image``'s functions: decoding, resizing, cropping, normalising and rotating images.

Images are (H, W, C) NDArrays, RGB by default, as in MXNet 1.9.1. Decoding, resizing and
padding call the OpenCV operators of :mod:`symgraph.ops.cv_image` (``_cvimdecode``,
``_cvimread``, ``_cvimresize``, ``_cvcopyMakeBorder``), so pixels match MXNet's, which calls
the same OpenCV functions. Random choices use Python's ``random`` and ``numpy.random`` in
MXNet's order, so a seeded script draws MXNet's crops.

>>> import symgraph as mx
>>> img = mx.nd.ones((4, 6, 3), dtype='uint8')
>>> mx.image.resize_short(img, 2).shape
(2, 3, 3)
>>> mx.image.center_crop(img, (2, 2))[1]
(2, 1, 2, 2)
"""
from __future__ import annotations

import random
import warnings
from numbers import Number

import numpy as np

from .. import ndarray as nd
from ..ndarray import NDArray

__all__ = ["imread", "imdecode", "imresize", "scale_down", "copyMakeBorder", "resize_short",
           "fixed_crop", "random_crop", "center_crop", "color_normalize", "random_size_crop",
           "imrotate", "random_rotate"]


def imread(filename: str, *args, **kwargs) -> NDArray:
    """Read and decode an image file to an (H, W, C) uint8 NDArray (operator ``_cvimread``).

    Parameters
    ----------
    filename : str
        Name of the image file to be loaded.
    flag : {0, 1}, default 1
        1 for three channel color output. 0 for grayscale output.
    to_rgb : bool, default True
        True for RGB formatted output (MXNet default), False for BGR (OpenCV default).
    out : NDArray, optional
        Output buffer.

    >>> import symgraph as mx
    >>> mx.image.imread('/no/such/file.jpg')  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ImageReadError: Imread: '/no/such/file.jpg' couldn't open file: No such file or directory
    """
    return nd._internal._cvimread(filename, *args, **kwargs)


def imresize(src: NDArray, w: int, h: int, *args, **kwargs) -> NDArray:
    """Resize an (H, W, C) image to width ``w`` and height ``h`` with OpenCV.

    ``interp`` (default 1): 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos. ``out``
    receives the result when given.

    >>> import symgraph as mx
    >>> mx.image.imresize(mx.nd.zeros((4, 4, 3)), 3, 2).shape
    (2, 3, 3)
    """
    return nd._internal._cvimresize(src, w, h, *args, **kwargs)


def imdecode(buf, *args, **kwargs) -> NDArray:
    """Decode an encoded image (bytes, bytearray, numpy uint8 array or NDArray) to an
    (H, W, C) uint8 NDArray; ``flag`` (1 colour, 0 gray), ``to_rgb`` (default True), ``out``.

    >>> import symgraph as mx, numpy as np, cv2
    >>> png = cv2.imencode('.png', np.full((2, 3, 3), (10, 20, 30), np.uint8))[1].tobytes()
    >>> mx.image.imdecode(png).asnumpy()[0, 0].tolist()
    [30, 20, 10]
    >>> mx.image.imdecode('text')  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ValueError: buf must be of type bytes, bytearray or numpy.ndarray, ...
    """
    if not isinstance(buf, NDArray):
        if not isinstance(buf, (bytes, bytearray, np.ndarray)):
            raise ValueError("buf must be of type bytes, bytearray or numpy.ndarray, if you "
                             "would like to input type str, please convert to bytes")
        raw = np.frombuffer(buf, dtype=np.uint8) if not isinstance(buf, np.ndarray) \
            else np.ascontiguousarray(buf).view(np.uint8).reshape(-1)
        buf = nd.array(raw, dtype=np.uint8)
    return nd._internal._cvimdecode(buf, *args, **kwargs)


def scale_down(src_size: tuple, size: tuple) -> tuple:
    """Scale a crop ``size`` (w, h) down, keeping its aspect ratio, until it fits in
    ``src_size`` (w, h).

    >>> scale_down((640, 480), (720, 120))
    (640, 106)
    """
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


def copyMakeBorder(src: NDArray, top: int, bot: int, left: int, right: int,
                   *args, **kwargs) -> NDArray:
    """Pad an image's border with OpenCV (``type``, OpenCV's codes: 0 constant, 1 replicate,
    2 reflect, 3 wrap, 4 reflect_101; ``values``: the fill colour; ``out``).

    >>> import symgraph as mx
    >>> mx.image.copyMakeBorder(mx.nd.zeros((2, 2, 3)), 1, 1, 2, 2, type=0).shape
    (4, 6, 3)
    """
    return nd._internal._cvcopyMakeBorder(src, top, bot, left, right, *args, **kwargs)


def _get_interp_method(interp: int, sizes: tuple = ()) -> int:
    """The OpenCV interpolation code for ``interp``: 0-4 as given; 9 picks cubic to
    enlarge, area to shrink, bilinear otherwise (``sizes`` = (old_h, old_w, new_h, new_w);
    bicubic without sizes); 10 draws one of 0-4 at random.

    >>> _get_interp_method(9, (10, 10, 5, 5)), _get_interp_method(9, (10, 10, 20, 20))
    (3, 2)
    """
    if interp == 9:
        if not sizes:
            return 2
        if len(sizes) != 4:
            raise ValueError(f"sizes must be (old_h, old_w, new_h, new_w), got {sizes}")
        oh, ow, nh, nw = sizes
        if nh > oh and nw > ow:
            return 2
        if nh < oh and nw < ow:
            return 3
        return 1
    if interp == 10:
        return random.randint(0, 4)
    if interp not in (0, 1, 2, 3, 4):
        raise ValueError(f"Unknown interp method {interp:d}")
    return interp


def resize_short(src: NDArray, size: int, interp: int = 2) -> NDArray:
    """Resize so that the shorter edge is ``size``, keeping the aspect ratio.

    >>> import symgraph as mx
    >>> mx.image.resize_short(mx.nd.zeros((10, 20, 3)), 5).shape
    (5, 10, 3)
    """
    h, w, _ = src.shape
    if h > w:
        new_h, new_w = size * h // w, size
    else:
        new_h, new_w = size, size * w // h
    return imresize(src, new_w, new_h, interp=_get_interp_method(interp, (h, w, new_h, new_w)))


def fixed_crop(src: NDArray, x0: int, y0: int, w: int, h: int, size: tuple | None = None,
               interp: int = 2) -> NDArray:
    """Crop ``src`` at (x0, y0) to (w, h), then resize to ``size`` (w, h) if given.

    >>> import symgraph as mx
    >>> mx.image.fixed_crop(mx.nd.zeros((10, 20, 3)), 2, 3, 4, 5, size=(8, 10)).shape
    (10, 8, 3)
    """
    out = src[y0:y0 + h, x0:x0 + w]
    if size is not None and (w, h) != size:
        sizes = (h, w, size[1], size[0])
        out = imresize(out, *size, interp=_get_interp_method(interp, sizes))
    return out


def random_crop(src: NDArray, size: tuple, interp: int = 2) -> tuple:
    """Crop a random (w, h) = ``size`` window (scaled down to fit, then resized back);
    returns the image and (x0, y0, w, h) of the window.

    >>> import symgraph as mx
    >>> out, (x0, y0, w, h) = mx.image.random_crop(mx.nd.zeros((10, 20, 3)), (4, 4))
    >>> out.shape, (w, h)
    ((4, 4, 3), (4, 4))
    """
    h, w, _ = src.shape
    new_w, new_h = scale_down((w, h), size)
    x0 = random.randint(0, w - new_w)
    y0 = random.randint(0, h - new_h)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def center_crop(src: NDArray, size: tuple, interp: int = 2) -> tuple:
    """Crop the centred (w, h) = ``size`` window (scaled down to fit, then resized back);
    returns the image and (x0, y0, w, h).

    >>> import symgraph as mx
    >>> mx.image.center_crop(mx.nd.zeros((10, 20, 3)), (4, 4))[1]
    (8, 3, 4, 4)
    """
    h, w, _ = src.shape
    new_w, new_h = scale_down((w, h), size)
    x0 = int((w - new_w) / 2)
    y0 = int((h - new_h) / 2)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def color_normalize(src: NDArray, mean, std=None) -> NDArray:
    """``(src - mean) / std``, in place on ``src`` as in MXNet (None skips a step).

    >>> import symgraph as mx
    >>> mx.image.color_normalize(mx.nd.full((1, 1, 3), 5), mx.nd.array([1, 2, 3]),
    ...                          mx.nd.array([2, 3, 1])).asnumpy().ravel().tolist()
    [2.0, 1.0, 2.0]
    """
    if mean is not None:
        src -= mean
    if std is not None:
        src /= std
    return src


def random_size_crop(src: NDArray, size: tuple, area, ratio: tuple, interp: int = 2,
                     **kwargs) -> tuple:
    """Crop a random window whose area is a random fraction in ``area`` (a float: the
    minimum, up to 1) of the image's and whose aspect ratio is log-uniform in ``ratio``,
    resized to ``size``; 10 tries, then a centre crop. Returns the image and (x0, y0, w, h).

    >>> import symgraph as mx
    >>> mx.image.random_size_crop(mx.nd.zeros((10, 10, 3)), (5, 5), 0.5, (0.75, 1.33))[0].shape
    (5, 5, 3)
    """
    h, w, _ = src.shape
    src_area = h * w
    if "min_area" in kwargs:
        warnings.warn("`min_area` is deprecated. Please use `area` instead.",
                      DeprecationWarning, stacklevel=2)
        area = kwargs.pop("min_area")
    if kwargs:
        raise TypeError(f"unexpected keyword arguments for `random_size_crop`: {sorted(kwargs)}")
    if isinstance(area, Number):
        area = (area, 1.0)
    for _ in range(10):
        target_area = random.uniform(area[0], area[1]) * src_area
        log_ratio = (np.log(ratio[0]), np.log(ratio[1]))
        new_ratio = np.exp(random.uniform(*log_ratio))
        new_w = int(round(np.sqrt(target_area * new_ratio)))
        new_h = int(round(np.sqrt(target_area / new_ratio)))
        if new_w <= w and new_h <= h:
            x0 = random.randint(0, w - new_w)
            y0 = random.randint(0, h - new_h)
            return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)
    return center_crop(src, size, interp)


def _rotation_grid(rad: NDArray, h: int, w: int) -> tuple:
    """Sampling coordinates of an (h, w) grid rotated by ``rad`` (N, 1, 1), normalised to
    [-1, 1] after the rotation (keeps the aspect ratio)."""
    hscale, wscale = float(h - 1) / 2, float(w - 1) / 2
    rows = nd.repeat(nd.arange(h).reshape((h, 1)), w, axis=1) - hscale
    cols = nd.repeat(nd.arange(w).reshape((1, w)), h, axis=0) - wscale
    rows, cols = rows.expand_dims(axis=0), cols.expand_dims(axis=0)
    cos, sin = nd.cos(rad), nd.sin(rad)
    return (cols * cos - rows * sin) / wscale, (cols * sin + rows * cos) / hscale


def _zoom_scale(rad: NDArray, h: int, w: int, zoom_out: bool) -> NDArray:
    """The grid scale that keeps the whole image (zoom_out) or no padding (zoom_in)."""
    hh, ww = nd.array([h]), nd.array([w])
    rho, corner = nd.sqrt(hh * hh + ww * ww), nd.arctan(hh / ww)
    turn = nd.abs(rad)
    max_x = nd.maximum(nd.abs(rho * nd.cos(corner + turn)), nd.abs(rho * nd.cos(corner - turn)))
    max_y = nd.maximum(nd.abs(rho * nd.sin(corner + turn)), nd.abs(rho * nd.sin(corner - turn)))
    if zoom_out:
        scale = nd.maximum(max_x / ww, max_y / hh)
    else:
        scale = nd.minimum(ww / max_x, hh / max_y)
    return scale.expand_dims(axis=3)


def imrotate(src: NDArray, rotation_degrees, zoom_in: bool = False,
             zoom_out: bool = False) -> NDArray:
    """Rotate a float32 (C, H, W) image, or an (N, C, H, W) batch, by ``rotation_degrees``
    (a scalar, or one angle per image) around its centre with bilinear sampling.

    >>> import symgraph as mx
    >>> mx.image.imrotate(mx.nd.ones((1, 4, 6)), 30).shape
    (1, 4, 6)
    >>> mx.image.imrotate(mx.nd.ones((1, 4, 6)), 30, zoom_in=True, zoom_out=True)
    Traceback (most recent call last):
    ...
    ValueError: `zoom_in` and `zoom_out` cannot be both True
    """
    if zoom_in and zoom_out:
        raise ValueError("`zoom_in` and `zoom_out` cannot be both True")
    if src.dtype is not np.float32:
        raise TypeError("Only `float32` images are supported by this function")
    expanded = src.ndim == 3
    if expanded:
        src = src.expand_dims(axis=0)
        if not isinstance(rotation_degrees, Number):
            raise TypeError("When a single image is passed the rotation angle is required to "
                            "be a scalar.")
    elif src.ndim != 4:
        raise ValueError("Only 3D and 4D are supported by this function")
    if isinstance(rotation_degrees, Number):
        rotation_degrees = nd.array([rotation_degrees] * len(src))
    if len(src) != len(rotation_degrees):
        raise ValueError("The number of images must be equal to the number of rotation angles")
    rad = (np.pi * rotation_degrees.as_in_context(src.context) / 180)
    rad = rad.expand_dims(axis=1).expand_dims(axis=2)
    _, _, h, w = src.shape
    cols, rows = _rotation_grid(rad, h, w)
    grid = nd.concat(cols.expand_dims(axis=1), rows.expand_dims(axis=1), dim=1)
    if zoom_in or zoom_out:
        grid = grid * _zoom_scale(rad, h, w, zoom_out)
    rotated = nd.BilinearSampler(src, grid)
    return rotated[0] if expanded else rotated


def random_rotate(src: NDArray, angle_limits: tuple, zoom_in: bool = False,
                  zoom_out: bool = False) -> NDArray:
    """Rotate by an angle drawn uniformly from ``angle_limits`` (one per image of a batch).

    >>> import symgraph as mx
    >>> mx.image.random_rotate(mx.nd.ones((2, 1, 4, 6)), (-5, 5)).shape
    (2, 1, 4, 6)
    """
    if src.ndim == 3:
        degrees = np.random.uniform(*angle_limits)
    else:
        degrees = nd.array(np.random.uniform(*angle_limits, size=src.shape[0]))
    return imrotate(src, degrees, zoom_in=zoom_in, zoom_out=zoom_out)
