"""``mx.image``'s detection augmenters (MXNet 1.9.1's ``mxnet/image/detection.py``).

A detection label is an (N, 5+) numpy array, one object per row:
``[class_id, xmin, ymin, xmax, ymax, ...]`` with coordinates normalised to [0, 1]. A
detection augmenter maps ``(image, label)`` to a new pair.

>>> import numpy as np, symgraph as mx
>>> flip = mx.image.DetHorizontalFlipAug(1.0)
>>> img, label = flip(mx.nd.zeros((2, 4, 3)), np.array([[0, 0.1, 0.2, 0.5, 0.6]]))
>>> label.tolist()
[[0.0, 0.5, 0.2, 0.9, 0.6]]
"""
from __future__ import annotations

import logging
import random
import warnings
from math import sqrt
from numbers import Number

import numpy as np

from .. import ndarray as nd
from .augment import (
    _PCA_EIGVAL,
    _PCA_EIGVEC,
    Augmenter,
    CastAug,
    ColorJitterAug,
    ColorNormalizeAug,
    ForceResizeAug,
    HueJitterAug,
    LightingAug,
    RandomGrayAug,
    ResizeAug,
    _Dumpable,
)
from .functions import fixed_crop

__all__ = ["DetAugmenter", "DetBorrowAug", "DetRandomSelectAug", "DetHorizontalFlipAug",
           "DetRandomCropAug", "DetRandomPadAug", "CreateMultiRandCropAugmenter",
           "CreateDetAugmenter"]


class DetAugmenter(_Dumpable):
    """Detection augmenter base class: ``__call__(src, label) -> (src, label)``; keyword
    arguments are kept for :meth:`dumps`."""

    def __call__(self, src, label):
        raise NotImplementedError("Must override implementation.")


class DetBorrowAug(DetAugmenter):
    """Apply an image :class:`Augmenter` that moves no pixels (labels unchanged)."""

    def __init__(self, augmenter):
        if not isinstance(augmenter, Augmenter):
            raise TypeError("Borrowing from invalid Augmenter")
        super().__init__(augmenter=augmenter.dumps())
        self.augmenter = augmenter

    def dumps(self):
        """``[name, the borrowed augmenter's dumps()]``."""
        return [self.__class__.__name__.lower(), self.augmenter.dumps()]

    def __call__(self, src, label):
        return self.augmenter(src), label


class DetRandomSelectAug(DetAugmenter):
    """Apply one augmenter of ``aug_list`` chosen at random, or none with ``skip_prob``."""

    def __init__(self, aug_list, skip_prob=0):
        super().__init__(skip_prob=skip_prob)
        if not isinstance(aug_list, (list, tuple)):
            aug_list = [aug_list]
        for aug in aug_list:
            if not isinstance(aug, DetAugmenter):
                raise ValueError("Allow DetAugmenter in list only")
        self.aug_list = aug_list
        self.skip_prob = 1 if not aug_list else skip_prob

    def dumps(self):
        """``[name, [each augmenter's dumps()]]``."""
        return [self.__class__.__name__.lower(), [x.dumps() for x in self.aug_list]]

    def __call__(self, src, label):
        if random.random() < self.skip_prob:
            return src, label
        random.shuffle(self.aug_list)
        return self.aug_list[0](src, label)


class DetHorizontalFlipAug(DetAugmenter):
    """Flip image and boxes left-right with probability ``p`` (label changed in place)."""

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p

    def __call__(self, src, label):
        if random.random() < self.p:
            src = nd.flip(src, axis=1)
            self._flip_label(label)
        return src, label

    def _flip_label(self, label):
        tmp = 1.0 - label[:, 1]
        label[:, 1] = 1.0 - label[:, 3]
        label[:, 3] = tmp


def _pair(value, what: str, owner: str) -> tuple:
    """A (low, high) range from a pair or a single number."""
    if isinstance(value, (tuple, list)):
        return tuple(value)
    if not isinstance(value, Number):
        raise TypeError(f"{owner}: {what} must be a number or a (low, high) pair, got {value!r}")
    logging.info("Using fixed %s: %s in %s", what, value, owner)
    return (value, value)


def _areas(boxes: np.ndarray) -> np.ndarray:
    """Areas of (xmin, ymin, xmax, ymax) rows (0 for empty boxes)."""
    return np.maximum(0, boxes[:, 3] - boxes[:, 1]) * np.maximum(0, boxes[:, 2] - boxes[:, 0])


