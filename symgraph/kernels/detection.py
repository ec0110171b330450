"""Detection: box IoU, box encode/decode, non-maximum suppression and bipartite matching.

Boxes are 4 consecutive values, ``corner`` (xmin, ymin, xmax, ymax) or ``center``
(x, y, width, height). The overlap of two boxes follows MXNet: the intersection is the
product of the clipped overlaps along x and y, zero when not positive; the IoU is
``inter / (area_a + area_b - inter)``, an area being zero when a side is negative.

NMS runs in three launches per call: :func:`_rank_kernel` gives each valid box of a batch
item its position in the stable descending order of scores (a rank sort: each program
counts, for a block of boxes, the boxes ahead of it — O(N^2) compares, parallel over boxes,
fine for the N of a detector head); :func:`_nms_kernel`, one program per batch item, walks
the ``topk`` best boxes in order and suppresses the later boxes overlapping a kept one, then
writes the kept rows first (converted to ``out_format``), ``-1`` rows after them, and the
flat input index of each kept row (``record``, for the gradient); the gradient
(:func:`nms_backward`) scatters output-gradient rows back to the recorded input rows.
Bipartite matching sorts each batch item's scores with the stable bitonic sort of
``kernels/sort.py`` (O(n log^2 n), not the rank sort: its n is rows * columns) and walks
them greedily, one program per batch item.

Bytes moved: the elementwise kernels read their inputs and write their outputs once; NMS
reads the scores O(N) times per box (the rank sort) and each box once per kept box.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import triton.language as tl

from .copy import fill
from .reduce import SUM, acc_type, check_out
from .runtime import block_for, cdiv, kernel
from .sort import sort_rows
from .table import KernelSpec, tensor_bytes

FORMATS = {"corner": 0, "center": 1}


def _block(n: int, device: torch.device) -> int:
    return block_for(n, cap=1024 if device.type == "cuda" else 32)


# ---------------------------------------------------------------- box_iou

@kernel
def _iou_kernel(lhs, rhs, out, n_r, total, CENTER: tl.constexpr, ACC: tl.constexpr,
                BLOCK: tl.constexpr):
    """out[l, r] = IoU(lhs[l], rhs[r]) over the flat (L, R) grid."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    a = (offs // n_r) * 4
    b = (offs % n_r) * 4
    a0 = tl.load(lhs + a, mask=mask, other=0).to(ACC)
    a1 = tl.load(lhs + a + 1, mask=mask, other=0).to(ACC)
    a2 = tl.load(lhs + a + 2, mask=mask, other=0).to(ACC)
    a3 = tl.load(lhs + a + 3, mask=mask, other=0).to(ACC)
    b0 = tl.load(rhs + b, mask=mask, other=0).to(ACC)
    b1 = tl.load(rhs + b + 1, mask=mask, other=0).to(ACC)
    b2 = tl.load(rhs + b + 2, mask=mask, other=0).to(ACC)
    b3 = tl.load(rhs + b + 3, mask=mask, other=0).to(ACC)
    if CENTER:
        aw, ah, bw, bh = a2, a3, b2, b3
        a0, a1, a2, a3 = a0 - aw / 2, a1 - ah / 2, a0 + aw / 2, a1 + ah / 2
        b0, b1, b2, b3 = b0 - bw / 2, b1 - bh / 2, b0 + bw / 2, b1 + bh / 2
    else:
        aw, ah, bw, bh = a2 - a0, a3 - a1, b2 - b0, b3 - b1
    iw = tl.maximum(tl.minimum(a2, b2) - tl.maximum(a0, b0), 0.0)
    ih = tl.maximum(tl.minimum(a3, b3) - tl.maximum(a1, b1), 0.0)
    inter = iw * ih
    area_a = tl.where((aw < 0) | (ah < 0), 0.0, aw * ah)
    area_b = tl.where((bw < 0) | (bh < 0), 0.0, bw * bh)
    iou = tl.where(inter > 0, inter / (area_a + area_b - inter), 0.0)
    tl.store(out + offs, iou.to(out.dtype.element_ty), mask=mask)


def box_iou(lhs: torch.Tensor, rhs: torch.Tensor, fmt: str = "corner",
            out=None) -> torch.Tensor:
    """Check, allocate, launch: IoU of every box of ``lhs`` (..., 4) with every box of
    ``rhs`` (..., 4), shaped ``lhs.shape[:-1] + rhs.shape[:-1]``."""
    shape = tuple(lhs.shape[:-1]) + tuple(rhs.shape[:-1])
    result = check_out(out, shape, lhs.dtype, lhs.device)
    total = result.numel()
    if total:
        block = _block(total, lhs.device)
        _iou_kernel[(cdiv(total, block),)](
            lhs.contiguous(), rhs.contiguous(), result, rhs.numel() // 4, total,
            CENTER=fmt == "center", ACC=acc_type(lhs.dtype), BLOCK=block)
    return result


def _corners(x: torch.Tensor, fmt: str) -> tuple[torch.Tensor, ...]:
    """(xmin, ymin, xmax, ymax, width, height) of boxes in ``fmt``."""
    c0, c1, c2, c3 = x.unbind(-1)
    if fmt == "center":
        return c0 - c2 / 2, c1 - c3 / 2, c0 + c2 / 2, c1 + c3 / 2, c2, c3
    return c0, c1, c2, c3, c2 - c0, c3 - c1


