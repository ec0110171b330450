"""Region proposals (Faster R-CNN's RPN): the kernels of ``Proposal`` and ``MultiProposal``.

Per image: shift the base anchors over the feature map, apply the predicted offsets, clip
to the image, mark boxes smaller than ``rpn_min_size`` (and cells in the padding) with score
-1, stably sort by score, keep the ``rpn_pre_nms_top_n`` best and run greedy NMS until
``rpn_post_nms_top_n`` boxes are kept; the output repeats the kept boxes cyclically to fill
``rpn_post_nms_top_n`` rows. Arithmetic follows MXNet's CPU code: fp32 values, with the
centre and corner formulas evaluated in double and rounded to fp32, and ``+ 1`` pixel sizes.

Three steps per call: :func:`_proposal_boxes_kernel` (parallel over every anchor of every
image), the stable sort of ``kernels/sort.py`` per image, and :func:`_proposal_nms_kernel`,
one program per image walking the sorted boxes (O(kept * pre_nms) IoUs, blocked).

Bytes moved: reads the scores and deltas once, writes and sorts (B, count) boxes, reads each
pre-NMS box once per kept box.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import triton.language as tl

from .reduce import check_out
from .runtime import block_for, cdiv, device_cached, kernel
from .sort import sort_rows
from .table import KernelSpec, tensor_bytes


@dataclass(frozen=True)
class ProposalConfig:
    """Proposal's parameters (the ops pass their parsed params, which have these names)."""

    rpn_pre_nms_top_n: int = 6000
    rpn_post_nms_top_n: int = 300
    threshold: float = 0.7
    rpn_min_size: int = 16
    scales: tuple = (4.0, 8.0, 16.0, 32.0)
    ratios: tuple = (0.5, 1.0, 2.0)
    feature_stride: int = 16
    output_score: bool = False
    iou_loss: bool = False


def _block(n: int, device: torch.device) -> int:
    return block_for(n, cap=1024 if device.type == "cuda" else 128)


def base_anchors(cfg) -> torch.Tensor:
    """(A, 4) float32 anchors at the origin cell, ratio-major, as MXNet's fp32/double math."""
    def f32(v) -> torch.Tensor:
        return torch.tensor(v, dtype=torch.float32)

    side = f32(cfg.feature_stride - 1.0) + 1.0
    ctr = f32(0.5 * (float(side) - 1.0))
    rows = []
    for ratio in cfg.ratios:
        for scale in cfg.scales:
            size_ratios = torch.floor(side * side / f32(ratio))
            w = torch.floor(torch.sqrt(size_ratios) + 0.5) * f32(scale)
            h = torch.floor(w / f32(scale) * f32(ratio) + 0.5) * f32(scale)
            rows.append(torch.stack([ctr - 0.5 * (w - 1), ctr - 0.5 * (h - 1),
                                     ctr + 0.5 * (w - 1), ctr + 0.5 * (h - 1)]))
    return torch.stack(rows)


def proposal_sizes(cfg, count: int) -> tuple[int, int]:
    """(pre-NMS count, post-NMS kept limit) for ``count`` anchors per image."""
    pre = cfg.rpn_pre_nms_top_n if cfg.rpn_pre_nms_top_n > 0 else count
    pre = min(pre, count)
    return pre, min(cfg.rpn_post_nms_top_n, pre)


# ---------------------------------------------------------------- boxes

