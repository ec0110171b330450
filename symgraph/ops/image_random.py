"""MXNet's random image augmenters and lighting (``mx.nd.image.random_*``), as composites.

Each takes one (H, W, C) image (C in {1, 3}; uint8 or float) and computes in float32 as MXNet
does, then stores in the image's dtype with MXNet's ``saturate_cast`` (the hidden
``_image_saturate_cast``: uint8 clipped to [0, 255] and truncated; other dtypes cast).
Random factors come from the registered samplers (``_random_uniform``, ``_random_normal``,
``_shuffle``), so ``mx.random.seed`` reproduces them; the numbers are torch's, not MXNet's.

- ``random_flip_left_right`` / ``random_flip_top_bottom``: flip with probability 1/2
  (MXNet 1.9.1 has no ``p`` parameter);
- ``random_brightness``: ``x * a``, ``a ~ U(min_factor, max_factor)``;
- ``random_contrast``: ``x * a + (1 - a) * mean(grey)``, grey ``0.299 R + 0.587 G + 0.114 B``
  (the channel itself when C = 1);
- ``random_saturation``: ``x * a + (1 - a) * 0.114 * B`` per pixel: MXNet 1.9.1's grey value
  keeps only the last term of its sum (an ``=`` for ``+=``), reproduced here; C = 1: a copy;
- ``random_hue``: RGB -> HLS, hue shifted by ``a * 360`` degrees, back to RGB;
- ``random_color_jitter``: the four above (``1 + U(-v, v)`` factors, hue ``U(-v, v)``; an op
  whose value is 0 is skipped) in a random order, each result stored in the image dtype;
- ``adjust_lighting`` / ``random_lighting``: AlexNet's PCA noise, ``eigvec * eigval @ alpha``
  added to R, G, B (``alpha ~ N(0, alpha_std)``).

Where MXNet 1.9.1 leaves the output unwritten (hue and lighting of one-channel images) the
image is passed through (hue) or shifted by the first PCA term (lighting). The gradient is
the decomposition's (MXNet's is a copy of the output gradient).

>>> import symgraph as mx
>>> img = mx.nd.array([[[100, 150, 200]]], dtype='uint8')
>>> mx.nd.image.random_brightness(img, min_factor=1.5, max_factor=1.5).asnumpy()
array([[[150, 225, 255]]], dtype=uint8)
>>> mx.nd.image.adjust_lighting(img, alpha=(0.0, 0.0, 0.0)).asnumpy()
array([[[100, 150, 200]]], dtype=uint8)
"""
from __future__ import annotations

import numpy as np
import torch

from ..attrs import Param
from .base import Case, OpDef, register
from .cast_clip import cast_to
from .image import image_shape, parse_floats

# AlexNet's eigenvectors scaled by the eigenvalues (rows R, G, B), as MXNet's table
_EIG = np.array([[55.46 * -0.5675, 4.794 * 0.7192, 1.148 * 0.4009],
                 [55.46 * -0.5808, 4.794 * -0.0045, 1.148 * -0.8140],
                 [55.46 * -0.5836, 4.794 * -0.6948, 1.148 * 0.4203]], dtype=np.float32)
_GREY = (0.299, 0.587, 0.114)


# ---------------------------------------------------------------- saturate_cast