def iou_ref(a: torch.Tensor, b: torch.Tensor, fmt: str) -> torch.Tensor:
    """IoU of boxes ``a`` and ``b`` (broadcasting over leading axes), MXNet's rules."""
    a0, a1, a2, a3, aw, ah = _corners(a, fmt)
    b0, b1, b2, b3, bw, bh = _corners(b, fmt)
    inter = ((torch.minimum(a2, b2) - torch.maximum(a0, b0)).clamp(min=0)
             * (torch.minimum(a3, b3) - torch.maximum(a1, b1)).clamp(min=0))
    area_a = torch.where((aw < 0) | (ah < 0), torch.zeros_like(aw), aw * ah)
    area_b = torch.where((bw < 0) | (bh < 0), torch.zeros_like(bw), bw * bh)
    return torch.where(inter > 0, inter / (area_a + area_b - inter), torch.zeros_like(inter))


def box_iou_ref(lhs: torch.Tensor, rhs: torch.Tensor, fmt: str = "corner") -> torch.Tensor:
    """Reference: the (L, R) IoU matrix by broadcasting (reads L*R pairs, writes L*R)."""
    shape = tuple(lhs.shape[:-1]) + tuple(rhs.shape[:-1])
    wide = acc_dtype(lhs.dtype)
    a = lhs.reshape(-1, 1, 4).to(wide)
    b = rhs.reshape(1, -1, 4).to(wide)
    return iou_ref(a, b, fmt).to(lhs.dtype).reshape(shape)


def acc_dtype(dtype: torch.dtype) -> torch.dtype:
    """The torch dtype box math runs in: fp64 for fp64, fp32 otherwise."""
    return torch.float64 if dtype == torch.float64 else torch.float32


# ---------------------------------------------------------------- box_encode / box_decode

@kernel
def _encode_kernel(samples, matches, anchors, refs, means, stds, targets, masks, n, m, total,
                   ACC: tl.constexpr, BLOCK: tl.constexpr):
    """Per anchor i of batch j: the offsets of refs[j, matches[i]] from anchors[i] (corner
    boxes as centers), normalised by means/stds, where samples[i] > 0.5; zeros elsewhere."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    match = tl.load(matches + offs, mask=mask, other=0).to(tl.int64)
    match = tl.minimum(tl.maximum(match, 0), m - 1)
    r = ((offs // n) * m + match) * 4
    a = offs * 4
    r0 = tl.load(refs + r, mask=mask, other=0).to(ACC)
    r1 = tl.load(refs + r + 1, mask=mask, other=0).to(ACC)
    rw = tl.load(refs + r + 2, mask=mask, other=1).to(ACC) - r0
    rh = tl.load(refs + r + 3, mask=mask, other=1).to(ACC) - r1
    a0 = tl.load(anchors + a, mask=mask, other=0).to(ACC)
    a1 = tl.load(anchors + a + 1, mask=mask, other=0).to(ACC)
    aw = tl.load(anchors + a + 2, mask=mask, other=1).to(ACC) - a0
    ah = tl.load(anchors + a + 3, mask=mask, other=1).to(ACC) - a1
    valid = tl.load(samples + offs, mask=mask, other=0).to(ACC) > 0.5
    t0 = ((r0 + rw * 0.5) - (a0 + aw * 0.5)) / aw
    t1 = ((r1 + rh * 0.5) - (a1 + ah * 0.5)) / ah
    t2 = tl.log(rw / aw)
    t3 = tl.log(rh / ah)
    ty = targets.dtype.element_ty
    for k in tl.static_range(4):
        t = (t0, t1, t2, t3)[k]
        t = (t - tl.load(means + k).to(ACC)) / tl.load(stds + k).to(ACC)
        tl.store(masks + a + k, tl.where(valid, 1.0, 0.0).to(ty), mask=mask)
        tl.store(targets + a + k, tl.where(valid, t, 0.0).to(ty), mask=mask)


def box_encode(samples, matches, anchors, refs, means, stds, out=None) -> tuple:
    """Check, allocate, launch: (targets, masks) of box_encode, each shaped like ``anchors``
    (B, N, 4); ``refs`` is (B, M, 4), ``means``/``stds`` (4,)."""
    shape = tuple(anchors.shape)
    outs = out if out is not None else (None, None)
    targets = check_out(outs[0], shape, anchors.dtype, anchors.device, "targets")
    masks = check_out(outs[1], shape, anchors.dtype, anchors.device, "masks")
    total = samples.numel()
    if total:
        block = _block(total, anchors.device)
        _encode_kernel[(cdiv(total, block),)](
            samples.contiguous(), matches.contiguous(), anchors.contiguous(),
            refs.contiguous(), means.contiguous(), stds.contiguous(), targets, masks,
            shape[1], refs.shape[1], total, ACC=acc_type(anchors.dtype), BLOCK=block)
    return targets, masks


def box_encode_ref(samples, matches, anchors, refs, means, stds) -> tuple:
    """Reference: a gather of the matched refs, then elementwise math (reads B*N*(4+4+2)
    values and writes B*N*8)."""
    wide = acc_dtype(anchors.dtype)
    b, n, _ = anchors.shape
    idx = matches.to(torch.int64).clamp(0, refs.shape[1] - 1).reshape(b, n, 1).expand(b, n, 4)
    ref = torch.gather(refs.to(wide), 1, idx)
    a = anchors.to(wide)
    rw, rh = ref[..., 2] - ref[..., 0], ref[..., 3] - ref[..., 1]
    aw, ah = a[..., 2] - a[..., 0], a[..., 3] - a[..., 1]
    t = torch.stack([((ref[..., 0] + rw * 0.5) - (a[..., 0] + aw * 0.5)) / aw,
                     ((ref[..., 1] + rh * 0.5) - (a[..., 1] + ah * 0.5)) / ah,
                     torch.log(rw / aw), torch.log(rh / ah)], -1)
    t = (t - means.to(wide)) / stds.to(wide)
    valid = (samples.to(wide) > 0.5).reshape(b, n, 1).expand(b, n, 4)
    targets = torch.where(valid, t, torch.zeros_like(t)).to(anchors.dtype)
    return targets, valid.to(anchors.dtype)


@kernel
def _decode_kernel(x, anchors, out, n, total, std0, std1, std2, std3, clip,
                   CORNER: tl.constexpr, CLIP: tl.constexpr, ACC: tl.constexpr,
                   BLOCK: tl.constexpr):
    """out[i] = corner box of the offsets x[i] applied to anchors[i % n]."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    a = (offs % n) * 4
    ax = tl.load(anchors + a, mask=mask, other=0).to(ACC)
    ay = tl.load(anchors + a + 1, mask=mask, other=0).to(ACC)
    aw = tl.load(anchors + a + 2, mask=mask, other=0).to(ACC)
    ah = tl.load(anchors + a + 3, mask=mask, other=0).to(ACC)
    if CORNER:
        aw = aw - ax
        ah = ah - ay
        ax = ax + aw * 0.5
        ay = ay + ah * 0.5
    i = offs * 4
    ox = tl.load(x + i, mask=mask, other=0).to(ACC) * std0 * aw + ax
    oy = tl.load(x + i + 1, mask=mask, other=0).to(ACC) * std1 * ah + ay
    dw = tl.load(x + i + 2, mask=mask, other=0).to(ACC) * std2
    dh = tl.load(x + i + 3, mask=mask, other=0).to(ACC) * std3
    if CLIP:
        dw = tl.minimum(dw, clip)
        dh = tl.minimum(dh, clip)
    ow = tl.exp(dw) * aw * 0.5
    oh = tl.exp(dh) * ah * 0.5
    ty = out.dtype.element_ty
    tl.store(out + i, (ox - ow).to(ty), mask=mask)
    tl.store(out + i + 1, (oy - oh).to(ty), mask=mask)
    tl.store(out + i + 2, (ox + ow).to(ty), mask=mask)
    tl.store(out + i + 3, (oy + oh).to(ty), mask=mask)


