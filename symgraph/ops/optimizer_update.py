"""MXNet's optimizer update operators on one weight: ``sgd_update``, ``adam_update``, ...

Each takes ``(weight, grad, states...)`` and returns the new weight; the states (momentum,
moments, ``n``, ``z``...) are written in place (MXNet's ``FMutateInputs``, here
``OpDef.mutates``), so the usual call passes ``out=weight``. The ``mp_`` forms keep an fp32
master copy ``weight32`` (updated in place) of an fp16 weight and return it cast to the
weight's dtype. The math is :mod:`symgraph.kernels.optimizer`'s, the same multi-tensor kernel (and
torch references) the Python optimizers run; these ops have no gradient.

With a row_sparse ``grad`` (and row_sparse weight/states where MXNet allows),
``sgd_update``, ``sgd_mom_update``, ``adam_update``, ``ftrl_update``,
``_sparse_adagrad_update`` and ``_contrib_group_adagrad_update`` run the lazy or standard
sparse update of :mod:`symgraph.ops.optimizer_sparse`; the other ops (and other storage
combinations) run densely and write sparse states back.

As in MXNet 1.9.1, ``_adamw_update`` also overwrites ``grad`` with the rescaled, clipped
gradient, and ``nag_mom_update`` called with ``out=weight`` (``mp_nag_mom_update`` always)
takes the momentum's weight-decay term from the already written weight.

>>> import symgraph as mx
>>> w, g, mom = mx.nd.ones((2,)), mx.nd.ones((2,)), mx.nd.zeros((2,))
>>> _ = mx.nd.sgd_mom_update(w, g, mom, out=w, lr=0.1, momentum=0.9)
>>> w.asnumpy(), mom.asnumpy()
(array([0.9, 0.9], dtype=float32), array([-0.1, -0.1], dtype=float32))
>>> mx.nd.sgd_update(w, mx.nd.ones((3,)), lr=0.1)
Traceback (most recent call last):
...
symgraph.base.ShapeError: Error in operator sgd_update: Shape inconsistent ...
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from ..attrs import Param
from ..base import DTypeError, ShapeError
from .base import Case, OpDef, PlanHints, merge_shape, register
from .optimizer_sparse import DNS, FLAG, LAZY_ROWS, RSP, STD, sparse_storage


def _f(name: str, default=None, doc: str = "") -> Param:
    return Param(name, "float", doc=doc) if default is None else Param(name, "float", default,
                                                                      doc=doc)


LR, WD = _f("lr", doc="Learning rate."), _f("wd", 0.0, doc="Weight decay.")
RESCALE = _f("rescale_grad", 1.0, doc="Gradient scale.")
CLIP = _f("clip_gradient", -1.0, doc="Clip gradients to [-c, c] when c >= 0.")
LAZY = Param("lazy_update", "bool", True,
             doc="With a row_sparse grad: update only its rows (else every row decays).")
MOMENTUM = _f("momentum", 0.0)
BETA1, BETA2 = _f("beta1", 0.9), _f("beta2", 0.999)


def same_shape(op_name: str, scalars: tuple[int, ...] = ()):
    """Shape rule: every input has the weight's shape, except ``scalars`` (shape (1,))."""
    def rule(p, shapes):
        merged = ()
        for i, s in enumerate(shapes):
            if i not in scalars:
                try:
                    merged = merge_shape(merged, s, f"input {i}")
                except ShapeError as err:
                    raise ShapeError(f"Error in operator {op_name}: {err}") from None
        if not merged:
            return None
        return [(1,) if i in scalars else merged for i in range(len(shapes))], [merged]
    return rule


def mp_type(fp32: tuple[int, ...], out_from: int | None = None):
    """dtype rule of a mixed-precision update: weight and grad share a dtype, the inputs
    ``fp32`` (master weight, states) default to float32; the output has the weight's dtype
    (or input ``out_from``'s: LAMB's fp32 direction)."""
    def rule(p, types):
        low = [t for i, t in enumerate(types) if i not in fp32 and t is not None]
        if len(set(low)) > 1:
            raise DTypeError(f"weight and grad dtypes differ: {low}")
        first = low[0] if low else None
        done = [(t or "float32") if i in fp32 else first for i, t in enumerate(types)]
        if first is None:
            return None
        return done, [first if out_from is None else done[out_from]]
    return rule


