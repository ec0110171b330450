"""MXNet's multi-tensor SGD update operators: ``multi_sgd_update``, ``multi_sgd_mom_update``,
their ``mp_`` forms and the ``preloaded_`` forms (learning rates and weight decays as arrays).

The inputs are the tensors of ``num_weights`` weights interleaved (``weight_0, grad_0,
[mom_0,] [weight32_0,] weight_1, ...``), then ``lrs`` and ``wds`` for the preloaded forms;
one output per weight. Momentum and fp32 master weights are written in place; every weight
is updated by one launch of :mod:`symgraph.kernels.optimizer`'s multi-tensor kernel.

>>> import symgraph as mx
>>> w0, w1 = mx.nd.ones((2,)), mx.nd.ones((3,))
>>> _ = mx.nd.multi_sgd_update(w0, mx.nd.ones((2,)), w1, mx.nd.ones((3,)), out=[w0, w1],
...                            lrs=(0.1, 0.5), wds=(0.0, 0.0), num_weights=2)
>>> w0.asnumpy(), w1.asnumpy()
(array([0.9, 0.9], dtype=float32), array([0.5, 0.5, 0.5], dtype=float32))
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..attrs import MAX_VARIADIC, Param
from ..base import AttrError, ShapeError
from .base import Case, OpDef, PlanHints, merge_shape, register
from .optimizer_update import BETA1, BETA2, CLIP, MOMENTUM, RESCALE, lamb_bias


def _slots(mom: bool, mp: bool) -> tuple[str, ...]:
    return ("weight", "grad") + (("mom",) if mom else ()) + (("weight32",) if mp else ())


def _shape(op_name: str, per: int, tail):
    """Shape rule: each weight's ``per`` inputs share a shape; ``tail(n, given)`` gives the
    shapes of the inputs after the groups (rates, ``rescale_grad``)."""
    def rule(p, shapes):
        n = _count(p)
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
        done[n * per:] = tail(n, shapes[n * per:])
        return done, outs
    return rule


def _count(p) -> int:
    """How many weights a node updates (``num_weights``, LAMB's ``num_tensors``)."""
    return p.num_tensors if "num_tensors" in p else p.num_weights


def _type(per: int, mp: bool):
    def rule(p, types):
        n = _count(p)
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


@dataclass(frozen=True)
class Multi:
    """A multi-tensor op: its :mod:`symgraph.kernels.optimizer` rule, the input slots of one weight,
    how many of them are states (after weight and grad), whether the last slot is an fp32
    master weight, and ``hparams(p, ins) -> UpdateParams`` (None: skip the update)."""

    kernel: str
    slots: tuple[str, ...]
    n_states: int
    mp: bool
    hparams: Callable


def _groups(spec: Multi, p, ins):
    """(weights, fp32 grads where mp, states lists, targets) of a node's inputs."""
    per, n = len(spec.slots), _count(p)
    group = [ins[i * per:(i + 1) * per] for i in range(n)]
    weights = [g[0] for g in group]
    grads = [g[1].float() if spec.mp else g[1] for g in group]
    states = [[g[2 + k] for g in group] for k in range(spec.n_states)]
    targets = [g[-1] for g in group] if spec.mp else weights
    return weights, grads, states, targets


def _forward(spec: Multi, triton: bool):
    def forward(p, ins, aux, rt):
        from ..kernels import optimizer as kops
        weights, grads, states, targets = _groups(spec, p, ins)
        hp = spec.hparams(p, ins)
        if hp is None:
            return tuple(w.clone() for w in weights)
        written = targets if spec.mp else [torch.empty_like(w) for w in weights]
        if triton:
            getattr(kops, spec.kernel)(targets, grads, *states, hp,
                                       out=written + sum(states, []))
        else:
            new = getattr(kops, spec.kernel + "_ref")(targets, grads, *states, hp)
            for dst, src in zip(written + sum(states, []), new):
                dst.copy_(src)
        if spec.mp:
            return tuple(t.to(w.dtype) for t, w in zip(written, weights))
        return tuple(written)
    forward.__name__ = ("triton_" if triton else "") + spec.kernel
    return forward


def _register_multi(name: str, spec: Multi, params: tuple[Param, ...], extra: list[str],
                    tail, case: Case, doc: str, check=None) -> None:
    per = len(spec.slots)
    mutated = tuple(k for k, s in enumerate(spec.slots) if k >= 2)
    register(OpDef(
        name=name, params=params,
        inputs=lambda p: [f"{s}_{i}" for i in range(_count(p)) for s in spec.slots] + extra,
        outputs=lambda p: [f"output{i}" for i in range(_count(p))],
        infer_shape=_shape(name, per, tail), infer_type=_type(per, spec.mp),
        forward=_forward(spec, False), kernel=_forward(spec, True),
        hints=PlanHints(mutates=lambda p: tuple(i * per + k for i in range(_count(p))
                                               for k in mutated)),
        differentiable=False, cases=(case,), doc=doc, check=check))


def _sgd_hp(preloaded: bool, per: int):
    def hparams(p, ins):
        n = p.num_weights
        lrs, wds = (ins[n * per], ins[n * per + 1]) if preloaded else (p.lrs, p.wds)
        return kops_params(lr=lrs, wd=wds, rescale_grad=p.rescale_grad,
                           clip_gradient=p.clip_gradient, momentum=p.get("momentum", 0.0))
    return hparams


def kops_params(**kw):
    """:class:`symgraph.kernels.optimizer.UpdateParams` (kernels imported on first use)."""
    from ..kernels.optimizer import UpdateParams
    return UpdateParams(**kw)


_NUM_WEIGHTS = Param("num_weights", "int", 1, lower=1, upper=MAX_VARIADIC,
                     doc="Number of updated weights.")


def _check_counts(op_name: str, names: tuple[str, ...]):
    """MXNet's check that every per-weight tuple has one entry per weight."""
    def check(p):
        n = _count(p)
        for key in names:
            if len(p[key]) != n:
                raise AttrError(f"{op_name}: {n} weights but {len(p[key])} "
                                f"values in {key}")
    return check


def _register(mom: bool, mp: bool, preloaded: bool) -> None:
    name = ("preloaded_" if preloaded else "") + "multi_" + ("mp_" if mp else "") + \
        ("sgd_mom_update" if mom else "sgd_update")
    slots = _slots(mom, mp)
    per = len(slots)
    kernel = "sgd_mom_update" if mom else "sgd_update"
    rates = () if preloaded else (Param("lrs", "floats", doc="Learning rates."),
                                  Param("wds", "floats", doc="Weight decays."))
    params = rates + ((MOMENTUM,) if mom else ()) + (RESCALE, CLIP, _NUM_WEIGHTS)
    attrs = {"num_weights": 2, "rescale_grad": 0.7, "clip_gradient": 0.5,
             **({"momentum": 0.9} if mom else {}),
             **({} if preloaded else {"lrs": (0.1, 0.2), "wds": (0.05, 0.0)})}
    shapes = tuple([(3, 5)] * per + [(4,)] * per) + (((2,), (2,)) if preloaded else ())
    spec = Multi(kernel, slots, per - 2 - mp, mp, _sgd_hp(preloaded, per))
    _register_multi(
        name, spec, params, ["lrs", "wds"] if preloaded else [],
        (lambda n, given: [(n,), (n,)]) if preloaded else (lambda n, given: []),
        Case(shapes, attrs, low=0.05, high=1.0, grad=False),
        f"``{kernel}`` of ``num_weights`` weights in one launch"
        + (" (fp32 masters written in place, outputs cast)" if mp else "")
        + (", rates from the ``lrs``/``wds`` arrays." if preloaded else "."),
        check=None if preloaded else _check_counts(name, ("lrs", "wds")))


for _pre in (False, True):
    for _mp in (False, True):
        for _mom in (False, True):
            _register(_mom, _mp, _pre)


def _adamw_hp(per: int):
    def hparams(p, ins):
        r = float(ins[p.num_weights * per].reshape(-1)[0])  # MXNet reads it on the host too
        if not math.isfinite(r) or r == 0:
            return None  # MXNet skips the update: the weights come back unchanged
        return kops_params(lr=[e * lr for e, lr in zip(p.etas, p.lrs)],
                           wd=[e * wd for e, wd in zip(p.etas, p.wds)], rescale_grad=r,
                           clip_gradient=p.clip_gradient, beta1=p.beta1, beta2=p.beta2,
                           epsilon=p.epsilon)
    return hparams


_ADAMW_ATTRS = {"num_weights": 2, "lrs": (0.01, 0.02), "wds": (0.05, 0.0),
                "etas": (0.5, 1.0), "clip_gradient": 0.5, "epsilon": 1e-3}
for _mp in (False, True):
    _slots_aw = ("weight", "grad", "mean", "var") + (("weight32",) if _mp else ())
    _name = "_multi_mp_adamw_update" if _mp else "_multi_adamw_update"
    _register_multi(
        _name, Multi("adamw_update", _slots_aw, 2, _mp, _adamw_hp(len(_slots_aw))),
        (Param("lrs", "floats", doc="Learning rates."), BETA1, BETA2,
         Param("epsilon", "float", 1e-8), Param("wds", "floats", doc="Weight decays."),
         Param("etas", "floats", doc="Schedule multipliers."), CLIP, _NUM_WEIGHTS),
        ["rescale_grad"], lambda n, given: [given[0] or (1,)],
        Case(tuple([(3, 5)] * len(_slots_aw) + [(4,)] * len(_slots_aw) + [(1,)]),
             _ADAMW_ATTRS, low=0.05, high=1.0, grad=False),
        "``_adamw_update`` of ``num_weights`` weights in one launch (the last input is the "
        "``rescale_grad`` array; 0, NaN or inf there skips the update)"
        + (", fp32 masters written in place, outputs cast." if _mp else "."),
        _check_counts(_name, ("lrs", "wds", "etas")))


def _lamb_phases(p, weights, targets, grads, states, triton: bool):
    """LAMB's phase 1 on ``targets`` (moments in place; the directions) and the norms of
    ``weights`` and of the directions: (directions, ||w||s, ||direction||s). MXNet 1.9.1
    takes ||w|| from the weights given, the fp16 ones in the mp form, not the fp32 masters."""
    from ..kernels import optimizer as kops
    hp = kops_params(lr=0.0, wd=list(p.wds), rescale_grad=p.rescale_grad,
                     clip_gradient=p.clip_gradient, beta1=p.beta1, beta2=p.beta2,
                     epsilon=p.epsilon, bias=[lamb_bias(p, t) for t in p.step_count])
    if triton:
        dirs = [torch.empty_like(t) for t in targets]
        kops.lamb_phase1(targets, grads, *states, hp, out=dirs + sum(states, []))
        return dirs, kops.multi_sum_sq(weights).sqrt(), kops.multi_sum_sq(dirs).sqrt()
    new = kops.lamb_phase1_ref(targets, grads, *states, hp)
    for dst, src in zip(sum(states, []), new[len(targets):]):
        dst.copy_(src)
    dirs = list(new[:len(targets)])
    return dirs, kops.multi_sum_sq_ref(weights).sqrt(), kops.multi_sum_sq_ref(dirs).sqrt()


def _lamb_forward(mp: bool, triton: bool):
    spec = Multi("lamb", _lamb_slots(mp), 2, mp, lambda p, ins: None)

    def forward(p, ins, aux, rt):
        from ..kernels import optimizer as kops
        weights, grads, states, targets = _groups(spec, p, ins)
        targets = [t.contiguous() for t in targets]
        weights = [w.contiguous() for w in weights]
        dirs, r1, r2 = _lamb_phases(p, weights, targets, grads, states, triton)
        r1s, r2s = [r1[i:i + 1] for i in range(len(targets))], \
            [r2[i:i + 1] for i in range(len(targets))]
        hp = kops_params(lr=list(p.learning_rates), lower_bound=p.lower_bound,
                         upper_bound=p.upper_bound)
        written = targets if mp else [torch.empty_like(w) for w in weights]
        if triton:
            kops.lamb_phase2(targets, dirs, r1s, r2s, hp, out=written)
        else:
            for dst, src in zip(written, kops.lamb_phase2_ref(targets, dirs, r1s, r2s, hp)):
                dst.copy_(src)
        return tuple(t.to(w.dtype) for t, w in zip(written, weights))
    forward.__name__ = ("triton_" if triton else "") + ("multi_mp_lamb" if mp else "multi_lamb")
    return forward


def _lamb_slots(mp: bool) -> tuple[str, ...]:
    return ("weight", "grad", "mean", "var") + (("weight32",) if mp else ())


def _lamb_inputs(mp: bool):
    slots = _lamb_slots(mp)
    return lambda p: [f"{k}_{i}" for i in range(_count(p)) for k in slots]


_LAMB_PARAMS = (
    Param("learning_rates", "floats", doc="Learning rates."), BETA1, BETA2,
    Param("epsilon", "float", 1e-6), Param("wds", "floats", doc="Weight decays."), RESCALE,
    Param("lower_bound", "float", -1.0, doc="Lower limit of ||w|| (unset when < 0)."),
    Param("upper_bound", "float", -1.0, doc="Upper limit of ||w|| (unset when < 0)."), CLIP,
    Param("bias_correction", "bool", True, doc="Whether to use bias correction."),
    Param("step_count", "shape", doc="Step count of each tensor."),
    Param("num_tensors", "int", 1, lower=1, upper=45, doc="Number of tensors."))
_LAMB_ATTRS = {"num_tensors": 2, "learning_rates": (0.1, 0.2), "wds": (0.05, 0.0),
               "step_count": (3, 1), "rescale_grad": 0.7, "clip_gradient": 0.5,
               "upper_bound": 5.0}
for _mp in (False, True):
    _name = "_multi_mp_lamb_update" if _mp else "_multi_lamb_update"
    _per = len(_lamb_slots(_mp))
    register(OpDef(
        name=_name, params=_LAMB_PARAMS,
        inputs=_lamb_inputs(_mp),
        outputs=lambda p: [f"output{i}" for i in range(_count(p))],
        infer_shape=_shape(_name, _per, lambda n, given: []), infer_type=_type(_per, _mp),
        forward=_lamb_forward(_mp, False), kernel=_lamb_forward(_mp, True),
        hints=PlanHints(mutates=lambda p, per=_per: tuple(i * per + k for i in range(_count(p))
                                          for k in range(2, per))),
        differentiable=False, check=_check_counts(_name, ("learning_rates", "wds",
                                                          "step_count")),
        cases=(Case(tuple([(3, 5)] * _per + [(4,)] * _per), _LAMB_ATTRS, low=0.05, high=1.0,
                    grad=False),),
        doc="LAMB of ``num_tensors`` weights: phase 1 (moments in place), the norms of "
            "weights and directions, phase 2 (``lamb_update_phase1/2`` fused over tensors)"
            + ("; fp32 masters written in place, outputs cast." if _mp else ".")))