def _intersect(boxes: np.ndarray, xmin, ymin, xmax, ymax) -> np.ndarray:
    """Boxes clipped to the window; rows that miss it become zeros."""
    left, right = np.maximum(boxes[:, 0], xmin), np.minimum(boxes[:, 2], xmax)
    top, bot = np.maximum(boxes[:, 1], ymin), np.minimum(boxes[:, 3], ymax)
    out = boxes.copy()
    out[:, 0], out[:, 1], out[:, 2], out[:, 3] = left, top, right, bot
    out[np.where(np.logical_or(left >= right, top >= bot))[0], :] = 0
    return out


def _window_height(ratio, min_area, max_area, height, width, crop: bool) -> int:
    """The random window height MXNet draws for an aspect ``ratio`` (crop or pad)."""
    h = int(round(sqrt(min_area / ratio)))
    max_h = int(round(sqrt(max_area / ratio)))
    if crop:
        if round(max_h * ratio) > width:
            max_h = int((width + 0.4999999) / ratio)
        max_h = min(max_h, height)
    else:
        if round(h * ratio) < width:
            h = int((width + 0.499999) / ratio)
        h = max(h, height)
    h = min(h, max_h)
    if h < max_h:
        h = random.randint(h, max_h)
    return h


def _ranges_valid(owner: str, aspect_ratio_range, area_range, area_floor: float,
                  area_what: str) -> bool:
    """Whether a crop/pad augmenter's ranges are usable; warns as MXNet does if not (the
    area's upper bound must exceed ``area_floor``)."""
    if area_range[1] <= area_floor or area_range[0] > area_range[1]:
        warnings.warn(f"Skip {owner} due to invalid {area_what}: {area_range}", stacklevel=3)
        return False
    if aspect_ratio_range[0] <= 0 or aspect_ratio_range[0] > aspect_ratio_range[1]:
        warnings.warn(f"Skip {owner} due to invalid aspect_ratio_range: {aspect_ratio_range}",
                      stacklevel=3)
        return False
    return True


def _window_draws(aug, height: int, width: int, crop: bool):
    """Per attempt of a crop/pad augmenter ``aug``, a random aspect ratio and window
    height, drawn as MXNet does (nothing when ``aug`` is disabled or the image empty)."""
    if not aug.enabled or height <= 0 or width <= 0:
        return
    min_area = aug.area_range[0] * height * width
    max_area = aug.area_range[1] * height * width
    for _ in range(aug.max_attempts):
        ratio = random.uniform(*aug.aspect_ratio_range)
        if ratio <= 0:
            continue
        yield ratio, _window_height(ratio, min_area, max_area, height, width, crop)