def _saturate(x: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    if like.dtype == torch.uint8:
        x = torch.clamp(x, 0.0, 255.0)
    return cast_to(x, like.dtype)


def _saturate_kernel(p, ins, aux, rt):
    from ..kernels.elementwise import Program, run
    from .cast_clip import _cast_template
    dtype = ins[1].dtype
    body = _cast_template(dtype)
    if dtype == torch.uint8:
        body = body.replace("{0}", "tl.minimum(tl.maximum({0}, 0.0), 255.0)")
    prog = Program(1, ((body, ("x0",)),), ("t0",))
    return run(prog, [ins[0]], tuple(ins[0].shape), dtype)


register(OpDef(
    name="_image_saturate_cast", inputs=("data", "like"), hidden=True,
    infer_shape=lambda p, s: ([s[0], s[1] or s[0]], [s[0]]) if s[0] else None,
    infer_type=lambda p, t: (list(t), [t[1]]) if t[1] is not None else None,
    forward=lambda p, ins, aux, rt: (_saturate(ins[0], ins[1]),), kernel=_saturate_kernel,
    gradient=lambda g, p, ins, outs, og: [g.op("_backward_Cast", og[0], ins[0]),
                                          g.zeros(ins[1])],
    cases=(Case(((3, 4), (3, 4)), low=-300.0, high=300.0),),
    doc="``data`` stored in ``like``'s dtype as MXNet's saturate_cast (uint8: clip, truncate)."))


# ---------------------------------------------------------------- graph helpers

def _const(b, values, tag: str):
    """A (1, 1, len(values)) float32 constant."""
    parts = [b.op("_full", shape=(1, 1, 1), value=float(v), dtype="float32", name=f"{tag}{i}")
             for i, v in enumerate(values)]
    return parts[0] if len(parts) == 1 else b.op("Concat", *parts, dim=2, num_args=len(parts),
                                                 name=tag)


def _flag(b, x, cond, tag: str):
    """A scalar condition (any shape of one element) broadcast to ``x``'s shape and dtype."""
    cond = b.op("_backward_Cast", b.op("Reshape", cond, shape=(1, 1, 1), name=f"{tag}_r"), x,
                name=f"{tag}_t")  # cast like x: broadcast_like takes one dtype
    return b.op("broadcast_like", cond, x, name=tag)


def _single_channel(b, x, tag: str = "single"):
    """1.0 where ``x`` has one channel, as a (1,) array (computed from its shape)."""
    c = b.op("slice_axis", b.op("shape_array", x, name=f"{tag}_shape"), axis=0, begin=2, end=3,
             name=f"{tag}_c")
    return b.op("_equal_scalar", b.op("Cast", c, dtype="float32", name=f"{tag}_cf"),
                scalar=1.0, name=tag)


def _uniform(b, low: float, high: float, tag: str):
    return b.op("_random_uniform", low=low, high=high, shape=(1, 1, 1), name=tag)


def _scale(b, xf, alpha, tag: str):
    return b.op("broadcast_mul", xf, alpha, name=tag)


# ---------------------------------------------------------------- the adjustments (float32)

def _brightness(b, xf, alpha, tag="b"):
    return _scale(b, xf, alpha, f"{tag}_scaled")


def _contrast(b, xf, alpha, tag="c"):
    w = b.op("slice_like", _const(b, _GREY, f"{tag}_coef"), xf, axes=(2,), name=f"{tag}_w")
    ones = b.op("ones_like", w, name=f"{tag}_ones")
    w = b.op("where", _flag(b, w, _single_channel(b, xf, f"{tag}_one"), f"{tag}_isone"), ones, w,
             name=f"{tag}_weights")
    grey = b.op("sum", b.op("broadcast_mul", xf, w, name=f"{tag}_wx"), axis=2, name=f"{tag}_grey")
    mean = b.op("Reshape", b.op("mean", grey, name=f"{tag}_mean"), shape=(1, 1, 1),
                name=f"{tag}_mean3")
    beta = b.op("broadcast_mul", b.op("_rminus_scalar", alpha, scalar=1.0, name=f"{tag}_1ma"),
                mean, name=f"{tag}_beta")
    return b.op("broadcast_add", _scale(b, xf, alpha, f"{tag}_ax"), beta, name=f"{tag}_out")


def _saturation(b, xf, alpha, tag="s"):
    last = b.op("slice_axis", xf, axis=2, begin=-1, end=None, name=f"{tag}_last")
    grey = b.op("broadcast_mul", b.op("_mul_scalar", last, scalar=_GREY[2], name=f"{tag}_g"),
                b.op("_rminus_scalar", alpha, scalar=1.0, name=f"{tag}_1ma"), name=f"{tag}_grey")
    out = b.op("broadcast_add", _scale(b, xf, alpha, f"{tag}_ax"), grey, name=f"{tag}_sum")
    return b.op("where", _flag(b, xf, _single_channel(b, xf, f"{tag}_one"), f"{tag}_isone"), xf,
                out, name=f"{tag}_out")


def _rgb_to_hls(b, xf, t):
    """(h in degrees, l, s) of each pixel of a float RGB image in [0, 255] (OpenCV's rule)."""
    idx = b.op("_arange", start=0, stop=3, dtype="float32", name=f"{t}_idx")
    rgb = b.op("take", xf, idx, axis=2, mode="clip", name=f"{t}_rgb")  # C = 1: grey triplets
    r, g, bl = (b.op("_div_scalar", b.op("slice_axis", rgb, axis=2, begin=k, end=k + 1,
                                         name=f"{t}_c{k}"), scalar=255.0, name=f"{t}_n{k}")
                for k in range(3))
    vmax = b.op("broadcast_maximum", b.op("broadcast_maximum", r, g, name=f"{t}_mx"), bl,
                name=f"{t}_vmax")
    vmin = b.op("broadcast_minimum", b.op("broadcast_minimum", r, g, name=f"{t}_mn"), bl,
                name=f"{t}_vmin")
    diff = b.op("broadcast_sub", vmax, vmin, name=f"{t}_diff")
    total = b.op("broadcast_add", vmax, vmin, name=f"{t}_total")
    light = b.op("_mul_scalar", total, scalar=0.5, name=f"{t}_l")
    chroma = b.op("_greater_scalar", diff, scalar=float(np.finfo(np.float32).eps), name=f"{t}_ch")
    s = b.op("where", b.op("_lesser_scalar", light, scalar=0.5, name=f"{t}_low"),
             b.op("broadcast_div", diff, total, name=f"{t}_slo"),
             b.op("broadcast_div", diff, b.op("_rminus_scalar", total, scalar=2.0,
                                               name=f"{t}_2mt"), name=f"{t}_shi"), name=f"{t}_s")
    d60 = b.op("_rdiv_scalar", diff, scalar=60.0, name=f"{t}_d60")

    def sector(u, v, offset, k):
        h = b.op("broadcast_mul", b.op("broadcast_sub", u, v, name=f"{t}_dv{k}"), d60,
                 name=f"{t}_hv{k}")
        return b.op("_plus_scalar", h, scalar=offset, name=f"{t}_h{k}") if offset else h
    h = b.op("where", b.op("broadcast_equal", vmax, g, name=f"{t}_isg"), sector(bl, r, 120.0, 1),
             sector(r, g, 240.0, 2), name=f"{t}_hgb")
    h = b.op("where", b.op("broadcast_equal", vmax, r, name=f"{t}_isr"), sector(g, bl, 0.0, 0),
             h, name=f"{t}_hue")
    h = b.op("where", b.op("_lesser_scalar", h, scalar=0.0, name=f"{t}_neg"),
             b.op("_plus_scalar", h, scalar=360.0, name=f"{t}_wrap"), h, name=f"{t}_h360")
    zeros = b.op("zeros_like", h, name=f"{t}_zero")
    return (b.op("where", chroma, h, zeros, name=f"{t}_H"), light,
            b.op("where", chroma, s, zeros, name=f"{t}_S"))


# (b, g, r) entries of (p2, p1, p1 + (p2 - p1) (1 - f), p1 + (p2 - p1) f) in each hue sector
_SECTORS = ((1, 3, 0), (1, 0, 2), (3, 0, 1), (0, 2, 1), (0, 1, 3), (2, 1, 0))


def _hls_to_rgb(b, h, light, s, t):
    """A float RGB image in [0, 255] (channels last) from hue (degrees), lightness, saturation."""
    ls = b.op("broadcast_mul", light, s, name=f"{t}_ls")
    p2 = b.op("where", b.op("_lesser_equal_scalar", light, scalar=0.5, name=f"{t}_dark"),
              b.op("broadcast_add", light, ls, name=f"{t}_p2lo"),
              b.op("broadcast_sub", b.op("broadcast_add", light, s, name=f"{t}_lps"), ls,
                   name=f"{t}_p2hi"), name=f"{t}_p2")
    p1 = b.op("broadcast_sub", b.op("_mul_scalar", light, scalar=2.0, name=f"{t}_2l"), p2,
              name=f"{t}_p1")
    hh = b.op("_mul_scalar", h, scalar=float(np.float32(1.0) / np.float32(60.0)), name=f"{t}_h6")
    turns = b.op("floor", b.op("_div_scalar", hh, scalar=6.0, name=f"{t}_t"), name=f"{t}_turns")
    hh = b.op("broadcast_sub", hh, b.op("_mul_scalar", turns, scalar=6.0, name=f"{t}_t6"),
              name=f"{t}_hw")
    sec = b.op("_minimum_scalar", b.op("floor", hh, name=f"{t}_sf"), scalar=5.0, name=f"{t}_sec")
    frac = b.op("broadcast_sub", hh, sec, name=f"{t}_f")
    span = b.op("broadcast_sub", p2, p1, name=f"{t}_span")
    tab = (p2, p1,
           b.op("broadcast_add", p1, b.op("broadcast_mul", span, b.op(
               "_rminus_scalar", frac, scalar=1.0, name=f"{t}_1mf"), name=f"{t}_sp2"),
               name=f"{t}_tab2"),
           b.op("broadcast_add", p1, b.op("broadcast_mul", span, frac, name=f"{t}_sp3"),
                name=f"{t}_tab3"))
    grey = b.op("_equal_scalar", s, scalar=0.0, name=f"{t}_grey")
    out = []
    for ch, col in (("r", 2), ("g", 1), ("b", 0)):
        v = tab[_SECTORS[5][col]]
        for k in range(4, -1, -1):
            v = b.op("where", b.op("_equal_scalar", sec, scalar=float(k), name=f"{t}_{ch}is{k}"),
                     tab[_SECTORS[k][col]], v, name=f"{t}_{ch}{k}")
        v = b.op("where", grey, light, v, name=f"{t}_{ch}")
        out.append(b.op("_mul_scalar", v, scalar=255.0, name=f"{t}_{ch}255"))
    return b.op("Concat", *out, dim=2, num_args=3, name=f"{t}_rgb_out")


def _hue(b, xf, alpha, tag="h"):
    h, light, s = _rgb_to_hls(b, xf, tag)
    h = b.op("broadcast_add", h, b.op("_mul_scalar", alpha, scalar=360.0, name=f"{tag}_deg"),
             name=f"{tag}_shift")
    rgb = b.op("slice_like", _hls_to_rgb(b, h, light, s, tag), xf, axes=(2,), name=f"{tag}_c")
    return b.op("where", _flag(b, xf, _single_channel(b, xf, f"{tag}_one"), f"{tag}_isone"), xf,
                rgb, name=f"{tag}_out")


# ---------------------------------------------------------------- registrations

def _float(b, x):
    return b.op("Cast", x, dtype="float32", name="float")


def _stored(b, v, x, tag: str = "out"):
    return b.op("_image_saturate_cast", v, x, name=tag)


def _random_flip(axis: int):
    def decompose(b, p, ins):
        x = ins[0]
        coin = b.op("_greater_equal_scalar", _uniform(b, 0.0, 1.0, "coin"), scalar=0.5,
                    name="flip")
        return [b.op("where", _flag(b, x, coin, "flip_all"), b.op("reverse", x, axis=axis), x)]
    return decompose


def _enhance(adjust):
    def decompose(b, p, ins):
        alpha = _uniform(b, p.min_factor, p.max_factor, "alpha")
        return [_stored(b, adjust(b, _float(b, ins[0]), alpha), ins[0])]
    return decompose


def _jitter(b, p, ins):
    """The enabled adjustments in a random order, each result stored in the image dtype.

    One uniform draw of 8 numbers gives the 4 factors and the order (op k runs at the rank
    of its key among the 4 keys), so every backend draws in the same order."""
    x = ins[0]
    steps = [(k, fn, v) for k, (fn, v) in enumerate(((_brightness, p.brightness),
                                                     (_contrast, p.contrast),
                                                     (_saturation, p.saturation),
                                                     (_hue, p.hue))) if v > 0]
    u = b.op("_random_uniform", low=0.0, high=1.0, shape=(8,), name="draws")
    alphas = {}
    for k, _, v in steps:  # U(-v, v), plus 1 for all but hue
        a = b.op("_mul_scalar", b.op("slice_axis", u, axis=0, begin=k, end=k + 1,
                                     name=f"u{k}"), scalar=2 * v, name=f"a{k}")
        a = b.op("_plus_scalar", a, scalar=-v + (k != 3), name=f"alpha{k}")
        alphas[k] = b.op("Reshape", a, shape=(1, 1, 1), name=f"alpha3{k}")
    keys = b.op("slice_axis", u, axis=0, begin=4, end=8, name="keys")
    below = b.op("broadcast_lesser", b.op("Reshape", keys, shape=(1, 4), name="row"),
                 b.op("Reshape", keys, shape=(4, 1), name="col"), name="below")
    rank = b.op("sum", below, axis=1, name="rank")
    cur = x
    for i in range(4):
        nxt = cur
        for k, fn, _ in steps:
            done = _stored(b, fn(b, b.op("Cast", cur, dtype="float32", name=f"f{i}{k}"),
                                 alphas[k], f"s{i}{k}"), x, f"st{i}{k}")
            at = b.op("_equal_scalar", b.op("slice_axis", rank, axis=0, begin=k, end=k + 1,
                                            name=f"rank{i}{k}"), scalar=float(i), name=f"at{i}{k}")
            nxt = b.op("where", _flag(b, x, at, f"pick{i}{k}"), done, nxt, name=f"step{i}{k}")
        cur = nxt
    return [cur if cur is not x else b.op("_copy", x)]


def _lighting(b, p, ins):
    alpha = parse_floats(p.alpha, "alpha")
    a = np.zeros(3, np.float32)
    a[:len(alpha)] = alpha[:3]
    shift = [np.float32(_EIG[c, 0] * a[0]) + np.float32(_EIG[c, 1] * a[1]) +
             np.float32(_EIG[c, 2] * a[2]) for c in range(3)]
    return _add_shift(b, ins[0], _const(b, shift, "pca"))


def _add_shift(b, x, shift):
    shift = b.op("slice_like", shift, x, axes=(2,), name="shift")
    return [_stored(b, b.op("broadcast_add", _float(b, x), shift, name="shifted"), x)]


def _random_lighting(b, p, ins):
    # N(0, 1) scaled: alpha_std may be 0 (no noise), which the sampler refuses as a scale
    alpha = b.op("_mul_scalar", b.op("_random_normal", loc=0.0, scale=1.0, shape=(3,),
                                     name="normal"), scalar=p.alpha_std, name="alpha")
    a = [b.op("slice_axis", alpha, axis=0, begin=k, end=k + 1, name=f"a{k}") for k in range(3)]
    shift = []
    for c in range(3):
        terms = [b.op("_mul_scalar", a[k], scalar=float(_EIG[c, k]), name=f"e{c}{k}")
                 for k in range(3)]
        shift.append(b.op("broadcast_add", b.op("broadcast_add", terms[0], terms[1],
                                                name=f"pca{c}_01"), terms[2], name=f"pca{c}"))
    joined = b.op("Reshape", b.op("Concat", *shift, dim=0, num_args=3, name="pca"),
                  shape=(1, 1, 3), name="pca3")
    return _add_shift(b, ins[0], joined)


_ENHANCE = (Param("min_factor", "float", lower=0.0, doc="Minimum factor."),
            Param("max_factor", "float", lower=0.0, doc="Maximum factor."))
# float32 inside: float64 central differences cannot resolve these (tests/test_ops_image.py
# checks the gradients against their formulas instead)
_IMG = dict(low=0.0, high=255.0, grad=False)

for _name, _axis in (("_image_random_flip_left_right", 1), ("_image_random_flip_top_bottom", 0)):
    register(OpDef(
        name=_name, decompose=_random_flip(_axis), infer_shape=image_shape(_name), random=True,
        cases=(Case(((3, 4, 3),), grad=False), Case(((2, 3, 1),), grad=False)),
        doc="Flip the image with probability 1/2 (along W or H)."))

for _name, _fn, _what in (
        ("_image_random_brightness", _brightness, "brightness: ``x * a``"),
        ("_image_random_contrast", _contrast, "contrast around the mean grey level"),
        ("_image_random_saturation", _saturation, "saturation (MXNet 1.9.1's grey value)"),
        ("_image_random_hue", _hue, "hue by ``a`` turns (HLS)")):
    register(OpDef(
        name=_name, decompose=_enhance(_fn), infer_shape=image_shape(_name), random=True,
        params=_ENHANCE,
        cases=(Case(((3, 4, 3),), {"min_factor": 0.5, "max_factor": 1.5}, **_IMG),
               Case(((2, 3, 1),), {"min_factor": 0.2, "max_factor": 0.4}, **_IMG)),
        doc=f"Randomly adjust the {_what}, ``a ~ U(min_factor, max_factor)``."))

register(OpDef(
    name="_image_random_color_jitter", decompose=_jitter,
    infer_shape=image_shape("_image_random_color_jitter"), random=True,
    params=(Param("brightness", "float", doc="How much to jitter brightness."),
            Param("contrast", "float", doc="How much to jitter contrast."),
            Param("saturation", "float", doc="How much to jitter saturation."),
            Param("hue", "float", doc="How much to jitter hue.")),
    cases=(Case(((2, 3, 3),), {"brightness": 0.3, "contrast": 0.2, "saturation": 0.4,
                               "hue": 0.1}, **_IMG),),
    doc="Jitter brightness, contrast, saturation and hue in a random order."))

register(OpDef(
    name="_image_adjust_lighting", decompose=_lighting,
    infer_shape=image_shape("_image_adjust_lighting"),
    params=(Param("alpha", "str", doc="The lighting alphas for the R, G, B channels."),),
    cases=(Case(((3, 4, 3),), {"alpha": (0.1, -0.2, 0.3)}, **_IMG),),
    doc="Add AlexNet's PCA lighting noise for the given alphas."))

register(OpDef(
    name="_image_random_lighting", decompose=_random_lighting,
    infer_shape=image_shape("_image_random_lighting"), random=True,
    params=(Param("alpha_std", "float", 0.05, doc="Level of the lighting noise."),),
    cases=(Case(((3, 4, 3),), {"alpha_std": 0.1}, **_IMG),),
    doc="Add AlexNet's PCA lighting noise with ``alpha ~ N(0, alpha_std)``."))