@dataclass(frozen=True)
class Rule:
    """How an op maps onto a :mod:`symgraph.kernels.optimizer` rule.

    ``kernel``: the rule's wrapper name; ``states``: input indices of its states (in the
    wrapper's order); ``master``: the fp32 master weight's index (mp ops); ``new_out``: the
    output is a new tensor even with a master (LAMB's phase 1 direction); ``writes_grad``:
    the kernel also overwrites ``grad`` with ``clip(rescale_grad * grad)`` (MXNet 1.9.1's
    ``_adamw_update``; the kernel takes ``out=(weight, states..., grad)``); ``over_weight``:
    the rule to run instead when ``out=`` is the weight
    itself (``p._out_is_input``; MXNet's in-place ``nag_mom_update``).
    """

    kernel: str
    states: tuple[int, ...]
    master: int | None = None
    new_out: bool = False
    writes_grad: bool = False
    over_weight: str | None = None


def run_rule(rule: Rule, hp, ins, triton: bool) -> torch.Tensor:
    """Apply ``rule`` to one weight: states updated in place, the new weight returned."""
    from ..kernels import optimizer as kops
    weight, grad = ins[0], ins[1]
    states = [ins[i] for i in rule.states]
    target = weight if rule.master is None else ins[rule.master]
    if rule.master is not None:
        grad = grad.float()
    written = target if rule.master is not None and not rule.new_out else \
        torch.empty_like(target)
    outs = [written, *states] + ([grad] if rule.writes_grad else [])
    skip = _skipping(hp, outs, written is target)
    if triton:
        getattr(kops, rule.kernel)([target], [grad], *[[s] for s in states], hp, out=outs)
    else:
        new = getattr(kops, rule.kernel + "_ref")([target], [grad], *[[s] for s in states], hp)
        for dst, src in zip(outs, new):
            dst.copy_(src)
    result = written.to(weight.dtype) if rule.master is not None and not rule.new_out \
        else written
    if skip is not None:
        ok, before = skip
        for now, old in zip(outs, before):
            if old is not None:
                now.copy_(torch.where(ok, now, old))
        result = torch.where(ok, result, weight)
    return result


def _skipping(hp, outs: list, in_place_weight: bool):
    """With a device ``rescale_grad`` (the AdamW ops): (whether to apply, the arrays the
    update writes in place as they were), so that a 0, NaN or inf rescale leaves them all
    unchanged, as MXNet's skipped update does, without a host read. None otherwise."""
    r = hp.rescale_grad
    if not isinstance(r, torch.Tensor):
        return None
    ok = (torch.isfinite(r) & (r != 0)).reshape(())
    return ok, [o.clone() if (i or in_place_weight) else None for i, o in enumerate(outs)]


def forwards(rule: Rule, hparams):
    """(torch forward, Triton kernel) of an op from its rule and ``hparams(p, ins)``."""
    def run(p, ins, triton: bool):
        hp = hparams(p, ins)
        if hp is None:
            return (ins[0].clone(),)
        chosen = rule
        if rule.over_weight and 0 in p.get("_out_is_input", ()):
            chosen = replace(rule, kernel=rule.over_weight)
        return (run_rule(chosen, hp, ins, triton),)

    def forward(p, ins, aux, rt):
        return run(p, ins, False)

    def triton_optimizer_update(p, ins, aux, rt):
        return run(p, ins, True)
    return forward, triton_optimizer_update


def _hp(**kw):
    from ..kernels.optimizer import UpdateParams
    return UpdateParams(**kw)


def _sgd_hp(p, ins):
    return _hp(lr=p.lr, wd=p.wd, rescale_grad=p.rescale_grad, clip_gradient=p.clip_gradient,
               momentum=p.get("momentum", 0.0))


