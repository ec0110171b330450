"""Position-sensitive ROI pooling: PSROIPooling and DeformablePSROIPooling (R-FCN).

``rois`` rows are ``[batch, x1, y1, x2, y2]``; corners are rounded (half away from zero)
before scaling and the far corner gets +1. Output channel ``ctop`` of bin (ph, pw) reads input
channel ``(ctop * G + gh) * G + gw`` with ``g = floor(p * G / P)`` (``G = group_size``).

* PSROIPooling: bin ``p`` covers ``[floor(p * s + start), ceil((p + 1) * s + start))``
  (``s = max(size, 0.1) / P``), clipped to the map; the output is the window mean (0 when
  empty). Backward adds ``dy / area`` over the window.
* DeformablePSROIPooling: the box is shifted by -0.5; bin (ph, pw) moves by
  ``trans[r, 2 * class + {0, 1}, part_h, part_w] * trans_std * roi size`` and averages its
  ``S x S`` samples ``start + i * bin / S`` that lie in ``[-0.5, size - 0.5]`` (clamped into
  the map, interpolated between floor and ceil). Backward scatters ``dy / count`` with the
  bilinear weights and adds ``dy / count * trans_std * roi size * d value / d position`` to
  the offsets (atomics: several bins share one offset).

One lane per output element, window/sample loops to the block's largest bound. Bytes moved:
the rois and offsets, the windows read (cached: the map once), the output written.
"""
from __future__ import annotations

import torch
import triton.language as tl

from .roi import (
    _accumulator,
    _block,
    _bwd_bytes,
    _entry,
    _finish,
    _fwd_bytes,
    _max_combine,
    _rand,
    _roi_round,
    _rois,
    _round,
)
from .runtime import cdiv, device_meta, kernel
from .sampling import separable

# ---------------------------------------------------------------- PSROIPooling

