"""MXNet's OpenCV operators (``src/io/image_io.cc``): ``_cvimdecode``, ``_cvimread``,
``_cvimresize``, ``_cvcopyMakeBorder`` and the legacy ``_imdecode``, run with OpenCV (cv2).

MXNet runs them on the CPU only, through its bundled OpenCV; symgraph calls the same
library functions (``cv2.imdecode``, ``cv2.resize``, ``cv2.copyMakeBorder``), so decoded
pixels equal MXNet's wherever the two OpenCV builds share a codec (docs/compat.md says how
close). The decoders' output shapes depend on the encoded bytes, and all of them work on
host memory, so they are imperative-only (``eager``, like ``boolean_mask``): ``mx.nd``
runs them, a bound graph refuses them. ``_cvimresize`` and ``_cvcopyMakeBorder`` still
have shape rules, so ``infer_shape`` of a symbol holding them works as in MXNet.

>>> import symgraph as mx
>>> img = mx.nd.array([[[0], [255]]], dtype='uint8')
>>> mx.nd._internal._cvimresize(img, w=4, h=1, interp=0).asnumpy().ravel().tolist()
[0, 0, 255, 255]
>>> mx.nd._internal._cvcopyMakeBorder(img, 1, 0, 0, 1, values=(7,)).shape
(2, 3, 1)
>>> mx.nd._internal._cvimdecode(mx.nd.array([1, 2], dtype='uint8'))
Traceback (most recent call last):
...
symgraph.base.FileFormatError: _cvimdecode: Decoding failed. Invalid image file (2 bytes)
"""
from __future__ import annotations

import numpy as np
import torch

from ..attrs import Param
from ..base import DTypeError, FileFormatError, MXNetError, ShapeError
from .base import OpDef, Special, register


class ImageReadError(MXNetError, OSError):
    """An image file could not be opened or read (MXNet's ``Imread`` check)."""


def _cv2():
    import cv2  # a project dependency; imported on first use (no work at import)
    return cv2


def _header_size(data: bytes) -> bool:
    """Whether MXNet finds the size in a JFIF JPEG's or a PNG's header: it then decodes
    into a preallocated array with ``IMREAD_IGNORE_ORIENTATION`` (EXIF rotation ignored)."""
    if data[:4] == b"\x89PNG":
        return len(data) >= 24
    return data[:4] == b"\xff\xd8\xff\xe0" and data[6:11] == b"JFIF\x00"


def _imdecode_or_none(data: bytes, mode: int) -> np.ndarray | None:
    """``cv2.imdecode``, None where OpenCV cannot decode (it raises for some inputs)."""
    cv2 = _cv2()
    if not data:
        return None
    try:
        img = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), mode)
    except cv2.error:
        return None
    return None if img is None or img.size == 0 else img


def decode_bytes(data: bytes, flag: int, to_rgb: bool, what: str) -> np.ndarray:
    """Decode encoded image bytes as MXNet's ``ImdecodeImpl``: (H, W, 3) colour or (H, W, 1)
    grayscale uint8, RGB order unless ``to_rgb`` is False."""
    if not data:
        raise FileFormatError(f"{what}: Input cannot be an empty buffer")
    cv2 = _cv2()
    # any other flag gives MXNet's (H, W, 3) uint8 (its output array is allocated so)
    mode = cv2.IMREAD_GRAYSCALE if flag == 0 else cv2.IMREAD_COLOR
    if _header_size(data):
        mode |= cv2.IMREAD_IGNORE_ORIENTATION
    img = _imdecode_or_none(data, mode)
    if img is None:
        raise FileFormatError(f"{what}: Decoding failed. Invalid image file "
                              f"({len(data)} bytes)")
    if flag == 0:
        return np.ascontiguousarray(img.reshape(img.shape[0], img.shape[1], 1))
    return np.ascontiguousarray(cv2.cvtColor(img, cv2.COLOR_BGR2RGB) if to_rgb else img)


def read_file_bytes(filename: str, what: str) -> bytes:
    """The bytes of an image file, or MXNet's ``couldn't open file`` error."""
    try:
        with open(filename, "rb") as f:
            return f.read()
    except OSError as err:
        raise ImageReadError(f"{what}: '{filename}' couldn't open file: "
                             f"{err.strerror or err}") from None


_DECODE_PARAMS = (
    Param("flag", "int", 1, lower=0, doc="Convert decoded image to grayscale (0) or color (1)."),
    Param("to_rgb", "bool", True, doc="Whether to convert decoded image to mxnet's default RGB "
                                       "format (instead of opencv's default BGR)."),
)


def _no_graph(p, shapes):
    return None  # the output shape is in the encoded bytes