def _adam_hp(p, ins):
    return _hp(lr=p.lr, wd=p.wd, rescale_grad=p.rescale_grad, clip_gradient=p.clip_gradient,
               beta1=p.beta1, beta2=p.beta2, epsilon=p.epsilon)


def _adamw_hp(rescale_index: int):
    def hparams(p, ins):
        # MXNet reads the array on the host; here it stays on the device, and a 0, NaN or
        # inf there makes ``run_rule`` keep everything as it was (MXNet skips the update)
        r = ins[rescale_index].reshape(-1)[:1].float()
        return _hp(lr=p.eta * p.lr, wd=p.eta * p.wd, rescale_grad=r,
                   clip_gradient=p.clip_gradient, beta1=p.beta1, beta2=p.beta2,
                   epsilon=p.epsilon)
    return hparams


def _adagrad_hp(p, ins):
    return _hp(lr=p.lr, wd=p.wd, rescale_grad=p.rescale_grad, clip_gradient=p.clip_gradient,
               epsilon=p.epsilon)


def _rms_hp(p, ins):
    return _hp(lr=p.lr, wd=p.wd, rescale_grad=p.rescale_grad, clip_gradient=p.clip_gradient,
               gamma1=p.gamma1, gamma2=p.get("gamma2", 0.9), epsilon=p.epsilon,
               clip_weights=p.clip_weights)


def _ftrl_hp(p, ins):
    return _hp(lr=p.lr, wd=p.wd, rescale_grad=p.rescale_grad, clip_gradient=p.clip_gradient,
               lamda1=p.lamda1, beta=p.beta)


def _ftml_hp(p, ins):
    return _hp(lr=p.lr, wd=p.wd, rescale_grad=p.rescale_grad, clip_gradient=p.clip_grad,
               beta1=p.beta1, beta2=p.beta2, epsilon=p.epsilon,
               bias=[(1 - p.beta1 ** p.t, 1 - p.beta2 ** p.t)])


def _signum_hp(p, ins):
    return _hp(lr=p.lr, wd=p.wd, rescale_grad=p.rescale_grad, clip_gradient=p.clip_gradient,
               momentum=p.get("momentum", 0.0), wd_lh=p.get("wd_lh", 0.0))


def lamb_bias(p, t) -> tuple[float, float]:
    """LAMB's bias corrections at step ``t`` (1 without ``bias_correction``)."""
    return (1 - p.beta1 ** t, 1 - p.beta2 ** t) if p.bias_correction else (1.0, 1.0)


def _lamb1_hp(p, ins):
    return _hp(lr=0.0, wd=p.wd, rescale_grad=p.rescale_grad, clip_gradient=p.clip_gradient,
               beta1=p.beta1, beta2=p.beta2, epsilon=p.epsilon, bias=[lamb_bias(p, p.t)])


def _cases(n_inputs: int, attrs: dict, scalars: tuple[int, ...] = (), low=0.05, high=1.0):
    """Two cases: a matrix and a vector; positive inputs (second moments stay positive)."""
    return tuple(Case(tuple((1,) if i in scalars else shape for i in range(n_inputs)), attrs,
                      low=low, high=high, grad=False) for shape in ((3, 5), (7,)))


def _rule_rows(rule: Rule, hparams):
    """The row step of a sparse update: ``rule`` on the gathered rows (states in place)."""
    def step(p, ins, triton: bool):
        return run_rule(rule, hparams(p, ins), ins, triton)
    return step


# how each op updates with a row_sparse grad, by the storage types of (weight, grad, states)
_SGD_SPARSE = {(DNS, RSP): FLAG, (RSP, RSP): FLAG}
_SGD_MOM_SPARSE = {(DNS, RSP, DNS): FLAG, (RSP, RSP, RSP): FLAG, (RSP, RSP, DNS): STD}
_ADAM_SPARSE = {(DNS, RSP, DNS, DNS): FLAG, (RSP, RSP, RSP, RSP): FLAG,
                (RSP, RSP, DNS, DNS): STD}
