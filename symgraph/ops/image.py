"""MXNet's image operators (``mx.nd.image`` / ``mx.sym.image``): layout, flips, crop, resize.

Images are (H, W, C) or batches (N, H, W, C) with C in {1, 3}, usually uint8; ``to_tensor``
makes (C, H, W) float32 in [0, 1] and ``normalize`` works on that layout. Every op here but
``_image_resize`` is a composite:

- ``_image_to_tensor``: two ``SwapAxis`` (C to the front of H, W), ``Cast``, ``/ 255``;
- ``_image_normalize``: ``(x - mean[c]) / std[c]`` per channel slice (``slice_axis``), joined
  with ``Concat`` (one scalar pair: the whole array at once); the gradient is ``1 / std[c]``;
- ``_image_flip_left_right`` / ``_image_flip_top_bottom``: ``reverse`` along W / H (MXNet
  1.9.1 leaves the middle column/row of an odd-sized image unwritten; here it is copied);
- ``_image_crop``: ``slice_axis`` along H and W (``x``, ``y``, ``width``, ``height``); the
  gradient is the output gradient in the cropped window, zeros elsewhere, as MXNet's.

``_image_resize`` samples as OpenCV's ``cv::resize`` (which MXNet calls): half-pixel centres,
edge pixels repeated, a horizontal pass then a vertical one, uint8 images in OpenCV's fixed
point (11-bit weights), so nearest, bilinear, area (3) and Lanczos (4) pixels equal
``cv2.resize``'s, and uint8 bicubic pixels equal MXNet 1.9.1's (its bundled OpenCV 3 runs
them in OpenCV's fixed point; today's ``cv2`` hands them to Intel IPP, within 1 level).
As in MXNet the gradient is a copy of the output gradient (defined only where the size does
not change).

>>> import symgraph as mx
>>> img = mx.nd.array([[[0, 10, 20], [30, 40, 50]]], dtype='uint8')  # (H=1, W=2, C=3)
>>> mx.nd.image.to_tensor(img).shape
(3, 1, 2)
>>> mx.nd.image.flip_left_right(img).asnumpy()[0, :, 0]
array([30,  0], dtype=uint8)
>>> mx.nd.image.normalize(mx.nd.ones((1, 2, 2)), mean=0.5, std=0.25).asnumpy()[0, 0]
array([2., 2.], dtype=float32)
>>> mx.nd.image.crop(img, x=1, y=0, width=1, height=1).asnumpy()
array([[[30, 40, 50]]], dtype=uint8)
>>> mx.nd.image.to_tensor(mx.nd.zeros((5, 1, 2, 2, 3)))
Traceback (most recent call last):
...
symgraph.base.ShapeError: _image_to_tensor: input image must have shape (height, width, \
channels), or (N, height, width, channels) but got (5, 1, 2, 2, 3)
"""
from __future__ import annotations

from ..attrs import Param
from ..base import AttrError, DTypeError, ShapeError
from .base import Case, OpDef, register


def parse_floats(text, what: str) -> tuple[float, ...]:
    """A ``Tuple<float>`` attribute (``"(0.1, 0.2)"``, ``"0.5"``, ``"[1, 2]"``) as floats."""
    body = str(text).strip().strip("()[]").strip()
    try:
        values = tuple(float(v) for v in body.split(",") if v.strip())
    except ValueError:
        raise AttrError(f"{what}: expected a tuple of floats, got {text!r}") from None
    if not values:
        raise AttrError(f"{what}: expected at least one value, got {text!r}")
    return values


def image_shape(name: str):
    """MXNet's shape rule of the per-image ops: one (H, W, C) image, C in {1, 3}."""
    def rule(p, shapes):
        x = shapes[0]
        if not x:
            return None
        if len(x) != 3:
            raise ShapeError(f"{name}: input image must have shape (height, width, channels), "
                             f"but got {x}")
        if x[2] not in (0, 1, 3):
            raise ShapeError(f"{name}: the last dimension of input image must be the channel "
                             f"dimension with either 1 or 3 elements, but got input with shape "
                             f"{x}")
        return shapes, [x]
    return rule