@kernel
def _proposal_boxes_kernel(scores, deltas, im_info, anchors, boxes, n_anchor, h, w, stride,
                           min_size, total, IOU_LOSS: tl.constexpr, BLOCK: tl.constexpr):
    """boxes[b, (y * w + x) * A + a] = [x1, y1, x2, y2, score] of anchor a at cell (y, x):
    decoded, clipped, score -1 in the padding or when smaller than min_size * scale."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    count = n_anchor * h * w
    b = offs // count
    idx = offs % count
    a = idx % n_anchor
    x = (idx // n_anchor) % w
    y = idx // (n_anchor * w)
    f64 = tl.float64
    ax1 = tl.load(anchors + a * 4, mask=mask, other=0) + (x * stride).to(tl.float32)
    ay1 = tl.load(anchors + a * 4 + 1, mask=mask, other=0) + (y * stride).to(tl.float32)
    ax2 = tl.load(anchors + a * 4 + 2, mask=mask, other=0) + (x * stride).to(tl.float32)
    ay2 = tl.load(anchors + a * 4 + 3, mask=mask, other=0) + (y * stride).to(tl.float32)
    plane = h * w
    d = deltas + (b * n_anchor * 4 + a * 4) * plane + y * w + x
    d0 = tl.load(d, mask=mask, other=0)
    d1 = tl.load(d + plane, mask=mask, other=0)
    d2 = tl.load(d + 2 * plane, mask=mask, other=0)
    d3 = tl.load(d + 3 * plane, mask=mask, other=0)
    if IOU_LOSS:
        x1, y1, x2, y2 = ax1 + d0, ay1 + d1, ax2 + d2, ay2 + d3
    else:
        bw = ((ax2 - ax1).to(f64) + 1.0).to(tl.float32)
        bh = ((ay2 - ay1).to(f64) + 1.0).to(tl.float32)
        cx = (ax1.to(f64) + 0.5 * (bw.to(f64) - 1.0)).to(tl.float32)
        cy = (ay1.to(f64) + 0.5 * (bh.to(f64) - 1.0)).to(tl.float32)
        px = d0 * bw + cx
        py = d1 * bh + cy
        pw = (tl.exp(d2) * bw).to(f64) - 1.0
        ph = (tl.exp(d3) * bh).to(f64) - 1.0
        x1 = (px.to(f64) - 0.5 * pw).to(tl.float32)
        y1 = (py.to(f64) - 0.5 * ph).to(tl.float32)
        x2 = (px.to(f64) + 0.5 * pw).to(tl.float32)
        y2 = (py.to(f64) + 0.5 * ph).to(tl.float32)
    im_h = tl.load(im_info + b * 3, mask=mask, other=0)
    im_w = tl.load(im_info + b * 3 + 1, mask=mask, other=0)
    x1 = tl.maximum(tl.minimum(x1, im_w - 1.0), 0.0)
    y1 = tl.maximum(tl.minimum(y1, im_h - 1.0), 0.0)
    x2 = tl.maximum(tl.minimum(x2, im_w - 1.0), 0.0)
    y2 = tl.maximum(tl.minimum(y2, im_h - 1.0), 0.0)
    score = tl.load(scores + ((b * 2 + 1) * n_anchor + a) * plane + y * w + x, mask=mask,
                    other=0)
    pad = (y >= (im_h / stride).to(tl.int32)) | (x >= (im_w / stride).to(tl.int32))
    score = tl.where(pad, -1.0, score)
    size = min_size * tl.load(im_info + b * 3 + 2, mask=mask, other=0)
    small = ((x2 - x1 + 1.0) < size) | ((y2 - y1 + 1.0) < size)
    half = size / 2
    out = boxes + offs * 5
    tl.store(out, tl.where(small, x1 - half, x1), mask=mask)
    tl.store(out + 1, tl.where(small, y1 - half, y1), mask=mask)
    tl.store(out + 2, tl.where(small, x2 + half, x2), mask=mask)
    tl.store(out + 3, tl.where(small, y2 + half, y2), mask=mask)
    tl.store(out + 4, tl.where(small, -1.0, score), mask=mask)


def proposal_boxes(scores, deltas, im_info, cfg) -> torch.Tensor:
    """(B, count, 5) float32 boxes with scores, before sorting (the first launch)."""
    batch, two_a, h, w = scores.shape
    n_anchor = two_a // 2
    boxes = torch.empty((batch, n_anchor * h * w, 5), dtype=torch.float32,
                        device=scores.device)
    total = batch * n_anchor * h * w
    if total:
        block = _block(total, scores.device)
        _proposal_boxes_kernel[(cdiv(total, block),)](
            scores.contiguous(), deltas.contiguous(), im_info.contiguous(),
            device_cached(("anchors", cfg.feature_stride, tuple(cfg.ratios), tuple(cfg.scales)),
                          lambda: base_anchors(cfg), scores.device),
            boxes, n_anchor, h, w, int(cfg.feature_stride),
            float(cfg.rpn_min_size), total, IOU_LOSS=bool(cfg.iou_loss),
            BLOCK=block)
    return boxes


def _f32(x: torch.Tensor) -> torch.Tensor:
    return x.to(torch.float32)


def proposal_boxes_ref(scores, deltas, im_info, cfg) -> torch.Tensor:
    """Reference of :func:`proposal_boxes` by broadcasting (fp32, double where MXNet is)."""
    batch, two_a, h, w = scores.shape
    n_anchor = two_a // 2
    dev, stride = scores.device, cfg.feature_stride
    ys = torch.arange(h, device=dev).reshape(h, 1, 1) * stride
    xs = torch.arange(w, device=dev).reshape(1, w, 1) * stride
    base = base_anchors(cfg).to(dev)
    ax1, ay1 = _f32(base[:, 0] + xs), _f32(base[:, 1] + ys)
    ax2, ay2 = _f32(base[:, 2] + xs), _f32(base[:, 3] + ys)
    d = deltas.reshape(batch, n_anchor, 4, h, w).permute(0, 3, 4, 1, 2).to(torch.float32)
    d0, d1, d2, d3 = d.unbind(-1)
    if cfg.iou_loss:
        x1, y1, x2, y2 = ax1 + d0, ay1 + d1, ax2 + d2, ay2 + d3
    else:
        bw, bh = _f32((ax2 - ax1).double() + 1.0), _f32((ay2 - ay1).double() + 1.0)
        cx, cy = _f32(ax1.double() + 0.5 * (bw.double() - 1.0)), _f32(
            ay1.double() + 0.5 * (bh.double() - 1.0))
        px, py = d0 * bw + cx, d1 * bh + cy
        pw, ph = (torch.exp(d2) * bw).double() - 1.0, (torch.exp(d3) * bh).double() - 1.0
        x1, x2 = _f32(px.double() - 0.5 * pw), _f32(px.double() + 0.5 * pw)
        y1, y2 = _f32(py.double() - 0.5 * ph), _f32(py.double() + 0.5 * ph)
    info = im_info.to(torch.float32).reshape(batch, 3, 1, 1, 1)
    im_h, im_w = info[:, 0], info[:, 1]
    x1, x2 = (t.minimum(im_w - 1.0).clamp(min=0.0) for t in (x1, x2))
    y1, y2 = (t.minimum(im_h - 1.0).clamp(min=0.0) for t in (y1, y2))
    score = scores[:, n_anchor:].to(torch.float32).permute(0, 2, 3, 1)
    real_h = (im_h / stride).to(torch.int64)
    real_w = (im_w / stride).to(torch.int64)
    pad = (torch.arange(h, device=dev).reshape(1, h, 1, 1) >= real_h) | (
        torch.arange(w, device=dev).reshape(1, 1, w, 1) >= real_w)
    score = torch.where(pad, torch.full_like(score, -1.0), score)
    size = float(cfg.rpn_min_size) * info[:, 2]
    small = ((x2 - x1 + 1.0) < size) | ((y2 - y1 + 1.0) < size)
    half = size / 2
    out = torch.stack([torch.where(small, x1 - half, x1), torch.where(small, y1 - half, y1),
                       torch.where(small, x2 + half, x2), torch.where(small, y2 + half, y2),
                       torch.where(small, torch.full_like(score, -1.0), score)], -1)
    return out.reshape(batch, -1, 5)


# ---------------------------------------------------------------- sort + NMS

@kernel
def _proposal_nms_kernel(boxes, order, out, score_out, suppressed, keep, count, padded, pre,
                         limit, post, thresh, BLOCK: tl.constexpr):
    """One program per image: walk the ``pre`` best boxes (``order``) keeping the first free
    one and suppressing the later ones it overlaps by IoU > thresh, until ``limit`` are
    kept; then write ``post`` rows [b, box] and scores, repeating the kept ones cyclically."""
    b = tl.program_id(0).to(tl.int64)
    base = boxes + b * count * 5
    rank = order + b * padded
    sup = suppressed + b * pre
    kept_at = keep + b * limit
    for start in range(0, pre, BLOCK):
        p = start + tl.arange(0, BLOCK)
        tl.store(sup + p, tl.full((BLOCK,), 0, tl.int32), mask=p < pre)
    tl.debug_barrier()
    kept = tl.full((), 0, tl.int32)
    i = 0
    while (i < pre) & (kept < limit):
        if tl.load(sup + i) == 0:
            tl.store(kept_at + kept, i)
            kept += 1
            row = base + tl.load(rank + i) * 5
            ix1, iy1 = tl.load(row), tl.load(row + 1)
            ix2, iy2 = tl.load(row + 2), tl.load(row + 3)
            i_area = (ix2 - ix1 + 1) * (iy2 - iy1 + 1)
            for start in range(i + 1, pre, BLOCK):
                p = start + tl.arange(0, BLOCK)
                mp = p < pre
                other = base + tl.load(rank + p, mask=mp, other=0) * 5
                jx1 = tl.load(other, mask=mp, other=0)
                jy1 = tl.load(other + 1, mask=mp, other=0)
                jx2 = tl.load(other + 2, mask=mp, other=0)
                jy2 = tl.load(other + 3, mask=mp, other=0)
                j_area = (jx2 - jx1 + 1) * (jy2 - jy1 + 1)
                iw = tl.maximum(tl.minimum(ix2, jx2) - tl.maximum(ix1, jx1) + 1.0, 0.0)
                ih = tl.maximum(tl.minimum(iy2, jy2) - tl.maximum(iy1, jy1) + 1.0, 0.0)
                inter = iw * ih
                hit = mp & (inter / (i_area + j_area - inter) > thresh)
                tl.store(sup + p, tl.full((BLOCK,), 1, tl.int32), mask=hit)
            tl.debug_barrier()
        i += 1
    tl.debug_barrier()
    ty = out.dtype.element_ty
    for start in range(0, post, BLOCK):
        r = start + tl.arange(0, BLOCK)
        mr = r < post
        k = tl.where(r < kept, r, r % tl.maximum(kept, 1))
        row = base + tl.load(rank + tl.load(kept_at + k, mask=mr, other=0), mask=mr,
                             other=0) * 5
        dst = out + (b * post + r) * 5
        tl.store(dst, tl.full((BLOCK,), 0, tl.float32).to(ty) + b.to(ty), mask=mr)
        for c in range(0, 4):
            tl.store(dst + 1 + c, tl.load(row + c, mask=mr, other=0).to(ty), mask=mr)
        tl.store(score_out + b * post + r, tl.load(row + 4, mask=mr, other=0).to(
            score_out.dtype.element_ty), mask=mr)


def multi_proposal(scores, deltas, im_info, cfg=ProposalConfig(), out=None) -> tuple:
    """Check, allocate, launch: (rois (B * post, 5) rows [image, x1, y1, x2, y2], scores
    (B * post, 1)) from scores (B, 2A, H, W), deltas (B, 4A, H, W), im_info (B, 3)."""
    batch = scores.shape[0]
    post = cfg.rpn_post_nms_top_n
    dev, dt = scores.device, scores.dtype
    outs = out if out is not None else (None, None)
    rois = check_out(outs[0], (batch * post, 5), dt, dev, "rois")
    score = check_out(outs[1], (batch * post, 1), dt, dev, "scores")
    boxes = proposal_boxes(scores, deltas, im_info, cfg)
    count = boxes.shape[1]
    if not rois.numel() or not count:
        return rois, score
    pre, limit = proposal_sizes(cfg, count)
    _, order = sort_rows(boxes[..., 4], 1, True)
    suppressed = torch.empty((batch, pre), dtype=torch.int32, device=dev)
    keep = torch.empty((batch, max(limit, 1)), dtype=torch.int32, device=dev)
    _proposal_nms_kernel[(batch,)](boxes, order, rois, score, suppressed, keep, count,
                                   order.shape[1], pre, limit, post, float(cfg.threshold),
                                   BLOCK=_block(pre, dev))
    return rois, score


_CHUNK = 256  # boxes resolved together by the reference NMS
_COLS = 1024  # later boxes tested against them at once


class _Boxes:
    """Columns of sorted boxes and their +1-pixel areas, for IoU tests by index."""

    def __init__(self, dets: torch.Tensor):
        self.x1, self.y1, self.x2, self.y2 = (c.contiguous() for c in dets[:, :4].unbind(1))
        self.area = (self.x2 - self.x1 + 1) * (self.y2 - self.y1 + 1)

    def over(self, a: torch.Tensor, b: torch.Tensor, thresh: float) -> torch.Tensor:
        """(len(a), len(b)) bool: MXNet's IoU of boxes a and b above thresh (fp32)."""
        iw = (torch.minimum(self.x2[a, None], self.x2[b])
              - torch.maximum(self.x1[a, None], self.x1[b]) + 1.0).clamp_(min=0.0)
        ih = (torch.minimum(self.y2[a, None], self.y2[b])
              - torch.maximum(self.y1[a, None], self.y1[b]) + 1.0).clamp_(min=0.0)
        inter = iw.mul_(ih)
        union = (self.area[a, None] + self.area[b]).sub_(inter)
        return inter.div_(union) > thresh