def box_decode(x, anchors, stds=(1.0, 1.0, 1.0, 1.0), clip: float = -1.0,
               fmt: str = "center", out=None) -> torch.Tensor:
    """Check, allocate, launch: corner boxes (B, N, 4) from offsets ``x`` (B, N, 4) and
    ``anchors`` (1, N, 4) in ``fmt``; ``clip`` > 0 caps the log-scale offsets."""
    result = check_out(out, tuple(x.shape), x.dtype, x.device)
    total = x.numel() // 4
    if total:
        block = _block(total, x.device)
        _decode_kernel[(cdiv(total, block),)](
            x.contiguous(), anchors.contiguous(), result, x.shape[1], total, *map(float, stds),
            float(clip), CORNER=fmt == "corner", CLIP=clip > 0, ACC=acc_type(x.dtype),
            BLOCK=block)
    return result


def box_decode_ref(x, anchors, stds=(1.0, 1.0, 1.0, 1.0), clip: float = -1.0,
                   fmt: str = "center") -> torch.Tensor:
    """Reference: elementwise math over (B, N) boxes (reads 8 values, writes 4 per box)."""
    wide = acc_dtype(x.dtype)
    a = anchors[:, :x.shape[1]].to(wide)
    ax, ay, aw, ah = a.unbind(-1)
    if fmt == "corner":
        aw, ah = aw - ax, ah - ay
        ax, ay = ax + aw * 0.5, ay + ah * 0.5
    d = x.to(wide)
    ox = d[..., 0] * stds[0] * aw + ax
    oy = d[..., 1] * stds[1] * ah + ay
    dw, dh = d[..., 2] * stds[2], d[..., 3] * stds[3]
    if clip > 0:
        dw, dh = dw.clamp(max=clip), dh.clamp(max=clip)
    ow, oh = torch.exp(dw) * aw * 0.5, torch.exp(dh) * ah * 0.5
    return torch.stack([ox - ow, oy - oh, ox + ow, oy + oh], -1).to(x.dtype)


# ---------------------------------------------------------------- ranking (a stable sort)

