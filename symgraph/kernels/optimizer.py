"""Fused multi-tensor optimizer updates: every parameter of a model updated in one launch.

One kernel, :func:`_update_kernel`, applies one of MXNet 1.9.1's update rules to a list of
tensors ("multi_tensor_apply"). The wrapper packs, per tensor, the data pointers of the
weight, gradient and states it reads and of the weight and states it writes, and the
tensor's size, into an int64 row table; the tensor's ``lr`` and ``wd`` (MXNet's
``lr_mult``/``wd_mult`` applied) go in a float32 table. A second table lists the launch's
chunks as (tensor, start) pairs: one program per chunk of ``CHUNK`` elements, so a
100-tensor model with one huge embedding keeps every program equally busy. Arithmetic is in
fp32; weights and gradients may be fp16 (states stay fp32).

The rules, with ``clip(x) = min(max(x, -c), c)`` applied only when ``clip_gradient >= 0``
and ``r = rescale_grad`` (each checked against MXNet 1.9.1: ``tests/fixtures/optimizer``)::

    sgd_update:        G = clip(r*g) + wd*w;  w -= lr*G
    sgd_mom_update:    G = clip(r*g) + wd*w;  mom = momentum*mom - lr*G;  w += mom
    nag_mom_update:    G = clip(r*g) + wd*w;  w' = w + momentum*(momentum*mom - lr*G) - lr*G
                       mom = momentum*mom - lr*(clip(r*g) + wd*w')
    adam_update:       G = clip(r*g + wd*w)   (wd inside the clip, unlike SGD)
                       mean = beta1*mean + (1-beta1)*G;  var = beta2*var + (1-beta2)*G^2
                       w -= lr * mean / (sqrt(var) + epsilon)
    rmsprop_update:    G = clip(r*g + wd*w);  n = (1-gamma1)*G^2 + gamma1*n
                       w -= lr * G / sqrt(n + epsilon)
    rmspropalex_update G = clip(r*g + wd*w);  n = (1-gamma1)*G^2 + gamma1*n
      (centered):      gm = (1-gamma1)*G + gamma1*gm
                       delta = gamma2*delta - lr * G / sqrt(n - gm^2 + epsilon);  w += delta
    adagrad_update:    G = clip(r*g);  history += G^2
                       w -= lr * (G / sqrt(history + epsilon) + wd*w)

RMSProp (both) then clips the weight to ``[-clip_weights, clip_weights]`` when
``clip_weights >= 0``. Adam's bias correction is not in the op: MXNet's ``optimizer.Adam``
passes ``lr * sqrt(1 - beta2^t) / (1 - beta1^t)`` (:func:`adam_lr`). NAG's momentum takes
its weight-decay term from the *updated* weight ``w'``: ``optimizer.NAG`` calls
``nag_mom_update(..., out=weight)`` and the op writes the weight before it reads it again
for the momentum, so that is what MXNet 1.9.1 training computes (with ``wd = 0`` it is
``mom = momentum*mom - lr*G``, ``w += momentum*mom - lr*G``). AdaGrad is MXNet's
``optimizer.AdaGrad`` dense path (Python, no op), whose epsilon sits inside the square root.

Bytes moved: each update reads weight, gradient and states and writes weight and states.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import triton.language as tl

from .philox import device
from .reduce import SUM
from .runtime import device_meta, kernel
from .table import KernelSpec, tensor_bytes

(SGD, SGD_MOM, NAG, ADAM, RMSPROP, RMSPROP_ALEX, ADAGRAD, NAG_OP, SIGNSGD, SIGNUM, FTRL, FTML,
 ADAMW, LAMB1, LAMB2, RESET, ADAMW_G) = range(17)
_ROW = 10  # table columns: w_in, g, s0_in, s1_in, s2_in, w_out, s0_out, s1_out, s2_out, numel
_RATES = 4  # per-tensor floats: lr, wd, k0, k1 (FTML's and LAMB's bias terms)


@device
def _sign_dev(x):
    """MXNet's ``(x > 0) - (x < 0)`` (0 for NaN)."""
    return tl.where(x > 0, 1.0, 0.0) - tl.where(x < 0, 1.0, 0.0)


