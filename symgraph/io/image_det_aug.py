"""MXNet's detection augmenter (``det_aug_default``, ``src/io/image_det_aug_default.cc``).

The label ``[header_width, object_width, extra..., (id, x1, y1, x2, y2, extra...) x N]``
(coordinates in [0, 1]) follows the image: objects with empty boxes are dropped, colour
noise in HLS space and contrast are drawn with their probabilities, mirroring flips the
boxes, random padding (``rand_pad_prob``, ``max_pad_scale``) and random crops from
``num_crop_sampler`` samplers (scale, aspect ratio, IoU / coverage constraints, centre or
overlap emission) project them, then ``resize_mode`` sets the output size. Draws come
from numpy: MXNet's distributions, not its exact numbers.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..base import MXNetError

__all__ = ["DetAugParams", "DetLabel", "augment_det", "parse_det_params"]


@dataclass
class DetAugParams:
    """The random parameters of ``det_aug_default`` (MXNet's names and defaults)."""

    rand_crop_prob: float = 0.0
    min_crop_scales: tuple = (0.0,)
    max_crop_scales: tuple = (1.0,)
    min_crop_aspect_ratios: tuple = (1.0,)
    max_crop_aspect_ratios: tuple = (1.0,)
    min_crop_overlaps: tuple = (0.0,)
    max_crop_overlaps: tuple = (1.0,)
    min_crop_sample_coverages: tuple = (0.0,)
    max_crop_sample_coverages: tuple = (1.0,)
    min_crop_object_coverages: tuple = (0.0,)
    max_crop_object_coverages: tuple = (1.0,)
    num_crop_sampler: int = 1
    crop_emit_mode: str = "center"
    emit_overlap_thresh: float = 0.3
    max_crop_trials: tuple = (25,)
    rand_pad_prob: float = 0.0
    max_pad_scale: float = 1.0
    max_random_hue: int = 0
    random_hue_prob: float = 0.0
    max_random_saturation: int = 0
    random_saturation_prob: float = 0.0
    max_random_illumination: int = 0
    random_illumination_prob: float = 0.0
    max_random_contrast: float = 0.0
    random_contrast_prob: float = 0.0
    rand_mirror_prob: float = 0.0
    fill_value: int = 127

    @property
    def random(self) -> bool:
        return bool(self.rand_crop_prob or self.rand_pad_prob or self.random_hue_prob
                    or self.random_saturation_prob or self.random_illumination_prob
                    or self.random_contrast_prob or self.rand_mirror_prob)


def _values(value, kind) -> tuple:
    if isinstance(value, str):
        value = [v for v in value.strip("()[] ").split(",") if v.strip()]
    return tuple(kind(v) for v in (value if isinstance(value, (list, tuple)) else [value]))


def parse_det_params(kwargs: dict) -> DetAugParams:
    """The detection augmenter's parameters; per-sampler tuples are checked and widened."""
    out = {}
    for f in dataclasses.fields(DetAugParams):
        if f.name not in kwargs:
            continue
        value = kwargs[f.name]
        if f.type == "tuple":
            out[f.name] = _values(value, int if f.name == "max_crop_trials" else float)
        elif f.type == "str":
            out[f.name] = str(value)
        else:
            out[f.name] = type(f.default)(float(value))
    p = DetAugParams(**out)
    n = p.num_crop_sampler
    for f in dataclasses.fields(DetAugParams):
        value = getattr(p, f.name)
        if f.type != "tuple" or n < 1:
            continue
        if len(value) == 1:
            setattr(p, f.name, value * n)
        elif len(value) != n:
            raise MXNetError(f"ImageDetRecordIter: {f.name} has {len(value)} values for "
                             f"num_crop_sampler={n}")
    if p.crop_emit_mode not in ("center", "overlap"):
        raise MXNetError(f"ImageDetRecordIter: crop_emit_mode must be center or overlap, "
                         f"got {p.crop_emit_mode}")
    for i in range(n):
        if not 0 <= p.min_crop_scales[i] < p.max_crop_scales[i] <= 1:
            raise MXNetError("ImageDetRecordIter: need 0 <= min_crop_scales < "
                             "max_crop_scales <= 1")
    return p


class DetLabel:
    """A detection label as header + objects ``(N, object_width)``."""

    def __init__(self, raw: np.ndarray, record: str):
        if raw.size < 7 or int(raw[0]) < 2 or int(raw[1]) < 5 \
                or (raw.size - int(raw[0])) % int(raw[1]):
            raise MXNetError(f"ImageDetRecordIter: {record}: label of {raw.size} values is "
                             "not [header_width>=2, object_width>=5, ..., objects]")
        self.header = raw[:int(raw[0])].copy()
        objects = raw[int(raw[0]):].reshape(-1, int(raw[1])).copy()
        keep = (objects[:, 3] > objects[:, 1]) & (objects[:, 4] > objects[:, 2])
        self.objects = objects[keep]

    def to_array(self) -> np.ndarray:
        return np.concatenate([self.header, self.objects.reshape(-1)]).astype(np.float32)

    def project(self, box) -> None:
        x, y, w, h = box
        o = self.objects
        o[:, 1], o[:, 3] = np.maximum(0, (o[:, 1] - x) / w), np.minimum(1, (o[:, 3] - x) / w)
        o[:, 2], o[:, 4] = np.maximum(0, (o[:, 2] - y) / h), np.minimum(1, (o[:, 4] - y) / h)

    def try_crop(self, box, p: DetAugParams, i: int) -> bool:
        """Whether ``box`` meets sampler ``i``'s constraints; if so the objects follow it."""
        if len(self.objects) == 0:
            return True
        x, y, w, h = box
        o = self.objects
        inter = (np.clip(np.minimum(o[:, 3], x + w) - np.maximum(o[:, 1], x), 0, None)
                 * np.clip(np.minimum(o[:, 4], y + h) - np.maximum(o[:, 2], y), 0, None))
        gt = (o[:, 3] - o[:, 1]) * (o[:, 4] - o[:, 2])
        ok = np.ones(len(o), bool)
        for lo, hi, value in ((p.min_crop_overlaps[i], p.max_crop_overlaps[i],
                               inter / (w * h + gt - inter)),
                              (p.min_crop_sample_coverages[i], p.max_crop_sample_coverages[i],
                               inter / (w * h)),
                              (p.min_crop_object_coverages[i], p.max_crop_object_coverages[i],
                               inter / gt)):
            if lo > 0 or hi < 1:
                ok &= (value >= lo) & (value <= hi)
        if not ok.any():
            return False
        if p.crop_emit_mode == "center":
            cx, cy = (o[:, 1] + o[:, 3]) / 2, (o[:, 2] + o[:, 4]) / 2
            emit = (cx >= x) & (cx < x + w) & (cy >= y) & (cy < y + h)
        else:
            emit = inter / gt > p.emit_overlap_thresh
        if not emit.any():
            return False
        self.objects = self.objects[emit]
        self.project(box)
        return True


def _crop_box(p: DetAugParams, i: int, rng, aspect: float):
    scale = rng.uniform(p.min_crop_scales[i], p.max_crop_scales[i]) + 1e-12
    lo = max(p.min_crop_aspect_ratios[i] / aspect, scale * scale)
    hi = min(p.max_crop_aspect_ratios[i] / aspect, 1 / (scale * scale))
    ratio = np.sqrt(rng.uniform(lo, hi))
    w, h = min(1.0, scale * ratio), min(1.0, scale / ratio)
    return rng.uniform(0, 1 - w), rng.uniform(0, 1 - h), w, h


def _colour(res, p: DetAugParams, rng):
    import cv2
    u = rng.uniform(-1, 1, 4)
    h, s, l_ = int(u[0] * p.max_random_hue), int(u[1] * p.max_random_saturation), \
        int(u[2] * p.max_random_illumination)
    c = float(u[3] * p.max_random_contrast)
    keep = rng.random(4) < [p.random_hue_prob, p.random_saturation_prob,
                            p.random_illumination_prob, p.random_contrast_prob]
    h, s, l_, c = (v if k else 0 for v, k in zip((h, s, l_, c), keep))
    if (h or s or l_) and res.shape[2] == 3:
        hls = cv2.cvtColor(res, cv2.COLOR_BGR2HLS).astype(np.int32) + np.array([h, l_, s])
        res = cv2.cvtColor(np.clip(hls, 0, [180, 255, 255]).astype(np.uint8),
                           cv2.COLOR_HLS2BGR)
    if abs(c) > 1e-3:
        res = cv2.convertScaleAbs(res, alpha=c + 1)
    return res


def _pad(res, p: DetAugParams, label: DetLabel, rng):
    import cv2
    scale = rng.uniform(1, p.max_pad_scale)
    if scale < 1.05:
        return res
    x0, y0 = rng.uniform(0, scale - 1), rng.uniform(0, scale - 1)
    label.project((-x0, -y0, scale, scale))
    rows, cols = res.shape[:2]
    left, top = int(x0 * cols), int(y0 * rows)
    right, bottom = int((scale - x0 - 1) * cols), int((scale - y0 - 1) * rows)
    out = cv2.copyMakeBorder(res, top, bottom, left, right, cv2.BORDER_CONSTANT,
                             value=(p.fill_value,) * 3)
    return out[:, :, None] if out.ndim == 2 else out


def _crop(res, p: DetAugParams, label: DetLabel, rng):
    rows, cols = res.shape[:2]
    for i in rng.permutation(p.num_crop_sampler):
        for _ in range(p.max_crop_trials[i]):
            box = _crop_box(p, i, rng, cols / rows)
            if label.try_crop(box, p, i):
                x, y, w, h = (int(box[0] * cols), int(box[1] * rows), int(box[2] * cols),
                              int(box[3] * rows))
                return res[y:y + h, x:x + w]
    return res


def augment_det(img, p: DetAugParams, label: DetLabel, rng):
    """Colour noise, mirror, pad and crop of one image and its label (before resizing)."""
    res = img
    if p.random_hue_prob or p.random_saturation_prob or p.random_illumination_prob \
            or p.random_contrast_prob:
        res = _colour(res, p, rng)
    if p.rand_mirror_prob > 0 and rng.random() < p.rand_mirror_prob:
        o = label.objects
        o[:, 1], o[:, 3] = 1 - o[:, 3], 1 - o[:, 1].copy()
        res = res[:, ::-1]
    if p.rand_pad_prob > 0 and p.max_pad_scale > 1 and rng.random() < p.rand_pad_prob:
        res = _pad(np.ascontiguousarray(res), p, label, rng)
    if p.rand_crop_prob > 0 and p.num_crop_sampler > 0 and rng.random() < p.rand_crop_prob:
        res = _crop(res, p, label, rng)
    return np.ascontiguousarray(res)
