"""MultiBox (SSD) kernels: the anchors of MultiBoxPrior, the training targets of
MultiBoxTarget and the detections of MultiBoxDetection.

Anchors depend only on the feature map's size: each is written from its flat index, in fp32
arithmetic as MXNet computes them, with the per-anchor half sizes in a small table.

MultiBoxTarget runs five launches: the (B, N, L) anchor/ground-truth IoU matrix (-1 for the
labels after the first padding row), a greedy matching per batch item (L rounds, each an
argmax over the free pairs: O(N * L^2), no sort of the N * L pairs), a per-anchor pass
(threshold matching, the background probability of the hard-negative candidates), the
stable sort of ``kernels/sort.py`` over those probabilities, and per batch item the choice of
the first ``ratio * positives`` candidates; the last launch writes the targets.

MultiBoxDetection decodes every anchor's box and best class in one parallel launch, sorts the
scores with ``kernels/sort.py`` and, one program per batch item, compacts the valid rows,
places the ``nms_topk`` best first and suppresses greedily (IoU >= ``nms_threshold``).

Bytes moved: the prior writes H * W * A * 4 values; the target reads the IoU matrix L + 2
times; the detection reads its inputs once and each kept row once per kept row.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import triton.language as tl

from .detection import acc_dtype
from .reduce import MAX, MIN, SUM, acc_type, check_out
from .runtime import block_for, cdiv, device_cached, fp32, kernel
from .sort import sort_rows
from .table import KernelSpec, tensor_bytes


def _block(n: int, device: torch.device) -> int:
    return block_for(n, cap=1024 if device.type == "cuda" else 32)


# ---------------------------------------------------------------- MultiBoxPrior

@kernel
def _prior_kernel(half, out, h, w, a, step_y, step_x, off_y, off_x, total, CLIP: tl.constexpr,
                  BLOCK: tl.constexpr):
    """out[(r * w + c) * a + k] = the k-th anchor (half sizes ``half[k]``) centred on cell
    (r, c), in fp32 as MXNet computes it."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    k = offs % a
    c = (offs // a) % w
    r = offs // (a * w)
    cy = (r.to(tl.float32) + off_y) * step_y
    cx = (c.to(tl.float32) + off_x) * step_x
    hw = tl.load(half + 2 * k, mask=mask, other=0)
    hh = tl.load(half + 2 * k + 1, mask=mask, other=0)
    box = (cx - hw, cy - hh, cx + hw, cy + hh)
    for i in tl.static_range(4):
        v = box[i]
        if CLIP:
            v = tl.minimum(tl.maximum(v, 0.0), 1.0)
        tl.store(out + offs * 4 + i, v.to(out.dtype.element_ty), mask=mask)


def prior_geometry(h: int, w: int, sizes, ratios, steps) -> tuple:
    """(half sizes (A, 2) as float32, step_y, step_x) of MultiBoxPrior: the first ratio
    with every size, then every other ratio with the first size (fp32 math, as MXNet)."""
    pairs = [(s, ratios[0]) for s in sizes] + [(sizes[0], r) for r in ratios[1:]]
    size, ratio = (torch.tensor(v, dtype=torch.float32) for v in zip(*pairs))
    root = torch.sqrt(ratio)
    half = torch.stack([size * h / w * root / 2, size / root / 2], -1)
    if steps[0] <= 0 or steps[1] <= 0:
        steps = (1.0 / h, 1.0 / w)  # MXNet: 1.0f / h, the same float32
    return half, fp32(steps[0]), fp32(steps[1])


def multibox_prior(data: torch.Tensor, sizes=(1.0,), ratios=(1.0,), clip: bool = False,
                   steps=(-1.0, -1.0), offsets=(0.5, 0.5), out=None) -> torch.Tensor:
    """Check, allocate, launch: the (1, H * W * A, 4) anchors of NCHW ``data``."""
    h, w = data.shape[2], data.shape[3]
    half, sy, sx = prior_geometry(h, w, sizes, ratios, steps)
    a = half.shape[0]
    result = check_out(out, (1, h * w * a, 4), data.dtype, data.device)
    total = h * w * a
    if total:
        block = block_for(total, cap=1024 if data.device.type == "cuda" else 32)
        key = ("prior", h, w, tuple(sizes), tuple(ratios), tuple(steps))
        half = device_cached(key, lambda: half, data.device)
        _prior_kernel[(cdiv(total, block),)](half, result, h, w, a, sy, sx, float(offsets[0]),
                                             float(offsets[1]), total, CLIP=clip, BLOCK=block)
    return result


def multibox_prior_ref(data: torch.Tensor, sizes=(1.0,), ratios=(1.0,), clip: bool = False,
                       steps=(-1.0, -1.0), offsets=(0.5, 0.5)) -> torch.Tensor:
    """Reference: fp32 grids of centres plus the half sizes (writes H * W * A * 4 values)."""
    h, w = data.shape[2], data.shape[3]
    half, sy, sx = prior_geometry(h, w, sizes, ratios, steps)
    half = half.to(data.device)
    f32 = torch.float32
    cy = (torch.arange(h, device=data.device, dtype=f32) + offsets[0]) * sy
    cx = (torch.arange(w, device=data.device, dtype=f32) + offsets[1]) * sx
    cy = cy.reshape(h, 1, 1).expand(h, w, len(half))
    cx = cx.reshape(1, w, 1).expand(h, w, len(half))
    box = torch.stack([cx - half[:, 0], cy - half[:, 1], cx + half[:, 0], cy + half[:, 1]], -1)
    if clip:
        box = box.clamp(0.0, 1.0)
    return box.reshape(1, -1, 4).to(data.dtype)


# ---------------------------------------------------------------- MultiBoxTarget

@dataclass(frozen=True)
class TargetConfig:
    """MultiBoxTarget's parameters (the op passes its parsed params, which have these names)."""

    overlap_threshold: float = 0.5
    ignore_label: float = -1.0
    negative_mining_ratio: float = -1.0
    negative_mining_thresh: float = 0.5
    minimum_negative_samples: int = 0
    variances: tuple = (0.1, 0.1, 0.2, 0.2)


_GREEDY_MIN = 1e-6  # MXNet's greedy matching takes pairs with IoU above this


@kernel
def _target_iou_kernel(anchor, label, iou, n, n_lab, width, total, ACC: tl.constexpr,
                       BLOCK: tl.constexpr):
    """iou[b, j, k] = IoU(anchor j, label box k of item b) as MXNet (raw areas, 0 for an empty
    union), -1 where some label row <= k of item b has class -1 (padding)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    k = offs % n_lab
    a = ((offs // n_lab) % n) * 4
    b = offs // (n_lab * n)
    g = (b * n_lab + k) * width
    a0 = tl.load(anchor + a, mask=mask, other=0).to(ACC)
    a1 = tl.load(anchor + a + 1, mask=mask, other=0).to(ACC)
    a2 = tl.load(anchor + a + 2, mask=mask, other=0).to(ACC)
    a3 = tl.load(anchor + a + 3, mask=mask, other=0).to(ACC)
    g0 = tl.load(label + g + 1, mask=mask, other=0).to(ACC)
    g1 = tl.load(label + g + 2, mask=mask, other=0).to(ACC)
    g2 = tl.load(label + g + 3, mask=mask, other=0).to(ACC)
    g3 = tl.load(label + g + 4, mask=mask, other=0).to(ACC)
    inter = (tl.maximum(tl.minimum(a2, g2) - tl.maximum(a0, g0), 0.0)
             * tl.maximum(tl.minimum(a3, g3) - tl.maximum(a1, g1), 0.0))
    union = (a2 - a0) * (a3 - a1) + (g2 - g0) * (g3 - g1) - inter
    v = tl.where(union == 0, 0.0, inter / tl.where(union == 0, 1.0, union))
    pad = offs < 0
    for t in range(0, n_lab):
        before = mask & (t <= k)
        cls = tl.load(label + (b * n_lab + t) * width, mask=before, other=0).to(ACC)
        pad = pad | (before & (cls == -1))
    tl.store(iou + offs, tl.where(pad, -1.0, v), mask=mask)


@kernel
def _target_greedy_kernel(iou, match, n, n_lab, min_iou, BLOCK_N: tl.constexpr,
                          BLOCK_L: tl.constexpr):
    """One program per batch item: match[b, j] = the label greedily matched to anchor j (-1
    for none). Each round takes the best free (anchor, label) pair, first in (j, k) order on
    ties, while its IoU exceeds ``min_iou``."""
    b = tl.program_id(0).to(tl.int64)
    base = iou + b * n * n_lab
    cols = tl.arange(0, BLOCK_L)
    free_l = (cols < n_lab).to(tl.int32)
    for start in range(0, n, BLOCK_N):
        r = start + tl.arange(0, BLOCK_N)
        tl.store(match + b * n + r, tl.full((BLOCK_N,), -1, tl.int32), mask=r < n)
    tl.debug_barrier()
    it = 0
    done = 0
    while (it < n_lab) & (done == 0):
        best = tl.full((), -2.0, tl.float32)
        best_at = tl.full((), 0, tl.int64)
        for start in range(0, n, BLOCK_N):
            r = start + tl.arange(0, BLOCK_N).to(tl.int64)
            free_r = tl.load(match + b * n + r, mask=r < n, other=0) == -1
            m2 = ((r < n) & free_r)[:, None] & (free_l != 0)[None, :]
            flat = r[:, None] * n_lab + cols[None, :]
            v = tl.load(base + flat, mask=m2, other=-2.0).to(tl.float32)
            top = tl.reduce(tl.reduce(v, 1, MAX), 0, MAX)
            at = tl.reduce(tl.reduce(tl.where(v == top, flat, n * n_lab), 1, MIN), 0, MIN)
            take = top > best
            best = tl.where(take, top, best)
            best_at = tl.where(take, at, best_at)
        if best > min_iou:
            tl.store(match + b * n + best_at // n_lab, (best_at % n_lab).to(tl.int32))
            free_l = tl.where(cols == best_at % n_lab, 0, free_l)
        else:
            done = 1
        tl.debug_barrier()
        it += 1


@kernel
def _target_assign_kernel(iou, match, cls_pred, flag, gt, key, n, n_lab, n_cls, overlap,
                          neg_thresh, total, MINE: tl.constexpr, ACC: tl.constexpr,
                          BLOCK: tl.constexpr, BLOCK_L: tl.constexpr):
    """Per anchor (b, j): positive if greedily matched or its best IoU passes ``overlap``
    (flag 1, gt = the label); else flag 0 (every non-positive is a negative when not MINE)
    or -1; items without labels get -1. key = the background probability of a
    hard-negative candidate (best IoU < neg_thresh), +inf for the others."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    cols = tl.arange(0, BLOCK_L)
    m2 = mask[:, None] & (cols < n_lab)[None, :]
    v = tl.load(iou + offs[:, None] * n_lab + cols[None, :], mask=m2, other=-2.0)
    best = tl.reduce(v, 1, MAX)
    arg = tl.reduce(tl.where(v == best[:, None], cols[None, :], BLOCK_L), 1, MIN)
    has_gt = tl.load(iou + offs * n_lab, mask=mask, other=-1) >= 0
    greedy = tl.load(match + offs, mask=mask, other=-1)
    pos = has_gt & ((greedy >= 0) | ((overlap > 0) & (best > overlap)))
    label = tl.where(greedy >= 0, greedy, arg)
    b = offs // n
    j = offs % n
    top = tl.load(cls_pred + b * n_cls * n + j, mask=mask, other=0).to(ACC)
    for t in range(1, n_cls):
        top = tl.maximum(top, tl.load(cls_pred + (b * n_cls + t) * n + j, mask=mask,
                                      other=0).to(ACC))
    total_exp = tl.full((BLOCK,), 0, ACC)
    for t in range(0, n_cls):
        x = tl.load(cls_pred + (b * n_cls + t) * n + j, mask=mask, other=0).to(ACC)
        total_exp += tl.exp(x - top)
    x0 = tl.load(cls_pred + b * n_cls * n + j, mask=mask, other=0).to(ACC)
    prob = tl.exp(x0 - top) / total_exp
    cand = has_gt & (~pos) & (best < neg_thresh)
    if MINE:
        rest = tl.where(has_gt, -1, -1)
    else:
        rest = tl.where(has_gt, 0, -1)
    tl.store(flag + offs, tl.where(pos, 1, rest).to(tl.int32), mask=mask)
    tl.store(gt + offs, tl.where(pos, label, -1).to(tl.int32), mask=mask)
    tl.store(key + offs, tl.where(cand, prob, float("inf")).to(tl.float32), mask=mask)


@kernel
def _target_mine_kernel(flag, keys, order, n, padded, ratio, BLOCK: tl.constexpr):
    """One program per batch item: the first ``min(int(positives * ratio), n - positives)``
    candidates of the sorted keys (the lowest background probabilities) become negatives."""
    b = tl.program_id(0).to(tl.int64)
    positives = tl.full((), 0, tl.int32)
    for start in range(0, n, BLOCK):
        p = start + tl.arange(0, BLOCK)
        f = tl.load(flag + b * n + p, mask=p < n, other=0)
        positives += tl.reduce((f == 1).to(tl.int32), 0, SUM)
    wanted = tl.minimum((positives.to(tl.float32) * ratio).to(tl.int32), n - positives)
    tl.debug_barrier()
    for start in range(0, wanted, BLOCK):
        p = start + tl.arange(0, BLOCK)
        m = p < wanted
        k = tl.load(keys + b * padded + p, mask=m, other=float("inf"))
        sel = m & (k < float("inf"))
        src = tl.load(order + b * padded + p, mask=sel, other=0)
        tl.store(flag + b * n + src, tl.full((BLOCK,), 0, tl.int32), mask=sel)


@kernel
def _target_write_kernel(anchor, label, flag, gt, loc, loc_mask, cls, n, n_lab, width, ignore,
                         v0, v1, v2, v3, total, ACC: tl.constexpr, BLOCK: tl.constexpr):
    """Per anchor: the encoded box of its label (positives), its mask, and its class target
    (label + 1, 0 for negatives, ignore_label for the rest)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    f = tl.load(flag + offs, mask=mask, other=-1)
    pos = mask & (f == 1)
    g = (offs // n * n_lab + tl.load(gt + offs, mask=pos, other=0)) * width
    a = (offs % n) * 4
    al = tl.load(anchor + a, mask=pos, other=0).to(ACC)
    at = tl.load(anchor + a + 1, mask=pos, other=0).to(ACC)
    aw = tl.load(anchor + a + 2, mask=pos, other=1).to(ACC) - al
    ah = tl.load(anchor + a + 3, mask=pos, other=1).to(ACC) - at
    gl = tl.load(label + g + 1, mask=pos, other=0).to(ACC)
    gt_ = tl.load(label + g + 2, mask=pos, other=0).to(ACC)
    gw = tl.load(label + g + 3, mask=pos, other=1).to(ACC) - gl
    gh = tl.load(label + g + 4, mask=pos, other=1).to(ACC) - gt_
    t = (((gl + gw * 0.5) - (al + aw * 0.5)) / aw / v0,
         ((gt_ + gh * 0.5) - (at + ah * 0.5)) / ah / v1,
         tl.log(gw / aw) / v2, tl.log(gh / ah) / v3)
    ty = loc.dtype.element_ty
    for i in tl.static_range(4):
        tl.store(loc + offs * 4 + i, tl.where(pos, t[i], 0.0).to(ty), mask=mask)
        tl.store(loc_mask + offs * 4 + i, tl.where(pos, 1.0, 0.0).to(ty), mask=mask)
    c = tl.load(label + g, mask=pos, other=0).to(ACC) + 1
    c = tl.where(pos, c, tl.where(f == 0, 0.0, ignore))
    tl.store(cls + offs, c.to(cls.dtype.element_ty), mask=mask)


def multibox_target(anchor, label, cls_pred, cfg=TargetConfig(), out=None) -> tuple:
    """Check, allocate, launch: (loc_target (B, N * 4), loc_mask (B, N * 4), cls_target
    (B, N)) from anchors (1, N, 4), labels (B, L, W) and class predictions (B, C, N)."""
    batch, n_lab, width = label.shape
    n, n_cls = anchor.shape[1], cls_pred.shape[1]
    dev, dt = anchor.device, anchor.dtype
    outs = out if out is not None else (None, None, None)
    loc = check_out(outs[0], (batch, n * 4), dt, dev, "loc_target")
    loc_mask = check_out(outs[1], (batch, n * 4), dt, dev, "loc_mask")
    cls = check_out(outs[2], (batch, n), dt, dev, "cls_target")
    if not cls.numel():
        return loc, loc_mask, cls
    anchor, label, cls_pred = anchor.contiguous(), label.contiguous(), cls_pred.contiguous()
    acc = acc_type(dt)
    iou = torch.empty((batch, n, n_lab), dtype=torch.float32, device=dev)
    block = _block(iou.numel(), dev)
    _target_iou_kernel[(cdiv(iou.numel(), block),)](anchor, label, iou, n, n_lab, width,
                                                    iou.numel(), ACC=acc, BLOCK=block)
    match = torch.empty((batch, n), dtype=torch.int32, device=dev)
    block_l = block_for(n_lab, cap=1 << 20, floor=2)
    block_n = max(2, min(_block(n, dev), 4096 // block_l))
    _target_greedy_kernel[(batch,)](iou, match, n, n_lab, _GREEDY_MIN, BLOCK_N=block_n,
                                    BLOCK_L=block_l)
    flag = torch.empty((batch, n), dtype=torch.int32, device=dev)
    gt = torch.empty((batch, n), dtype=torch.int32, device=dev)
    key = torch.empty((batch, n), dtype=torch.float32, device=dev)
    mine = cfg.negative_mining_ratio > 0
    block = _block(batch * n, dev)
    _target_assign_kernel[(cdiv(batch * n, block),)](
        iou, match, cls_pred, flag, gt, key, n, n_lab, n_cls, float(cfg.overlap_threshold),
        float(cfg.negative_mining_thresh), batch * n, MINE=mine, ACC=acc, BLOCK=block,
        BLOCK_L=block_l)
    if mine:
        keys, order = sort_rows(key, 1, False)
        _target_mine_kernel[(batch,)](flag, keys, order, n, keys.shape[1],
                                      float(cfg.negative_mining_ratio), BLOCK=_block(n, dev))
    _target_write_kernel[(cdiv(batch * n, block),)](
        anchor, label, flag, gt, loc, loc_mask, cls, n, n_lab, width, float(cfg.ignore_label),
        *map(float, cfg.variances), batch * n, ACC=acc, BLOCK=block)
    return loc, loc_mask, cls


def target_iou_ref(anchor: torch.Tensor, label: torch.Tensor) -> torch.Tensor:
    """(B, N, L) float32 IoU of anchors and label boxes as MXNet computes it, -1 for the
    labels from the first padding row (class -1) on."""
    wide = acc_dtype(anchor.dtype)
    a = anchor.reshape(1, -1, 1, 4).to(wide)
    g = label[:, None, :, 1:5].to(wide)
    inter = ((torch.minimum(a[..., 2], g[..., 2]) - torch.maximum(a[..., 0], g[..., 0]))
             .clamp(min=0) * (torch.minimum(a[..., 3], g[..., 3])
                              - torch.maximum(a[..., 1], g[..., 1])).clamp(min=0))
    union = ((a[..., 2] - a[..., 0]) * (a[..., 3] - a[..., 1])
             + (g[..., 2] - g[..., 0]) * (g[..., 3] - g[..., 1]) - inter)
    iou = torch.where(union == 0, torch.zeros_like(inter), inter / union)
    valid = torch.cumprod((label[..., 0] != -1).to(torch.int64), 1).bool()
    return torch.where(valid[:, None, :], iou, torch.full_like(iou, -1)).to(torch.float32)


def target_greedy_ref(iou: torch.Tensor) -> torch.Tensor:
    """(B, N) int64: the label each anchor gets in the greedy rounds (-1: none)."""
    batch, n, n_lab = iou.shape
    work = iou.clone()
    match = torch.full((batch, n), -1, dtype=torch.int64, device=iou.device)
    rows = torch.arange(batch, device=iou.device)
    for _ in range(n_lab):
        flat = work.reshape(batch, -1)
        at = flat.argmax(1)
        ok = flat[rows, at] > torch.tensor(_GREEDY_MIN, dtype=torch.float32)
        j, k = at // n_lab, at % n_lab
        match[rows[ok], j[ok]] = k[ok]
        work[rows[ok], j[ok], :] = -2
        work[rows[ok], :, k[ok]] = -2
    return match


def _background_prob(cls_pred: torch.Tensor) -> torch.Tensor:
    """(B, N) softmax probability of class 0 over the class axis, as MXNet sums it."""
    x = cls_pred.to(acc_dtype(cls_pred.dtype))
    top = x.max(1, keepdim=True).values
    return torch.exp(x[:, 0] - top[:, 0]) / torch.exp(x - top).sum(1)


def target_flags_ref(iou, cls_pred, cfg) -> tuple:
    """(flag (B, N): 1 positive, 0 negative, -1 ignored; label index of each positive)."""
    greedy = target_greedy_ref(iou)
    best, arg = iou.max(2).values, iou.argmax(2)
    has_gt = iou[..., 0] >= 0
    pos = has_gt & ((greedy >= 0) | ((cfg.overlap_threshold > 0)
                                     & (best > cfg.overlap_threshold)))
    label = torch.where(greedy >= 0, greedy, arg)
    if cfg.negative_mining_ratio <= 0:
        return torch.where(pos, 1, torch.where(has_gt, 0, -1)), label
    cand = has_gt & ~pos & (best < cfg.negative_mining_thresh)
    key = torch.where(cand, _background_prob(cls_pred).to(torch.float32),
                      torch.full_like(best, float("inf")))
    order = torch.sort(key, dim=1, stable=True).indices
    rank = torch.empty_like(order).scatter_(1, order, torch.arange(
        key.shape[1], device=key.device).expand_as(order).contiguous())
    positives = pos.sum(1, keepdim=True).to(torch.float32)
    wanted = torch.minimum((positives * torch.tensor(cfg.negative_mining_ratio,
                                                      dtype=torch.float32)).to(torch.int64),
                           key.shape[1] - positives.to(torch.int64))
    neg = cand & (rank < wanted)
    return torch.where(pos, 1, torch.where(neg, 0, -1)), label


def multibox_target_ref(anchor, label, cls_pred, cfg=TargetConfig()) -> tuple:
    """Reference: the IoU matrix by broadcasting, L greedy argmax rounds over the batch,
    a stable sort for the hard negatives, and the targets by a gather."""
    batch, n = label.shape[0], anchor.shape[1]
    iou = target_iou_ref(anchor, label)
    flag, idx = target_flags_ref(iou, cls_pred, cfg)
    wide = acc_dtype(anchor.dtype)
    g = torch.gather(label.to(wide), 1, idx.clamp(min=0)[..., None].expand(
        batch, n, label.shape[2]))
    a = anchor.reshape(1, n, 4).to(wide)
    aw, ah = a[..., 2] - a[..., 0], a[..., 3] - a[..., 1]
    gw, gh = g[..., 3] - g[..., 1], g[..., 4] - g[..., 2]
    v = cfg.variances
    t = torch.stack([((g[..., 1] + gw * 0.5) - (a[..., 0] + aw * 0.5)) / aw / v[0],
                     ((g[..., 2] + gh * 0.5) - (a[..., 1] + ah * 0.5)) / ah / v[1],
                     torch.log(gw / aw) / v[2], torch.log(gh / ah) / v[3]], -1)
    pos = (flag == 1)[..., None]
    loc = torch.where(pos, t, torch.zeros_like(t)).reshape(batch, n * 4)
    cls = torch.where(flag == 1, g[..., 0] + 1, torch.where(
        flag == 0, torch.zeros_like(g[..., 0]), torch.full_like(g[..., 0], cfg.ignore_label)))
    mask = pos.expand(batch, n, 4).reshape(batch, n * 4)
    return loc.to(anchor.dtype), mask.to(anchor.dtype), cls.to(anchor.dtype)


# ---------------------------------------------------------------- MultiBoxDetection

@dataclass(frozen=True)
class DetectionConfig:
    """MultiBoxDetection's parameters (the op passes its parsed params)."""

    clip: bool = True
    threshold: float = 0.01
    background_id: int = 0
    nms_threshold: float = 0.5
    force_suppress: bool = False
    variances: tuple = (0.1, 0.1, 0.2, 0.2)
    nms_topk: int = -1


@kernel
def _detect_decode_kernel(cls_prob, loc, anchor, rows, key, n, n_cls, threshold, v0, v1, v2,
                          v3, total, CLIP: tl.constexpr, ACC: tl.constexpr,
                          BLOCK: tl.constexpr):
    """Per anchor (b, i): rows[b, i] = [best class - 1 (-1 below threshold), its probability,
    the decoded corner box]; key = the probability of valid rows, -inf for the others."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    b = offs // n
    i = offs % n
    score = tl.full((BLOCK,), -1.0, ACC)
    cls = tl.full((BLOCK,), 0, tl.int32)
    for t in range(1, n_cls):
        p = tl.load(cls_prob + (b * n_cls + t) * n + i, mask=mask, other=0).to(ACC)
        cls = tl.where(p > score, t, cls)
        score = tl.where(p > score, p, score)
    cls = tl.where((cls > 0) & (score < threshold), 0, cls)
    al = tl.load(anchor + i * 4, mask=mask, other=0).to(ACC)
    at = tl.load(anchor + i * 4 + 1, mask=mask, other=0).to(ACC)
    aw = tl.load(anchor + i * 4 + 2, mask=mask, other=0).to(ACC) - al
    ah = tl.load(anchor + i * 4 + 3, mask=mask, other=0).to(ACC) - at
    ox = tl.load(loc + offs * 4, mask=mask, other=0).to(ACC) * v0 * aw + (al + aw * 0.5)
    oy = tl.load(loc + offs * 4 + 1, mask=mask, other=0).to(ACC) * v1 * ah + (at + ah * 0.5)
    ow = tl.exp(tl.load(loc + offs * 4 + 2, mask=mask, other=0).to(ACC) * v2) * aw / 2
    oh = tl.exp(tl.load(loc + offs * 4 + 3, mask=mask, other=0).to(ACC) * v3) * ah / 2
    box = (ox - ow, oy - oh, ox + ow, oy + oh)
    ty = rows.dtype.element_ty
    tl.store(rows + offs * 6, (cls - 1).to(ty), mask=mask)
    tl.store(rows + offs * 6 + 1, score.to(ty), mask=mask)
    for c in tl.static_range(4):
        v = box[c]
        if CLIP:
            v = tl.maximum(tl.minimum(v, 1.0), 0.0)
        tl.store(rows + offs * 6 + 2 + c, v.to(ty), mask=mask)
    tl.store(key + offs, tl.where(cls > 0, score, -float("inf")).to(tl.float32), mask=mask)


@kernel
def _detect_compact_kernel(rows, out, n, BLOCK: tl.constexpr):
    """One program per batch item: the valid rows (class >= 0) in anchor order, then -1
    rows (MXNet's output without NMS)."""
    b = tl.program_id(0).to(tl.int64)
    running = tl.full((), 0, tl.int64)
    for start in range(0, n, BLOCK):
        p = start + tl.arange(0, BLOCK)
        mp = p < n
        valid = mp & (tl.load(rows + (b * n + p) * 6, mask=mp, other=-1) >= 0)
        dst = running + tl.associative_scan(valid.to(tl.int64), 0, SUM) - 1
        for c in range(0, 6):
            v = tl.load(rows + (b * n + p) * 6 + c, mask=valid, other=0)
            tl.store(out + (b * n + dst) * 6 + c, v, mask=valid)
        running += tl.reduce(valid.to(tl.int64), 0, SUM)
    for start in range(running, n, BLOCK):
        p = start + tl.arange(0, BLOCK)
        for c in range(0, 6):
            tl.store(out + (b * n + p) * 6 + c, tl.full((BLOCK,), -1, tl.float32).to(
                out.dtype.element_ty), mask=p < n)


@kernel
def _detect_nms_kernel(rows, order, out, n, padded, topk, thresh, FORCE: tl.constexpr,
                       ACC: tl.constexpr, BLOCK: tl.constexpr):
    """One program per batch item, after the compaction: the ``topk`` best rows (``order``)
    first, the class of the other valid rows set to -1, then greedy suppression among the
    kept rows (IoU >= thresh, same class unless FORCE) by setting their class to -1."""
    b = tl.program_id(0).to(tl.int64)
    count = tl.full((), 0, tl.int32)
    for start in range(0, n, BLOCK):
        p = start + tl.arange(0, BLOCK)
        f = tl.load(rows + (b * n + p) * 6, mask=p < n, other=-1)
        count += tl.reduce((f >= 0).to(tl.int32), 0, SUM)
    keep = count
    if (topk > 0) & (topk < count):
        keep = topk
    ty = out.dtype.element_ty
    for start in range(keep, count, BLOCK):
        p = start + tl.arange(0, BLOCK)
        tl.store(out + (b * n + p) * 6, tl.full((BLOCK,), -1, tl.float32).to(ty), mask=p < count)
    for start in range(0, keep, BLOCK):
        p = start + tl.arange(0, BLOCK)
        mp = p < keep
        src = tl.load(order + b * padded + p, mask=mp, other=0)
        for c in range(0, 6):
            v = tl.load(rows + (b * n + src) * 6 + c, mask=mp, other=0)
            tl.store(out + (b * n + p) * 6 + c, v, mask=mp)
    tl.debug_barrier()
    row = out + b * n * 6
    for i in range(0, keep):
        id_i = tl.load(row + i * 6)
        if id_i >= 0:
            r0 = tl.load(row + i * 6 + 2).to(ACC)
            r1 = tl.load(row + i * 6 + 3).to(ACC)
            r2 = tl.load(row + i * 6 + 4).to(ACC)
            r3 = tl.load(row + i * 6 + 5).to(ACC)
            for start in range(i + 1, keep, BLOCK):
                p = start + tl.arange(0, BLOCK)
                mp = p < keep
                id_p = tl.load(row + p * 6, mask=mp, other=-1)
                hit = mp & (id_p >= 0)
                if not FORCE:
                    hit = hit & (id_p == id_i)
                q0 = tl.load(row + p * 6 + 2, mask=mp, other=0).to(ACC)
                q1 = tl.load(row + p * 6 + 3, mask=mp, other=0).to(ACC)
                q2 = tl.load(row + p * 6 + 4, mask=mp, other=0).to(ACC)
                q3 = tl.load(row + p * 6 + 5, mask=mp, other=0).to(ACC)
                inter = (tl.maximum(tl.minimum(r2, q2) - tl.maximum(r0, q0), 0.0)
                         * tl.maximum(tl.minimum(r3, q3) - tl.maximum(r1, q1), 0.0))
                union = (r2 - r0) * (r3 - r1) + (q2 - q0) * (q3 - q1) - inter
                iou = tl.where(union <= 0, 0.0, inter / tl.where(union <= 0, 1.0, union))
                tl.store(row + p * 6, tl.full((BLOCK,), -1, tl.float32).to(ty),
                         mask=hit & (iou >= thresh))
            tl.debug_barrier()


def multibox_detection(cls_prob, loc_pred, anchor, cfg=DetectionConfig(),
                       out=None) -> torch.Tensor:
    """Check, allocate, launch: (B, N, 6) detections ``[class, score, xmin, ymin, xmax,
    ymax]`` from class probabilities (B, C, N), offsets (B, N * 4) and anchors (1, N, 4)."""
    batch, n_cls, n = cls_prob.shape
    dev, dt = cls_prob.device, cls_prob.dtype
    result = check_out(out, (batch, n, 6), dt, dev)
    if not result.numel():
        return result
    rows = torch.empty((batch, n, 6), dtype=dt, device=dev)
    key = torch.empty((batch, n), dtype=torch.float32, device=dev)
    acc = acc_type(dt)
    block = _block(batch * n, dev)
    _detect_decode_kernel[(cdiv(batch * n, block),)](
        cls_prob.contiguous(), loc_pred.contiguous(), anchor.contiguous(), rows, key, n, n_cls,
        float(cfg.threshold), *map(float, cfg.variances), batch * n, CLIP=bool(cfg.clip),
        ACC=acc, BLOCK=block)
    block = _block(n, dev)
    _detect_compact_kernel[(batch,)](rows, result, n, BLOCK=block)
    if 0 < cfg.nms_threshold <= 1:
        _, order = sort_rows(key, 1, True)
        _detect_nms_kernel[(batch,)](rows, order, result, n, order.shape[1], int(cfg.nms_topk),
                                     float(cfg.nms_threshold), FORCE=bool(cfg.force_suppress),
                                     ACC=acc, BLOCK=block)
    return result


def detection_rows_ref(cls_prob, loc_pred, anchor, cfg) -> torch.Tensor:
    """(B, N, 6) per-anchor rows [class - 1, score, decoded box] before compaction."""
    wide = acc_dtype(cls_prob.dtype)
    batch, n_cls, n = cls_prob.shape
    fg = torch.cat([torch.full((batch, 1, n), -1.0, dtype=wide, device=cls_prob.device),
                    cls_prob.to(wide)[:, 1:]], 1)
    score, cls = fg.max(1).values, fg.argmax(1)
    score = torch.where(cls > 0, score, torch.full_like(score, -1.0))
    cls = torch.where((cls > 0) & (score < cfg.threshold), 0, cls)
    a = anchor.reshape(1, n, 4).to(wide)
    d = loc_pred.reshape(batch, n, 4).to(wide)
    aw, ah = a[..., 2] - a[..., 0], a[..., 3] - a[..., 1]
    v = cfg.variances
    ox = d[..., 0] * v[0] * aw + (a[..., 0] + aw * 0.5)
    oy = d[..., 1] * v[1] * ah + (a[..., 1] + ah * 0.5)
    ow, oh = torch.exp(d[..., 2] * v[2]) * aw / 2, torch.exp(d[..., 3] * v[3]) * ah / 2
    box = torch.stack([ox - ow, oy - oh, ox + ow, oy + oh], -1)
    if cfg.clip:
        box = box.clamp(0.0, 1.0)
    return torch.cat([(cls - 1).to(wide)[..., None], score[..., None], box], -1)


def _detection_sweep(rows: torch.Tensor, force: bool, thresh: float) -> None:
    """Greedy suppression in place over kept rows (N, 6): class set to -1."""
    box = rows[:, 2:]
    inter = ((torch.minimum(box[:, None, 2], box[:, 2]) - torch.maximum(box[:, None, 0],
                                                                          box[:, 0])).clamp(min=0)
             * (torch.minimum(box[:, None, 3], box[:, 3])
                - torch.maximum(box[:, None, 1], box[:, 1])).clamp(min=0))
    area = (box[:, 2] - box[:, 0]) * (box[:, 3] - box[:, 1])
    union = area[:, None] + area - inter
    iou = torch.where(union <= 0, torch.zeros_like(inter), inter / union).cpu().numpy()
    ids = rows[:, 0].cpu().numpy().copy()
    for i in range(len(ids)):
        if ids[i] < 0:
            continue
        later = ids[i + 1:]
        hit = (later >= 0) & (iou[i, i + 1:] >= thresh)
        if not force:
            hit &= later == ids[i]
        later[hit] = -1
    rows[:, 0] = torch.from_numpy(ids).to(rows)


def multibox_detection_ref(cls_prob, loc_pred, anchor, cfg=DetectionConfig()) -> torch.Tensor:
    """Reference: decoding by broadcasting, then per batch item a compaction, a stable sort
    and the greedy sweep over an IoU matrix on the host."""
    rows = detection_rows_ref(cls_prob, loc_pred, anchor, cfg)
    out = torch.full_like(rows, -1)
    for b in range(rows.shape[0]):
        valid = rows[b][rows[b, :, 0] >= 0]
        count = len(valid)
        out[b, :count] = valid
        if count < 1 or not 0 < cfg.nms_threshold <= 1:
            continue
        keep = min(cfg.nms_topk, count) if cfg.nms_topk > 0 else count
        order = torch.sort(valid[:, 1], descending=True, stable=True).indices[:keep]
        out[b, keep:count, 0] = -1
        out[b, :keep] = valid[order]
        _detection_sweep(out[b, :keep], cfg.force_suppress, cfg.nms_threshold)
    return out.to(cls_prob.dtype)


def _make_prior(dtype, device, shape):
    return (torch.zeros(shape, dtype=dtype, device=device),), {
        "sizes": (0.5, 0.3), "ratios": (1.0, 2.0, 0.5), "clip": True, "offsets": (0.4, 0.6)}


def _make_target(dtype, device, shape):
    """Anchors on a grid, labels near some of them (one item padded with -1 rows)."""
    batch, n, n_lab, n_cls = shape
    g = torch.Generator().manual_seed(3)
    xy = torch.rand((n, 2), generator=g) * 0.7
    anchor = torch.cat([xy, xy + 0.1 + torch.rand((n, 2), generator=g) * 0.3], -1)
    pick = torch.randint(0, n, (batch, n_lab), generator=g)
    box = anchor[pick] + (torch.rand((batch, n_lab, 4), generator=g) - 0.5) * 0.1
    cls = torch.randint(0, 3, (batch, n_lab, 1), generator=g).float()
    label = torch.cat([cls, box], -1)
    label[-1, n_lab // 2:] = -1
    cls_pred = torch.randn((batch, n_cls, n), generator=g)
    cfg = TargetConfig(negative_mining_ratio=1.5, negative_mining_thresh=0.5)
    return (anchor[None].to(dtype).to(device), label.to(dtype).to(device),
            cls_pred.to(dtype).to(device), cfg), {}


def _make_detection(dtype, device, shape):
    batch, n_cls, n = shape
    g = torch.Generator().manual_seed(4)
    prob = torch.softmax(torch.randn((batch, n_cls, n), generator=g) * 2, 1)
    loc = (torch.rand((batch, n * 4), generator=g) - 0.5) * 0.6
    xy = torch.rand((n, 2), generator=g) * 0.6
    anchor = torch.cat([xy, xy + 0.2 + torch.rand((n, 2), generator=g) * 0.2], -1)[None]
    cfg = DetectionConfig(threshold=0.2, nms_threshold=0.3, nms_topk=n - 3)
    return tuple(t.to(dtype).to(device) for t in (prob, loc, anchor)) + (cfg,), {}


KERNELS = [
    KernelSpec(name="multibox_target", fn=multibox_target, ref=multibox_target_ref,
               make=_make_target, shapes=((2, 7, 3, 4), (1, 33, 5, 3)),
               bench_shapes=((32, 8732, 16, 21),), dtypes=(torch.float32,),
               bytes=lambda a, lab, c, cfg: tensor_bytes(a, lab, c) * 3, family="multibox"),
    KernelSpec(name="multibox_detection", fn=multibox_detection, ref=multibox_detection_ref,
               make=_make_detection, shapes=((2, 4, 9), (1, 3, 40)),
               bench_shapes=((32, 21, 8732),), dtypes=(torch.float32,),
               bytes=lambda c, loc, a, cfg: tensor_bytes(c, loc, a) * 2, family="multibox"),
    KernelSpec(name="multibox_prior", fn=multibox_prior, ref=multibox_prior_ref,
               make=_make_prior, shapes=((1, 2, 3, 5),), bench_shapes=((1, 1, 64, 64),),
               dtypes=(torch.float32, torch.float16),
               bytes=lambda d, **k: 4 * 4 * 5 * d.shape[2] * d.shape[3], family="multibox"),
]