_FTRL_SPARSE = {(RSP, RSP, RSP, RSP): LAZY_ROWS}
_ADAGRAD_SPARSE = {(DNS, RSP, DNS): LAZY_ROWS, (RSP, RSP, RSP): LAZY_ROWS}


def update_op(name: str, inputs: tuple[str, ...], params: tuple[Param, ...], rule: Rule,
              hparams, case_attrs: dict, doc: str, **kw) -> OpDef:
    """Register an update op: shape/dtype rules, forwards, mutated inputs, cases."""
    forward, kernel = forwards(rule, hparams)
    kinds = kw.pop("sparse", {})
    scalars = kw.pop("scalars", ())
    bounds = kw.pop("bounds", (0.05, 1.0))
    fp32 = tuple(rule.states) + ((rule.master,) if rule.master is not None else ())
    infer_type = mp_type(fp32, rule.master if rule.new_out else None) \
        if rule.master is not None else None
    # as MXNet's FMutateInputs: _adamw_update's write of grad is not declared there either
    # (so a computed grad composes); the plan never lets another value take grad's buffer
    # while this node reads it
    mutated = tuple(rule.states) + ((rule.master,) if rule.master is not None and
                                    not rule.new_out else ())
    return register(OpDef(
        name=name, inputs=inputs, params=params, forward=forward, kernel=kernel,
        infer_shape=same_shape(name, scalars), infer_type=infer_type,
        hints=PlanHints(mutates=mutated),
        differentiable=False, cases=_cases(len(inputs), case_attrs, scalars, *bounds), doc=doc,
        storage=sparse_storage(name, _rule_rows(rule, hparams), kinds), **kw))


_SGD = (LR, WD, RESCALE, CLIP, LAZY)
_SGD_MOM = (LR, MOMENTUM, WD, RESCALE, CLIP, LAZY)
_NAG = (LR, MOMENTUM, WD, RESCALE, CLIP)
_W, _WG = ("weight", "grad"), ("weight", "grad", "mom")
_MOM = {"lr": 0.1, "momentum": 0.9, "wd": 0.05, "rescale_grad": 0.7, "clip_gradient": 0.5}

update_op("sgd_update", _W, _SGD, Rule("sgd_update", ()), _sgd_hp,
          {"lr": 0.1, "wd": 0.05, "rescale_grad": 0.7, "clip_gradient": 0.5},
          "``w - lr*(clip(rescale_grad*g) + wd*w)``.", sparse=_SGD_SPARSE,
          aliases=("_sparse_sgd_update",))
update_op("sgd_mom_update", _WG, _SGD_MOM, Rule("sgd_mom_update", (2,)), _sgd_hp, _MOM,
          "``mom = momentum*mom - lr*(clip(r*g) + wd*w)`` (in place); ``w + mom``.",
          sparse=_SGD_MOM_SPARSE, aliases=("_sparse_sgd_mom_update",))
update_op("mp_sgd_update", ("weight", "grad", "weight32"), _SGD,
          Rule("sgd_update", (), master=2), _sgd_hp, {"lr": 0.1, "wd": 0.05},
          "``sgd_update`` of the fp32 master ``weight32`` (in place), cast to the weight's "
          "dtype.")
update_op("mp_sgd_mom_update", ("weight", "grad", "mom", "weight32"), _SGD_MOM,
          Rule("sgd_mom_update", (2,), master=3), _sgd_hp, _MOM,
          "``sgd_mom_update`` of the fp32 master ``weight32`` (in place), cast.")
update_op("nag_mom_update", _WG, _NAG,
          Rule("nag_op_update", (2,), over_weight="nag_mom_update"), _sgd_hp, _MOM,
          "Nesterov momentum: ``mom = momentum*mom - lr*G``; ``w + momentum*mom - lr*G`` with "
          "``G = clip(r*g) + wd*w``; with ``out=weight`` the momentum's ``wd*w`` term takes "
          "the new weight, as in MXNet 1.9.1.")
update_op("mp_nag_mom_update", ("weight", "grad", "mom", "weight32"), _NAG,
          Rule("nag_mom_update", (2,), master=3), _sgd_hp, _MOM,
          "``nag_mom_update`` of the fp32 master ``weight32`` (in place), cast; the "
          "momentum's ``wd*w`` term takes the new ``weight32``, as in MXNet 1.9.1.")