@kernel
def _rank_kernel(data, order, n, width, col, id_col, valid_thresh, background_id,
                 FILTER: tl.constexpr, HAS_ID: tl.constexpr, DESCENDING: tl.constexpr,
                 BLOCK_I: tl.constexpr,
                 BLOCK_J: tl.constexpr):
    """order[b, rank(i)] = i for each kept i of batch item b, where the key of row i is
    data[b, i, col] and rank(i) counts the kept rows ahead of it (stable order). FILTER
    keeps rows whose key > valid_thresh and (id_col >= 0) whose id != background_id."""
    b = tl.program_id(0).to(tl.int64)
    i = tl.program_id(1).to(tl.int64) * BLOCK_I + tl.arange(0, BLOCK_I)
    mi = i < n
    base = data + b * n * width
    ki = tl.load(base + i * width + col, mask=mi, other=0)
    vi = mi
    if FILTER:
        vi = vi & (ki > valid_thresh)
        if HAS_ID:
            vi = vi & (tl.load(base + i * width + id_col, mask=mi, other=0) != background_id)
    rank = tl.full((BLOCK_I,), 0, tl.int64)
    for start in range(0, n, BLOCK_J):
        j = start + tl.arange(0, BLOCK_J)
        mj = j < n
        kj = tl.load(base + j * width + col, mask=mj, other=0)
        vj = mj
        if FILTER:
            vj = vj & (kj > valid_thresh)
            if HAS_ID:
                vj = vj & (tl.load(base + j * width + id_col, mask=mj, other=0)
                           != background_id)
        if DESCENDING:
            ahead = kj[None, :] > ki[:, None]
        else:
            ahead = kj[None, :] < ki[:, None]
        ahead = ahead | ((kj[None, :] == ki[:, None]) & (j[None, :] < i[:, None]))
        rank += tl.reduce((ahead & vj[None, :]).to(tl.int64), 1, SUM)
    tl.store(order + b * n + rank, i.to(tl.int32), mask=vi)


def _rank(data: torch.Tensor, n: int, width: int, col: int, descending: bool,
          valid=None) -> torch.Tensor:
    """(B, n) int32: the stable order of rows by key (``valid``: a (thresh, id_col,
    background_id) filter; filtered-out rows are left out, the tail is unwritten)."""
    batch = data.numel() // (n * width)
    order = torch.empty((batch, n), dtype=torch.int32, device=data.device)
    cuda = data.device.type == "cuda"
    bi, bj = (64, 64) if cuda else (16, 16)
    thresh, id_col, background = valid if valid is not None else (0.0, -1, -1.0)
    if n:
        _rank_kernel[(batch, cdiv(n, bi))](data, order, n, width, col, id_col, float(thresh),
                                           float(background), FILTER=valid is not None,
                                           HAS_ID=id_col >= 0,
                                           DESCENDING=descending, BLOCK_I=bi, BLOCK_J=bj)
    return order


# ---------------------------------------------------------------- box_nms

@dataclass(frozen=True)
class NMSConfig:
    """box_nms's parameters (the op passes its parsed params, which have these names)."""

    overlap_thresh: float = 0.5
    valid_thresh: float = 0.0
    topk: int = -1
    coord_start: int = 2
    score_index: int = 1
    id_index: int = -1
    background_id: int = -1
    force_suppress: bool = False
    in_format: str = "corner"
    out_format: str = "corner"


@kernel
def _nms_kernel(data, order, keep, n, w, k, cs, sc, idc, valid_thresh, bg, thresh,
                PASS: tl.constexpr, HAS_ID: tl.constexpr, BY_CLASS: tl.constexpr,
                CENTER: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr):
    """One program per batch item: keep[b, p] = 1 for the boxes ``order[b, p]`` that
    survive greedy suppression among the item's first k valid boxes (PASS: all n)."""
    b = tl.program_id(0).to(tl.int64)
    base = data + b * n * w
    flags = keep + b * n
    count = tl.full((), 0, tl.int32)
    if PASS:
        k = n
    else:
        for start in range(0, n, BLOCK):  # valid boxes: count them
            p = start + tl.arange(0, BLOCK)
            mp = p < n
            v = mp & (tl.load(base + p * w + sc, mask=mp, other=0) > valid_thresh)
            if HAS_ID:
                v = v & (tl.load(base + p * w + idc, mask=mp, other=0) != bg)
            count += tl.reduce(v.to(tl.int32), 0, SUM)
        k = tl.minimum(count, k)
    for start in range(0, n, BLOCK):
        p = start + tl.arange(0, BLOCK)
        tl.store(flags + p, (p < k).to(tl.int32), mask=p < n)
    tl.debug_barrier()
    if not PASS:
        for ref in range(0, k):
            if tl.load(flags + ref) != 0:
                row = base + tl.load(order + b * n + ref).to(tl.int64) * w
                r0 = tl.load(row + cs).to(ACC)
                r1 = tl.load(row + cs + 1).to(ACC)
                r2 = tl.load(row + cs + 2).to(ACC)
                r3 = tl.load(row + cs + 3).to(ACC)
                if CENTER:
                    rw, rh = r2, r3
                    r0, r1, r2, r3 = r0 - rw / 2, r1 - rh / 2, r0 + rw / 2, r1 + rh / 2
                else:
                    rw, rh = r2 - r0, r3 - r1
                r_area = tl.where((rw < 0) | (rh < 0), 0.0, rw * rh)
                r_id = tl.load(row + idc).to(tl.int32)
                for start in range(ref + 1, k, BLOCK):
                    p = start + tl.arange(0, BLOCK)
                    mp = p < k
                    box = base + tl.load(order + b * n + p, mask=mp, other=0).to(tl.int64) * w
                    q0 = tl.load(box + cs, mask=mp, other=0).to(ACC)
                    q1 = tl.load(box + cs + 1, mask=mp, other=0).to(ACC)
                    q2 = tl.load(box + cs + 2, mask=mp, other=0).to(ACC)
                    q3 = tl.load(box + cs + 3, mask=mp, other=0).to(ACC)
                    if CENTER:
                        qw, qh = q2, q3
                        q0, q1, q2, q3 = q0 - qw / 2, q1 - qh / 2, q0 + qw / 2, q1 + qh / 2
                    else:
                        qw, qh = q2 - q0, q3 - q1
                    q_area = tl.where((qw < 0) | (qh < 0), 0.0, qw * qh)
                    inter = (tl.maximum(tl.minimum(r2, q2) - tl.maximum(r0, q0), 0.0)
                             * tl.maximum(tl.minimum(r3, q3) - tl.maximum(r1, q1), 0.0))
                    hit = inter / (r_area + q_area - inter) > thresh
                    if BY_CLASS:
                        hit = hit & (tl.load(box + idc, mask=mp, other=0).to(tl.int32) == r_id)
                    old = tl.load(flags + p, mask=mp, other=0)
                    tl.store(flags + p, tl.where(hit, 0, old), mask=mp)
                tl.debug_barrier()