def _check_hwc(name: str, x) -> None:
    if len(x) not in (3, 4):
        raise ShapeError(f"{name}: input image must have shape (height, width, channels), or "
                         f"(N, height, width, channels) but got {x}")


# ---------------------------------------------------------------- to_tensor

def _to_tensor(b, p, ins):
    chw = b.op("SwapAxis", b.op("SwapAxis", ins[0], dim1=-1, dim2=-3, name="cwh"),
               dim1=-1, dim2=-2, name="chw")
    return [b.op("_div_scalar", b.op("Cast", chw, dtype="float32"), scalar=255.0)]


def _to_tensor_shape(p, shapes):
    x = shapes[0]
    if not x:
        return None
    _check_hwc("_image_to_tensor", x)
    return shapes, [(x[-1], *x[:-3], *x[-3:-1]) if len(x) == 3 else (x[0], x[3], x[1], x[2])]


register(OpDef(
    name="_image_to_tensor", decompose=_to_tensor, infer_shape=_to_tensor_shape,
    # float32 inside: float64 central differences cannot resolve the gradient (checked in
    # tests/test_ops_image.py against its formula)
    cases=(Case(((3, 4, 3),), low=0.0, high=255.0, grad=False),
           Case(((2, 2, 3, 1),), low=0.0, high=255.0, grad=False)),
    doc="Convert (H, W, C) or (N, H, W, C) images with values in [0, 255] to float32 "
        "(C, H, W) / (N, C, H, W) tensors with values in [0, 1]."))


# ---------------------------------------------------------------- normalize

def _normalize(b, p, ins):
    mean, std = parse_floats(p.mean, "mean"), parse_floats(p.std, "std")
    x, n = ins[0], max(len(mean), len(std))
    if n == 1:
        return [b.op("_div_scalar", b.op("_minus_scalar", x, scalar=mean[0], name="centred"),
                     scalar=std[0])]
    parts = []
    for c in range(n):
        part = b.op("slice_axis", x, axis=-3, begin=c, end=c + 1, name=f"channel{c}")
        part = b.op("_minus_scalar", part, scalar=mean[c if len(mean) > 1 else 0],
                    name=f"centred{c}")
        parts.append(b.op("_div_scalar", part, scalar=std[c if len(std) > 1 else 0],
                          name=f"scaled{c}"))
    return [b.op("Concat", *parts, dim=-3, num_args=n)]


def _normalize_shape(p, shapes):
    x = shapes[0]
    if not x:
        return None
    if len(x) not in (3, 4):
        raise ShapeError(f"_image_normalize: input tensor must have shape (channels, height, "
                         f"width), or (N, channels, height, width), but got {x}")
    c = x[-3]
    if c not in (0, 1, 3):
        raise ShapeError(f"_image_normalize: the channel dimension of the input tensor must "
                         f"have either 1 or 3 elements, but got input with shape {x}")
    for key in ("mean", "std"):
        values = parse_floats(p[key], key)
        if c and len(values) not in (1, c):
            raise ShapeError(f"_image_normalize: invalid {key} for input with shape {x}. "
                             f"{key} must have either 1 or {c} elements, but got {values}")
    return shapes, [x]


register(OpDef(
    name="_image_normalize", decompose=_normalize, infer_shape=_normalize_shape,
    params=(Param("mean", "str", "(0, 0, 0, 0)", doc="Mean of each channel (or one for all)."),
            Param("std", "str", "(1, 1, 1, 1)",
                  doc="Standard deviation of each channel (or one for all).")),
    cases=(Case(((3, 2, 3),), {"mean": (0.1, 0.2, 0.3), "std": (0.5, 2.0, 1.5)}),
           Case(((2, 3, 2, 2),), {"mean": (0.5, 0.0, -1.0), "std": 0.25}),
           Case(((2, 1, 3, 2),), {"mean": 0.5, "std": 2.0})),
    doc="Normalize a (C, H, W) or (N, C, H, W) tensor: ``(x - mean[c]) / std[c]``."))


# ---------------------------------------------------------------- flips and crop

def _flip(axis: int):
    return lambda b, p, ins: [b.op("reverse", ins[0], axis=axis)]