@kernel
def _update_kernel(rows, chunks, rates, consts, w_like, s_like, KIND: tl.constexpr,
                   CHUNK: tl.constexpr, BLOCK: tl.constexpr):
    """Apply rule KIND (see the module constants) to elements [start, start + CHUNK) of the
    chunk's tensor."""
    t = tl.load(chunks + 2 * tl.program_id(0))
    start = tl.load(chunks + 2 * tl.program_id(0) + 1)
    row = rows + t * 10
    wty = tl.pointer_type(w_like.dtype.element_ty)
    sty = tl.pointer_type(s_like.dtype.element_ty)
    w_in, g_in, w_out = tl.load(row).to(wty), tl.load(row + 1).to(wty), tl.load(row + 5).to(wty)
    s0, s0o = tl.load(row + 2).to(sty), tl.load(row + 6).to(sty)
    s1, s1o = tl.load(row + 3).to(sty), tl.load(row + 7).to(sty)
    s2, s2o = tl.load(row + 4).to(sty), tl.load(row + 8).to(sty)
    n = tl.load(row + 9)
    lr, wd = tl.load(rates + 4 * t), tl.load(rates + 4 * t + 1)
    k0, k1 = tl.load(rates + 4 * t + 2), tl.load(rates + 4 * t + 3)
    rescale, clip = tl.load(consts), tl.load(consts + 1)
    a, b = tl.load(consts + 2), tl.load(consts + 3)
    eps, clip_w = tl.load(consts + 4), tl.load(consts + 5)
    c6 = tl.load(consts + 6)
    for i in range(0, CHUNK, BLOCK):
        offs = start + i + tl.arange(0, BLOCK)
        mask = offs < n
        w = tl.load(w_in + offs, mask=mask, other=0.0).to(tl.float32)
        g = tl.load(g_in + offs, mask=mask, other=0.0).to(tl.float32) * rescale
        if KIND == 3 or KIND == 4 or KIND == 5 or KIND == 11:
            g = g + wd * w
        g = tl.minimum(tl.maximum(g, -clip), clip)
        gc = g
        if KIND == 0 or KIND == 1 or KIND == 2 or KIND == 7 or KIND == 9:
            g = g + wd * w
        if KIND == 0:
            w = w - lr * g
        if KIND == 1 or KIND == 2 or KIND == 7:
            p = a * tl.load(s0 + offs, mask=mask, other=0.0)
            m = p - lr * g
        if KIND == 1:
            w = w + m
        if KIND == 2:
            w = w + a * m - lr * g
            m = p - lr * (gc + wd * w)  # MXNet's in-place NAG: wd term of mom from the new w
        if KIND == 7:  # the nag_mom_update op writing a new array: mom from the old w
            w = w + a * m - lr * g
        if KIND == 1 or KIND == 2 or KIND == 7:
            tl.store(s0o + offs, m.to(s0o.dtype.element_ty), mask=mask)
        if KIND == 3 or KIND == 12 or KIND == 13 or KIND == 16:
            m = a * tl.load(s0 + offs, mask=mask, other=0.0) + (1.0 - a) * g
            v = b * tl.load(s1 + offs, mask=mask, other=0.0) + (1.0 - b) * g * g
            tl.store(s0o + offs, m.to(s0o.dtype.element_ty), mask=mask)
            tl.store(s1o + offs, v.to(s1o.dtype.element_ty), mask=mask)
        if KIND == 3:
            w = w - lr * m / (tl.sqrt(v) + eps)
        if KIND == 12 or KIND == 16:  # lr and wd arrive multiplied by eta
            w = w - (lr * m / (tl.sqrt(v) + eps) + wd * w)
        if KIND == 16:  # MXNet 1.9.1's _adamw_update also leaves clip(rescale * g) in grad
            tl.store(s2o + offs, gc.to(s2o.dtype.element_ty), mask=mask)
        if KIND == 13:  # the output is LAMB's direction, not a weight
            w = (m / k0) / (tl.sqrt(v / k1) + eps) + wd * w
        if KIND == 4 or KIND == 5:
            v = (1.0 - a) * g * g + a * tl.load(s0 + offs, mask=mask, other=0.0)
            tl.store(s0o + offs, v.to(s0o.dtype.element_ty), mask=mask)
        if KIND == 4:
            w = w - lr * g / tl.sqrt(v + eps)
        if KIND == 5:
            gm = (1.0 - a) * g + a * tl.load(s1 + offs, mask=mask, other=0.0)
            d = b * tl.load(s2 + offs, mask=mask, other=0.0) - lr * g / tl.sqrt(v - gm * gm + eps)
            tl.store(s1o + offs, gm.to(s1o.dtype.element_ty), mask=mask)
            tl.store(s2o + offs, d.to(s2o.dtype.element_ty), mask=mask)
            w = w + d
        if KIND == 4 or KIND == 5:
            w = tl.minimum(tl.maximum(w, -clip_w), clip_w)
        if KIND == 6:
            h = tl.load(s0 + offs, mask=mask, other=0.0) + g * g
            tl.store(s0o + offs, h.to(s0o.dtype.element_ty), mask=mask)
            w = w - lr * (g / tl.sqrt(h + eps) + wd * w)
        if KIND == 8:
            w = (1.0 - lr * wd) * w - lr * _sign_dev(g)
        if KIND == 9:
            m = a * tl.load(s0 + offs, mask=mask, other=0.0) - (1.0 - a) * g
            tl.store(s0o + offs, m.to(s0o.dtype.element_ty), mask=mask)
            w = (1.0 - lr * c6) * w + lr * _sign_dev(m)
        if KIND == 10:
            n0 = tl.load(s1 + offs, mask=mask, other=0.0)
            z = tl.load(s0 + offs, mask=mask, other=0.0) + g \
                - (tl.sqrt(n0 + g * g) - tl.sqrt(n0)) * w / lr
            n1 = n0 + g * g
            tl.store(s0o + offs, z.to(s0o.dtype.element_ty), mask=mask)
            tl.store(s1o + offs, n1.to(s1o.dtype.element_ty), mask=mask)
            w = -_sign_dev(z) * tl.maximum(tl.abs(z) - a, 0.0) / ((b + tl.sqrt(n1)) / lr + wd)
        if KIND == 11:
            d0 = tl.load(s0 + offs, mask=mask, other=0.0)
            v = b * tl.load(s1 + offs, mask=mask, other=0.0) + (1.0 - b) * g * g
            dt = k0 / lr * (tl.sqrt(v / k1) + eps)
            z = a * tl.load(s2 + offs, mask=mask, other=0.0) + (1.0 - a) * g - (dt - a * d0) * w
            tl.store(s0o + offs, dt.to(s0o.dtype.element_ty), mask=mask)
            tl.store(s1o + offs, v.to(s1o.dtype.element_ty), mask=mask)
            tl.store(s2o + offs, z.to(s2o.dtype.element_ty), mask=mask)
            w = -z / dt
        if KIND == 14:  # r1, r2: one-element states
            r1 = tl.load(s0).to(tl.float32)
            r1 = tl.where(a >= 0, tl.maximum(r1, a), r1)
            r1 = tl.where(b >= 0, tl.minimum(r1, b), r1)
            r2 = tl.load(s1).to(tl.float32)
            ratio = tl.where((r1 == 0) | (r2 == 0), 1.0, r1 / r2)
            w = w - lr * ratio * g
        if KIND == 15:
            w = tl.full([BLOCK], 0.0, tl.float32)
        tl.store(w_out + offs, w.to(w_out.dtype.element_ty), mask=mask)