@kernel
def _nms_write_kernel(data, order, keep, out, record, n, w, cs, PASS: tl.constexpr,
                      CONVERT: tl.constexpr, TO_CENTER: tl.constexpr, BLOCK: tl.constexpr):
    """One program per batch item: the kept rows in order, coordinates converted when
    CONVERT (except rows whose first coordinate is negative, as MXNet), -1 rows after
    them; record[b, j] = flat input row of output row j (-1 for none)."""
    b = tl.program_id(0).to(tl.int64)
    running = tl.full((), 0, tl.int64)
    for start in range(0, n, BLOCK):
        p = start + tl.arange(0, BLOCK)
        kept = tl.load(keep + b * n + p, mask=p < n, other=0) != 0
        dst = running + tl.associative_scan(kept.to(tl.int64), 0, SUM) - 1
        if PASS:
            src = p.to(tl.int64)
        else:
            src = tl.load(order + b * n + p, mask=kept, other=0).to(tl.int64)
        row = data + (b * n + src) * w
        c0 = tl.load(row + cs, mask=kept, other=0)
        c1 = tl.load(row + cs + 1, mask=kept, other=0)
        c2 = tl.load(row + cs + 2, mask=kept, other=0)
        c3 = tl.load(row + cs + 3, mask=kept, other=0)
        if CONVERT:
            skip = c0 < 0
            if TO_CENTER:
                n0, n1, n2, n3 = (c0 + c2) / 2, (c1 + c3) / 2, c2 - c0, c3 - c1
            else:
                n0, n1, n2, n3 = c0 - c2 / 2, c1 - c3 / 2, c0 + c2 / 2, c1 + c3 / 2
            c0, c1 = tl.where(skip, c0, n0), tl.where(skip, c1, n1)
            c2, c3 = tl.where(skip, c2, n2), tl.where(skip, c3, n3)
        for c in range(0, w):
            v = tl.load(row + c, mask=kept, other=0)
            v = tl.where(c == cs, c0, tl.where(c == cs + 1, c1, tl.where(
                c == cs + 2, c2, tl.where(c == cs + 3, c3, v))))
            tl.store(out + (b * n + dst) * w + c, v.to(out.dtype.element_ty), mask=kept)
        tl.store(record + b * n + dst, (b * n + src).to(record.dtype.element_ty), mask=kept)
        running += tl.reduce(kept.to(tl.int64), 0, SUM)
    for start in range(running, n, BLOCK):
        p = start + tl.arange(0, BLOCK)
        mp = p < n
        for c in range(0, w):
            tl.store(out + (b * n + p) * w + c, tl.full((BLOCK,), -1, tl.float32).to(
                out.dtype.element_ty), mask=mp)
        tl.store(record + b * n + p, tl.full((BLOCK,), -1, tl.float32).to(
            record.dtype.element_ty), mask=mp)


def _nms_layout(data: torch.Tensor) -> tuple[int, int, int]:
    n, w = data.shape[-2], data.shape[-1]
    return data.numel() // max(n * w, 1), n, w


def box_nms(data: torch.Tensor, cfg=NMSConfig(), out=None) -> tuple:
    """Check, allocate, launch: (boxes, record) of box_nms over ``data`` (..., N, W); the
    boxes sorted by score with suppressed and invalid rows -1, ``record`` (..., N, 1) the
    flat input row of each output row."""
    batch, n, w = _nms_layout(data)
    outs = out if out is not None else (None, None)
    boxes = check_out(outs[0], tuple(data.shape), data.dtype, data.device, "boxes")
    record = check_out(outs[1], tuple(data.shape[:-1]) + (1,), data.dtype, data.device,
                       "record")
    if not boxes.numel():
        return boxes, record
    data = data.contiguous()
    topk = n if cfg.topk < 0 else min(n, cfg.topk)
    has_id = cfg.id_index >= 0
    order = _rank(data, n, w, cfg.score_index, True,
                  valid=(cfg.valid_thresh, cfg.id_index, cfg.background_id))
    keep = torch.empty((batch, n), dtype=torch.int32, device=data.device)
    block = _block(n, data.device)
    center = cfg.in_format == "center"
    _nms_kernel[(batch,)](data, order, keep, n, w, topk, cfg.coord_start, cfg.score_index,
                          max(cfg.id_index, 0), float(cfg.valid_thresh),
                          float(cfg.background_id), float(cfg.overlap_thresh),
                          PASS=topk < 1, HAS_ID=has_id,
                          BY_CLASS=has_id and not cfg.force_suppress, CENTER=center,
                          ACC=acc_type(data.dtype), BLOCK=block)
    _nms_write_kernel[(batch,)](data, order, keep, boxes, record, n, w, cfg.coord_start,
                                PASS=topk < 1, CONVERT=topk >= 1 and cfg.in_format !=
                                cfg.out_format, TO_CENTER=cfg.out_format == "center",
                                BLOCK=block)
    return boxes, record