@kernel(enable_fp_fusion=False)  # bin edges floor/ceil(p * bin + start), rounded as MXNet
def _psroi_kernel(x, rois, y, dy, dx, n, C, H, W, D, P, G, scale, BACKWARD: tl.constexpr,
                  BLOCK: tl.constexpr):
    """Average over each bin's window of its group's channel; backward adds dy / area."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    pw = offs % P
    t = offs // P
    ph = t % P
    t = t // P
    ctop = t % D
    r = t // D
    b = tl.load(rois + r * 5, mask=mask, other=0.0).to(tl.int64)
    x1 = _round(tl.load(rois + r * 5 + 1, mask=mask, other=0.0).to(tl.float32)) * scale
    y1 = _round(tl.load(rois + r * 5 + 2, mask=mask, other=0.0).to(tl.float32)) * scale
    x2 = (_round(tl.load(rois + r * 5 + 3, mask=mask, other=0.0).to(tl.float32)) + 1.0) * scale
    y2 = (_round(tl.load(rois + r * 5 + 4, mask=mask, other=0.0).to(tl.float32)) + 1.0) * scale
    bin_h = tl.maximum(y2 - y1, 0.1) / P.to(tl.float32)
    bin_w = tl.maximum(x2 - x1, 0.1) / P.to(tl.float32)
    hf = H.to(tl.float32)
    wf = W.to(tl.float32)
    h0 = tl.minimum(tl.maximum(tl.floor(ph.to(tl.float32) * bin_h + y1), 0.0), hf).to(tl.int64)
    h1 = tl.minimum(tl.maximum(tl.ceil((ph + 1).to(tl.float32) * bin_h + y1), 0.0),
                    hf).to(tl.int64)
    w0 = tl.minimum(tl.maximum(tl.floor(pw.to(tl.float32) * bin_w + x1), 0.0), wf).to(tl.int64)
    w1 = tl.minimum(tl.maximum(tl.ceil((pw + 1).to(tl.float32) * bin_w + x1), 0.0),
                    wf).to(tl.int64)
    gh = tl.minimum(tl.maximum((ph * G) // P, 0), G - 1)
    gw = tl.minimum(tl.maximum((pw * G) // P, 0), G - 1)
    base = (b * C + (ctop * G + gh) * G + gw) * H * W
    valid = mask & (h1 > h0) & (w1 > w0)
    area = tl.where(valid, (h1 - h0) * (w1 - w0), 1).to(tl.float32)
    if BACKWARD:
        g = tl.load(dy + offs, mask=mask, other=0.0).to(tl.float32) / area
    acc = (offs * 0).to(tl.float32)
    for i in range(0, tl.reduce(tl.where(valid, h1 - h0, 0), 0, _max_combine)):
        for j in range(0, tl.reduce(tl.where(valid, w1 - w0, 0), 0, _max_combine)):
            ok = valid & (h0 + i < h1) & (w0 + j < w1)
            at = x + base + (h0 + i) * W + w0 + j
            if BACKWARD:
                tl.atomic_add(dx + base + (h0 + i) * W + w0 + j, g, mask=ok)
            else:
                acc += tl.load(at, mask=ok, other=0.0).to(tl.float32)
    if not BACKWARD:
        tl.store(y + offs, (acc / area).to(y.dtype.element_ty), mask=mask)


def _psroi_launch(x, rois, a, y, dy, dx) -> None:
    dim, pooled, group, scale = a
    n = rois.shape[0] * dim * pooled * pooled
    if n:
        block = _block(n, x.device)
        _psroi_kernel[(cdiv(n, block),)](x.contiguous(), rois.contiguous(), y, dy, dx, n,
                                         *x.shape[1:], dim, pooled, group, float(scale),
                                         BACKWARD=dy is not None, BLOCK=block)


def psroi_pool(x: torch.Tensor, rois: torch.Tensor, a: tuple, out=None) -> torch.Tensor:
    """PSROIPooling forward; ``a`` = (output_dim, pooled_size, group_size, spatial_scale)."""
    shape = (rois.shape[0], a[0], a[1], a[1])
    y = out if out is not None else torch.empty(shape, dtype=x.dtype, device=x.device)
    _psroi_launch(x, rois, a, y, None, y)
    return y


def psroi_pool_backward(dy: torch.Tensor, x: torch.Tensor, rois: torch.Tensor, a: tuple,
                        out=None) -> torch.Tensor:
    """PSROIPooling data gradient (atomic adds of dy / bin area)."""
    dx = _accumulator(tuple(x.shape), x, out)
    _psroi_launch(x, rois, a, dx, dy.contiguous(), dx)
    return _finish(dx, x.dtype, out)


def _ps_weights(start, end, pooled: int, size: int, dtype) -> torch.Tensor:
    """(pooled, size) window-average weights of one axis (0 rows for empty bins)."""
    bins = torch.clamp(end - start, min=0.1) / pooled
    p = torch.arange(pooled, dtype=torch.float32)
    lo = torch.clamp(torch.floor(p * bins + start), 0, size)
    hi = torch.clamp(torch.ceil((p + 1) * bins + start), 0, size)
    pos = torch.arange(size, dtype=torch.float32)
    inside = (pos[None] >= lo[:, None]) & (pos[None] < hi[:, None])
    return (inside.double() / torch.clamp(hi - lo, min=1)[:, None].double()).to(dtype)


def psroi_pool_ref(x: torch.Tensor, rois: torch.Tensor, a: tuple) -> torch.Tensor:
    """Reference: per ROI, separable window averages, then each bin's group channel."""
    dim, pooled, group, scale = a
    p = torch.arange(pooled)
    g = torch.clamp(p * group // pooled, 0, group - 1)
    chan = (torch.arange(dim)[:, None, None] * group + g[None, :, None]) * group + g[None, None]
    outs = []
    for roi in rois.detach().float().cpu():
        box = _roi_round(roi[1:]) + torch.tensor([0.0, 0.0, 1.0, 1.0])
        box = box * torch.tensor(scale, dtype=torch.float32)
        ah = _ps_weights(box[1], box[3], pooled, x.shape[2], x.dtype).to(x.device)
        aw = _ps_weights(box[0], box[2], pooled, x.shape[3], x.dtype).to(x.device)
        full = separable(ah, x[int(roi[0])], aw)  # (C, P, P)
        outs.append(full.gather(0, chan.to(x.device)))
    return torch.stack(outs) if outs else x.new_zeros((0, dim, pooled, pooled))


def psroi_pool_backward_ref(dy, x, rois, a):
    """Reference: autograd through :func:`psroi_pool_ref`."""
    with torch.enable_grad():
        leaf = x.detach().requires_grad_(True)
        return torch.autograd.grad(psroi_pool_ref(leaf, rois, a), leaf, dy)[0]


# ---------------------------------------------------------------- DeformablePSROIPooling

@kernel(enable_fp_fusion=False)  # sample positions start + i * bin / S, rounded as MXNet
def _deform_kernel(x, rois, trans, y, dy, dx, dtrans, n, geo, scale, std,
                   NO_TRANS: tl.constexpr, BACKWARD: tl.constexpr, BLOCK: tl.constexpr):
    """Average of S x S bilinear samples of a bin shifted by ``trans``; backward scatters
    dy / count into dx and adds the offsets' gradients into dtrans (atomics)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    C, H, W, D = tl.load(geo), tl.load(geo + 1), tl.load(geo + 2), tl.load(geo + 3)
    P, G, PART, S = tl.load(geo + 4), tl.load(geo + 5), tl.load(geo + 6), tl.load(geo + 7)
    K, PER = tl.load(geo + 8), tl.load(geo + 9)  # classes, channels per class
    pw = offs % P
    t = offs // P
    ph = t % P
    t = t // P
    ctop = t % D
    r = t // D
    row = rois + r * 5
    b = tl.load(row, mask=mask, other=0.0).to(tl.int64)
    x1 = _round(tl.load(row + 1, mask=mask, other=0.0).to(tl.float32)) * scale - 0.5
    y1 = _round(tl.load(row + 2, mask=mask, other=0.0).to(tl.float32)) * scale - 0.5
    roi_w = tl.maximum((_round(tl.load(row + 3, mask=mask, other=0.0).to(tl.float32)) + 1.0)
                       * scale - 0.5 - x1, 0.1)
    roi_h = tl.maximum((_round(tl.load(row + 4, mask=mask, other=0.0).to(tl.float32)) + 1.0)
                       * scale - 0.5 - y1, 0.1)
    bin_w = roi_w / P.to(tl.float32)
    bin_h = roi_h / P.to(tl.float32)
    part_h = tl.floor(ph.to(tl.float32) / P.to(tl.float32) * PART.to(tl.float32)).to(tl.int64)
    part_w = tl.floor(pw.to(tl.float32) / P.to(tl.float32) * PART.to(tl.float32)).to(tl.int64)
    t_at = (((r * K + ctop // PER) * 2) * PART + part_h) * PART + part_w
    tx = (offs * 0).to(tl.float32)
    ty = (offs * 0).to(tl.float32)
    if not NO_TRANS:
        tx = tl.load(trans + t_at, mask=mask, other=0.0).to(tl.float32) * std
        ty = tl.load(trans + t_at + PART * PART, mask=mask, other=0.0).to(tl.float32) * std
    w_start = pw.to(tl.float32) * bin_w + x1 + tx * roi_w
    h_start = ph.to(tl.float32) * bin_h + y1 + ty * roi_h
    gw = tl.minimum(tl.maximum((pw * G) // P, 0), G - 1)
    gh = tl.minimum(tl.maximum((ph * G) // P, 0), G - 1)
    base = (b * C + (ctop * G + gh) * G + gw) * H * W
    wf = W.to(tl.float32)
    hf = H.to(tl.float32)
    total = (offs * 0).to(tl.float32)
    count = (offs * 0).to(tl.float32)
    for ih in range(0, S):
        for iw in range(0, S):
            wv = w_start + iw * (bin_w / S.to(tl.float32))
            hv = h_start + ih * (bin_h / S.to(tl.float32))
            ok = mask & (wv >= -0.5) & (wv <= wf - 0.5) & (hv >= -0.5) & (hv <= hf - 0.5)
            count += tl.where(ok, 1.0, 0.0)
    if BACKWARD:
        g = tl.load(dy + offs, mask=mask, other=0.0).to(tl.float32) / tl.maximum(count, 1.0)
        gtx = (offs * 0).to(tl.float32)
        gty = (offs * 0).to(tl.float32)
    for ih in range(0, S):
        for iw in range(0, S):
            wv = w_start + iw * (bin_w / S.to(tl.float32))
            hv = h_start + ih * (bin_h / S.to(tl.float32))
            ok = mask & (wv >= -0.5) & (wv <= wf - 0.5) & (hv >= -0.5) & (hv <= hf - 0.5)
            wv = tl.minimum(tl.maximum(wv, 0.0), wf - 1.0)
            hv = tl.minimum(tl.maximum(hv, 0.0), hf - 1.0)
            xa = tl.floor(wv)
            ya = tl.floor(hv)
            lx = wv - xa
            ly = hv - ya
            xa_i = xa.to(tl.int64)
            ya_i = ya.to(tl.int64)
            xb_i = tl.ceil(wv).to(tl.int64)
            yb_i = tl.ceil(hv).to(tl.int64)
            v00 = tl.load(x + base + ya_i * W + xa_i, mask=ok, other=0.0).to(tl.float32)
            v01 = tl.load(x + base + yb_i * W + xa_i, mask=ok, other=0.0).to(tl.float32)
            v10 = tl.load(x + base + ya_i * W + xb_i, mask=ok, other=0.0).to(tl.float32)
            v11 = tl.load(x + base + yb_i * W + xb_i, mask=ok, other=0.0).to(tl.float32)
            if BACKWARD:
                tl.atomic_add(dx + base + ya_i * W + xa_i, (1 - lx) * (1 - ly) * g, mask=ok)
                tl.atomic_add(dx + base + yb_i * W + xa_i, (1 - lx) * ly * g, mask=ok)
                tl.atomic_add(dx + base + ya_i * W + xb_i, lx * (1 - ly) * g, mask=ok)
                tl.atomic_add(dx + base + yb_i * W + xb_i, lx * ly * g, mask=ok)
                gtx += tl.where(ok, (v11 * ly + v10 * (1 - ly) - v01 * ly - v00 * (1 - ly)), 0.0)
                gty += tl.where(ok, (v11 * lx + v01 * (1 - lx) - v10 * lx - v00 * (1 - lx)), 0.0)
            else:
                total += ((1 - lx) * (1 - ly) * v00 + (1 - lx) * ly * v01
                          + lx * (1 - ly) * v10 + lx * ly * v11)
    if BACKWARD:
        if not NO_TRANS:
            live = mask & (count > 0)
            tl.atomic_add(dtrans + t_at, gtx * std * g * roi_w, mask=live)
            tl.atomic_add(dtrans + t_at + PART * PART, gty * std * g * roi_h, mask=live)
    else:
        tl.store(y + offs, tl.where(count > 0, total / tl.maximum(count, 1.0), 0.0)
                 .to(y.dtype.element_ty), mask=mask)


def _deform_launch(x, rois, trans, a, outs, dy=None) -> None:
    dim, pooled, group, part, samples, scale, std = a
    classes = 1 if trans is None else trans.shape[1] // 2
    geo = device_meta([*x.shape[1:], dim, pooled, group, part, samples, classes,
                       dim // classes], x.device)
    n = rois.shape[0] * dim * pooled * pooled
    if n:
        block = _block(n, x.device)
        t = trans.contiguous() if trans is not None else rois
        _deform_kernel[(cdiv(n, block),)](
            x.contiguous(), rois.contiguous(), t, outs[0], dy, outs[0], outs[1], n, geo,
            float(scale), float(std), NO_TRANS=trans is None, BACKWARD=dy is not None,
            BLOCK=block)


def deform_psroi_pool(x, rois, trans, a: tuple, out=None) -> torch.Tensor:
    """DeformablePSROIPooling forward; ``a`` = (output_dim, pooled_size, group_size,
    part_size, sample_per_part, spatial_scale, trans_std); ``trans`` None: no_trans."""
    shape = (rois.shape[0], a[0], a[1], a[1])
    y = out if out is not None else torch.empty(shape, dtype=x.dtype, device=x.device)
    _deform_launch(x, rois, trans, a, (y, y))
    return y


def deform_psroi_pool_backward(dy, x, rois, trans, a: tuple, out=None):
    """Gradients (dx, dtrans) of DeformablePSROIPooling (dtrans zeros-shaped (0,) without
    trans); fp32 atomics."""
    out = out if out is not None else (None, None)
    dx = _accumulator(tuple(x.shape), x, out[0])
    like = trans if trans is not None else x.new_empty((0,))
    dt = _accumulator(tuple(like.shape), like, out[1])
    _deform_launch(x, rois, trans, a, (dx, dt), dy.contiguous())
    return _finish(dx, x.dtype, out[0]), _finish(dt, like.dtype, out[1])


def _deform_coords(rois, trans, a, dtype):
    """Sample coordinates (R, D, P, P, S, S) of every output, with the group channel index
    (D, P, P) and the in-range mask."""
    dim, pooled, group, part, samples, scale, std = a
    box = _roi_round(rois[:, 1:].to(dtype)) + torch.tensor([0.0, 0.0, 1.0, 1.0], dtype=dtype)
    box = box * torch.tensor(scale, dtype=torch.float32).to(dtype) - 0.5
    size = torch.clamp(box[:, 2:] - box[:, :2], min=0.1)  # (R, 2): w, h
    binw, binh = (size / pooled).unbind(1)
    p = torch.arange(pooled)
    part_i = torch.floor(p.to(dtype) / pooled * part).long()
    cls = torch.arange(dim) // (dim // (1 if trans is None else trans.shape[1] // 2))
    if trans is None:
        tx = ty = torch.zeros((rois.shape[0], dim, pooled, pooled), dtype=dtype)
    else:
        sel = trans[:, :, part_i][:, :, :, part_i].reshape(rois.shape[0], -1, 2, pooled, pooled)
        tx, ty = sel[:, cls, 0] * std, sel[:, cls, 1] * std
    i = torch.arange(samples, dtype=dtype)
    pf = p.to(dtype)
    wv = (pf[None, None, None, :] * binw[:, None, None, None] + box[:, 0, None, None, None]
          + tx * size[:, 0, None, None, None])[..., None, None] + \
        (i * (binw[:, None] / samples))[:, None, None, None, None, :]
    hv = (pf[None, None, :, None] * binh[:, None, None, None] + box[:, 1, None, None, None]
          + ty * size[:, 1, None, None, None])[..., None, None] + \
        (i * (binh[:, None] / samples))[:, None, None, None, :, None]
    g = torch.clamp(p * group // pooled, 0, group - 1)
    chan = (torch.arange(dim)[:, None, None] * group + g[None, :, None]) * group + g[None, None]
    return wv, hv, chan


def deform_psroi_pool_ref(x, rois, trans, a: tuple) -> torch.Tensor:
    """Reference: all samples at once, four gathers, masked mean per output."""
    n, c, h, w = x.shape
    wv, hv, chan = _deform_coords(rois.detach().cpu(), trans if trans is None else
                                  trans.cpu(), a, x.dtype)
    ok = (wv >= -0.5) & (wv <= w - 0.5) & (hv >= -0.5) & (hv <= h - 0.5)
    wv, hv = wv.clamp(0, w - 1), hv.clamp(0, h - 1)
    xa, ya = torch.floor(wv), torch.floor(hv)
    lx, ly = wv - xa, hv - ya
    b = rois[:, 0].long().cpu()[:, None, None, None, None, None]
    base = (b * c + chan[None, :, :, :, None, None]) * h * w
    flat = x.reshape(-1).cpu() if x.device.type != "cpu" else x.reshape(-1)
    total = 0
    for yy, wy in ((ya, 1 - ly), (torch.ceil(hv), ly)):
        for xx, wx in ((xa, 1 - lx), (torch.ceil(wv), lx)):
            idx = torch.where(ok, base + yy.long() * w + xx.long(), torch.zeros_like(base))
            total = total + flat[idx] * wy * wx * ok
    count = ok.sum((-1, -2)).to(x.dtype)
    out = total.sum((-1, -2)) / torch.clamp(count, min=1)
    return out.to(x.device)


def deform_psroi_pool_backward_ref(dy, x, rois, trans, a: tuple):
    """Reference: autograd through :func:`deform_psroi_pool_ref`."""
    with torch.enable_grad():
        leaves = [x.detach().requires_grad_(True)]
        if trans is not None:
            leaves.append(trans.detach().requires_grad_(True))
        out = deform_psroi_pool_ref(leaves[0], rois, leaves[1] if trans is not None else None,
                                    a)
        grads = torch.autograd.grad(out, leaves, dy)
    return grads[0], grads[1] if trans is not None else x.new_zeros((0,))


# ---------------------------------------------------------------- table entries

def _make_psroi(dtype, device, shape):
    a = (2, 3, 2, 0.5) if shape[1] == 8 else (1, 2, 2, 0.5)
    rois = _rois(device, shape, a[3])
    rois[:, 0] = rois[:, 0].clamp(min=0)
    x = _rand(dtype, device, (shape[0], a[0] * a[2] * a[2]) + tuple(shape[2:]))
    return (x, rois, a), {}


def _make_psroi_bwd(dtype, device, shape):
    (x, rois, a), _ = _make_psroi(dtype, device, shape)
    return (_rand(dtype, device, (rois.shape[0], a[0], a[1], a[1]), seed=2), x, rois, a), {}


_DEFORM = (2, 3, 2, 2, 2, 0.5, 0.3)


def _make_deform(dtype, device, shape):
    (x, rois, _), _ = _make_psroi(dtype, device, (shape[0], 8) + tuple(shape[2:]))
    trans = _rand(dtype, device, (rois.shape[0], 2, 2, 2), seed=4)
    return (x, rois, trans if shape[1] == 3 else None, _DEFORM), {}


def _make_deform_bwd(dtype, device, shape):
    (x, rois, trans, a), _ = _make_deform(dtype, device, shape)
    return (_rand(dtype, device, (rois.shape[0], 2, 3, 3), seed=2), x, rois, trans, a), {}


KERNELS = [
    _entry("deform_psroi_pool_fwd", deform_psroi_pool, deform_psroi_pool_ref, _make_deform,
           _fwd_bytes, "psroi"),
    _entry("deform_psroi_pool_bwd", deform_psroi_pool_backward, deform_psroi_pool_backward_ref,
           _make_deform_bwd, _bwd_bytes, "psroi"),
    _entry("psroi_pool_fwd", psroi_pool, psroi_pool_ref, _make_psroi, _fwd_bytes, "psroi"),
    _entry("psroi_pool_bwd", psroi_pool_backward, psroi_pool_backward_ref, _make_psroi_bwd,
           _bwd_bytes, "psroi"),
]
