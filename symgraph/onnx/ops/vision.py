"""ONNX translations of the vision ops: adaptive average pooling, bilinear resizing,
upsampling, ROI pooling/align and the detection helpers (``box_nms``, ``box_decode``)."""
from __future__ import annotations

import numpy as np

from ..emitter import Emitter, NodeCtx, converts

# ---------------------------------------------------------------- AdaptiveAvgPooling2D


def _pool_hw(p) -> tuple:
    size = tuple(p.output_size)
    return size * 2 if len(size) == 1 else (size if len(size) == 2 else (1, 1))


def _window_mean(e: Emitter, x: str, shape: tuple, axis: int, out_size: int) -> str:
    """Means over MXNet's adaptive windows ``[floor(i*L/O), ceil((i+1)*L/O))`` of ``axis``,
    their bounds computed from the run-time length (exact for any input size)."""
    length = e.dim_slice(x, shape, axis, axis + 1)
    num = e.ints([out_size])
    cells = []
    for i in range(out_size):
        start = e.one("Div", [e.one("Mul", [length, e.ints([i])]), num])
        end = e.one("Div", [e.one("Add", [e.one("Mul", [length, e.ints([i + 1])]),
                                          e.ints([out_size - 1])]), num])
        piece = e.one("Slice", [x, start, end, e.ints([axis])])
        cells.append(e.reduce("ReduceMean", piece, [axis], True))
    return cells[0] if out_size == 1 else e.one("Concat", cells, axis=axis)