_EPS8 = _f("epsilon", 1e-8)
update_op("adam_update", ("weight", "grad", "mean", "var"),
          (LR, BETA1, BETA2, _EPS8, WD, RESCALE, CLIP, LAZY), Rule("adam_update", (2, 3)),
          _adam_hp, {"lr": 0.01, "wd": 0.05, "rescale_grad": 0.7, "clip_gradient": 0.5,
                     "epsilon": 1e-3},
          "Adam (bias correction is the caller's, folded into ``lr``).", sparse=_ADAM_SPARSE,
          aliases=("_sparse_adam_update",))
_ADAMW = (LR, BETA1, BETA2, _EPS8, WD, _f("eta", doc="Schedule multiplier."), CLIP)
_ADAMW_CASE = {"lr": 0.01, "eta": 0.5, "wd": 0.05, "clip_gradient": 0.5, "epsilon": 1e-3}
update_op("_adamw_update", ("weight", "grad", "mean", "var", "rescale_grad"), _ADAMW,
          Rule("adamw_update_grad", (2, 3), writes_grad=True), _adamw_hp(4), _ADAMW_CASE,
          "AdamW: ``w - eta*(lr*mean/(sqrt(var)+eps) + wd*w)``; ``grad`` becomes "
          "``clip(rescale_grad*grad)`` (in place, as in MXNet 1.9.1); skipped (weight "
          "returned, nothing written) when the ``rescale_grad`` array holds 0, NaN or inf.",
          scalars=(4,))
update_op("_mp_adamw_update", ("weight", "grad", "mean", "var", "weight32", "rescale_grad"),
          _ADAMW, Rule("adamw_update", (2, 3), master=4), _adamw_hp(5), _ADAMW_CASE,
          "``_adamw_update`` of the fp32 master ``weight32`` (in place), cast.", scalars=(5,))
_RMS = {"lr": 0.01, "wd": 0.05, "rescale_grad": 0.7, "clip_gradient": 0.5, "epsilon": 1e-3,
        "clip_weights": 0.9}
update_op("rmsprop_update", ("weight", "grad", "n"),
          (LR, _f("gamma1", 0.95), _EPS8, WD, RESCALE, CLIP, _f("clip_weights", -1.0)),
          Rule("rmsprop_update", (2,)), _rms_hp, _RMS, "RMSProp (Tieleman & Hinton).")
update_op("rmspropalex_update", ("weight", "grad", "n", "g", "delta"),
          (LR, _f("gamma1", 0.95), _f("gamma2", 0.9), _EPS8, WD, RESCALE, CLIP,
           _f("clip_weights", -1.0)),
          Rule("rmspropalex_update", (2, 3, 4)), _rms_hp, _RMS,
          "Centered RMSProp (Graves 2013).", bounds=(0.1, 0.2))  # n > g^2: no NaN
update_op("ftrl_update", ("weight", "grad", "z", "n"),
          (LR, _f("lamda1", 0.01), _f("beta", 1.0), WD, RESCALE, CLIP),
          Rule("ftrl_update", (2, 3)), _ftrl_hp,
          {"lr": 0.1, "lamda1": 0.05, "wd": 0.05, "rescale_grad": 0.7, "clip_gradient": 0.5},
          "FTRL-Proximal (McMahan et al. 2013).", sparse=_FTRL_SPARSE,
          aliases=("_sparse_ftrl_update",))
update_op("ftml_update", ("weight", "grad", "d", "v", "z"),
          (LR, _f("beta1", 0.6), BETA2, Param("epsilon", "float", 1e-8), Param("t", "int"),
           WD, RESCALE, _f("clip_grad", -1.0)),
          Rule("ftml_update", (2, 3, 4)), _ftml_hp,
          {"lr": 0.1, "t": 3, "wd": 0.05, "rescale_grad": 0.7, "clip_grad": 0.5},
          "Follow the Moving Leader (Zheng & Kwok 2017) at step ``t``.")