def _uint8(p, types):
    return list(types), [np.uint8]


def _decode_eager(b, p, ins):
    buf = ins[0]
    t = b.value(buf)
    if t.dtype != torch.uint8:
        raise DTypeError(f"_cvimdecode: Input needs to be uint8 buffer, got {buf.dtype}")
    data = t.detach().cpu().contiguous().numpy().tobytes()
    return [b.array(torch.from_numpy(decode_bytes(data, p.flag, p.to_rgb, "_cvimdecode")))]


def _read_eager(b, p, ins):
    data = read_file_bytes(p.filename, "Imread")
    img = decode_bytes(data, p.flag, p.to_rgb, f"Imread '{p.filename}'")
    return [b.array(torch.from_numpy(img))]


def _reference(eager):
    """A torch forward for the imperative ops (tests, the op table): the eager rule on
    plain tensors."""
    class _Plain:
        value = staticmethod(lambda a: a)
        array = staticmethod(lambda t: t)

    def forward(p, ins, aux, rt):
        return eager(_Plain, p, list(ins))
    return forward


register(OpDef(
    name="_cvimdecode", inputs=("buf",), params=_DECODE_PARAMS, aliases=("_npi_cvimdecode",),
    infer_shape=_no_graph, infer_type=_uint8, forward=_reference(_decode_eager),
    special=Special(eager=_decode_eager), differentiable=False,
    doc="""Decode image with OpenCV. Note: return image in RGB by default, instead of
    OpenCV's default BGR. ``buf`` is a 1-D uint8 array of the encoded bytes."""))

register(OpDef(
    name="_cvimread", inputs=(), aliases=("_npi_cvimread",),
    params=(Param("filename", "str", doc="Name of the image file to be loaded."),
            *_DECODE_PARAMS),
    infer_shape=_no_graph, infer_type=_uint8, forward=_reference(_read_eager),
    special=Special(eager=_read_eager), differentiable=False,
    doc="""Read and decode image with OpenCV. Note: return image in RGB by default,
    instead of OpenCV's default BGR."""))


# ---------------------------------------------------------------- resize and border

_CV_DTYPES = (torch.uint8, torch.float32, torch.float64, torch.int32)


def _image3(name: str, shape: tuple) -> None:
    if len(shape) != 3:
        raise ShapeError(f"{name}: src must be an (H, W, C) image, got shape {tuple(shape)}")


def _host_image(name: str, t: torch.Tensor) -> np.ndarray:
    """``t`` as the numpy (H, W, C) array OpenCV reads; MXNet's dtype checks."""
    _image3(name, tuple(t.shape))
    if t.dtype not in _CV_DTYPES:
        raise DTypeError(f"{name}: OpenCV takes uint8, int32, float32 or float64 images, "
                         f"got {str(t.dtype).replace('torch.', '')}")
    if not 1 <= t.shape[2] <= 4:
        raise ShapeError(f"{name}: OpenCV images have 1 to 4 channels, got shape "
                         f"{tuple(t.shape)}")
    return np.ascontiguousarray(t.detach().cpu().numpy())


def _as_hwc(img: np.ndarray, channels: int) -> np.ndarray:
    return img.reshape(img.shape[0], img.shape[1], channels)


def _resize_shape(p, shapes):
    src = shapes[0]
    if not src:
        return None
    _image3("_cvimresize", src)
    return [src], [(p.h, p.w, src[2])]


def _resize_eager(b, p, ins):
    src = _host_image("_cvimresize", b.value(ins[0]))
    if p.interp not in (0, 1, 2, 3, 4):
        raise MXNetError(f"_cvimresize: unknown interpolation method {p.interp} (OpenCV "
                         "takes 0 nearest, 1 linear, 2 cubic, 3 area, 4 lanczos)")
    from .image import opencv_resize
    out = opencv_resize(src, p.w, p.h, p.interp)
    return [b.array(torch.from_numpy(np.ascontiguousarray(_as_hwc(out, src.shape[2]))))]


register(OpDef(
    name="_cvimresize", inputs=("src",), aliases=("_npi_cvimresize",),
    params=(Param("w", "int", lower=1, doc="Width of resized image."),
            Param("h", "int", lower=1, doc="Height of resized image."),
            Param("interp", "int", 1, doc="Interpolation method (default=cv2.INTER_LINEAR).")),
    infer_shape=_resize_shape, forward=_reference(_resize_eager),
    special=Special(eager=_resize_eager),
    differentiable=False, doc="Resize an (H, W, C) image with OpenCV's ``cv2.resize``."))


_BORDER_ISOLATED = 16  # cv2.BORDER_ISOLATED, which MXNet's DetRandomPadAug adds


