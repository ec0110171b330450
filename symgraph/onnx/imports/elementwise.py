"""ONNX element-wise ops: arithmetic, comparisons, activations, Clip, Where, Cast."""
from __future__ import annotations

import numpy as np

import symgraph as mx

from .common import DTYPES, const_in, imports, sym_op

# ---------------------------------------------------------------- element-wise ops
_UNARY = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Abs": "abs",
          "Neg": "negative", "Exp": "exp", "Log": "log", "Sqrt": "sqrt",
          "Reciprocal": "reciprocal", "Floor": "floor", "Ceil": "ceil", "Erf": "erf",
          "Sin": "sin", "Cos": "cos", "Tan": "tan", "Asin": "arcsin", "Acos": "arccos",
          "Atan": "arctan", "Sinh": "sinh", "Cosh": "cosh", "Asinh": "arcsinh",
          "Acosh": "arccosh", "Atanh": "arctanh", "Sign": "sign", "Softsign": "softsign",
          "Not": "logical_not", "Identity": "identity"}


def _unary(g, n):
    return [sym_op(_UNARY[n.op])(g.sym(n.ins[0]), name=n.name)]


imports(*_UNARY)(_unary)


@imports("Softplus")
def _softplus(g, n):
    return [mx.sym.Activation(g.sym(n.ins[0]), act_type="softrelu", name=n.name)]


@imports("Dropout")
def _dropout(g, n):
    if n.a.get("is_test", 1) == 0 and g.opset < 7:
        raise n.fail("training-mode dropout")
    if n.has(2) and bool(np.ravel(const_in(g, n, 2, "training_mode"))[0]):
        raise n.fail("training_mode is true (import builds inference graphs)")
    return [mx.sym.identity(g.sym(n.ins[0]), name=n.name)]


@imports("LeakyRelu")
def _leaky(g, n):
    return [mx.sym.LeakyReLU(g.sym(n.ins[0]), act_type="leaky",
                             slope=float(n.a.get("alpha", 0.01)), name=n.name)]


@imports("Elu")
def _elu(g, n):
    return [mx.sym.LeakyReLU(g.sym(n.ins[0]), act_type="elu",
                             slope=float(n.a.get("alpha", 1.0)), name=n.name)]


@imports("Selu")
def _selu(g, n):
    alpha = float(n.a.get("alpha", 1.67326319217681884765625))
    gamma = float(n.a.get("gamma", 1.05070102214813232421875))
    x = g.sym(n.ins[0])
    neg = (mx.sym.exp(mx.sym.minimum(x, 0.0)) - 1.0) * (alpha * gamma)
    return [mx.sym.broadcast_add(mx.sym.relu(x) * gamma, neg, name=n.name)]


@imports("HardSigmoid")
def _hard_sigmoid(g, n):
    return [mx.sym.hard_sigmoid(g.sym(n.ins[0]), alpha=float(n.a.get("alpha", 0.2)),
                                beta=float(n.a.get("beta", 0.5)), name=n.name)]


@imports("HardSwish")
def _hard_swish(g, n):
    x = g.sym(n.ins[0])
    return [mx.sym.broadcast_mul(x, mx.sym.hard_sigmoid(x, alpha=1 / 6, beta=0.5),
                                 name=n.name)]


@imports("Gelu")
def _gelu(g, n):
    if n.a.get("approximate", "none") != "none":
        raise n.fail(f"approximate={n.a['approximate']!r} (only the exact erf form)")
    return [mx.sym.LeakyReLU(g.sym(n.ins[0]), act_type="gelu", name=n.name)]


@imports("Mish")
def _mish(g, n):
    x = g.sym(n.ins[0])
    soft = mx.sym.Activation(x, act_type="softrelu")
    return [mx.sym.broadcast_mul(x, mx.sym.tanh(soft), name=n.name)]


@imports("PRelu")
def _prelu(g, n):
    x, slope = _same_rank(g, n, n.ins[0], n.ins[1])
    neg = mx.sym.broadcast_mul(slope, mx.sym.minimum(x, 0.0))
    return [mx.sym.broadcast_add(mx.sym.relu(x), neg, name=n.name)]


def _same_rank(g, n, a: str, b: str) -> tuple:
    """``a`` and ``b`` as symbols of one rank (numpy broadcasting prepends size-1 dims,
    MXNet's broadcast ops need equal ranks)."""
    ra, rb = g.shape(a), g.shape(b)
    sa, sb = g.sym(a), g.sym(b)
    if ra is None or rb is None or len(ra) == len(rb):
        return sa, sb
    if len(ra) < len(rb):
        return _lift(g, a, len(rb) - len(ra)), sb
    return sa, _lift(g, b, len(ra) - len(rb))


def _lift(g, name: str, k: int):
    """``name`` with ``k`` leading size-1 dims."""
    value = g.const(name)
    if value is not None:
        return g.param(value.reshape((1,) * k + value.shape), f"{name}_lifted")
    x = g.sym(name)
    for _ in range(k):
        x = mx.sym.expand_dims(x, axis=0)
    return x