for _name, _axis, _what in (("_image_flip_left_right", 1, "left and right (along W)"),
                            ("_image_flip_top_bottom", 0, "top and bottom (along H)")):
    register(OpDef(
        name=_name, decompose=_flip(_axis), infer_shape=image_shape(_name),
        cases=(Case(((3, 4, 3),)), Case(((2, 5, 1),))),
        doc=f"Swap the {_what} of an (H, W, C) image."))


def _crop(b, p, ins):
    rows = b.op("slice_axis", ins[0], axis=-3, begin=p.y, end=p.y + p.height, name="rows")
    return [b.op("slice_axis", rows, axis=-2, begin=p.x, end=p.x + p.width)]


def _crop_shape(p, shapes):
    x = shapes[0]
    if not x:
        return None
    if len(x) not in (3, 4):
        raise ShapeError(f"_image_crop: expects inputs of 3D (h, w, c) or 4D (n, h, w, c), but "
                         f"got {x}")
    if x[-1] not in (0, 1, 3):
        raise ShapeError(f"_image_crop: expect channel of the input image is 1 or 3, but got "
                         f"{x[-1]} (input {x})")
    if p.height <= 0 or p.width <= 0:
        raise ShapeError(f"_image_crop: height and width must be greater than 0, got height="
                         f"{p.height}, width={p.width}")
    if p.x < 0 or p.y < 0:
        raise ShapeError(f"_image_crop: x and y must not be negative, got x={p.x}, y={p.y}")
    if x[-2] and p.x + p.width > x[-2]:
        raise ShapeError(f"_image_crop: x + width should not be greater than input width: "
                         f"x={p.x}, width={p.width}, input {x}")
    if x[-3] and p.y + p.height > x[-3]:
        raise ShapeError(f"_image_crop: y + height should not be greater than input height: "
                         f"y={p.y}, height={p.height}, input {x}")
    return shapes, [(*x[:-3], p.height, p.width, x[-1])]


register(OpDef(
    name="_image_crop", decompose=_crop, infer_shape=_crop_shape,
    params=(Param("x", "int", doc="Left boundary of the cropping area."),
            Param("y", "int", doc="Top boundary of the cropping area."),
            Param("width", "int", doc="Width of the cropping area."),
            Param("height", "int", doc="Height of the cropping area.")),
    cases=(Case(((5, 4, 3),), {"x": 1, "y": 2, "width": 2, "height": 3}),
           Case(((2, 6, 5, 1),), {"x": 0, "y": 1, "width": 5, "height": 2})),
    doc="Crop (H, W, C) or (N, H, W, C) images to the window at (``x``, ``y``) of "
        "``width`` x ``height``."))


# ---------------------------------------------------------------- resize