class DetRandomCropAug(DetAugmenter):
    """Random crop keeping objects covered by at least ``min_object_covered``; objects
    covered less than ``min_eject_coverage`` are dropped from the label."""

    def __init__(self, min_object_covered=0.1, aspect_ratio_range=(0.75, 1.33),
                 area_range=(0.05, 1.0), min_eject_coverage=0.3, max_attempts=50):
        aspect_ratio_range = _pair(aspect_ratio_range, "aspect ratio", "DetRandomCropAug")
        area_range = _pair(area_range, "area range", "DetRandomCropAug")
        super().__init__(min_object_covered=min_object_covered,
                         aspect_ratio_range=aspect_ratio_range, area_range=area_range,
                         min_eject_coverage=min_eject_coverage, max_attempts=max_attempts)
        self.min_object_covered, self.min_eject_coverage = min_object_covered, min_eject_coverage
        self.max_attempts = max_attempts
        self.aspect_ratio_range, self.area_range = aspect_ratio_range, area_range
        self.enabled = _ranges_valid("DetRandomCropAug", aspect_ratio_range, area_range,
                                     0.0, "area_range")

    def __call__(self, src, label):
        crop = self._random_crop_proposal(label, src.shape[0], src.shape[1])
        if crop:
            x, y, w, h, label = crop
            src = fixed_crop(src, x, y, w, h, None)
        return src, label

    def _check_satisfy_constraints(self, label, xmin, ymin, xmax, ymax, width, height):
        if (xmax - xmin) * (ymax - ymin) < 2:
            return False
        x1, y1 = float(xmin) / width, float(ymin) / height
        x2, y2 = float(xmax) / width, float(ymax) / height
        object_areas = _areas(label[:, 1:])
        valid_objects = np.where(object_areas * width * height > 2)[0]
        if valid_objects.size < 1:
            return False
        intersects = _intersect(label[valid_objects, 1:], x1, y1, x2, y2)
        coverages = _areas(intersects) / object_areas[valid_objects]
        coverages = coverages[np.where(coverages > 0)[0]]
        return coverages.size > 0 and np.amin(coverages) > self.min_object_covered

    def _update_labels(self, label, crop_box, height, width):
        xmin, ymin = float(crop_box[0]) / width, float(crop_box[1]) / height
        w, h = float(crop_box[2]) / width, float(crop_box[3]) / height
        out = label.copy()
        out[:, (1, 3)] -= xmin
        out[:, (2, 4)] -= ymin
        out[:, (1, 3)] /= w
        out[:, (2, 4)] /= h
        out[:, 1:5] = np.clip(out[:, 1:5], 0, 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            coverage = _areas(out[:, 1:]) * w * h / _areas(label[:, 1:])
        valid = np.logical_and(out[:, 3] > out[:, 1], out[:, 4] > out[:, 2])
        valid = np.where(np.logical_and(valid, coverage > self.min_eject_coverage))[0]
        return out[valid, :] if valid.size else None

    def _random_crop_proposal(self, label, height, width):
        min_area = self.area_range[0] * height * width
        max_area = self.area_range[1] * height * width
        for ratio, h in _window_draws(self, height, width, crop=True):
            w = int(round(h * ratio))
            if w * h < min_area:
                h += 1
                w = int(round(h * ratio))
            if w * h > max_area:
                h -= 1
                w = int(round(h * ratio))
            if not (min_area <= w * h <= max_area and 0 <= w <= width and 0 <= h <= height):
                continue
            y = random.randint(0, max(0, height - h))
            x = random.randint(0, max(0, width - w))
            if self._check_satisfy_constraints(label, x, y, x + w, y + h, width, height):
                new_label = self._update_labels(label, (x, y, w, h), height, width)
                if new_label is not None:
                    return (x, y, w, h, new_label)
        return ()


class DetRandomPadAug(DetAugmenter):
    """Random padding (zoom out) to an area ratio in ``area_range`` filled with
    ``pad_val``; boxes are rescaled into the larger image."""

    def __init__(self, aspect_ratio_range=(0.75, 1.33), area_range=(1.0, 3.0),
                 max_attempts=50, pad_val=(128, 128, 128)):
        if not isinstance(pad_val, (list, tuple, Number)):
            raise TypeError(f"DetRandomPadAug: pad_val must be a number or a tuple, got "
                            f"{pad_val!r}")
        aspect_ratio_range = _pair(aspect_ratio_range, "aspect ratio", "DetRandomPadAug")
        area_range = _pair(area_range, "area range", "DetRandomPadAug")
        super().__init__(aspect_ratio_range=aspect_ratio_range, area_range=area_range,
                         max_attempts=max_attempts, pad_val=pad_val)
        self.pad_val, self.max_attempts = pad_val, max_attempts
        self.aspect_ratio_range, self.area_range = aspect_ratio_range, area_range
        self.enabled = _ranges_valid("DetRandomPadAug", aspect_ratio_range, area_range,
                                     1.0, "parameters")

    def __call__(self, src, label):
        height, width, _ = src.shape
        pad = self._random_pad_proposal(label, height, width)
        if pad:
            x, y, w, h, label = pad
            values = self.pad_val if isinstance(self.pad_val, (list, tuple)) else (self.pad_val,)
            src = nd._internal._cvcopyMakeBorder(src, y, h - y - height, x, w - x - width, 16,
                                                 values=tuple(values))
        return src, label

    def _update_labels(self, label, pad_box, height, width):
        out = label.copy()
        out[:, (1, 3)] = (out[:, (1, 3)] * width + pad_box[0]) / pad_box[2]
        out[:, (2, 4)] = (out[:, (2, 4)] * height + pad_box[1]) / pad_box[3]
        return out

    def _random_pad_proposal(self, label, height, width):
        for ratio, h in _window_draws(self, height, width, crop=False):
            w = int(round(h * ratio))
            if h - height < 2 or w - width < 2:
                continue
            y = random.randint(0, max(0, h - height))
            x = random.randint(0, max(0, w - width))
            return (x, y, w, h, self._update_labels(label, (x, y, w, h), height, width))
        return ()


def _aligned(params: list) -> list:
    """Parameters given as lists of one length (single values repeated)."""
    lists = [p if isinstance(p, list) else [p] for p in params]
    num = max([1] + [len(p) for p in lists])
    for k, p in enumerate(lists):
        if len(p) != num:
            if len(p) != 1:
                raise ValueError(f"CreateMultiRandCropAugmenter: parameter lists must have "
                                 f"one length or 1, got lengths {[len(q) for q in lists]}")
            lists[k] = p * num
    return lists


def CreateMultiRandCropAugmenter(min_object_covered=0.1, aspect_ratio_range=(0.75, 1.33),
                                 area_range=(0.05, 1.0), min_eject_coverage=0.3,
                                 max_attempts=50, skip_prob=0):
    """A :class:`DetRandomSelectAug` over one :class:`DetRandomCropAug` per parameter set
    (parameters given as lists build several).

    >>> import symgraph as mx
    >>> len(mx.image.CreateMultiRandCropAugmenter(min_object_covered=[0.1, 0.3]).aug_list)
    2
    """
    params = _aligned([min_object_covered, aspect_ratio_range, area_range, min_eject_coverage,
                       max_attempts])
    augs = [DetRandomCropAug(min_object_covered=moc, aspect_ratio_range=arr, area_range=ar,
                             min_eject_coverage=mec, max_attempts=ma)
            for moc, arr, ar, mec, ma in zip(*params)]
    return DetRandomSelectAug(augs, skip_prob=skip_prob)


def _det_normalizer(value, default, what: str):
    if value is True:
        return np.array(default)
    if value is not None and not (isinstance(value, np.ndarray) and value.shape[0] in (1, 3)):
        raise ValueError(f"CreateDetAugmenter: {what} must be True, None or a numpy array of "
                         f"1 or 3 values, got {value!r}")
    return value


def CreateDetAugmenter(data_shape, resize=0, rand_crop=0, rand_pad=0, rand_gray=0,
                       rand_mirror=False, mean=None, std=None, brightness=0, contrast=0,
                       saturation=0, pca_noise=0, hue=0, inter_method=2, min_object_covered=0.1,
                       aspect_ratio_range=(0.75, 1.33), area_range=(0.05, 3.0),
                       min_eject_coverage=0.3, max_attempts=50, pad_val=(127, 127, 127)):
    """MXNet's standard detection augmenter list for (C, H, W) ``data_shape``.

    >>> import symgraph as mx
    >>> [type(a).__name__ for a in mx.image.CreateDetAugmenter((3, 8, 8), rand_crop=0.5)]
    ['DetRandomSelectAug', 'DetBorrowAug', 'DetBorrowAug']
    """
    auglist: list = []
    if resize > 0:
        auglist.append(DetBorrowAug(ResizeAug(resize, inter_method)))
    if rand_crop > 0:
        auglist.append(CreateMultiRandCropAugmenter(
            min_object_covered, aspect_ratio_range, area_range, min_eject_coverage,
            max_attempts, skip_prob=1 - rand_crop))
    if rand_mirror > 0:
        auglist.append(DetHorizontalFlipAug(0.5))
    if rand_pad > 0:
        pad_aug = DetRandomPadAug(aspect_ratio_range, (1.0, area_range[1]), max_attempts,
                                  pad_val)
        auglist.append(DetRandomSelectAug([pad_aug], 1 - rand_pad))
    auglist.append(DetBorrowAug(ForceResizeAug((data_shape[2], data_shape[1]), inter_method)))
    auglist.append(DetBorrowAug(CastAug()))
    if brightness or contrast or saturation:
        auglist.append(DetBorrowAug(ColorJitterAug(brightness, contrast, saturation)))
    if hue:
        auglist.append(DetBorrowAug(HueJitterAug(hue)))
    if pca_noise > 0:
        auglist.append(DetBorrowAug(LightingAug(pca_noise, _PCA_EIGVAL, _PCA_EIGVEC)))
    if rand_gray > 0:
        auglist.append(DetBorrowAug(RandomGrayAug(rand_gray)))
    mean = _det_normalizer(mean, [123.68, 116.28, 103.53], "mean")
    std = _det_normalizer(std, [58.395, 57.12, 57.375], "std")
    if mean is not None or std is not None:
        auglist.append(DetBorrowAug(ColorNormalizeAug(mean, std)))
    return auglist
