"""MXNet's multi-tensor SGD update operators: ``multi_sgd_update``, ``multi_sgd_mom_update``,
their ``mp_`` forms and the ``preloaded_`` forms (learning rates and weight decays as arrays).

The inputs are the tensors of ``num_weights`` weights interleaved (``weight_0, grad_0,
[mom_0,] [weight32_0,] weight_1, ...``), then ``lrs`` and ``wds`` for the preloaded forms;
one output per weight. Momentum and fp32 master weights are written in place; every weight
is updated by one launch of :mod:`kernels.optimizer`'s multi-tensor kernel.

>>> import symgraph as mx
>>> w0, w1 = mx.nd.ones((2,)), mx.nd.ones((3,))
>>> _ = mx.nd.multi_sgd_update(w0, mx.nd.ones((2,)), w1, mx.nd.ones((3,)), out=[w0, w1],
...                            lrs=(0.1, 0.5), wds=(0.0, 0.0), num_weights=2)
>>> w0.asnumpy(), w1.asnumpy()
(array([0.9, 0.9], dtype=float32), array([0.5, 0.5, 0.5], dtype=float32))
"""
from __future__ import annotations

import torch

from ..attrs import MAX_VARIADIC, Param
from ..base import ShapeError
from .base import Case, OpDef, merge_shape, register
from .optimizer_update import CLIP, MOMENTUM, RESCALE


def _slots(mom: bool, mp: bool) -> tuple[str, ...]:
    return ("weight", "grad") + (("mom",) if mom else ()) + (("weight32",) if mp else ())


def _shape(op_name: str, per: int, preloaded: bool):
    def rule(p, shapes):
        n = p.num_weights
        done, outs = list(shapes), []
        for i in range(n):
            merged = ()
            for k in range(per):
                try:
                    merged = merge_shape(merged, shapes[i * per + k], f"input {i * per + k}")
                except ShapeError as err:
                    raise ShapeError(f"Error in operator {op_name}: {err}") from None
            if not merged:
                return None
            done[i * per:(i + 1) * per] = [merged] * per
            outs.append(merged)
        if preloaded:
            done[n * per:] = [(n,), (n,)]
        return done, outs
    return rule


def _type(per: int, mp: bool):
    def rule(p, types):
        n = p.num_weights
        done, outs = list(types), []
        for i in range(n):
            low = [t for t in types[i * per:i * per + 2] if t is not None]
            if not low:
                return None
            kinds = [low[0], low[0]] + ["float32" if mp else low[0]] * (per - 2)
            done[i * per:(i + 1) * per] = [t or k for t, k in
                                           zip(types[i * per:(i + 1) * per], kinds)]
            outs.append(low[0])
        done[n * per:] = [t or "float32" for t in types[n * per:]]
        return done, outs
    return rule


def _forward(kernel: str, mom: bool, mp: bool, preloaded: bool, triton: bool):
    def forward(p, ins, aux, rt):
        from kernels import optimizer as kops
        per, n = len(_slots(mom, mp)), p.num_weights
        group = [ins[i * per:(i + 1) * per] for i in range(n)]
        weights = [g[0] for g in group]
        grads = [g[1].float() if mp else g[1] for g in group]
        moms = [[g[2] for g in group]] if mom else []
        targets = [g[-1] for g in group] if mp else weights
        lrs, wds = (ins[n * per], ins[n * per + 1]) if preloaded else (p.lrs, p.wds)
        hp = kops.UpdateParams(lr=lrs, wd=wds, rescale_grad=p.rescale_grad,
                               clip_gradient=p.clip_gradient, momentum=p.get("momentum", 0.0))
        written = targets if mp else [torch.empty_like(w) for w in weights]
        if triton:
            getattr(kops, kernel)(targets, grads, *moms, hp, out=written + sum(moms, []))
        else:
            new = getattr(kops, kernel + "_ref")(targets, grads, *moms, hp)
            for dst, src in zip(written + sum(moms, []), new):
                dst.copy_(src)
        return tuple(t.to(w.dtype) for t, w in zip(written, weights)) if mp else tuple(written)
    forward.__name__ = ("triton_" if triton else "") + kernel
    return forward


def _register(mom: bool, mp: bool, preloaded: bool) -> None:
    name = ("preloaded_" if preloaded else "") + "multi_" + ("mp_" if mp else "") + \
        ("sgd_mom_update" if mom else "sgd_update")
    slots = _slots(mom, mp)
    per = len(slots)
    kernel = "sgd_mom_update" if mom else "sgd_update"
    rates = () if preloaded else (Param("lrs", "floats", doc="Learning rates."),
                                  Param("wds", "floats", doc="Weight decays."))
    params = rates + ((MOMENTUM,) if mom else ()) + (
        RESCALE, CLIP, Param("num_weights", "int", 1, lower=1, upper=MAX_VARIADIC))
    extra = ["lrs", "wds"] if preloaded else []
    states = tuple(k for k, s in enumerate(slots) if s in ("mom", "weight32"))
    attrs = {"num_weights": 2, "rescale_grad": 0.7, "clip_gradient": 0.5,
             **({"momentum": 0.9} if mom else {}),
             **({} if preloaded else {"lrs": (0.1, 0.2), "wds": (0.05, 0.0)})}
    shapes = tuple([(3, 5)] * per + [(4,)] * per) + (((2,), (2,)) if preloaded else ())
    register(OpDef(
        name=name, params=params, inputs=lambda p: [f"{s}_{i}" for i in range(p.num_weights)
                                                    for s in slots] + extra,
        outputs=lambda p: [f"output{i}" for i in range(p.num_weights)],
        infer_shape=_shape(name, per, preloaded), infer_type=_type(per, mp),
        forward=_forward(kernel, mom, mp, preloaded, False),
        kernel=_forward(kernel, mom, mp, preloaded, True),
        mutates=lambda p: tuple(i * per + k for i in range(p.num_weights) for k in states),
        differentiable=False,
        cases=(Case(shapes, attrs, low=0.05, high=1.0, grad=False),),
        doc=f"``{kernel}`` of ``num_weights`` weights in one launch"
            + (" (fp32 masters written in place, outputs cast)" if mp else "")
            + (", rates from the ``lrs``/``wds`` arrays." if preloaded else ".")))


for _pre in (False, True):
    for _mp in (False, True):
        for _mom in (False, True):
            _register(_mom, _mp, _pre)