def _converted(boxes: torch.Tensor, cs: int, to_center: bool) -> torch.Tensor:
    """Coordinates of ``boxes`` (rows of width W) converted, rows with a negative first
    coordinate left alone (MXNet's test for -1 rows)."""
    c = boxes[..., cs:cs + 4]
    c0, c1, c2, c3 = c.unbind(-1)
    if to_center:
        new = torch.stack([(c0 + c2) / 2, (c1 + c3) / 2, c2 - c0, c3 - c1], -1)
    else:
        new = torch.stack([c0 - c2 / 2, c1 - c3 / 2, c0 + c2 / 2, c1 + c3 / 2], -1)
    out = boxes.clone()
    out[..., cs:cs + 4] = torch.where((c0 < 0)[..., None], c, new)
    return out


def nms_order(x: torch.Tensor, cfg, topk: int) -> torch.Tensor:
    """Indices of the boxes of one batch item ``x`` (N, W) that box_nms keeps, in order."""
    wide = acc_dtype(x.dtype)
    score = x[:, cfg.score_index].to(wide)
    valid = score > cfg.valid_thresh
    if cfg.id_index >= 0:
        valid &= x[:, cfg.id_index] != cfg.background_id
    idx = valid.nonzero()[:, 0]
    order = idx[torch.sort(score[idx], descending=True, stable=True).indices][:topk]
    box = x[order, cfg.coord_start:cfg.coord_start + 4].to(wide)
    b0, b1, b2, b3, bw, bh = _corners(box, cfg.in_format)
    inter = ((torch.minimum(b2[:, None], b2) - torch.maximum(b0[:, None], b0)).clamp(min=0)
             * (torch.minimum(b3[:, None], b3) - torch.maximum(b1[:, None], b1)).clamp(min=0))
    area = torch.where((bw < 0) | (bh < 0), torch.zeros_like(bw), bw * bh)
    hit = inter / (area[:, None] + area - inter) > cfg.overlap_thresh
    if cfg.id_index >= 0 and not cfg.force_suppress:
        ids = x[order, cfg.id_index].to(torch.int64)
        hit &= ids[:, None] == ids
    hit = hit.cpu().numpy()
    keep = [True] * len(order)
    for r in range(len(order)):
        if keep[r]:
            for q in hit[r, r + 1:].nonzero()[0]:
                keep[r + 1 + q] = False
    return order[torch.tensor(keep, dtype=torch.bool, device=x.device)]


def box_nms_ref(data: torch.Tensor, cfg=NMSConfig()) -> tuple:
    """Reference: per batch item a stable sort, the IoU matrix of its topk boxes and a
    greedy sweep on the host."""
    batch, n, w = _nms_layout(data)
    x = data.reshape(batch, n, w)
    topk = n if cfg.topk < 0 else min(n, cfg.topk)
    flat = torch.arange(batch * n, device=data.device).reshape(batch, n)
    if topk < 1:
        return data.clone(), flat.to(data.dtype).reshape(tuple(data.shape[:-1]) + (1,))
    boxes = torch.full_like(x, -1)
    record = torch.full((batch, n), -1, dtype=data.dtype, device=data.device)
    for b in range(batch):
        kept = nms_order(x[b], cfg, topk)
        boxes[b, :len(kept)] = x[b, kept]
        record[b, :len(kept)] = flat[b, kept].to(data.dtype)
    if cfg.in_format != cfg.out_format:
        boxes = _converted(boxes, cfg.coord_start, cfg.out_format == "center")
    return boxes.reshape(data.shape), record.reshape(tuple(data.shape[:-1]) + (1,))


