"""MXNet's default image augmenter (``aug_default``, ``src/io/image_aug_default.cc``) and
the output step of its RecordIO parser, on OpenCV arrays.

One image goes through :func:`decode` (``cv2.imdecode``; gray for 1 channel, BGR for 3,
as stored for 4), :func:`augment` (resize of the shorter edge, the affine
rotate/shear/scale/aspect warp, padding, random-resized / sized / default crop, color
jitter, HLS and PCA noise, in MXNet's order and with its formulas) and :func:`to_output`
(BGR to RGB, mirror, ``(pixel - mean) * scale / std`` in float32, or raw uint8, or int8
``saturate(pixel - round(mean))``). Without random parameters the pixels are MXNet's
(the tests compare against batches MXNet 1.9.1 made); random draws come from numpy, so
random augmentations follow MXNet's distributions, not its exact draws.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from ..base import MXNetError
from ..recordio import unpack

__all__ = ["AugParams", "augment", "decode", "parse_params", "to_output"]

_TRUE = ("1", "true", "True")
# eigenvalue * eigenvector of ImageNet's RGB covariance (MXNet's PCA noise)
_EIGVEC = np.array([[55.46 * -0.5675, 4.794 * 0.7192, 1.148 * 0.4009],
                    [55.46 * -0.5808, 4.794 * -0.0045, 1.148 * -0.8140],
                    [55.46 * -0.5836, 4.794 * -0.6948, 1.148 * 0.4203]], np.float32)


@dataclass
class AugParams:
    """The parameters of ``ImageRecordIter`` (MXNet's names and defaults)."""

    data_shape: tuple = ()
    batch_size: int = 0
    path_imgrec: str = ""
    path_imgidx: str = ""
    path_imglist: str = ""
    aug_seq: str = "aug_default"
    label_width: int = 1
    preprocess_threads: int = 4
    verbose: bool = True
    num_parts: int = 1
    part_index: int = 0
    device_id: int = 0
    shuffle_chunk_size: int = 0
    shuffle_chunk_seed: int = 0
    seed_aug: int | None = None
    round_batch: bool = True
    shuffle: bool = False
    seed: int = 0
    mirror: bool = False
    rand_mirror: bool = False
    mean_img: str = ""
    mean_r: float = 0.0
    mean_g: float = 0.0
    mean_b: float = 0.0
    mean_a: float = 0.0
    std_r: float = 1.0
    std_g: float = 1.0
    std_b: float = 1.0
    std_a: float = 1.0
    scale: float = 1.0
    max_random_contrast: float = 0.0
    max_random_illumination: float = 0.0
    prefetch_buffer: int = 4
    ctx: str = "gpu"
    dtype: str | None = None
    resize: int = -1
    rand_crop: bool = False
    random_resized_crop: bool = False
    max_rotate_angle: int = 0
    max_aspect_ratio: float = 0.0
    min_aspect_ratio: float | None = None
    max_shear_ratio: float = 0.0
    max_crop_size: int = -1
    min_crop_size: int = -1
    max_random_scale: float = 1.0
    min_random_scale: float = 1.0
    max_random_area: float = 1.0
    min_random_area: float = 1.0
    max_img_size: float = 1e10
    min_img_size: float = 0.0
    brightness: float = 0.0
    contrast: float = 0.0
    saturation: float = 0.0
    pca_noise: float = 0.0
    random_h: int = 0
    random_s: int = 0
    random_l: int = 0
    rotate: int = -1
    fill_value: int = 255
    inter_method: int = 1
    pad: int = 0
    # ImageDetRecordIter
    label_pad_width: int = 0
    label_pad_value: float = -1.0
    resize_mode: str = "force"
    rand_mirror_prob: float = 0.0
    mean_image: np.ndarray | None = field(default=None, repr=False)

    @property
    def np_dtype(self):
        return {None: np.float32, "float32": np.float32, "uint8": np.uint8,
                "int8": np.int8}[self.dtype]

    @property
    def random(self) -> bool:
        """Whether any augmentation draws random numbers."""
        return bool(self.rand_crop or self.rand_mirror or self.random_resized_crop
                    or self.rand_mirror_prob
                    or self.max_rotate_angle > 0 or self.max_shear_ratio > 0
                    or self.max_random_scale != 1 or self.min_random_scale != 1
                    or self.max_aspect_ratio != 0 or self.min_crop_size != self.max_crop_size
                    or self.brightness or self.contrast or self.saturation or self.pca_noise
                    or self.random_h or self.random_s or self.random_l
                    or self.inter_method == 10 or self.max_random_contrast
                    or self.max_random_illumination or _needs_affine(self))


def _coerce(name: str, value, default, hint):
    """An MXNet parameter value (Python value or its string form) as the field's type."""
    if value is None or (isinstance(value, str) and value in ("None", "")):
        return None if default is None or "None" in str(hint) else default
    kind = type(default) if default is not None else (float if "float" in str(hint) else int)
    if "tuple" in str(hint):
        if isinstance(value, str):
            value = [v for v in value.strip("()[] ").split(",") if v.strip()]
        return tuple(int(v) for v in value)
    if kind is bool:
        return value in _TRUE or value is True or (isinstance(value, (int, np.integer))
                                                   and not isinstance(value, bool) and value != 0)
    if "str" in str(hint):
        return str(value) if not isinstance(value, type) else np.dtype(value).name
    try:
        return kind(float(value)) if kind is int else kind(value)
    except (TypeError, ValueError) as err:
        raise MXNetError(f"ImageRecordIter: invalid value {value!r} for parameter "
                         f"'{name}'") from err


def parse_params(name: str, kwargs: dict, **overrides) -> AugParams:
    """The iterator's parameters from MXNet keyword arguments (unknown ones are ignored,
    as MXNet's C++ iterators ignore them)."""
    values = dict(kwargs, **overrides)
    out = {}
    for f in dataclasses.fields(AugParams):
        if f.name in values and f.name != "mean_image":
            out[f.name] = _coerce(f.name, values[f.name], f.default, f.type)
    if "dtype" in values and values["dtype"] is not None:
        out["dtype"] = np.dtype(values["dtype"]).name
    p = AugParams(**out)
    _check(name, p)
    return p


def _check(name: str, p: AugParams) -> None:
    if not p.path_imgrec:
        raise MXNetError(f"{name}: must specify path_imgrec")
    if len(p.data_shape) != 3 or p.data_shape[0] not in (1, 3, 4):
        raise MXNetError(f"{name}: data_shape must be (channels, height, width) with 1, 3 or "
                         f"4 channels, got {p.data_shape}")
    if p.batch_size <= 0:
        raise MXNetError(f"{name}: batch_size must be positive, got {p.batch_size}")
    if p.dtype not in (None, "float32", "uint8", "int8"):
        raise MXNetError(f"{name}: unknown dtype {p.dtype} (float32, uint8 or int8)")
    if not (0 <= p.inter_method <= 4 or p.inter_method in (9, 10)):
        raise MXNetError(f"{name}: invalid inter_method {p.inter_method}: valid values "
                         "0,1,2,3,4,9,10")
    if p.random_resized_crop and (p.min_random_scale != 1 or p.max_random_scale != 1
                                  or p.min_crop_size != -1 or p.max_crop_size != -1
                                  or p.rand_crop):
        raise MXNetError(f"{name}: random_resized_crop conflicts with min_random_scale, "
                         "max_random_scale, min_crop_size, max_crop_size and rand_crop")


def decode(buf: bytes, p: AugParams, path: str):
    """The header and the decoded image (HWC, OpenCV's channel order) of one record."""
    import cv2
    header, payload = unpack(buf)
    channels = p.data_shape[0]
    flag = {1: cv2.IMREAD_GRAYSCALE, 3: cv2.IMREAD_COLOR}.get(channels, cv2.IMREAD_UNCHANGED)
    img = cv2.imdecode(np.frombuffer(payload, np.uint8), flag)
    if img is None:
        raise MXNetError(f"ImageRecordIter: record id={header.id} in {path} is not an image "
                         f"OpenCV can decode ({len(payload)} bytes)")
    if img.ndim == 2:
        img = img[:, :, None]
    if img.shape[2] != channels:
        raise MXNetError(f"ImageRecordIter: invalid image id={header.id} in {path}: expected "
                         f"{channels} channels, got {img.shape[2]}")
    return header, img


def _inter(p: AugParams, old_w, old_h, new_w, new_h, rng) -> int:
    if p.inter_method == 9:
        if new_w > old_w and new_h > old_h:
            return 2  # cubic to enlarge
        return 3 if new_w < old_w and new_h < old_h else 1  # area to shrink, else linear
    if p.inter_method == 10:
        return int(rng.integers(0, 5))
    return p.inter_method


def _resize(img, w: int, h: int, inter: int):
    from ..ops.image import opencv_resize
    out = opencv_resize(img, int(w), int(h), inter)
    return out[:, :, None] if out.ndim == 2 else out


def _aspect_range(p: AugParams) -> tuple[float, float]:
    if p.min_aspect_ratio is not None:
        return p.min_aspect_ratio, p.max_aspect_ratio
    return 1 - p.max_aspect_ratio, 1 + p.max_aspect_ratio


def _needs_affine(p: AugParams) -> bool:
    lo, hi = _aspect_range(p)
    return (p.max_rotate_angle > 0 or p.max_shear_ratio > 0 or p.rotate > 0
            or p.max_random_scale != 1 or p.min_random_scale != 1
            or (not p.random_resized_crop and (lo != 1 or hi != 1))
            or p.max_img_size != 1e10 or p.min_img_size != 0)


def _affine(res, p: AugParams, rng):
    """MXNet's rotate/shear/scale/aspect warp, in float32 arithmetic as its C++ code."""
    import cv2
    f32 = np.float32
    s = f32(rng.random() * p.max_shear_ratio * 2 - p.max_shear_ratio)
    angle = int(rng.integers(-p.max_rotate_angle, p.max_rotate_angle + 1))
    if p.rotate > 0:
        angle = int(p.rotate)
    a, b = f32(math.cos(angle / 180.0 * math.pi)), f32(math.sin(angle / 180.0 * math.pi))
    lo, hi = _aspect_range(p)
    scale = ratio = f32(1)
    if not p.random_resized_crop:
        scale = f32(rng.random() * (p.max_random_scale - p.min_random_scale)
                    + p.min_random_scale)
        ratio = f32(rng.random() * (hi - lo) + lo)
    hs = f32(2) * scale / (f32(1) + ratio)
    ws = ratio * hs
    h, w = res.shape[:2]
    new_w = max(f32(p.min_img_size), min(f32(p.max_img_size), scale * f32(w)))
    new_h = max(f32(p.min_img_size), min(f32(p.max_img_size), scale * f32(h)))
    m = np.zeros((2, 3), np.float32)
    m[0, 0], m[1, 0] = hs * a - s * b * ws, -b * ws
    m[0, 1], m[1, 1] = hs * b + s * a * ws, a * ws
    m[0, 2] = (new_w - (m[0, 0] * f32(w) + m[0, 1] * f32(h))) / f32(2)
    m[1, 2] = (new_h - (m[1, 0] * f32(w) + m[1, 1] * f32(h))) / f32(2)
    fill = (p.fill_value,) * 3
    out = cv2.warpAffine(res, m, (int(new_w), int(new_h)),
                         flags=_inter(p, w, h, new_w, new_h, rng),
                         borderMode=cv2.BORDER_CONSTANT, borderValue=fill)
    return out[:, :, None] if out.ndim == 2 else out


def _random_resized_crop(res, p: AugParams, rng):
    """MXNet's area/aspect crop (up to 10 tries), or None when no try fits."""
    lo, hi = _aspect_range(p)
    if p.max_random_area == 1 and p.min_random_area == 1 and lo == 1 and hi == 1:
        return None
    if lo <= 0 or p.min_random_area > p.max_random_area or lo > hi:
        raise MXNetError("ImageRecordIter: random_resized_crop needs 0 < min_aspect_ratio <= "
                         "max_aspect_ratio and min_random_area <= max_random_area")
    h, w = res.shape[:2]
    for _ in range(10):
        target = h * w * rng.uniform(p.min_random_area, p.max_random_area)
        ratio = rng.uniform(lo, hi)
        ya, xa = round(math.sqrt(target / ratio)), round(math.sqrt(target * ratio))
        if rng.random() > 0.5:
            ya, xa = xa, ya
        if ya <= h and xa <= w:
            y, x = int(rng.integers(0, h - ya + 1)), int(rng.integers(0, w - xa + 1))
            out_h, out_w = p.data_shape[1:]
            return _resize(res[y:y + ya, x:x + xa], out_w, out_h,
                           _inter(p, xa, ya, out_w, out_h, rng))
    return None


def _sized_crop(res, p: AugParams, rng):
    h, w = res.shape[:2]
    if not (w >= p.max_crop_size and h >= p.max_crop_size
            and p.max_crop_size >= p.min_crop_size):
        raise MXNetError(f"ImageRecordIter: input image size {w}x{h} smaller than "
                         f"max_crop_size {p.max_crop_size}")
    size = p.min_crop_size
    if p.max_crop_size != p.min_crop_size:
        size = int(rng.integers(p.min_crop_size, p.max_crop_size + 1))
    y, x = h - size, w - size
    if p.rand_crop:
        y, x = int(rng.integers(0, y + 1)), int(rng.integers(0, x + 1))
    else:
        y, x = y // 2, x // 2
    out_h, out_w = p.data_shape[1:]
    return _resize(res[y:y + size, x:x + size], out_w, out_h,
                   _inter(p, size, size, out_w, out_h, rng))


def _default_crop(res, p: AugParams, rng):
    out_h, out_w = p.data_shape[1:]
    h, w = res.shape[:2]
    inter = _inter(p, w, h, out_w, out_h, rng)
    if h < out_h:
        res = _resize(res, int(np.float32(out_h) / np.float32(h) * np.float32(w)), out_h, inter)
        h, w = res.shape[:2]
    if w < out_w:
        res = _resize(res, out_w, int(np.float32(out_w) / np.float32(w) * np.float32(h)), inter)
        h, w = res.shape[:2]
    y, x = h - out_h, w - out_w
    if p.rand_crop:
        y, x = int(rng.integers(0, y + 1)), int(rng.integers(0, x + 1))
    else:
        y, x = y // 2, x // 2
    return res[y:y + out_h, x:x + out_w]


def augment(img: np.ndarray, p: AugParams, rng):
    """One image through MXNet's default augmenter; returns it and whether to mirror it."""
    import cv2
    res = img
    if p.resize != -1:
        h, w = res.shape[:2]
        nh, nw = (p.resize * h // w, p.resize) if h > w else (p.resize, p.resize * w // h)
        res = _resize(res, nw, nh, _inter(p, w, h, nw, nh, rng))
    if _needs_affine(p):
        res = _affine(res, p, rng)
    if p.pad > 0:
        res = cv2.copyMakeBorder(res, p.pad, p.pad, p.pad, p.pad, cv2.BORDER_CONSTANT,
                                 value=(p.fill_value,) * 3)
        res = res[:, :, None] if res.ndim == 2 else res
    cropped = None
    if p.random_resized_crop:
        cropped = _random_resized_crop(res, p, rng)
    elif p.max_crop_size != -1 or p.min_crop_size != -1:
        cropped = _sized_crop(res, p, rng)
    res = _default_crop(res, p, rng) if cropped is None else cropped
    if res.shape[2] == 3:
        res = _color(res, p, rng)
    mirror = bool(p.mirror or (p.rand_mirror and rng.random() < 0.5))
    return res, mirror


def _color(res, p: AugParams, rng):
    """Color jitter, HLS noise and PCA noise (3-channel images)."""
    import cv2
    if p.brightness > 0 or p.contrast > 0 or p.saturation > 0:
        alphas = [1 + rng.uniform(-v, v) for v in (p.brightness, p.contrast, p.saturation)]
        for k in rng.permutation(3):
            if k == 0:
                res = cv2.convertScaleAbs(res, alpha=alphas[0]) if alphas[0] >= 0 else res * 0
            elif k == 1:
                gray_mean = cv2.mean(cv2.cvtColor(res, cv2.COLOR_RGB2GRAY))[0]
                res = cv2.addWeighted(res, alphas[1], res, 0, (1 - alphas[1]) * gray_mean)
            else:
                gray = cv2.cvtColor(cv2.cvtColor(res, cv2.COLOR_RGB2GRAY), cv2.COLOR_GRAY2BGR)
                res = cv2.addWeighted(res, alphas[2], gray, 1 - alphas[2], 0.0)
    if p.random_h or p.random_s or p.random_l:
        hls = cv2.cvtColor(res, cv2.COLOR_BGR2HLS).astype(np.int32)
        draws = [(rng.random() + 4 * rng.random()) / 5 for _ in range(3)]
        h, s, l_ = (int(r * v * 2 - v) for r, v in zip(draws, (p.random_h, p.random_s,
                                                                 p.random_l)))
        hls = np.clip(hls + np.array([h, l_, s]), 0, np.array([180, 255, 255]))
        res = cv2.cvtColor(hls.astype(np.uint8), cv2.COLOR_HLS2BGR)
    if p.pca_noise > 0:
        alpha = rng.normal(0, p.pca_noise, 3).astype(np.float32)
        rgb = _EIGVEC @ alpha
        res = np.clip(res.astype(np.int32) + rgb[::-1].astype(np.int32), 0, 255).astype(np.uint8)
    return res


def to_output(img: np.ndarray, p: AugParams, mirror: bool, out: np.ndarray, rng) -> None:
    """Writes ``img`` (HWC, BGR[A]) into ``out`` (CHW, RGB[A]) as MXNet's parser does."""
    chw = img.transpose(2, 0, 1)
    if chw.shape[0] == 3:
        chw = chw[::-1]  # BGR -> RGB as a view
    elif chw.shape[0] == 4:
        chw = chw[[2, 1, 0, 3]]
    if chw.shape != out.shape:
        raise MXNetError(f"ImageRecordIter: augmented image has shape {chw.shape}, expected "
                         f"data_shape {out.shape}")
    if mirror:
        chw = chw[:, :, ::-1]
    c = chw.shape[0]
    means = np.array([p.mean_r, p.mean_g, p.mean_b, p.mean_a][:c], np.float32)
    if out.dtype == np.uint8:
        out[...] = chw
    elif out.dtype == np.int8:
        mean = (np.round(p.mean_image).astype(np.int16) if p.mean_image is not None
                else np.sign(means) * np.floor(np.abs(means) + 0.5))
        out[...] = np.clip(chw.astype(np.int16) - _chw(mean, c, mirror), -128, 127)
    else:
        contrast, illum = np.float32(p.scale), np.float32(0)
        if p.max_random_contrast or p.max_random_illumination:
            u = rng.random(2)
            contrast = np.float32((u[0] * p.max_random_contrast * 2
                                   - p.max_random_contrast + 1) * p.scale)
            illum = np.float32((u[1] * p.max_random_illumination * 2
                                - p.max_random_illumination) * p.scale)
        stds = np.array([p.std_r, p.std_g, p.std_b, p.std_a][:c], np.float32)
        mean = p.mean_image if p.mean_image is not None else means
        out[...] = chw
        if np.any(mean):
            out -= _chw(mean, c, mirror)
        mult = contrast / stds
        if np.any(mult != 1):
            out *= _chw(mult, c)
        if illum:
            out += _chw(illum / stds, c)


def _chw(values, c: int, mirror: bool = False):
    """Per-channel values as (c, 1, 1), or a mean image (c, h, w) in output coordinates."""
    values = np.asarray(values)
    if values.ndim == 3:
        return values[:, :, ::-1] if mirror else values  # MXNet subtracts it before mirroring
    return values.reshape(c, 1, 1)