def _border_shape(p, shapes):
    src = shapes[0]
    if not src:
        return None
    _image3("_cvcopyMakeBorder", src)
    return [src], [(src[0] + p.top + p.bot, src[1] + p.left + p.right, src[2])]


def _border_eager(b, p, ins):
    src = _host_image("_cvcopyMakeBorder", b.value(ins[0]))
    if p.type & ~_BORDER_ISOLATED not in (0, 1, 2, 3, 4):
        raise MXNetError(f"_cvcopyMakeBorder: unknown border type {p.type} (OpenCV's 0 "
                         "constant, 1 replicate, 2 reflect, 3 wrap, 4 reflect_101; +16 isolated)")
    if min(p.top, p.bot, p.left, p.right) < 0:
        raise MXNetError(f"_cvcopyMakeBorder: margins must be >= 0, got top={p.top} "
                         f"bot={p.bot} left={p.left} right={p.right}")
    color = (list(p.values) + [0.0] * 4)[:4] if p.values else [p.value] * 3 + [0.0]
    out = _cv2().copyMakeBorder(src, p.top, p.bot, p.left, p.right, p.type, value=color)
    return [b.array(torch.from_numpy(np.ascontiguousarray(_as_hwc(out, src.shape[2]))))]


register(OpDef(
    name="_cvcopyMakeBorder", inputs=("src",),
    params=(Param("top", "int", doc="Top margin."), Param("bot", "int", doc="Bottom margin."),
            Param("left", "int", doc="Left margin."), Param("right", "int", doc="Right margin."),
            Param("type", "int", 0, doc="Filling type (default=cv2.BORDER_CONSTANT)."),
            Param("value", "float", 0.0, doc="(Deprecated! Use ``values`` instead.) Fill "
                                              "with single value."),
            Param("values", "floats", (), doc="Fill with value(RGB[A] or gray), up to 4 "
                                              "channels.")),
    infer_shape=_border_shape, forward=_reference(_border_eager),
    special=Special(eager=_border_eager),
    differentiable=False, doc="Pad an (H, W, C) image's border with ``cv2.copyMakeBorder``."))


# ---------------------------------------------------------------- legacy _imdecode

def _legacy_eager(b, p, ins):
    """MXNet's ``Imdecode`` NDArray function: decode (BGR, as OpenCV gives it), clip to
    (x0, y0, x1, y1), keep ``c`` channels as a (c, h, w) float array, subtract ``mean``."""
    data = p.str_img.encode("latin-1")
    cv2 = _cv2()
    flag = 0 if p.c == 1 else cv2.IMREAD_UNCHANGED
    img = _imdecode_or_none(data, flag)
    if img is None:
        raise FileFormatError(f"_imdecode: OpenCV Failed to decode image ({len(data)} bytes)")
    img = img[:, :, None] if img.ndim == 2 else img
    x0, y0, x1, y1 = (0, 0, img.shape[1], img.shape[0]) if p.y1 == p.y0 else \
        (p.x0, p.y0, p.x1, p.y1)
    if p.c > img.shape[2] or x1 > img.shape[1] or y1 > img.shape[0]:
        raise ShapeError(f"_imdecode: clip ({x0}, {y0}, {x1}, {y1}) with {p.c} channels "
                         f"does not fit the decoded image of shape {img.shape}")
    out = torch.from_numpy(np.ascontiguousarray(
        img[y0:y1, x0:x1, :p.c].transpose(2, 0, 1))).to(torch.float32)
    if ins:
        mean = b.value(ins[0])
        if tuple(mean.shape) != tuple(out.shape):
            raise ShapeError(f"_imdecode: mean of shape {tuple(mean.shape)} must match the "
                             f"decoded image's {tuple(out.shape)}")
        out = out.to(mean.dtype) - mean
    return [b.array(out)]


register(OpDef(
    name="_imdecode", inputs=lambda p: ["mean"] if p.get("_has_mean") else [],
    params=(Param("index", "int", 0), Param("x0", "int", 0), Param("y0", "int", 0),
            Param("x1", "int", 0), Param("y1", "int", 0), Param("c", "int", 3),
            Param("size", "int", 0), Param("str_img", "str", ""),
            Param("_has_mean", "bool", False)),
    infer_shape=_no_graph, infer_type=lambda p, t: (list(t), [np.float32]),
    forward=_reference(_legacy_eager), special=Special(eager=_legacy_eager), differentiable=False,
    doc="""Decode an image, clip to (x0, y0, x1, y1), subtract mean (deprecated: use
    ``mx.image``). ``str_img`` holds the encoded bytes as a latin-1 string."""))