@kernel
def _nms_backward_kernel(og, record, ig, w, total, BLOCK: tl.constexpr):
    """ig[record[r], c] = og[r, c] for rows with a record (ig holds zeros)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    src = tl.load(record + offs // w, mask=mask, other=-1).to(tl.int64)
    ok = mask & (src >= 0)
    tl.store(ig + src * w + offs % w, tl.load(og + offs, mask=ok), mask=ok)


def nms_backward(og: torch.Tensor, record: torch.Tensor, out=None) -> torch.Tensor:
    """Check, allocate, launch: box_nms's input gradient, the output-gradient rows moved to
    the input rows they came from, zeros elsewhere."""
    result = check_out(out, tuple(og.shape), og.dtype, og.device)
    fill(result, 0.0)
    total = og.numel()
    if total:
        block = _block(total, og.device)
        _nms_backward_kernel[(cdiv(total, block),)](og.contiguous(), record.contiguous(),
                                                    result, og.shape[-1], total, BLOCK=block)
    return result


def nms_backward_ref(og: torch.Tensor, record: torch.Tensor) -> torch.Tensor:
    """Reference: a row scatter into zeros (reads og and record, writes the input grad)."""
    w = og.shape[-1]
    rec = record.reshape(-1).to(torch.int64)
    ok = rec >= 0
    ig = torch.zeros_like(og).reshape(-1, w)
    ig[rec[ok]] = og.reshape(-1, w)[ok]
    return ig.reshape(og.shape)


# ---------------------------------------------------------------- bipartite_matching

@kernel
def _match_kernel(scores, order, rows, cols, n_row, n_col, padded, threshold, topk,
                  ASCEND: tl.constexpr, BLOCK: tl.constexpr):
    """One program per batch item: walk the (row, col) pairs best score first; a pair whose
    row and column are both free is matched if its score passes ``threshold`` (else the walk
    stops), and the walk stops once more than ``topk`` (> 0) pairs are matched."""
    b = tl.program_id(0).to(tl.int64)
    size = n_row * n_col
    for start in range(0, n_row, BLOCK):
        p = start + tl.arange(0, BLOCK)
        tl.store(rows + b * n_row + p, tl.full((BLOCK,), -1, tl.float32).to(
            rows.dtype.element_ty), mask=p < n_row)
    for start in range(0, n_col, BLOCK):
        p = start + tl.arange(0, BLOCK)
        tl.store(cols + b * n_col + p, tl.full((BLOCK,), -1, tl.float32).to(
            cols.dtype.element_ty), mask=p < n_col)
    tl.debug_barrier()
    j = 0
    done = 0
    count = 0
    while (j < size) & (done == 0):
        idx = tl.load(order + b * padded + j).to(tl.int64)
        r = idx // n_col
        c = idx % n_col
        free = (tl.load(rows + b * n_row + r) == -1) & (tl.load(cols + b * n_col + c) == -1)
        if free:
            s = tl.load(scores + b * size + idx)
            if ASCEND:
                good = s < threshold
            else:
                good = s > threshold
            if good:
                tl.store(rows + b * n_row + r, c.to(rows.dtype.element_ty))
                tl.store(cols + b * n_col + c, r.to(cols.dtype.element_ty))
                count += 1
                if (topk > 0) & (count > topk):
                    done = 1
            else:
                done = 1
        tl.debug_barrier()
        j += 1


def bipartite_matching(data: torch.Tensor, threshold: float, is_ascend: bool = False,
                       topk: int = -1, out=None) -> tuple:
    """Check, allocate, launch: greedy matching of the (..., R, C) score matrices; the
    matched column of each row and row of each column (-1 for none), in data's dtype."""
    n_row, n_col = data.shape[-2], data.shape[-1]
    batch = data.numel() // max(n_row * n_col, 1)
    outs = out if out is not None else (None, None)
    rows = check_out(outs[0], tuple(data.shape[:-1]), data.dtype, data.device, "rows")
    cols = check_out(outs[1], tuple(data.shape[:-2]) + (n_col,), data.dtype, data.device,
                     "cols")
    if data.numel():
        data = data.contiguous()
        _, order = sort_rows(data.reshape(batch, n_row * n_col), 1, not is_ascend)
        _match_kernel[(batch,)](data, order, rows, cols, n_row, n_col, order.shape[1],
                                float(threshold), int(topk), ASCEND=is_ascend,
                                BLOCK=_block(max(n_row, n_col), data.device))
    return rows, cols


def bipartite_matching_ref(data: torch.Tensor, threshold: float, is_ascend: bool = False,
                           topk: int = -1) -> tuple:
    """Reference: a stable sort per batch item and the greedy walk on the host."""
    n_row, n_col = data.shape[-2], data.shape[-1]
    flat = data.reshape(-1, n_row * n_col)
    rows = torch.full((flat.shape[0], n_row), -1.0, dtype=torch.float64)
    cols = torch.full((flat.shape[0], n_col), -1.0, dtype=torch.float64)
    for b in range(flat.shape[0]):
        scores = flat[b].to(acc_dtype(data.dtype)).cpu()
        count = 0
        for idx in torch.sort(scores, descending=not is_ascend, stable=True).indices.tolist():
            r, c = divmod(idx, n_col)
            if rows[b, r] != -1 or cols[b, c] != -1:
                continue
            s = float(scores[idx])
            if not (s < threshold if is_ascend else s > threshold):
                break
            rows[b, r], cols[b, c] = c, r
            count += 1
            if 0 < topk < count:
                break
    return (rows.to(data.dtype).to(data.device).reshape(data.shape[:-1]),
            cols.to(data.dtype).to(data.device).reshape(tuple(data.shape[:-2]) + (n_col,)))


# ---------------------------------------------------------------- table

def _uniform(shape, dtype, device, low=0.0, high=1.0, seed=0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(shape, generator=g, dtype=torch.float64) * (high - low) + low).to(
        dtype).to(device)