@converts("_contrib_AdaptiveAvgPooling2D")
def adaptive_avg_pool(e: Emitter, n: NodeCtx):
    x, shape, out = n.ins[0], n.in_shapes[0], n.outs[0]
    oh, ow = _pool_hw(n.p)
    if (oh, ow) == (1, 1):
        return [e.one("GlobalAveragePool", [x], out)]
    h, w = shape[2], shape[3]
    if not e.dynamic and h % oh == 0 and w % ow == 0:  # equal windows: one AveragePool
        kernel = [h // oh, w // ow]
        return [e.one("AveragePool", [x], out, kernel_shape=kernel, strides=kernel)]
    y = _window_mean(e, x, shape, 2, oh)
    y = _window_mean(e, y, shape, 3, ow)
    return [e.one("Identity", [y], out)]


# ---------------------------------------------------------------- BilinearResize2D

_PARITY = {"to_even_down": (0, -1), "to_even_up": (0, 1), "to_odd_down": (1, -1),
           "to_odd_up": (1, 1)}


def _scaled(e: Emitter, size: str, scale: float) -> str:
    """``int(float32(size) * float32(scale))`` (MXNet's shape rule) at run time."""
    prod = e.one("Mul", [e.cast(size, "float32"), e.const(np.float32([scale]))])
    return e.cast(e.one("Floor", [prod]), "int64")


def _resize_hw(e: Emitter, n: NodeCtx) -> str:
    """The output (H, W) as a 1-D int64: a constant unless dims are dynamic."""
    p, x, shape = n.p, n.ins[0], n.in_shapes[0]
    fixed = p.mode == "size" and p.scale_height is None
    if not e.dynamic or fixed:
        return e.ints(n.out_shapes[0][2:])
    if p.mode == "like":
        return e.dim_slice(n.ins[1], n.in_shapes[1], 2, 4)
    dims = [e.dim_slice(x, shape, a, a + 1) for a in (2, 3)]
    if p.mode in ("size", "odd_scale"):
        scales = (p.scale_height, p.scale_width)
        outs = [_scaled(e, d, s) for d, s in zip(dims, scales)]
        if p.mode == "odd_scale":  # odd sizes: scale size - 1, then add the 1 back
            odd = [e.one("Equal", [e.one("Mod", [d, e.ints([2])]), e.ints([1])]) for d in dims]
            alt = [e.one("Add", [_scaled(e, e.one("Sub", [d, e.ints([1])]), s), e.ints([1])])
                   for d, s in zip(dims, scales)]
            outs = [e.one("Where", [o, a, v]) for o, a, v in zip(odd, alt, outs)]
        return e.one("Concat", outs, axis=0)
    parity, step = _PARITY[p.mode]
    outs = [e.one("Where", [e.one("Equal", [e.one("Mod", [d, e.ints([2])]), e.ints([parity])]),
                            d, e.one("Add", [d, e.ints([step])])]) for d in dims]
    return e.one("Concat", outs, axis=0)


def resize(e: Emitter, x: str, shape: tuple, hw: str, out: str, **attrs) -> str:
    """ONNX Resize of NCHW ``x`` to the (H, W) in ``hw`` (opset 11 form: roi and scales as
    empty tensors)."""
    sizes = e.one("Concat", [e.dim_slice(x, shape, 0, 2), hw], axis=0)
    roi = e.const(np.zeros(0, np.float32), hint="roi")
    scales = e.const(np.zeros(0, np.float32), hint="scales")
    return e.one("Resize", [x, roi, scales, sizes], out, **attrs)


@converts("_contrib_BilinearResize2D")
def bilinear_resize(e: Emitter, n: NodeCtx):
    p = n.p
    if p.align_corners:
        mode = "align_corners"
    else:
        fixed = p.mode == "size" and p.scale_height is None
        if e.dynamic and not fixed:
            raise n.fail("align_corners=False with a dynamic output size: MXNet reads an "
                         "output of size 1 from pixel 0, which no single ONNX coordinate "
                         "mode gives for every size")
        hw = n.out_shapes[0][2:]
        if min(hw) > 1:
            mode = "half_pixel"
        elif max(hw) == 1:
            mode = "asymmetric"  # MXNet's scale 0: every output reads pixel 0
        else:
            raise n.fail(f"align_corners=False with output size {hw}: one axis of size 1 "
                         "(read from pixel 0) and one not need two ONNX coordinate modes")
    return [resize(e, n.ins[0], n.in_shapes[0], _resize_hw(e, n), n.outs[0], mode="linear",
                   coordinate_transformation_mode=mode)]


# ---------------------------------------------------------------- UpSampling


@converts("UpSampling")
def upsampling(e: Emitter, n: NodeCtx):
    p = n.p
    if p.sample_type == "bilinear":
        return [_upsampling_bilinear(e, n)]
    # every input goes to the first one's size times scale (an integer ratio each: nearest
    # with floor(o * in / out) repeats each pixel)
    s = int(p.scale)
    hw = e.one("Mul", [e.dim_slice(n.ins[0], n.in_shapes[0], 2, 4), e.ints([s, s])])
    parts = [resize(e, x, shape, hw, None, mode="nearest", nearest_mode="floor",
                    coordinate_transformation_mode="asymmetric")
             for x, shape in zip(n.ins, n.in_shapes)]
    if len(parts) == 1:
        return [e.one("Identity", parts, n.outs[0])]
    if p.multi_input_mode == "sum":
        return [e.one("Sum", parts, n.outs[0])]
    return [e.one("Concat", parts, n.outs[0], axis=1)]


def _upsampling_bilinear(e: Emitter, n: NodeCtx) -> str:
    """MXNet's bilinear upsampling is a depthwise deconvolution with the weight input."""
    s = int(n.p.scale)
    k, pad = 2 * s - s % 2, -(-(s - 1) // 2)
    channels = n.in_shapes[0][1]
    return e.one("ConvTranspose", [n.ins[0], n.ins[1]], n.outs[0], kernel_shape=[k, k],
                 strides=[s, s], pads=[pad] * 4, group=channels)


# ---------------------------------------------------------------- ROIs


def _split_rois(e: Emitter, rois: str) -> tuple[str, str]:
    """MXNet rois (R, 5) ``[batch, x1, y1, x2, y2]`` as ONNX's boxes (R, 4) and batch
    indices (R,) int64."""
    batch, boxes = e.split(rois, [1, 4], 1, 2)
    return boxes, e.cast(e.squeeze(batch, [1]), "int64")


@converts("_contrib_ROIAlign")
def roi_align(e: Emitter, n: NodeCtx):
    p = n.p
    if p.position_sensitive:
        raise n.fail("position_sensitive (ONNX RoiAlign has no position-sensitive form)")
    attrs = {}
    if e.opset >= 16:
        attrs["coordinate_transformation_mode"] = "half_pixel" if p.aligned \
            else "output_half_pixel"
    elif p.aligned:
        raise n.fail("aligned=True needs opset 16 (RoiAlign's half_pixel mode)")
    boxes, batch = _split_rois(e, n.ins[1])
    # MXNet outputs zeros for a roi whose (truncated) batch index is negative; ONNX Runtime
    # refuses such an index: pool image 0 for it, then zero its rows
    skip = e.one("Less", [batch, e.ints([0])])
    batch = e.one("Where", [skip, e.ints([0]), batch])
    ph, pw = p.pooled_size
    y = e.one("RoiAlign", [n.ins[0], boxes, batch], mode="avg",
              output_height=int(ph), output_width=int(pw),
              sampling_ratio=max(int(p.sample_ratio), 0),
              spatial_scale=float(p.spatial_scale), **attrs)
    zero = e.scalar(0, n.out_dtypes[0])
    return [e.one("Where", [e.unsqueeze(skip, [1, 2, 3]), zero, y], n.outs[0])]


@converts("ROIPooling")
def roi_pooling(e: Emitter, n: NodeCtx):
    p = n.p
    return [e.one("MaxRoiPool", [n.ins[0], n.ins[1]], n.outs[0],
                  pooled_shape=[int(v) for v in p.pooled_size],
                  spatial_scale=float(p.spatial_scale))]


# ---------------------------------------------------------------- box_decode


@converts("_contrib_box_decode")
def box_decode(e: Emitter, n: NodeCtx):
    p, dtype = n.p, n.in_dtypes[0]
    if dtype not in ("float32", "float64", "float16") or n.in_dtypes[1] != dtype:
        raise n.fail(f"dtypes {n.in_dtypes[:2]} (data and anchors: one float type)")
    work = "float32" if dtype == "float16" else dtype  # float16 boxes: float32 inside

    def f(v):
        return e.scalar(v, work)
    data, anchors = n.ins[0], n.ins[1]
    if dtype == "float16":
        data, anchors = e.cast(data, "float32"), e.cast(anchors, "float32")
    # anchors (1, M, 4) with M >= N: the first N, as MXNet reads them
    anchors = e.one("Slice", [anchors, e.ints([0]), e.dim_slice(data, n.in_shapes[0], 1, 2),
                              e.ints([1])])
    ax, ay, aw, ah = e.split(anchors, [1, 1, 1, 1], 2, 4)
    if p.format == "corner":
        aw, ah = e.one("Sub", [aw, ax]), e.one("Sub", [ah, ay])
        ax = e.one("Add", [ax, e.one("Mul", [aw, f(0.5)])])
        ay = e.one("Add", [ay, e.one("Mul", [ah, f(0.5)])])
    d = e.split(data, [1, 1, 1, 1], 2, 4)
    stds = (p.std0, p.std1, p.std2, p.std3)
    ox = e.one("Add", [e.one("Mul", [e.one("Mul", [d[0], f(stds[0])]), aw]), ax])
    oy = e.one("Add", [e.one("Mul", [e.one("Mul", [d[1], f(stds[1])]), ah]), ay])
    dw, dh = (e.one("Mul", [d[k], f(stds[k])]) for k in (2, 3))
    if p.clip > 0:
        dw, dh = (e.one("Min", [v, f(p.clip)]) for v in (dw, dh))
    ow = e.one("Mul", [e.one("Mul", [e.one("Exp", [dw]), aw]), f(0.5)])
    oh = e.one("Mul", [e.one("Mul", [e.one("Exp", [dh]), ah]), f(0.5)])
    box = [e.one("Sub", [ox, ow]), e.one("Sub", [oy, oh]), e.one("Add", [ox, ow]),
           e.one("Add", [oy, oh])]
    if dtype == "float16":
        return [e.cast(e.one("Concat", box, axis=2), dtype, n.outs[0])]
    return [e.one("Concat", box, n.outs[0], axis=2)]


# ---------------------------------------------------------------- box_nms
# MXNet's box_nms keeps the input's shape: per batch item the kept rows sorted by score,
# then rows of -1. ONNX NonMaxSuppression differs from it (it reorders box corners, never
# suppresses a box of area 0 and has no per-row class test), so the translation builds the
# exact rule: a stable sort (TopK), MXNet's IoU matrix of the topk boxes and its greedy sweep
# as a Loop over them.


def _column(e: Emitter, x: str, index: int, dtype: str, wide: str) -> str:
    """Column ``index`` of (B, N, W) ``x`` as (B, N) in ``wide``."""
    col = e.squeeze(e.one("Gather", [x, e.ints([index])], axis=2), [2])
    return col if dtype == wide else e.cast(col, wide)


def _box_corners(e: Emitter, rows: str, p, dtype: str, wide: str) -> list[str]:
    """x1, y1, x2, y2, width, height of the rows' boxes, each (B, K, 1) in ``wide``."""
    cs = p.coord_start
    coords = e.one("Slice", [rows, e.ints([cs]), e.ints([cs + 4]), e.ints([2])])
    if dtype != wide:
        coords = e.cast(coords, wide)
    c0, c1, c2, c3 = e.split(coords, [1, 1, 1, 1], 2, 4)
    if p.in_format == "corner":
        return [c0, c1, c2, c3, e.one("Sub", [c2, c0]), e.one("Sub", [c3, c1])]
    two = e.scalar(2, wide)
    hw, hh = e.one("Div", [c2, two]), e.one("Div", [c3, two])
    return [e.one("Sub", [c0, hw]), e.one("Sub", [c1, hh]), e.one("Add", [c0, hw]),
            e.one("Add", [c1, hh]), c2, c3]


def _hits(e: Emitter, rows: str, p, dtype: str, wide: str) -> str:
    """(B, K, K) bool: box i and box j overlap by more than overlap_thresh (same class
    unless force_suppress)."""
    b0, b1, b2, b3, bw, bh = _box_corners(e, rows, p, dtype, wide)

    def t(v):
        return e.one("Transpose", [v], perm=[0, 2, 1])

    zero = e.scalar(0, wide)
    iw = e.one("Max", [e.one("Sub", [e.one("Min", [b2, t(b2)]), e.one("Max", [b0, t(b0)])]),
                       zero])
    ih = e.one("Max", [e.one("Sub", [e.one("Min", [b3, t(b3)]), e.one("Max", [b1, t(b1)])]),
                       zero])
    inter = e.one("Mul", [iw, ih])
    flat = e.one("Or", [e.one("Less", [bw, zero]), e.one("Less", [bh, zero])])
    area = e.one("Where", [flat, zero, e.one("Mul", [bw, bh])])
    union = e.one("Sub", [e.one("Add", [area, t(area)]), inter])
    hit = e.one("Greater", [e.one("Div", [inter, union]), e.scalar(p.overlap_thresh, wide)])
    if p.id_index >= 0 and not p.force_suppress:
        ids = e.cast(e.one("Gather", [rows, e.ints([p.id_index])], axis=2), "int64")
        hit = e.one("And", [hit, e.one("Equal", [ids, t(ids)])])
    return hit


def _greedy(e: Emitter, hit: str, valid: str, count: str, pos: str) -> str:
    """(B, K) bool: the boxes the greedy sweep keeps; a Loop over the K sorted boxes, box r
    kept when valid and hit by no box kept before it."""
    it, cond_in, keep_in = e.fresh("iter"), e.fresh("cond_in"), e.fresh("keep_in")
    outer, e.nodes = e.nodes, []
    col = e.one("Gather", [hit, it], axis=2)
    hits = e.cast(e.one("And", [keep_in, col]), "float32")
    suppressed = e.reduce("ReduceMax", hits, [1], False)
    kept = e.one("And", [e.one("Gather", [valid, it], axis=1),
                         e.one("Less", [suppressed, e.scalar(0.5, "float32")])])
    step = e.one("And", [e.unsqueeze(kept, [1]), e.one("Equal", [pos, it])])
    keep_out = e.one("Or", [keep_in, step])
    cond_out = e.one("Identity", [cond_in])
    body_nodes, e.nodes = e.nodes, outer
    h = e.helper
    body = h.make_graph(
        body_nodes, e.fresh("nms_body"),
        [h.make_tensor_value_info(it, 7, []), h.make_tensor_value_info(cond_in, 9, []),
         h.make_tensor_value_info(keep_in, 9, None)],
        [h.make_tensor_value_info(cond_out, 9, []), h.make_tensor_value_info(keep_out, 9, None)])
    keep0 = e.one("And", [valid, e.one("Not", [valid])])  # all False, (B, K)
    trips = e.squeeze(count, [0])
    return e.node("Loop", [trips, "", keep0], 1, body=body)[0]


def _sorted_rows(e: Emitter, x3: str, key: str, k: str, largest: int) -> tuple[str, str]:
    """The first ``k`` rows of (B, N, W) ``x3`` by ``key`` (B, N) (ties: lower index
    first), and their sorted keys."""
    vals, order = e.node("TopK", [key, k], 2, axis=1, largest=largest, sorted=1)
    idx = e.unsqueeze(order, [2])
    shape = e.one("Concat", [e.one("Shape", [order]), e.one("Shape", [x3], start=2)
                             if e.opset >= 15 else e.one("Slice", [e.one("Shape", [x3]),
                                                                  e.ints([2]), e.ints([3])])],
                  axis=0)
    return e.one("GatherElements", [x3, e.one("Expand", [idx, shape])], axis=1), vals


def _convert_format(e: Emitter, rows: str, p, width: int, dtype: str) -> str:
    """Rows with their coordinates re-encoded to out_format (rows whose first coordinate
    is negative, the -1 rows, left alone as MXNet does)."""
    cs = p.coord_start
    cut = [c for c in (cs, cs + 4) if 0 < c < width]
    sizes = np.diff([0] + cut + [width]).tolist()
    parts = e.split(rows, sizes, 2, len(sizes))
    mid = 1 if cs > 0 else 0
    c = e.split(parts[mid], [1, 1, 1, 1], 2, 4)
    two = e.scalar(2, dtype)
    if p.out_format == "center":
        new = [e.one("Div", [e.one("Add", [c[0], c[2]]), two]),
               e.one("Div", [e.one("Add", [c[1], c[3]]), two]),
               e.one("Sub", [c[2], c[0]]), e.one("Sub", [c[3], c[1]])]
    else:
        hw, hh = e.one("Div", [c[2], two]), e.one("Div", [c[3], two])
        new = [e.one("Sub", [c[0], hw]), e.one("Sub", [c[1], hh]),
               e.one("Add", [c[0], hw]), e.one("Add", [c[1], hh])]
    negative = e.one("Less", [c[0], e.scalar(0, dtype)])
    parts[mid] = e.one("Where", [negative, parts[mid], e.one("Concat", new, axis=2)])
    return e.one("Concat", parts, axis=2)


@converts("_contrib_box_nms")
def box_nms(e: Emitter, n: NodeCtx):
    p, x, shape = n.p, n.ins[0], n.in_shapes[0]
    dtype, rank = n.in_dtypes[0], len(shape)
    if dtype not in ("float32", "float64"):
        raise n.fail(f"dtype {dtype} (the translation is built for float32 and float64)")
    if p.topk == 0:  # MXNet copies the input
        return [e.one("Identity", [x], n.outs[0])]
    wide = dtype
    x3 = e.one("Reshape", [x, e.one("Concat", [e.ints([-1]), e.dim_slice(x, shape, rank - 2)],
                                    axis=0)])
    score = _column(e, x3, p.score_index, dtype, wide)
    valid = e.one("Greater", [score, e.scalar(p.valid_thresh, wide)])
    if p.id_index >= 0:
        ids = _column(e, x3, p.id_index, dtype, wide)
        valid = e.one("And", [valid, e.one("Not", [e.one("Equal", [
            ids, e.scalar(p.background_id, wide)])])])
    ninf = e.scalar(-np.inf, wide)
    key = e.one("Where", [valid, score, ninf])
    n_len = e.dim_slice(x, shape, rank - 2, rank - 1)
    k = n_len if p.topk < 0 else e.one("Min", [n_len, e.ints([p.topk])])
    rows, vals = _sorted_rows(e, x3, key, k, 1)
    valid_k = e.one("Greater", [vals, ninf])
    pos = e.one("Range", [e.scalar(0, "int64"), e.squeeze(k, [0]), e.scalar(1, "int64")])
    keep = _greedy(e, _hits(e, rows, p, dtype, wide), valid_k, k, pos)
    # kept rows first, in score order: sort positions with the dropped ones moved back
    key2 = e.cast(e.one("Where", [keep, pos, e.one("Add", [pos, e.squeeze(k, [0])])]),
                  "float32")
    rows, _ = _sorted_rows(e, rows, key2, k, 0)
    count = e.reduce("ReduceSum", e.cast(keep, "int64"), [1], True)  # (B, 1)
    kept = e.unsqueeze(e.one("Less", [pos, count]), [2])
    out = e.one("Where", [kept, rows, e.scalar(-1, dtype)])
    pads = e.one("Concat", [e.ints([0, 0, 0, 0]), e.one("Sub", [n_len, k]), e.ints([0])],
                 axis=0)
    out = e.one("Pad", [out, pads, e.scalar(-1, dtype)], mode="constant")
    if p.in_format != p.out_format:
        out = _convert_format(e, out, p, shape[-1], dtype)
    return [e.one("Reshape", [out, e.dims(x, shape)], n.outs[0])]


# ---------------------------------------------------------------- MultiBoxPrior


@converts("_contrib_MultiBoxPrior")
def multibox_prior(e: Emitter, n: NodeCtx):
    """The anchors depend only on the feature map's (H, W): a constant of a fixed-shape
    export."""
    if e.dynamic:
        raise n.fail("the anchors depend on the input's height and width, which a dynamic "
                     "export leaves open (export with dynamic=False)")
    import torch

    from ...kernels.multibox import multibox_prior_ref
    p = n.p
    shape = n.in_shapes[0]
    anchors = multibox_prior_ref(torch.zeros((1, 1) + tuple(shape[2:4])), sizes=p.sizes,
                                 ratios=p.ratios, clip=p.clip, steps=p.steps,
                                 offsets=p.offsets)
    value = anchors.numpy().astype(n.out_dtypes[0])
    return [e.one("Identity", [e.const(value, hint="anchors")], n.outs[0])]


# ---------------------------------------------------------------- box_encode


def _centres(e: Emitter, box: str) -> tuple[str, str, str, str]:
    """Centre x, y, width, height (each (B, N, 1)) of (B, N, 4) corner boxes."""
    x0, y0, x1, y1 = e.split(box, [1, 1, 1, 1], 2, 4)
    w, h = e.one("Sub", [x1, x0]), e.one("Sub", [y1, y0])
    half = e.const(np.float32(0.5))
    return (e.one("Add", [x0, e.one("Mul", [w, half])]),
            e.one("Add", [y0, e.one("Mul", [h, half])]), w, h)


@converts("_contrib_box_encode")
def box_encode(e: Emitter, n: NodeCtx):
    samples, matches, anchors, refs, means, stds = n.ins
    if any(t != "float32" for t in n.in_dtypes[2:]):
        raise n.fail(f"dtypes {n.in_dtypes} (the translation is built for float32)")
    # matched reference box of each anchor, indices clipped into [0, M) as MXNet does
    last = e.one("Sub", [e.dim_slice(refs, n.in_shapes[3], 1, 2), e.ints([1])])
    idx = e.one("Clip", [e.cast(matches, "int64"), e.scalar(0, "int64"),
                         e.squeeze(last, [0])])
    shape = e.one("Shape", [anchors])
    ref = e.one("GatherElements", [refs, e.one("Expand", [e.unsqueeze(idx, [2]), shape])],
                axis=1)
    rx, ry, rw, rh = _centres(e, ref)
    ax, ay, aw, ah = _centres(e, anchors)
    t = e.one("Concat", [e.one("Div", [e.one("Sub", [rx, ax]), aw]),
                         e.one("Div", [e.one("Sub", [ry, ay]), ah]),
                         e.one("Log", [e.one("Div", [rw, aw])]),
                         e.one("Log", [e.one("Div", [rh, ah])])], axis=2)
    t = e.one("Div", [e.one("Sub", [t, means]), stds])
    valid = e.one("Greater", [e.cast(samples, "float32"), e.const(np.float32(0.5))])
    valid = e.one("Expand", [e.unsqueeze(valid, [2]), shape])
    zero = e.const(np.float32(0))
    return [e.one("Where", [valid, t, zero], n.outs[0]),
            e.cast(valid, n.out_dtypes[1], n.outs[1])]