def _resized(p, h: int, w: int) -> tuple[int, int]:
    """(height, width) of the output for an h x w image (MXNet's GetHeightAndWidth)."""
    if len(p.size) not in (1, 2):
        raise AttrError(f"_image_resize: input size dimension must be 1 or 2, but got "
                        f"{len(p.size)} (size={p.size})")
    if any(s <= 0 for s in p.size):
        raise AttrError(f"_image_resize: size must be greater than 0, but got {p.size}")
    if len(p.size) == 2:
        return p.size[1], p.size[0]
    s = p.size[0]
    if not p.keep_ratio:
        return s, s
    return (h * s // w, s) if h > w else (s, w * s // h)


def _resize_shape(p, shapes):
    x = shapes[0]
    if not x:
        return None
    if len(x) not in (3, 4):
        raise ShapeError(f"_image_resize: input image dimension should be 3 or 4 but got "
                         f"{len(x)} (input {x})")
    if p.keep_ratio and len(p.size) == 1 and not (x[-3] and x[-2]):
        return None
    oh, ow = _resized(p, x[-3], x[-2])
    return shapes, [(*x[:-3], oh, ow, x[-1])]


def _resize_type(p, types):
    t = types[0]
    if t is not None and t not in ("uint8", "float32", "float64"):
        raise DTypeError(f"_image_resize: OpenCV's resize takes uint8, float32 or float64 "
                         f"images, got {t}")
    return (types, [t]) if t is not None else None


def opencv_resize(img, ow: int, oh: int, interp: int):
    """An (H, W, C) or (H, W) numpy image resized as MXNet 1.9.1's OpenCV does: ``cv2.resize``,
    except uint8 bicubic, which runs :func:`symgraph.kernels.image.image_resize_ref` (OpenCV's own
    fixed point, MXNet's exact pixels; today's ``cv2`` hands that case to Intel IPP, which
    differs by 1 level on a few percent of pixels). The one resize of ``mx.image``,
    ``_cvimresize``, ``ImageRecordIter`` and ``_image_resize``'s odd cases."""
    import numpy as np
    import torch

    from .cv_image import _cv2
    if interp == 2 and img.dtype == np.uint8:
        from ..kernels.image import image_resize_ref
        hwc = img if img.ndim == 3 else img[:, :, None]
        out = image_resize_ref(torch.from_numpy(np.ascontiguousarray(hwc))[None],
                               oh, ow, 2)[0].numpy()
        return out if img.ndim == 3 else out[:, :, 0]
    return _cv2().resize(np.ascontiguousarray(img), (ow, oh), interpolation=interp)


def _opencv_resize(batch, oh: int, ow: int, interp: int):
    """:func:`opencv_resize` of each (H, W, C) image of a (N, H, W, C) batch, on the host."""
    import numpy as np
    import torch

    c = batch.shape[-1]
    host = batch.detach().cpu().numpy()
    outs = [opencv_resize(img, ow, oh, interp) for img in host]
    out = np.stack([o.reshape(oh, ow, c) for o in outs]) if outs else \
        np.zeros((0, oh, ow, c), host.dtype)
    return torch.from_numpy(out).to(batch.device)


def _uses_opencv(x, interp: int) -> bool:
    """Area resizes of images with neither 1 nor 3 channels call OpenCV itself (it
    shortcuts them in ways the kernel does not follow)."""
    return interp == 3 and x.shape[-1] not in (1, 3)


def _resize_run(name: str):
    """The forward calling ``kernels/image.py``'s ``<name>`` (Triton kernel or reference)."""
    def forward(p, ins, aux, rt):
        from ..kernels import image  # triton is imported when an op first runs, not with symgraph
        resize, x = getattr(image, name), ins[0]
        if p.interp not in (0, 1, 2, 3, 4):
            raise AttrError(f"_image_resize: unknown interp={p.interp}; OpenCV takes 0 "
                            "(nearest), 1 (bilinear), 2 (bicubic), 3 (area) or 4 (Lanczos)")
        oh, ow = _resized(p, x.shape[-3], x.shape[-2])
        batch = x if x.dim() == 4 else x[None]
        if _uses_opencv(x, p.interp):
            resize = _opencv_resize
        out = resize(batch, oh, ow, p.interp)
        return (out if x.dim() == 4 else out[0],)
    return forward


register(OpDef(
    name="_image_resize", infer_shape=_resize_shape, infer_type=_resize_type,
    forward=_resize_run("image_resize_ref"), kernel=_resize_run("image_resize"),
    gradient=lambda g, p, ins, outs, og: [g.op("_copy", og[0])],
    params=(Param("size", "shape", (), doc="New size: (width, height), or one size."),
            Param("keep_ratio", "bool", False,
                  doc="With one size: resize the short edge to it, keeping the aspect ratio."),
            Param("interp", "int", 1,
                  doc="0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos (OpenCV's codes).")),
    cases=(Case(((5, 7, 3),), {"size": (4, 3)}, low=0.0, high=255.0, grad=False),
           Case(((2, 4, 3, 1),), {"size": 6, "keep_ratio": True, "interp": 2}, grad=False),
           Case(((3, 5, 3),), {"size": (4, 6), "interp": 0}, grad=False),
           Case(((4, 3, 3),), {"size": (3, 4)}),
           Case(((5, 6, 3),), {"size": (9, 4), "interp": 4}, low=0.0, high=255.0, grad=False),
           Case(((7, 9, 1),), {"size": (4, 3), "interp": 3}, low=0.0, high=255.0, grad=False)),
    doc="Resize (H, W, C) or (N, H, W, C) images to ``size`` as OpenCV's ``cv::resize``."))