@dataclass(frozen=True)
class UpdateParams:
    """Hyperparameters of one update, under MXNet's op attribute names.

    ``lr`` and ``wd`` are one float for every tensor or one per tensor (MXNet's
    ``lr_mult``/``wd_mult`` already applied). ``clip_gradient`` and ``clip_weights`` clip only
    when ``>= 0``. ``momentum`` serves SGD and NAG, ``beta1``/``beta2`` Adam,
    ``gamma1``/``gamma2`` RMSProp; ``epsilon`` is Adam's, RMSProp's and AdaGrad's.
    """

    lr: float | Sequence[float]
    wd: float | Sequence[float] = 0.0
    rescale_grad: float | torch.Tensor = 1.0  # or a one-element device tensor (AdamW's input)
    clip_gradient: float = -1.0
    momentum: float = 0.0
    beta1: float = 0.9
    beta2: float = 0.999
    epsilon: float = 1e-8
    gamma1: float = 0.95
    gamma2: float = 0.9
    clip_weights: float = -1.0
    lamda1: float = 0.01
    beta: float = 1.0
    wd_lh: float = 0.0
    lower_bound: float = -1.0
    upper_bound: float = -1.0
    # per tensor (k0, k1): FTML's (1 - beta1^t, 1 - beta2^t), LAMB's bias corrections
    bias: Sequence[tuple[float, float]] | None = None

    def per_tensor(self, count: int) -> list[tuple[float, float]]:
        """(lr, wd) of each of ``count`` tensors."""
        lrs = [self.lr] * count if isinstance(self.lr, (int, float)) else list(self.lr)
        wds = [self.wd] * count if isinstance(self.wd, (int, float)) else list(self.wd)
        if len(lrs) != count or len(wds) != count:
            raise ValueError(f"{count} tensors but {len(lrs)} lr and {len(wds)} wd values")
        return [(float(lr), float(wd)) for lr, wd in zip(lrs, wds)]

    def rate_table(self, count: int, device) -> torch.Tensor:
        """The kernel's (count, 4) float32 table of lr, wd, k0, k1; ``lr`` and ``wd`` may be
        device tensors (MXNet's preloaded ops), read by the kernel without a host copy."""
        bias = list(self.bias) if self.bias is not None else [(1.0, 1.0)] * count
        if isinstance(self.lr, torch.Tensor):
            cols = [self.lr.reshape(-1).float(), self.wd.reshape(-1).float()]
            extra = device_meta([v for k in bias for v in k], device, torch.float32)
            return torch.cat([torch.stack(cols, 1).to(device), extra.reshape(count, 2)],
                             1).contiguous()
        rows = [v for (lr, wd), k in zip(self.per_tensor(count), bias) for v in (lr, wd, *k)]
        # copied once per distinct table: a changing learning rate copies as it changes
        return device_meta(rows, device, torch.float32).reshape(count, _RATES)


def adam_lr(lr: float, beta1: float, beta2: float, t: int) -> float:
    """The bias-corrected step MXNet's ``optimizer.Adam`` passes to ``adam_update`` at step t."""
    return lr * math.sqrt(1.0 - beta2 ** t) / (1.0 - beta1 ** t)


_NO_RESCALE = (SIGNSGD, LAMB2, RESET)  # rules that read the gradient as given


def _consts(kind: int, hp: UpdateParams) -> list[float]:
    """[rescale, clip, a, b, eps, clip_weights, wd_lh] as the kernel reads them (inf: no
    clip)."""
    betas = (hp.beta1, hp.beta2)
    a, b = {SGD_MOM: (hp.momentum, 0.0), NAG: (hp.momentum, 0.0), NAG_OP: (hp.momentum, 0.0),
            ADAM: betas, ADAMW: betas, ADAMW_G: betas, LAMB1: betas, FTML: betas,
            SIGNUM: (hp.momentum, 0.0),
            RMSPROP: (hp.gamma1, 0.0), RMSPROP_ALEX: (hp.gamma1, hp.gamma2),
            FTRL: (hp.lamda1, hp.beta), LAMB2: (hp.lower_bound, hp.upper_bound)
            }.get(kind, (0., 0.))
    clip = hp.clip_gradient if hp.clip_gradient >= 0 and kind not in _NO_RESCALE else math.inf
    clip_w = hp.clip_weights if hp.clip_weights >= 0 else math.inf
    rescale = 1.0 if kind in _NO_RESCALE else hp.rescale_grad
    return [rescale, clip, a, b, hp.epsilon, clip_w, hp.wd_lh]


def _check(weights, grads, states, kind: int) -> None:
    for i, w in enumerate(weights):
        others = [grads[i]] + ([] if kind == LAMB2 else [s[i] for s in states])
        if any(o.shape != w.shape or not o.is_contiguous() for o in others + [w]):
            raise ValueError(f"tensor {i}: weight {tuple(w.shape)}, grad and states "
                             f"{[tuple(o.shape) for o in others]} must match and be contiguous")
        if grads[i].dtype != w.dtype or any(s[i].dtype != states[0][0].dtype for s in states):
            raise ValueError(f"tensor {i}: grad dtype {grads[i].dtype} != weight {w.dtype}, "
                             "or states of mixed dtypes")