# ONNX op -> (MXNet broadcast op, scalar op with the constant on the right, on the left)
_BINARY = {"Add": ("broadcast_add", "_PlusScalar", "_PlusScalar"),
           "Sub": ("broadcast_sub", "_MinusScalar", "_RMinusScalar"),
           "Mul": ("broadcast_mul", "_MulScalar", "_MulScalar"),
           "Div": ("broadcast_div", "_DivScalar", "_RDivScalar"),
           "Pow": ("broadcast_power", "_PowerScalar", "_RPowerScalar"),
           "Max": ("broadcast_maximum", "_MaximumScalar", "_MaximumScalar"),
           "Min": ("broadcast_minimum", "_MinimumScalar", "_MinimumScalar"),
           "Equal": ("broadcast_equal", "_EqualScalar", "_EqualScalar"),
           "Greater": ("broadcast_greater", "_GreaterScalar", "_LesserScalar"),
           "Less": ("broadcast_lesser", "_LesserScalar", "_GreaterScalar"),
           "GreaterOrEqual": ("broadcast_greater_equal", "_GreaterEqualScalar",
                              "_LesserEqualScalar"),
           "LessOrEqual": ("broadcast_lesser_equal", "_LesserEqualScalar",
                           "_GreaterEqualScalar"),
           "And": ("broadcast_logical_and", None, None),
           "Or": ("broadcast_logical_or", None, None),
           "Xor": ("broadcast_logical_xor", None, None)}
_COMPARE = {"Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual"}


def _scalar_side(g, a: str, b: str) -> tuple[int, float] | None:
    """``(side, value)`` when one operand is a one-element constant that does not raise the
    rank of the result (side 1: ``b``, 0: ``a``), else None."""
    for side, (this, other) in ((1, (b, a)), (0, (a, b))):
        value, shape = g.const(this), g.shape(other)
        if value is not None and value.size == 1 and shape is not None and \
                len(shape) >= value.ndim and g.const(other) is None and \
                value.dtype.kind in "fiu":
            return side, value.reshape(()).item()
    return None


def _binary2(g, n, op_type: str, a: str, b: str, name: str | None):
    bcast, right, left = _BINARY[op_type]
    scalar = _scalar_side(g, a, b) if right else None
    if scalar is not None:
        side, value = scalar
        x = g.sym(a if side == 1 else b)
        return sym_op(right if side == 1 else left)(x, scalar=value, name=name)
    sa, sb = _same_rank(g, n, a, b)
    return sym_op(bcast)(sa, sb, name=name)


@imports(*_BINARY)
def _binary(g, n):
    out = _binary2(g, n, n.op, n.ins[0], n.ins[1], None if n.op in _COMPARE else n.name)
    if n.op in _COMPARE:  # ONNX compares to bool; MXNet keeps the input dtype
        out = mx.sym.Cast(out, dtype="bool", name=n.name)
    return [out]


@imports("Sum", "Mean", "Max", "Min")
def _variadic(g, n):
    if len(n.ins) == 2 and n.op in ("Max", "Min"):
        return _binary(g, n)
    shapes = [g.shape(i) for i in n.ins]
    rank = max((len(s) for s in shapes if s is not None), default=None)
    syms = [_lift(g, i, rank - len(s)) if rank is not None and s is not None and
            len(s) < rank else g.sym(i) for i, s in zip(n.ins, shapes)]
    bcast = _BINARY["Add" if n.op in ("Sum", "Mean") else n.op][0]
    acc = syms[0]
    for x in syms[1:]:
        acc = sym_op(bcast)(acc, x)
    if n.op == "Mean":
        acc = acc / float(len(n.ins))
    return [mx.sym.identity(acc, name=n.name)]


@imports("Clip")
def _clip(g, n):
    if g.opset < 11:
        lo, hi = n.a.get("min", -np.inf), n.a.get("max", np.inf)
    else:
        lo_v, hi_v = const_in(g, n, 1, "min"), const_in(g, n, 2, "max")
        lo = -np.inf if lo_v is None else np.ravel(lo_v)[0].item()
        hi = np.inf if hi_v is None else np.ravel(hi_v)[0].item()
    return [mx.sym.clip(g.sym(n.ins[0]), a_min=float(lo), a_max=float(hi), name=n.name)]


@imports("Where")
def _where(g, n):
    out = g.shape(n.outs[0])
    shapes = [g.shape(i) for i in n.ins]
    syms = [g.sym(i) for i in n.ins]
    if not all(s is not None and s == shapes[0] for s in shapes):
        if out is None or None in out:
            raise n.fail("broadcasting inputs of unknown shapes (MXNet's where needs one)")
        syms = [mx.sym.broadcast_to(_lift(g, i, len(out) - len(s)) if len(s) < len(out)
                                    else x, shape=out)
                for i, s, x in zip(n.ins, shapes, syms)]
    return [mx.sym.where(*syms, name=n.name)]


@imports("Cast")
def _cast(g, n):
    to = int(n.a["to"])
    if to not in DTYPES:
        raise n.fail(f"cast to ONNX element type {to}")
    return [mx.sym.Cast(g.sym(n.ins[0]), dtype=DTYPES[to], name=n.name)]


@imports("Einsum")
def _einsum(g, n):
    raise n.fail("Einsum has no MXNet 1.x operator (rewrite it as MatMul/Transpose)")



@imports("Mod")
def _mod(g, n):
    a, b = _same_rank(g, n, n.ins[0], n.ins[1])
    if not n.a.get("fmod", 0):  # the divisor's sign: MXNet's mod
        return [mx.sym.broadcast_mod(a, b, name=n.name)]
    # C's fmod takes the dividend's sign
    r = mx.sym.broadcast_mod(mx.sym.abs(a), mx.sym.abs(b))
    return [mx.sym.broadcast_mul(mx.sym.sign(a), r, name=n.name)]


@imports("IsNaN", "IsInf")
def _is_special(g, n):
    x = g.sym(n.ins[0])
    if n.op == "IsNaN":
        found = x != x
    else:
        pos, neg = n.a.get("detect_positive", 1), n.a.get("detect_negative", 1)
        if pos and neg:
            found = mx.sym.abs(x) == np.inf
        elif pos or neg:
            found = x == (np.inf if pos else -np.inf)
        else:
            found = mx.sym.zeros_like(x)
    return [mx.sym.Cast(found, dtype="bool", name=n.name)]