update_op("signsgd_update", _W, (LR, WD, RESCALE, CLIP), Rule("signsgd_update", ()),
          _sgd_hp, {"lr": 0.1, "wd": 0.05},
          "``(1 - lr*wd)*w - lr*sign(g)`` (``rescale_grad``, ``clip_gradient`` unused).")
update_op("signum_update", _WG, (LR, MOMENTUM, WD, RESCALE, CLIP, _f("wd_lh", 0.0)),
          Rule("signum_update", (2,)), _signum_hp, {**_MOM, "wd_lh": 0.02},
          "Signum: ``mom = momentum*mom - (1-momentum)*(clip(r*g) + wd*w)`` (in place); "
          "``(1 - lr*wd_lh)*w + lr*sign(mom)``.")
_LAMB1 = (BETA1, BETA2, Param("epsilon", "float", 1e-6), Param("t", "int"),
          Param("bias_correction", "bool", True), _f("wd"), RESCALE, CLIP)
_LAMB1_CASE = {"t": 3, "wd": 0.05, "rescale_grad": 0.7, "clip_gradient": 0.5}
update_op("lamb_update_phase1", ("weight", "grad", "mean", "var"), _LAMB1,
          Rule("lamb_phase1", (2, 3)), _lamb1_hp, _LAMB1_CASE,
          "LAMB's direction ``m_hat/(sqrt(v_hat)+eps) + wd*w`` (moments updated in place).")
update_op("mp_lamb_update_phase1", ("weight", "grad", "mean", "var", "weight32"), _LAMB1,
          Rule("lamb_phase1", (2, 3), master=4, new_out=True), _lamb1_hp, _LAMB1_CASE,
          "``lamb_update_phase1`` on the fp32 master ``weight32``; a float32 direction.")


def _lamb2(mp: bool, triton: bool):
    def forward(p, ins, aux, rt):
        from ..kernels import optimizer as kops
        weight, g, r1, r2 = ins[:4]
        target = ins[4] if mp else weight
        hp = _hp(lr=p.lr, lower_bound=p.lower_bound, upper_bound=p.upper_bound)
        out = torch.empty_like(target)  # MXNet 1.9.1 leaves weight32 as it was
        if triton:
            kops.lamb_phase2([target], [g.to(target.dtype)], [r1], [r2], hp, out=[out])
        else:
            out.copy_(kops.lamb_phase2_ref([target], [g], [r1], [r2], hp)[0])
        return (out.to(weight.dtype) if mp else out,)
    forward.__name__ = "triton_lamb_update_phase2" if triton else "lamb_update_phase2"
    return forward


_LAMB2 = (LR, _f("lower_bound", -1.0), _f("upper_bound", -1.0))
for _mp in (False, True):
    _inputs = ("weight", "g", "r1", "r2") + (("weight32",) if _mp else ())
    register(OpDef(
        name="mp_lamb_update_phase2" if _mp else "lamb_update_phase2", inputs=_inputs,
        params=_LAMB2, forward=_lamb2(_mp, False), kernel=_lamb2(_mp, True),
        infer_shape=same_shape("lamb_update_phase2", (2, 3)),
        infer_type=mp_type((1, 2, 3, 4)) if _mp else None,
        differentiable=False,
        cases=_cases(len(_inputs), {"lr": 0.1, "lower_bound": 0.1, "upper_bound": 5.0},
                     (2, 3)),
        doc="LAMB's step ``w - lr * r1/r2 * g`` (``r1`` bounded; ratio 1 when a norm is 0)"
            + (" from the fp32 ``weight32``, cast (MXNet 1.9.1 does not write ``weight32``)."
               if _mp else ".")))


def _group_adagrad_shape(p, shapes):
    weight, grad, history = shapes
    try:
        merged = merge_shape(weight, grad, "grad")
    except ShapeError as err:
        raise ShapeError(f"Error in operator _contrib_group_adagrad_update: {err}") from None
    if not merged:
        return None
    if history and history[0] != merged[0]:
        raise ShapeError(f"Error in operator _contrib_group_adagrad_update: history "
                         f"{history} needs one row per weight row, weight {merged}")
    return [merged, merged, history or (merged[0], 1)], [merged]