def _launch(kind: int, weights, grads, states, hp: UpdateParams, out) -> tuple:
    """Check, pack the pointer and chunk tables, launch; return (weights..., states...)."""
    weights, grads = list(weights), list(grads)
    states = [list(s) for s in states]
    if len(grads) != len(weights) or any(len(s) != len(weights) for s in states):
        raise ValueError(f"{len(weights)} weights, {len(grads)} grads, "
                         f"{[len(s) for s in states]} states")
    _check(weights, grads, states, kind)
    ins = weights + [t for s in states for t in s]
    outs = ins if out is None else list(out)
    if len(outs) != len(ins) or any(o.shape != i.shape or o.dtype != i.dtype
                                    or not o.is_contiguous() for o, i in zip(outs, ins)):
        raise ValueError(f"out must be {len(ins)} contiguous tensors like (weights, states)")
    if not weights:
        return ()
    count, dev = len(weights), weights[0].device
    cpu = dev.type != "cuda"
    block, chunk = (64, 128) if cpu else (1024, 16384)
    rows, chunk_rows = [], []
    for i, w in enumerate(weights):
        st_in = [s[i].data_ptr() for s in states] + [0] * (3 - len(states))
        st_out = [outs[count * (k + 1) + i].data_ptr() for k in range(len(states))]
        rows += [w.data_ptr(), grads[i].data_ptr(), *st_in, outs[i].data_ptr(),
                 *(st_out + [0] * (3 - len(states))), w.numel()]
        chunk_rows += [v for start in range(0, w.numel(), chunk) for v in (i, start)]
    if not chunk_rows:
        return tuple(outs)
    s_like = states[0][0] if states else weights[0]
    _update_kernel[(len(chunk_rows) // 2,)](
        device_meta(rows, dev), device_meta(chunk_rows, dev), hp.rate_table(count, dev),
        _const_table(kind, hp, dev), weights[0], s_like, KIND=kind, CHUNK=chunk, BLOCK=block)
    return tuple(outs)


def _const_table(kind: int, hp: UpdateParams, dev) -> torch.Tensor:
    """The kernel's constants on the device (a device ``rescale_grad`` joins them there)."""
    consts = _consts(kind, hp)
    if not isinstance(consts[0], torch.Tensor):
        return device_meta(consts, dev, torch.float32)
    return torch.cat([consts[0].reshape(1).float(), device_meta(consts[1:], dev, torch.float32)])


def _clip(x: torch.Tensor, bound: float) -> torch.Tensor:
    return x.clamp(-bound, bound) if bound >= 0 else x


def _per_tensor(step, weights, grads, states, hp: UpdateParams, bias: bool = False) -> tuple:
    """Run ``step(w, g, lr, wd, *states) -> (w, *states)`` per tensor in fp32, out of place
    (``bias``: ``step(w, g, lr, wd, k0, k1, *states)``)."""
    new_w, new_s = [], [[] for _ in states]
    rates = hp.rate_table(len(weights), "cpu").tolist() if weights else []
    for i, ((lr, wd, k0, k1), w, g) in enumerate(zip(rates, weights, grads)):
        ks = (k0, k1) if bias else ()
        res = step(w.float(), g.float(), lr, wd, *ks, *[s[i].float() for s in states])
        new_w.append(res[0].to(w.dtype))
        for k, s in enumerate(res[1:]):
            new_s[k].append(s.to(states[k][i].dtype))
    return tuple(new_w) + tuple(t for s in new_s for t in s)


def _sign(x: torch.Tensor) -> torch.Tensor:
    return torch.sign(x).nan_to_num(0.0)


def sgd_update(weights, grads, hp: UpdateParams, out=None) -> tuple:
    """Launch: MXNet ``sgd_update`` on every tensor (in place unless ``out``); the weights."""
    return _launch(SGD, weights, grads, (), hp, out)


def sgd_update_ref(weights, grads, hp: UpdateParams) -> tuple:
    """Reference: reads w and g, writes w."""
    def step(w, g, lr, wd):
        return (w - lr * (_clip(hp.rescale_grad * g, hp.clip_gradient) + wd * w),)
    return _per_tensor(step, weights, grads, (), hp)


def sgd_mom_update(weights, grads, moms, hp: UpdateParams, out=None) -> tuple:
    """Launch: MXNet ``sgd_mom_update`` on every tensor; (weights..., moms...)."""
    return _launch(SGD_MOM, weights, grads, (moms,), hp, out)


def sgd_mom_update_ref(weights, grads, moms, hp: UpdateParams) -> tuple:
    """Reference: reads w, g, mom; writes w, mom."""
    def step(w, g, lr, wd, mom):
        mom = hp.momentum * mom - lr * (_clip(hp.rescale_grad * g, hp.clip_gradient) + wd * w)
        return w + mom, mom
    return _per_tensor(step, weights, grads, (moms,), hp)


def nag_mom_update(weights, grads, moms, hp: UpdateParams, out=None) -> tuple:
    """Launch: MXNet ``nag_mom_update`` on every tensor; (weights..., moms...)."""
    return _launch(NAG, weights, grads, (moms,), hp, out)


def nag_mom_update_ref(weights, grads, moms, hp: UpdateParams) -> tuple:
    """Reference: reads w, g, mom; writes w, mom."""
    def step(w, g, lr, wd, mom):
        g = _clip(hp.rescale_grad * g, hp.clip_gradient)
        w_new = w + hp.momentum * (hp.momentum * mom - lr * (g + wd * w)) - lr * (g + wd * w)
        return w_new, hp.momentum * mom - lr * (g + wd * w_new)
    return _per_tensor(step, weights, grads, (moms,), hp)


def adam_update(weights, grads, means, variances, hp: UpdateParams, out=None) -> tuple:
    """Launch: MXNet ``adam_update`` (``hp.lr`` already bias-corrected, :func:`adam_lr`);
    (weights..., means..., variances...)."""
    return _launch(ADAM, weights, grads, (means, variances), hp, out)


def adam_update_ref(weights, grads, means, variances, hp: UpdateParams) -> tuple:
    """Reference: reads w, g, mean, var; writes w, mean, var."""
    def step(w, g, lr, wd, mean, var):
        g = _clip(hp.rescale_grad * g + wd * w, hp.clip_gradient)
        mean = hp.beta1 * mean + (1 - hp.beta1) * g
        var = hp.beta2 * var + (1 - hp.beta2) * g * g
        return w - lr * mean / (var.sqrt() + hp.epsilon), mean, var
    return _per_tensor(step, weights, grads, (means, variances), hp)


def rmsprop_update(weights, grads, ns, hp: UpdateParams, out=None) -> tuple:
    """Launch: MXNet ``rmsprop_update`` (plain RMSProp); (weights..., n...)."""
    return _launch(RMSPROP, weights, grads, (ns,), hp, out)


def rmsprop_update_ref(weights, grads, ns, hp: UpdateParams) -> tuple:
    """Reference: reads w, g, n; writes w, n."""
    def step(w, g, lr, wd, n):
        g = _clip(hp.rescale_grad * g + wd * w, hp.clip_gradient)
        n = (1 - hp.gamma1) * g * g + hp.gamma1 * n
        return _clip(w - lr * g / (n + hp.epsilon).sqrt(), hp.clip_weights), n
    return _per_tensor(step, weights, grads, (ns,), hp)


def rmspropalex_update(weights, grads, ns, gs, deltas, hp: UpdateParams, out=None) -> tuple:
    """Launch: MXNet ``rmspropalex_update`` (centered RMSProp, Graves 2013);
    (weights..., n..., g..., delta...)."""
    return _launch(RMSPROP_ALEX, weights, grads, (ns, gs, deltas), hp, out)


def rmspropalex_update_ref(weights, grads, ns, gs, deltas, hp: UpdateParams) -> tuple:
    """Reference: reads w, g, n, g-mean, delta; writes w, n, g-mean, delta."""
    def step(w, g, lr, wd, n, gm, delta):
        g = _clip(hp.rescale_grad * g + wd * w, hp.clip_gradient)
        n = (1 - hp.gamma1) * g * g + hp.gamma1 * n
        gm = (1 - hp.gamma1) * g + hp.gamma1 * gm
        delta = hp.gamma2 * delta - lr * g / (n - gm * gm + hp.epsilon).sqrt()
        return _clip(w + delta, hp.clip_weights), n, gm, delta
    return _per_tensor(step, weights, grads, (ns, gs, deltas), hp)


def adagrad_update(weights, grads, histories, hp: UpdateParams, out=None) -> tuple:
    """Launch: MXNet ``optimizer.AdaGrad``'s dense update; (weights..., histories...)."""
    return _launch(ADAGRAD, weights, grads, (histories,), hp, out)


def adagrad_update_ref(weights, grads, histories, hp: UpdateParams) -> tuple:
    """Reference: reads w, g, history; writes w, history."""
    def step(w, g, lr, wd, hist):
        g = _clip(hp.rescale_grad * g, hp.clip_gradient)
        hist = hist + g * g
        return w - lr * (g / (hist + hp.epsilon).sqrt() + wd * w), hist
    return _per_tensor(step, weights, grads, (histories,), hp)


def nag_op_update(weights, grads, moms, hp: UpdateParams, out=None) -> tuple:
    """Launch: the ``nag_mom_update`` operator writing a new array (its momentum's
    weight-decay term from the old weight); (weights..., moms...)."""
    return _launch(NAG_OP, weights, grads, (moms,), hp, out)


def nag_op_update_ref(weights, grads, moms, hp: UpdateParams) -> tuple:
    """Reference: reads w, g, mom; writes w, mom."""
    def step(w, g, lr, wd, mom):
        g = _clip(hp.rescale_grad * g, hp.clip_gradient) + wd * w
        mom = hp.momentum * mom - lr * g
        return w + hp.momentum * mom - lr * g, mom
    return _per_tensor(step, weights, grads, (moms,), hp)


def signsgd_update(weights, grads, hp: UpdateParams, out=None) -> tuple:
    """Launch: MXNet ``signsgd_update`` (``rescale_grad`` and ``clip_gradient`` unused)."""
    return _launch(SIGNSGD, weights, grads, (), hp, out)


def signsgd_update_ref(weights, grads, hp: UpdateParams) -> tuple:
    """Reference: ``w = (1 - lr*wd)*w - lr*sign(g)``."""
    def step(w, g, lr, wd):
        return ((1 - lr * wd) * w - lr * _sign(g),)
    return _per_tensor(step, weights, grads, (), hp)


def signum_update(weights, grads, moms, hp: UpdateParams, out=None) -> tuple:
    """Launch: MXNet ``signum_update``; (weights..., moms...)."""
    return _launch(SIGNUM, weights, grads, (moms,), hp, out)


def signum_update_ref(weights, grads, moms, hp: UpdateParams) -> tuple:
    """Reference: ``mom = momentum*mom - (1-momentum)*(clip(r*g) + wd*w);
    w = (1 - lr*wd_lh)*w + lr*sign(mom)``."""
    def step(w, g, lr, wd, mom):
        g = _clip(hp.rescale_grad * g, hp.clip_gradient) + wd * w
        mom = hp.momentum * mom - (1 - hp.momentum) * g
        return (1 - lr * hp.wd_lh) * w + lr * _sign(mom), mom
    return _per_tensor(step, weights, grads, (moms,), hp)


def ftrl_update(weights, grads, zs, ns, hp: UpdateParams, out=None) -> tuple:
    """Launch: MXNet ``ftrl_update``; (weights..., z..., n...)."""
    return _launch(FTRL, weights, grads, (zs, ns), hp, out)


def ftrl_update_ref(weights, grads, zs, ns, hp: UpdateParams) -> tuple:
    """Reference: FTRL-Proximal with ``lamda1`` and ``beta``."""
    def step(w, g, lr, wd, z, n):
        g = _clip(hp.rescale_grad * g, hp.clip_gradient)
        z = z + g - ((n + g * g).sqrt() - n.sqrt()) * w / lr
        n = n + g * g
        w = -_sign(z) * (z.abs() - hp.lamda1).clamp_min(0) / ((hp.beta + n.sqrt()) / lr + wd)
        return w, z, n
    return _per_tensor(step, weights, grads, (zs, ns), hp)


def ftml_update(weights, grads, ds, vs, zs, hp: UpdateParams, out=None) -> tuple:
    """Launch: MXNet ``ftml_update`` (``hp.bias``: per tensor ``(1-beta1^t, 1-beta2^t)``);
    (weights..., d..., v..., z...)."""
    return _launch(FTML, weights, grads, (ds, vs, zs), hp, out)


def ftml_update_ref(weights, grads, ds, vs, zs, hp: UpdateParams) -> tuple:
    """Reference: Follow the Moving Leader."""
    def step(w, g, lr, wd, k0, k1, d, v, z):
        g = _clip(hp.rescale_grad * g + wd * w, hp.clip_gradient)
        v = hp.beta2 * v + (1 - hp.beta2) * g * g
        dt = k0 / lr * ((v / k1).sqrt() + hp.epsilon)
        z = hp.beta1 * z + (1 - hp.beta1) * g - (dt - hp.beta1 * d) * w
        return -z / dt, dt, v, z
    return _per_tensor(step, weights, grads, (ds, vs, zs), hp, bias=True)


def adamw_update(weights, grads, means, variances, hp: UpdateParams, out=None) -> tuple:
    """Launch: MXNet ``_adamw_update`` with ``lr`` and ``wd`` already multiplied by ``eta``;
    (weights..., means..., variances...)."""
    return _launch(ADAMW, weights, grads, (means, variances), hp, out)


def adamw_update_ref(weights, grads, means, variances, hp: UpdateParams) -> tuple:
    """Reference: ``w -= eta*(lr*mean/(sqrt(var)+eps) + wd*w)`` (eta folded into lr, wd)."""
    def step(w, g, lr, wd, mean, var):
        g = _clip(hp.rescale_grad * g, hp.clip_gradient)
        mean = hp.beta1 * mean + (1 - hp.beta1) * g
        var = hp.beta2 * var + (1 - hp.beta2) * g * g
        return w - (lr * mean / (var.sqrt() + hp.epsilon) + wd * w), mean, var
    return _per_tensor(step, weights, grads, (means, variances), hp)


def adamw_update_grad(weights, grads, means, variances, hp: UpdateParams, out=None) -> tuple:
    """Launch: :func:`adamw_update` that also writes ``clip(rescale_grad * grad)`` over each
    grad (MXNet 1.9.1's ``_adamw_update`` does); (weights..., means..., variances...,
    grads...)."""
    return _launch(ADAMW_G, weights, grads, (means, variances, grads), hp, out)


def adamw_update_grad_ref(weights, grads, means, variances, hp: UpdateParams) -> tuple:
    """Reference: :func:`adamw_update_ref` plus the rescaled, clipped grads."""
    new = adamw_update_ref(weights, grads, means, variances, hp)
    return new + tuple(_clip(hp.rescale_grad * g.float(), hp.clip_gradient).to(g.dtype)
                       for g in grads)


def lamb_phase1(weights, grads, means, variances, hp: UpdateParams, out=None) -> tuple:
    """Launch: MXNet ``lamb_update_phase1`` (``hp.bias``: per tensor bias corrections);
    (directions..., means..., variances...), new direction tensors unless ``out``."""
    if out is None:
        out = [torch.empty_like(w) for w in weights] + list(means) + list(variances)
    return _launch(LAMB1, weights, grads, (means, variances), hp, out)


def lamb_phase1_ref(weights, grads, means, variances, hp: UpdateParams) -> tuple:
    """Reference: ``m/k0 / (sqrt(v/k1) + eps) + wd*w`` after the moment updates."""
    def step(w, g, lr, wd, k0, k1, mean, var):
        g = _clip(hp.rescale_grad * g, hp.clip_gradient)
        mean = hp.beta1 * mean + (1 - hp.beta1) * g
        var = hp.beta2 * var + (1 - hp.beta2) * g * g
        return (mean / k0) / ((var / k1).sqrt() + hp.epsilon) + wd * w, mean, var
    return _per_tensor(step, weights, grads, (means, variances), hp, bias=True)


def lamb_phase2(weights, directions, r1s, r2s, hp: UpdateParams, out=None) -> tuple:
    """Launch: MXNet ``lamb_update_phase2`` (``r1``, ``r2``: one-element norms); the
    weights (in place unless ``out``)."""
    targets = list(weights) if out is None else list(out if isinstance(out, (tuple, list))
                                                      else [out])
    _launch(LAMB2, weights, directions, (r1s, r2s), hp, targets + list(r1s) + list(r2s))
    return tuple(targets)


def lamb_phase2_ref(weights, directions, r1s, r2s, hp: UpdateParams) -> tuple:
    """Reference: ``w -= lr * ratio * g`` with MXNet's trust ratio of the bounded norms."""
    out = []
    for (lr, _, _, _), w, g, r1, r2 in zip(hp.rate_table(len(weights), "cpu").tolist(),
                                           weights, directions, r1s, r2s):
        r1, r2 = r1.float().reshape(()), r2.float().reshape(())
        if hp.lower_bound >= 0:
            r1 = r1.clamp_min(hp.lower_bound)
        if hp.upper_bound >= 0:
            r1 = r1.clamp_max(hp.upper_bound)
        ratio = torch.where((r1 == 0) | (r2 == 0), torch.ones_like(r1), r1 / r2)
        out.append((w.float() - lr * ratio * g.float()).to(w.dtype))
    return tuple(out)


def reset_arrays(arrays, out=None) -> tuple:
    """Launch: MXNet ``reset_arrays``: every tensor set to zero (in place unless ``out``)."""
    arrays = list(arrays)
    return _launch(RESET, arrays, arrays, (), UpdateParams(lr=0.0), out)


def reset_arrays_ref(arrays) -> tuple:
    """Reference: zeros."""
    return tuple(torch.zeros_like(a) for a in arrays)


@kernel
def _sum_sq_kernel(rows, chunks, out, x_like, CHUNK: tl.constexpr, BLOCK: tl.constexpr):
    """Add the sum of squares of elements [start, start + CHUNK) of the chunk's tensor to
    ``out[tensor]`` (fp32)."""
    t = tl.load(chunks + 2 * tl.program_id(0))
    start = tl.load(chunks + 2 * tl.program_id(0) + 1)
    x = tl.load(rows + 2 * t).to(tl.pointer_type(x_like.dtype.element_ty))
    n = tl.load(rows + 2 * t + 1)
    acc = tl.full([BLOCK], 0.0, tl.float32)
    for i in range(0, CHUNK, BLOCK):
        offs = start + i + tl.arange(0, BLOCK)
        v = tl.load(x + offs, mask=offs < n, other=0.0).to(tl.float32)
        acc += v * v
    tl.atomic_add(out + t, tl.reduce(acc, 0, SUM))


def multi_sum_sq(arrays, out=None) -> torch.Tensor:
    """Launch: MXNet ``multi_sum_sq``: the float32 ``(len(arrays),)`` sums of squares of
    contiguous tensors of one dtype (LAMB's and LARS's norms, squared)."""
    arrays = list(arrays)
    if any(a.dtype != arrays[0].dtype or not a.is_contiguous() for a in arrays):
        raise ValueError(f"arrays must be contiguous and of one dtype, got "
                         f"{[a.dtype for a in arrays]}")
    dev = arrays[0].device if arrays else torch.device("cpu")
    out = torch.empty(len(arrays), dtype=torch.float32, device=dev) if out is None else out
    out.zero_()
    block, chunk = (64, 128) if dev.type != "cuda" else (1024, 16384)
    rows = [v for a in arrays for v in (a.data_ptr(), a.numel())]
    chunk_rows = [v for i, a in enumerate(arrays) for start in range(0, a.numel(), chunk)
                  for v in (i, start)]
    if chunk_rows:
        _sum_sq_kernel[(len(chunk_rows) // 2,)](
            device_meta(rows, dev), device_meta(chunk_rows, dev), out, arrays[0],
            CHUNK=chunk, BLOCK=block)
    return out


def multi_sum_sq_ref(arrays) -> torch.Tensor:
    """Reference: ``[sum(a*a) for a in arrays]`` accumulated in fp32."""
    return torch.stack([a.float().square().sum() for a in arrays]) if arrays else \
        torch.zeros(0)


@kernel
def _group_adagrad_kernel(w, g, h, w_out, h_out, C, lr, rescale, clip, eps,
                          BLOCK: tl.constexpr):
    """Row ``program_id``: ``h += mean(G^2)``, ``w_out = w - lr*G/sqrt(h + eps)`` with
    ``G = clip(rescale*g)`` (fp32 arithmetic)."""
    row = tl.program_id(0).to(tl.int64)
    base = row * C
    acc = tl.full([BLOCK], 0.0, tl.float32)
    for i in range(0, C, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        x = tl.load(g + base + offs, mask=offs < C, other=0.0).to(tl.float32) * rescale
        x = tl.minimum(tl.maximum(x, -clip), clip)
        acc += x * x
    hist = tl.load(h + row).to(tl.float32) + tl.reduce(acc, 0, SUM) / C
    tl.store(h_out + row, hist.to(h_out.dtype.element_ty))
    scale = lr / tl.sqrt(hist + eps)
    for i in range(0, C, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        x = tl.load(g + base + offs, mask=offs < C, other=0.0).to(tl.float32) * rescale
        x = tl.minimum(tl.maximum(x, -clip), clip)
        v = tl.load(w + base + offs, mask=offs < C, other=0.0).to(tl.float32)
        tl.store(w_out + base + offs, (v - scale * x).to(w_out.dtype.element_ty), mask=offs < C)


def group_adagrad_update(weight, grad, history, hp: UpdateParams, out=None) -> tuple:
    """Launch: MXNet ``_contrib_group_adagrad_update`` on a dense weight (rows: its first
    axis; ``history`` one value per row, in place unless ``out``); (new weight, history)."""
    rows = weight.shape[0] if weight.dim() else 1
    if grad.shape != weight.shape or history.numel() != rows or not all(
            t.is_contiguous() for t in (weight, grad, history)):
        raise ValueError(f"weight {tuple(weight.shape)}, grad {tuple(grad.shape)} and "
                         f"history {tuple(history.shape)} (one value per row), contiguous")
    w_out, h_out = (torch.empty_like(weight), history) if out is None else out
    cols = weight.numel() // max(rows, 1)
    clip = hp.clip_gradient if hp.clip_gradient >= 0 else math.inf
    if weight.numel():
        block = 64 if weight.device.type != "cuda" else 1024
        _group_adagrad_kernel[(rows,)](weight, grad, history, w_out, h_out, cols,
                                       float(hp.lr), hp.rescale_grad, clip, hp.epsilon,
                                       BLOCK=block)
    return w_out, h_out


def group_adagrad_update_ref(weight, grad, history, hp: UpdateParams) -> tuple:
    """Reference: ``h += mean(G^2 per row)``; ``w - lr*G/sqrt(h + eps)``."""
    rows = weight.shape[0] if weight.dim() else 1
    g = _clip(hp.rescale_grad * grad.float().reshape(rows, -1), hp.clip_gradient)
    hist = history.float().reshape(rows, 1) + g.square().mean(1, keepdim=True)
    w = weight.float().reshape(rows, -1) - float(hp.lr) * g / (hist + hp.epsilon).sqrt()
    return w.reshape(weight.shape).to(weight.dtype), hist.reshape(history.shape).to(history.dtype)


def _make_group_adagrad(dtype, device, sizes):
    weight, grad = (_tensors([sizes[0] * 5], dtype, device, k)[0].reshape(-1, 5)
                    for k in (1, 2))
    history = torch.rand(weight.shape[0], 1, generator=torch.Generator().manual_seed(3))
    return (weight, grad, history.to(device=device, dtype=dtype),
            UpdateParams(lr=0.1, rescale_grad=0.7, clip_gradient=0.8, epsilon=1e-5)), {}


# ---------------------------------------------------------------- table entries

def _dims(n: int) -> tuple:
    """A 2-D shape for sizes divisible by 3 (so tests see matrices too), else 1-D."""
    return (3, n // 3) if n % 3 == 0 and n > 3 else (n,)


def _tensors(sizes, dtype, device, seed, fn=lambda t: t) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return [fn(torch.randn(_dims(n), generator=gen)).to(device=device, dtype=dtype)
            for n in sizes]


# state initialisers: momentum-like states are signed; second moments positive
_STATE_INIT = {
    "signed": lambda t: 0.1 * t,
    "square": lambda t: t.abs() + 0.05,
    "gmean": lambda t: 0.1 * t,
}


def _maker(states: tuple[str, ...], bias: bool = False, **hp):
    """make(dtype, device, sizes): weights and grads of ``dtype``, fp32 states, and
    per-tensor lr and wd (and bias terms of step ``2 + i``)."""
    def make(dtype, device, sizes):
        weights = _tensors(sizes, dtype, device, 1, lambda t: 2 * t)
        grads = _tensors(sizes, dtype, device, 2)
        st = [_tensors(sizes, torch.float32, device, 3 + k, _STATE_INIT[kind])
              for k, kind in enumerate(states)]
        lrs = [0.1 / (1 + i % 3) for i in range(len(sizes))]
        wds = [0.05 * (i % 2) for i in range(len(sizes))]
        ks = [(1 - 0.9 ** (2 + i), 1 - 0.999 ** (2 + i)) for i in range(len(sizes))]
        params = UpdateParams(lr=lrs, wd=wds, rescale_grad=0.5, clip_gradient=0.8,
                              bias=ks if bias else None, **hp)
        return (weights, grads, *st, params), {}
    return make


def _make_lamb2(dtype, device, sizes):
    """Weights, directions, one-element norms (one of them zero) and per-tensor lr."""
    weights = _tensors(sizes, dtype, device, 1)
    directions = _tensors(sizes, dtype, device, 2)
    r1s = [torch.tensor([0.0 if i == 1 else 1.5 + i], device=device) for i in range(len(sizes))]
    r2s = [torch.tensor([0.7 + i], device=device) for i in range(len(sizes))]
    lrs = [0.1 / (1 + i % 3) for i in range(len(sizes))]
    return (weights, directions, r1s, r2s, UpdateParams(lr=lrs, upper_bound=2.0)), {}


def _make_reset(dtype, device, sizes):
    return (_tensors(sizes, dtype, device, 1),), {}


def _bytes(weights, grads, *rest) -> int:
    return (2 * tensor_bytes(*weights) + tensor_bytes(*grads)
            + 2 * sum(tensor_bytes(*s) for s in rest[:-1]))


_SHAPES = ((37, 15, 129), (1, 300))
# ~16.8M elements over 100 tensors: evenly sized, and one embedding-like giant among many
_BENCH = (tuple([262144] * 64 + [1000 + 37 * i for i in range(36)]),
          (8388608,) + (84733,) * 99)


def _spec(name, fn, ref, states, **hp) -> KernelSpec:
    return KernelSpec(name=f"optim_{name}", fn=fn, ref=ref, make=_maker(states, **hp),
                      shapes=_SHAPES, bench_shapes=_BENCH, dtypes=(torch.float32, torch.float16),
                      bytes=_bytes, family="optimizer", extra={"inplace": True})


KERNELS = [
    KernelSpec(name="optim_group_adagrad_update", fn=group_adagrad_update,
               ref=group_adagrad_update_ref, make=_make_group_adagrad, shapes=((37,), (1,)),
               bench_shapes=((65536,),), dtypes=(torch.float32,),
               bytes=lambda w, g, h, hp: 3 * tensor_bytes(w) + 2 * tensor_bytes(h),
               family="optimizer", extra={"inplace": True}),
    KernelSpec(name="optim_multi_sum_sq", fn=multi_sum_sq, ref=multi_sum_sq_ref,
               make=_make_reset, shapes=_SHAPES, bench_shapes=_BENCH,
               dtypes=(torch.float32, torch.float16), bytes=lambda a: tensor_bytes(*a),
               tol={torch.float32: (1e-5, 1e-5), torch.float16: (1e-3, 1e-3)},
               family="optimizer"),
    _spec("sgd_update", sgd_update, sgd_update_ref, ()),
    _spec("sgd_mom_update", sgd_mom_update, sgd_mom_update_ref, ("signed",), momentum=0.9),
    _spec("nag_mom_update", nag_mom_update, nag_mom_update_ref, ("signed",), momentum=0.9),
    _spec("adam_update", adam_update, adam_update_ref, ("signed", "square"), epsilon=1e-3),
    _spec("rmsprop_update", rmsprop_update, rmsprop_update_ref, ("square",), epsilon=1e-3,
          clip_weights=2.5),
    _spec("rmspropalex_update", rmspropalex_update, rmspropalex_update_ref,
          ("square", "gmean", "signed"), epsilon=1e-3, gamma2=0.9, clip_weights=2.5),
    _spec("adagrad_update", adagrad_update, adagrad_update_ref, ("square",), epsilon=1e-7),
    _spec("nag_op_update", nag_op_update, nag_op_update_ref, ("signed",), momentum=0.9),
    _spec("signsgd_update", signsgd_update, signsgd_update_ref, ()),
    _spec("signum_update", signum_update, signum_update_ref, ("signed",), momentum=0.9,
          wd_lh=0.1),
    _spec("ftrl_update", ftrl_update, ftrl_update_ref, ("signed", "square"), lamda1=0.05),
    _spec("ftml_update", ftml_update, ftml_update_ref, ("square", "square", "signed"),
          bias=True, beta1=0.6),
    _spec("adamw_update", adamw_update, adamw_update_ref, ("signed", "square"), epsilon=1e-3),
    KernelSpec(name="optim_adamw_update_grad", fn=adamw_update_grad, ref=adamw_update_grad_ref,
               make=_maker(("signed", "square"), epsilon=1e-3), shapes=_SHAPES,
               bench_shapes=_BENCH, dtypes=(torch.float32,), bytes=_bytes, family="optimizer",
               extra={"inplace": True}),  # grads are written as states: one dtype for all
    _spec("lamb_phase1", lamb_phase1, lamb_phase1_ref, ("signed", "square"), bias=True,
          epsilon=1e-3),
    KernelSpec(name="optim_lamb_phase2", fn=lamb_phase2, ref=lamb_phase2_ref, make=_make_lamb2,
               shapes=_SHAPES, bench_shapes=_BENCH, dtypes=(torch.float32, torch.float16),
               bytes=lambda w, d, *rest: 2 * tensor_bytes(*w) + tensor_bytes(*d),
               family="optimizer"),
    KernelSpec(name="optim_reset_arrays", fn=reset_arrays, ref=reset_arrays_ref,
               make=_make_reset, shapes=_SHAPES, bench_shapes=_BENCH,
               dtypes=(torch.float32, torch.float16), bytes=lambda a: tensor_bytes(*a),
               family="optimizer"),
]