def nms_keep_ref(dets: torch.Tensor, thresh: float, limit: int) -> list[int]:
    """Indices kept by greedy NMS over sorted ``dets`` (N, 5), at most ``limit``: the next
    chunk of surviving boxes is resolved among itself on the host, then its kept boxes
    remove the later survivors they overlap, all at once."""
    boxes = _Boxes(dets)
    alive = torch.arange(dets.shape[0], device=dets.device)
    kept: list[int] = []
    while alive.numel() and len(kept) < limit:
        chunk, alive = alive[:_CHUNK], alive[_CHUNK:]
        hit = boxes.over(chunk, chunk, thresh).cpu().numpy()
        sup = hit[0] & False
        new = []
        for r in range(len(chunk)):
            if sup[r]:
                continue
            new.append(r)
            if len(kept) + len(new) == limit:
                break
            sup[r + 1:] |= hit[r, r + 1:]
        kept += chunk[new].tolist()
        if new and alive.numel() and len(kept) < limit:
            # column blocks keep the (kept, block) temporaries in cache
            gone = torch.cat([boxes.over(chunk[new], alive[c:c + _COLS], thresh).any(0)
                              for c in range(0, alive.numel(), _COLS)])
            alive = alive[~gone]
    return kept


def multi_proposal_ref(scores, deltas, im_info, cfg=ProposalConfig()) -> tuple:
    """Reference: boxes by broadcasting, per image a stable sort and the chunked NMS."""
    batch = scores.shape[0]
    post = cfg.rpn_post_nms_top_n
    boxes = proposal_boxes_ref(scores, deltas, im_info, cfg)
    pre, limit = proposal_sizes(cfg, boxes.shape[1])
    rois, score = [], []
    for b in range(batch):
        order = torch.sort(boxes[b, :, 4], descending=True, stable=True).indices[:pre]
        dets = boxes[b, order]
        kept = nms_keep_ref(dets, cfg.threshold, limit)
        idx = torch.tensor([kept[r % len(kept)] for r in range(post)], dtype=torch.int64)
        rows = dets[idx.to(dets.device)]
        rois.append(torch.cat([torch.full((post, 1), float(b), device=rows.device),
                               rows[:, :4]], 1))
        score.append(rows[:, 4:])
    dt = scores.dtype
    return torch.cat(rois).to(dt), torch.cat(score).to(dt)


