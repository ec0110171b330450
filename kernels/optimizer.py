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

from .runtime import kernel
from .table import KernelSpec, tensor_bytes

SGD, SGD_MOM, NAG, ADAM, RMSPROP, RMSPROP_ALEX, ADAGRAD = range(7)
_ROW = 10  # table columns: w_in, g, s0_in, s1_in, s2_in, w_out, s0_out, s1_out, s2_out, numel


@kernel
def _update_kernel(rows, chunks, rates, consts, w_like, s_like, KIND: tl.constexpr,
                   CHUNK: tl.constexpr, BLOCK: tl.constexpr):
    """Apply rule KIND (0 sgd, 1 sgd_mom, 2 nag, 3 adam, 4 rmsprop, 5 rmspropalex, 6 adagrad)
    to elements [start, start + CHUNK) of the chunk's tensor."""
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
    lr, wd = tl.load(rates + 2 * t), tl.load(rates + 2 * t + 1)
    rescale, clip = tl.load(consts), tl.load(consts + 1)
    a, b = tl.load(consts + 2), tl.load(consts + 3)
    eps, clip_w = tl.load(consts + 4), tl.load(consts + 5)
    for i in range(0, CHUNK, BLOCK):
        offs = start + i + tl.arange(0, BLOCK)
        mask = offs < n
        w = tl.load(w_in + offs, mask=mask, other=0.0).to(tl.float32)
        g = tl.load(g_in + offs, mask=mask, other=0.0).to(tl.float32) * rescale
        if KIND == 3 or KIND == 4 or KIND == 5:
            g = g + wd * w
        g = tl.minimum(tl.maximum(g, -clip), clip)
        gc = g
        if KIND == 0 or KIND == 1 or KIND == 2:
            g = g + wd * w
        if KIND == 0:
            w = w - lr * g
        if KIND == 1 or KIND == 2:
            p = a * tl.load(s0 + offs, mask=mask, other=0.0)
            m = p - lr * g
        if KIND == 1:
            w = w + m
        if KIND == 2:
            w = w + a * m - lr * g
            m = p - lr * (gc + wd * w)  # MXNet's in-place NAG: wd term of mom from the new w
        if KIND == 1 or KIND == 2:
            tl.store(s0o + offs, m.to(s0o.dtype.element_ty), mask=mask)
        if KIND == 3:
            m = a * tl.load(s0 + offs, mask=mask, other=0.0) + (1.0 - a) * g
            v = b * tl.load(s1 + offs, mask=mask, other=0.0) + (1.0 - b) * g * g
            tl.store(s0o + offs, m.to(s0o.dtype.element_ty), mask=mask)
            tl.store(s1o + offs, v.to(s1o.dtype.element_ty), mask=mask)
            w = w - lr * m / (tl.sqrt(v) + eps)
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
    rescale_grad: float = 1.0
    clip_gradient: float = -1.0
    momentum: float = 0.0
    beta1: float = 0.9
    beta2: float = 0.999
    epsilon: float = 1e-8
    gamma1: float = 0.95
    gamma2: float = 0.9
    clip_weights: float = -1.0

    def per_tensor(self, count: int) -> list[tuple[float, float]]:
        """(lr, wd) of each of ``count`` tensors."""
        lrs = [self.lr] * count if isinstance(self.lr, (int, float)) else list(self.lr)
        wds = [self.wd] * count if isinstance(self.wd, (int, float)) else list(self.wd)
        if len(lrs) != count or len(wds) != count:
            raise ValueError(f"{count} tensors but {len(lrs)} lr and {len(wds)} wd values")
        return [(float(lr), float(wd)) for lr, wd in zip(lrs, wds)]


def adam_lr(lr: float, beta1: float, beta2: float, t: int) -> float:
    """The bias-corrected step MXNet's ``optimizer.Adam`` passes to ``adam_update`` at step t."""
    return lr * math.sqrt(1.0 - beta2 ** t) / (1.0 - beta1 ** t)