def _group_adagrad(triton: bool):
    def forward(p, ins, aux, rt):
        from ..kernels import optimizer as kops
        weight, grad, history = (x.contiguous() for x in ins)
        hp = _hp(lr=p.lr, rescale_grad=p.rescale_grad, clip_gradient=p.clip_gradient,
                 epsilon=p.epsilon)
        if triton:
            new, hist = kops.group_adagrad_update(weight, grad, history, hp)
        else:
            new, hist = kops.group_adagrad_update_ref(weight, grad, history, hp)
        if hist.data_ptr() != ins[2].data_ptr():
            ins[2].copy_(hist)
        return (new,)
    forward.__name__ = ("triton_" if triton else "") + "group_adagrad_update"
    return forward


def _group_adagrad_rows(p, ins, triton: bool):
    """Group AdaGrad on gathered rows: their history rows in place, the new weight rows."""
    from ..kernels import optimizer as kops
    hp = _hp(lr=p.lr, rescale_grad=p.rescale_grad, clip_gradient=p.clip_gradient,
             epsilon=p.epsilon)
    new, hist = kops.group_adagrad_update_ref(ins[0], ins[1], ins[2], hp)
    ins[2].copy_(hist)
    return new


register(OpDef(
    name="_contrib_group_adagrad_update", inputs=("weight", "grad", "history"),
    params=(LR, RESCALE, CLIP, _f("epsilon", 1e-5, doc="Added under the square root.")),
    infer_shape=_group_adagrad_shape, forward=_group_adagrad(False),
    kernel=_group_adagrad(True), hints=PlanHints(mutates=(2,)), differentiable=False,
    storage=sparse_storage("_contrib_group_adagrad_update", _group_adagrad_rows,
                           _ADAGRAD_SPARSE),
    cases=(Case(((4, 3), (4, 3), (4, 1)), {"lr": 0.1, "rescale_grad": 0.7,
                                          "clip_gradient": 0.5}, low=0.05, high=1.0,
                grad=False),
           Case(((3, 2, 2), (3, 2, 2), (3, 1)), {"lr": 0.2}, low=0.05, high=1.0, grad=False)),
    doc="Group AdaGrad (one rate per row): ``G = clip(rescale_grad*g)``, ``history += "
        "mean(G^2 over the row)`` (in place), ``w - lr*G/sqrt(history + epsilon)``. With a "
        "row_sparse grad only its rows change (MXNet 1.9.1 implements only that form; the "
        "dense one here has the same math)."))

_ADAGRAD_CASE = {"lr": 0.1, "rescale_grad": 0.7, "clip_gradient": 0.5, "epsilon": 1e-3}
_ADAGRAD_FORWARD, _ADAGRAD_KERNEL = forwards(Rule("adagrad_update", (2,)), _adagrad_hp)
register(OpDef(
    name="_sparse_adagrad_update", inputs=("weight", "grad", "history"),
    params=(LR, _f("epsilon", 1e-7, doc="Added under the square root."), WD, RESCALE, CLIP),
    infer_shape=same_shape("_sparse_adagrad_update"),
    forward=_ADAGRAD_FORWARD, kernel=_ADAGRAD_KERNEL,
    hints=PlanHints(mutates=(2,)), differentiable=False, cases=_cases(3, _ADAGRAD_CASE),
    storage=sparse_storage("_sparse_adagrad_update",
                           _rule_rows(Rule("adagrad_update", (2,)), _adagrad_hp),
                           _ADAGRAD_SPARSE, strict=True),
    doc="AdaGrad on a row_sparse grad's rows: ``G = clip(rescale_grad*g)``, ``history += "
        "G^2`` (in place), ``w - lr*G/sqrt(history + epsilon)``; the weight and history both "
        "dense or both row_sparse, ``wd`` 0, as MXNet 1.9.1 (which refuses dense arrays; "
        "here they get the same math)."))