def _corner_boxes(shape, dtype, device, seed=0) -> torch.Tensor:
    """Random corner boxes (..., 4) with positive sides, overlapping often."""
    xy = _uniform(tuple(shape) + (2,), torch.float64, "cpu", 0, 4, seed)
    wh = _uniform(tuple(shape) + (2,), torch.float64, "cpu", 0.5, 3, seed + 1)
    return torch.cat([xy, xy + wh], -1).to(dtype).to(device)


def _make_iou(dtype, device, shape):
    return (_corner_boxes(shape[:1], dtype, device), _corner_boxes(shape[1:], dtype, device,
                                                                   seed=5)), {}


def _make_iou_center(dtype, device, shape):
    (a, b), _ = _make_iou(dtype, device, shape)
    return (a, b), {"fmt": "center"}


def _make_encode(dtype, device, shape):
    b, n, m = shape
    samples = (_uniform((b, n), torch.float64, "cpu", -1, 1, 3).sign()).to(dtype).to(device)
    matches = torch.randint(0, m, (b, n), generator=torch.Generator().manual_seed(4))
    return (samples, matches.to(dtype).to(device), _corner_boxes((b, n), dtype, device),
            _corner_boxes((b, m), dtype, device, seed=7),
            torch.tensor([0.0, 0.1, -0.1, 0.2], dtype=dtype, device=device),
            torch.tensor([0.1, 0.1, 0.2, 0.2], dtype=dtype, device=device)), {}


def _make_decode(dtype, device, shape):
    b, n = shape
    x = _uniform((b, n, 4), dtype, device, -1, 1, 8)
    return (x, _corner_boxes((1, n), dtype, device, seed=9)), {
        "stds": (0.1, 0.1, 0.2, 0.2), "clip": 0.15, "fmt": "corner"}


def _make_nms(dtype, device, shape):
    """(B, N, 6) rows [id, score, box] with a few classes, invalid scores and ties."""
    b, n = shape
    ids = torch.randint(0, 3, (b, n, 1), generator=torch.Generator().manual_seed(2))
    score = (_uniform((b, n, 1), torch.float64, "cpu", -0.2, 1, 6) * 8).round() / 8
    data = torch.cat([ids.double(), score, _corner_boxes((b, n), torch.float64, "cpu")], -1)
    cfg = NMSConfig(overlap_thresh=0.3, valid_thresh=0.1, topk=n - 2, id_index=0,
                    background_id=2, in_format="corner", out_format="center")
    return (data.to(dtype).to(device), cfg), {}


def _make_nms_bwd(dtype, device, shape):
    (data, cfg), _ = _make_nms(dtype, device, shape)
    record = box_nms_ref(data, cfg)[1]
    return (_uniform(tuple(data.shape), dtype, device, -1, 1, 11), record), {}


def _make_match(dtype, device, shape):
    scores = (_uniform(shape, torch.float64, "cpu", 0, 1, 12) * 16).round() / 16
    return (scores.to(dtype).to(device), 0.2), {"topk": shape[-1] - 1}


def _sort_stages(n: int) -> int:
    """Launches of the bitonic sort of n values (each reads and writes its scratch)."""
    log = max(1, (n - 1).bit_length())
    return log * (log + 1) // 2


_FLOATS = (torch.float32, torch.float16)
_EXACT = {torch.float32: (1e-5, 1e-5), torch.float16: (1e-3, 1e-3)}


def _entry(name, fn, ref, make, shapes, bench, traffic, dtypes=_FLOATS) -> KernelSpec:
    return KernelSpec(name=name, fn=fn, ref=ref, make=make, shapes=shapes, bench_shapes=bench,
                      dtypes=dtypes, tol=_EXACT, bytes=traffic, family="detection")


KERNELS = [
    _entry("box_iou", box_iou, box_iou_ref, _make_iou, ((5, 7), (3, 1)), ((2048, 2048),),
           lambda a, b, **k: tensor_bytes(a, b) + a.numel() * b.numel() // 16
           * a.element_size()),
    _entry("box_iou_center", box_iou, box_iou_ref, _make_iou_center, ((4, 6),),
           ((2048, 2048),), lambda a, b, **k: tensor_bytes(a, b) + a.numel() * b.numel() // 16
           * a.element_size()),
    _entry("box_encode", box_encode, box_encode_ref, _make_encode, ((2, 5, 3),),
           ((32, 8732, 32),), lambda s, m, a, r, *x: tensor_bytes(s, m, a, r, a, a)),
    _entry("box_decode", box_decode, box_decode_ref, _make_decode, ((2, 7),),
           ((32, 8732),), lambda x, a, **k: tensor_bytes(x, a, x)),
    _entry("box_nms", box_nms, box_nms_ref, _make_nms, ((2, 9), (1, 40)), ((8, 4096),),
           lambda d, cfg: tensor_bytes(d) * d.shape[1] // 4, dtypes=(torch.float32,)),
    _entry("box_nms_backward", nms_backward, nms_backward_ref, _make_nms_bwd, ((2, 9),),
           ((8, 4096),), lambda g, r: tensor_bytes(g, r, g), dtypes=(torch.float32,)),
    _entry("bipartite_matching", bipartite_matching, bipartite_matching_ref, _make_match,
           ((2, 4, 5), (1, 6, 3)), ((4, 64, 512),),
           lambda d, t, **k: tensor_bytes(d) * 3 * _sort_stages(d.shape[-1] * d.shape[-2]),
           dtypes=(torch.float32,)),
]