def _consts(kind: int, hp: UpdateParams) -> list[float]:
    """[rescale, clip, a, b, eps, clip_weights] as the kernel reads them (inf: no clip)."""
    a, b = {SGD_MOM: (hp.momentum, 0.0), NAG: (hp.momentum, 0.0), ADAM: (hp.beta1, hp.beta2),
            RMSPROP: (hp.gamma1, 0.0), RMSPROP_ALEX: (hp.gamma1, hp.gamma2)}.get(kind, (0., 0.))
    clip = hp.clip_gradient if hp.clip_gradient >= 0 else math.inf
    clip_w = hp.clip_weights if hp.clip_weights >= 0 else math.inf
    return [hp.rescale_grad, clip, a, b, hp.epsilon, clip_w]


def _check(weights, grads, states) -> None:
    for i, w in enumerate(weights):
        others = [grads[i]] + [s[i] for s in states]
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
    _check(weights, grads, states)
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
        torch.tensor(rows, dtype=torch.int64).to(dev),
        torch.tensor(chunk_rows, dtype=torch.int64).to(dev),
        torch.tensor(hp.per_tensor(count), dtype=torch.float32).to(dev),
        torch.tensor(_consts(kind, hp), dtype=torch.float32).to(dev),
        weights[0], s_like, KIND=kind, CHUNK=chunk, BLOCK=block)
    return tuple(outs)


def _clip(x: torch.Tensor, bound: float) -> torch.Tensor:
    return x.clamp(-bound, bound) if bound >= 0 else x


def _per_tensor(step, weights, grads, states, hp: UpdateParams) -> tuple:
    """Run ``step(w, g, lr, wd, *states) -> (w, *states)`` per tensor in fp32, out of place."""
    new_w, new_s = [], [[] for _ in states]
    for i, ((lr, wd), w, g) in enumerate(zip(hp.per_tensor(len(weights)), weights, grads)):
        res = step(w.float(), g.float(), lr, wd, *[s[i].float() for s in states])
        new_w.append(res[0].to(w.dtype))
        for k, s in enumerate(res[1:]):
            new_s[k].append(s.to(states[k][i].dtype))
    return tuple(new_w) + tuple(t for s in new_s for t in s)


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


def _maker(states: tuple[str, ...], **hp):
    """make(dtype, device, sizes): weights and grads of ``dtype``, fp32 states, and
    per-tensor lr and wd."""
    def make(dtype, device, sizes):
        weights = _tensors(sizes, dtype, device, 1, lambda t: 2 * t)
        grads = _tensors(sizes, dtype, device, 2)
        st = [_tensors(sizes, torch.float32, device, 3 + k, _STATE_INIT[kind])
              for k, kind in enumerate(states)]
        lrs = [0.1 / (1 + i % 3) for i in range(len(sizes))]
        wds = [0.05 * (i % 2) for i in range(len(sizes))]
        params = UpdateParams(lr=lrs, wd=wds, rescale_grad=0.5, clip_gradient=0.8, **hp)
        return (weights, grads, *st, params), {}
    return make


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
    _spec("sgd_update", sgd_update, sgd_update_ref, ()),
    _spec("sgd_mom_update", sgd_mom_update, sgd_mom_update_ref, ("signed",), momentum=0.9),
    _spec("nag_mom_update", nag_mom_update, nag_mom_update_ref, ("signed",), momentum=0.9),
    _spec("adam_update", adam_update, adam_update_ref, ("signed", "square"), epsilon=1e-3),
    _spec("rmsprop_update", rmsprop_update, rmsprop_update_ref, ("square",), epsilon=1e-3,
          clip_weights=2.5),
    _spec("rmspropalex_update", rmspropalex_update, rmspropalex_update_ref,
          ("square", "gmean", "signed"), epsilon=1e-3, gamma2=0.9, clip_weights=2.5),
    _spec("adagrad_update", adagrad_update, adagrad_update_ref, ("square",), epsilon=1e-7),
]