# ---------------------------------------------------------------- table

def _make_proposal(dtype, device, shape):
    """Random scores and deltas; image sizes leaving some padding cells and small boxes."""
    batch, h, w = shape
    g = torch.Generator().manual_seed(5)
    cfg = ProposalConfig(rpn_pre_nms_top_n=h * w * 2, rpn_post_nms_top_n=h * w // 2 + 3,
                         threshold=0.5, rpn_min_size=3, scales=(1.0, 2.0), ratios=(0.5, 2.0),
                         feature_stride=4)
    scores = torch.rand((batch, 8, h, w), generator=g)
    deltas = (torch.rand((batch, 16, h, w), generator=g) - 0.5) * 0.4
    info = torch.tensor([[h * 4 - 5.0, w * 4 - 2.0, 0.9], [h * 4.0, w * 4 - 6.0, 1.2]])
    info = info.repeat(math.ceil(batch / 2), 1)[:batch]
    return tuple(t.to(dtype).to(device) for t in (scores, deltas, info)) + (cfg,), {}


KERNELS = [
    KernelSpec(name="multi_proposal", fn=multi_proposal, ref=multi_proposal_ref,
               make=_make_proposal, shapes=((2, 3, 5), (1, 6, 4)),
               bench_shapes=((4, 38, 63),), dtypes=(torch.float32,),
               bytes=lambda s, d, i, cfg: tensor_bytes(s, d, i) * 4, family="proposal"),
]
