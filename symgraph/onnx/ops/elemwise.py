"""ONNX translations of elementwise arithmetic: binary ops with and without broadcasting,
ops with a scalar, unary math, casts and ``where``.

MXNet keeps the input's dtype everywhere: comparisons and logical ops give 0/1 in it
(ONNX gives bool: cast back), integer inputs of float-only math go through float32 and
are truncated back (as mshadow's math functions do), and a scalar operand takes the
input's dtype (``int32 + 1.5`` adds 1).
"""
from __future__ import annotations

import math

import numpy as np

from ..emitter import Emitter, NodeCtx, converts

_FLOATS = ("float16", "float32", "float64", "bfloat16")


def _is_int(dtype) -> bool:
    return str(dtype) not in _FLOATS


def needs_widening(e: Emitter, op_type: str, dtype: str) -> bool:
    """Whether ``op_type`` cannot take ``dtype`` (int8/uint8) in this opset: such data is
    computed in int32 and wrapped back, which is what C++'s integer promotion gives."""
    if dtype not in ("int8", "uint8"):
        return False
    if op_type in ("Pow", "ReduceSum", "ReduceProd", "ReduceMean", "Sum"):
        return True  # never in ONNX
    if op_type == "Neg":
        return dtype == "uint8"
    return op_type in ("Add", "Sub", "Mul", "Div") and e.opset < 14


def scalar_const(e: Emitter, value, dtype: str, hint: str = "scalar") -> str:
    """A 0-d constant of ``value`` in ``dtype`` (C's conversion: integers truncate, narrow
    ones wrap)."""
    if dtype == "bfloat16":  # numpy has no bfloat16: a float32 constant, cast
        return e.cast(e.scalar(value, "float32", hint), "bfloat16")
    if _is_int(dtype) and dtype != "bool":
        value = np.asarray(int(math.trunc(value)) if math.isfinite(value) else 0, np.int64)
        return e.const(value.astype(dtype), hint=hint)
    return e.scalar(value, dtype, hint)


# ------------------------------------------------------------------ binary

_BINARY = {"elemwise_add": "Add", "elemwise_sub": "Sub", "elemwise_mul": "Mul",
           "elemwise_div": "Div", "broadcast_add": "Add", "broadcast_sub": "Sub",
           "broadcast_mul": "Mul", "broadcast_div": "Div", "_grad_add": "Add",
           "_power": "Pow", "broadcast_power": "Pow", "_maximum": "Max",
           "broadcast_maximum": "Max", "_minimum": "Min", "broadcast_minimum": "Min",
           "_mod": "Mod", "broadcast_mod": "Mod", "_hypot": "Hypot", "broadcast_hypot": "Hypot"}


def _div(e: Emitter, a: str, b: str, dtype: str, out: str | None) -> str:
    """``a / b``; integers truncate and a 0 divisor gives 0 (ONNX leaves it undefined)."""
    if not _is_int(dtype):
        return e.one("Div", [a, b], out)
    zero = e.one("Equal", [b, scalar_const(e, 0, dtype)])
    safe = e.one("Where", [zero, scalar_const(e, 1, dtype), b])
    return e.one("Where", [zero, scalar_const(e, 0, dtype), e.one("Div", [a, safe])], out)


def _mod(e: Emitter, a: str, b: str, dtype: str, out: str | None) -> str:
    """MXNet's ``mod``: the divisor's sign, and 0 where the divisor is 0."""
    zero_c = scalar_const(e, 0, dtype)
    zero = e.one("Equal", [b, zero_c])
    safe = e.one("Where", [zero, scalar_const(e, 1, dtype), b])
    if _is_int(dtype):
        r = e.one("Mod", [a, safe], fmod=0)  # integer Mod already takes the divisor's sign
    else:  # C's fmod (the dividend's sign), then moved onto the divisor's side
        r = e.one("Mod", [a, safe], fmod=1)
        flip = e.one("Xor", [e.one("Less", [r, zero_c]), e.one("Less", [safe, zero_c])])
        move = e.one("And", [flip, e.one("Not", [e.one("Equal", [r, zero_c])])])
        r = e.one("Where", [move, e.one("Add", [r, safe]), r])
    return e.one("Where", [zero, zero_c, r], out)


def _hypot(e: Emitter, a: str, b: str, dtype: str, out: str | None) -> str:
    """``sqrt(a * a + b * b)`` (integers and half floats through float32, as MXNet)."""
    if dtype not in ("float32", "float64"):
        a, b = e.cast(a, "float32"), e.cast(b, "float32")
        y = _hypot(e, a, b, "float32", None)
        return e.cast(y, dtype, out)
    return e.one("Sqrt", [e.one("Add", [e.one("Mul", [a, a]), e.one("Mul", [b, b])])], out)


def _arith(e: Emitter, op_type: str, a: str, b: str, dtype: str, out: str | None,
           exponent: np.ndarray | None = None) -> str:
    """``a op b`` for the ops of :data:`_BINARY` and the scalar forms (``exponent``: the
    value of ``b`` when it is a known constant, for integer ``Pow``)."""
    if needs_widening(e, op_type, dtype):
        y = _arith(e, op_type, e.cast(a, "int32"), e.cast(b, "int32"), "int32", None, exponent)
        return e.cast(y, dtype, out)
    if op_type == "Div":
        return _div(e, a, b, dtype, out)
    if op_type == "Mod":
        return _mod(e, a, b, dtype, out)
    if op_type == "Hypot":
        return _hypot(e, a, b, dtype, out)
    if op_type == "Pow" and _is_int(dtype) and dtype != "bool":
        return _int_pow(e, a, b, dtype, out, exponent)
    return e.one(op_type, [a, b], out)


_INT_BITS = {"int8": 8, "uint8": 8, "int32": 32, "int64": 64}


def _int_pow(e: Emitter, a: str, b: str, dtype: str, out: str | None,
             exponent: np.ndarray | None = None) -> str:
    """Integer ``a ** b`` as symgraph (torch) computes it: square-and-multiply wrapping in
    the dtype, and for ``b < 0``: 1 for ``a == 1``, +-1 for ``a == -1``, else 0 (ONNX
    Runtime goes through a double: wrong past 2**53, INT_MIN for ``0 ** -1``)."""
    one, zero = scalar_const(e, 1, dtype), scalar_const(e, 0, dtype)
    two = scalar_const(e, 2, dtype)
    neg = e.one("Less", [b, zero])
    ex = e.one("Max", [b, zero])
    # one step per exponent bit; fewer when the exponent is a known constant
    bits = _INT_BITS.get(dtype, 64) - 1
    if exponent is not None:
        bits = max(int(np.abs(exponent.astype(np.int64)).max(initial=0)).bit_length(), 1)
    r, base = one, a  # the first Where broadcasts r to the output's shape
    for step in range(bits):
        odd = e.one("Equal", [e.one("Mod", [ex, two]), one])
        r = e.one("Where", [odd, e.one("Mul", [r, base]), r])
        if step < bits - 1:
            base, ex = e.one("Mul", [base, base]), e.one("Div", [ex, two])
    # a negative exponent: only |a| == 1 gives a non-zero integer
    odd_b = e.one("Equal", [e.one("Mod", [e.one("Abs", [b]), two]), one])
    minus = e.one("Where", [odd_b, scalar_const(e, -1, dtype), one])
    small = e.one("Where", [e.one("Equal", [a, one]), one,
                            e.one("Where", [e.one("Equal", [a, scalar_const(e, -1, dtype)]), minus,
                                            zero])])
    return e.one("Where", [neg, small, r], out)


@converts(*_BINARY)
def binary(e: Emitter, n: NodeCtx):
    return [_arith(e, _BINARY[n.op], n.ins[0], n.ins[1], n.in_dtypes[0], n.outs[0],
                   n.const(1))]


_COMPARE = {"equal": ("Equal", False), "not_equal": ("Equal", True),
            "greater": ("Greater", False), "greater_equal": ("GreaterOrEqual", False),
            "lesser": ("Less", False), "lesser_equal": ("LessOrEqual", False)}
_LOGICAL = {"logical_and": "And", "logical_or": "Or", "logical_xor": "Xor"}


def _compare(e: Emitter, kind: str, a: str, b: str, out_dtype: str, out: str | None) -> str:
    """0/1 in ``out_dtype`` of comparison or logical op ``kind``."""
    if kind in _LOGICAL:
        flag = e.one(_LOGICAL[kind], [e.cast(a, "bool"), e.cast(b, "bool")])
    else:
        op_type, negate = _COMPARE[kind]
        flag = e.one(op_type, [a, b])
        if negate:
            flag = e.one("Not", [flag])
    return e.cast(flag, out_dtype, out)


def _compare_kind(op: str) -> str:
    return op[len("broadcast_"):] if op.startswith("broadcast_") else op[1:]


_COMPARISONS = [f"_{k}" for k in (*_COMPARE, *_LOGICAL)] + \
               [f"broadcast_{k}" for k in (*_COMPARE, *_LOGICAL)]


@converts(*_COMPARISONS)
def comparison(e: Emitter, n: NodeCtx):
    return [_compare(e, _compare_kind(n.op), n.ins[0], n.ins[1], n.out_dtypes[0], n.outs[0])]


# ------------------------------------------------------------------ with a scalar

_SCALAR_ARITH = {"_plus_scalar": ("Add", False), "_minus_scalar": ("Sub", False),
                 "_rminus_scalar": ("Sub", True), "_mul_scalar": ("Mul", False),
                 "_div_scalar": ("Div", False), "_rdiv_scalar": ("Div", True),
                 "_mod_scalar": ("Mod", False), "_rmod_scalar": ("Mod", True),
                 "_power_scalar": ("Pow", False), "_rpower_scalar": ("Pow", True),
                 "_maximum_scalar": ("Max", False), "_minimum_scalar": ("Min", False),
                 "_hypot_scalar": ("Hypot", False)}
_SCALAR_COMPARE = [f"_{k}_scalar" for k in (*_COMPARE, *_LOGICAL)]


@converts(*_SCALAR_ARITH)
def scalar_arith(e: Emitter, n: NodeCtx):
    op_type, reverse = _SCALAR_ARITH[n.op]
    dtype = n.in_dtypes[0]
    s = scalar_const(e, float(n.p.scalar), dtype)
    a, b = (s, n.ins[0]) if reverse else (n.ins[0], s)
    known = None  # an integer exponent as scalar_const makes it: fewer Pow steps
    if not reverse and _is_int(dtype) and dtype != "bool" and math.isfinite(float(n.p.scalar)):
        known = np.asarray(math.trunc(float(n.p.scalar)), np.int64).astype(dtype)
    return [_arith(e, op_type, a, b, dtype, n.outs[0], known)]


@converts(*_SCALAR_COMPARE)
def scalar_compare(e: Emitter, n: NodeCtx):
    dtype = n.in_dtypes[0]
    s = scalar_const(e, float(n.p.scalar), dtype)
    return [_compare(e, n.op[1:-len("_scalar")], n.ins[0], s, n.out_dtypes[0], n.outs[0])]


# ------------------------------------------------------------------ unary math

def _k(e: Emitter, value: float, dtype: str) -> str:
    return scalar_const(e, value, dtype, "k")


def _round(e: Emitter, x: str, dt: str) -> str:
    """Half away from zero, exactly (``|x| - floor(|x|)`` has no rounding error)."""
    a = e.one("Abs", [x])
    f = e.one("Floor", [a])
    up = e.one("GreaterOrEqual", [e.one("Sub", [a, f]), _k(e, 0.5, dt)])
    r = e.one("Where", [up, e.one("Add", [f, _k(e, 1.0, dt)]), f])
    return e.one("Mul", [e.one("Sign", [x]), r])


def _rint(e: Emitter, x: str, dt: str) -> str:
    """MXNet's rint: the nearer of floor and ceil, floor on a tie (2.5 -> 2, -2.5 -> -3)."""
    f, c = e.one("Floor", [x]), e.one("Ceil", [x])
    low = e.one("LessOrEqual", [e.one("Sub", [x, f]), e.one("Sub", [c, x])])
    return e.one("Where", [low, f, c])


def _trunc(e: Emitter, x: str, dt: str) -> str:
    up = e.one("GreaterOrEqual", [x, _k(e, 0.0, dt)])
    return e.one("Where", [up, e.one("Floor", [x]), e.one("Ceil", [x])])


def _cbrt(e: Emitter, x: str, dt: str) -> str:
    root = e.one("Pow", [e.one("Abs", [x]), _k(e, 1.0 / 3.0, dt)])
    return e.one("Mul", [e.one("Sign", [x]), root])


def _expm1(e: Emitter, x: str, dt: str) -> str:
    """Kahan's accurate ``exp(x) - 1``: ``(u - 1) * x / log(u)`` with ``u = exp(x)``."""
    u = e.one("Exp", [x])
    um1 = e.one("Sub", [u, _k(e, 1.0, dt)])
    r = e.one("Div", [e.one("Mul", [um1, x]), e.one("Log", [u])])
    r = e.one("Where", [e.one("IsInf", [u]), u, r])
    r = e.one("Where", [e.one("Equal", [um1, _k(e, -1.0, dt)]), um1, r])
    return e.one("Where", [e.one("Equal", [u, _k(e, 1.0, dt)]), x, r])


def _log1p(e: Emitter, x: str, dt: str) -> str:
    """Kahan's accurate ``log(1 + x)``: ``log(u) * x / (u - 1)`` with ``u = 1 + x``."""
    u = e.one("Add", [x, _k(e, 1.0, dt)])
    r = e.one("Div", [e.one("Mul", [e.one("Log", [u]), x]),
                      e.one("Sub", [u, _k(e, 1.0, dt)])])
    r = e.one("Where", [e.one("IsInf", [u]), u, r])
    return e.one("Where", [e.one("Equal", [u, _k(e, 1.0, dt)]), x, r])


def _scaled(op_type: str | None, factor: float):
    def build(e: Emitter, x: str, dt: str) -> str:
        y = e.one(op_type, [x]) if op_type else x
        return e.one("Mul", [y, _k(e, factor, dt)])
    return build


def _chain(*op_types: str):
    def build(e: Emitter, x: str, dt: str) -> str:
        for op_type in op_types:
            x = e.one(op_type, [x])
        return x
    return build


def _logical_not(e: Emitter, x: str, dt: str) -> str:
    return e.one("Not", [e.cast(x, "bool")])


# MXNet unary op -> builder(e, x, dtype); float math (integers go through float32)
_FLOAT_UNARY = {
    "round": _round, "_contrib_round_ste": _round, "rint": _rint, "fix": _trunc,
    "trunc": _trunc, "cbrt": _cbrt, "rcbrt": lambda e, x, dt: e.one("Reciprocal",
                                                                    [_cbrt(e, x, dt)]),
    "expm1": _expm1, "log1p": _log1p, "log2": _scaled("Log", 1.0 / math.log(2.0)),
    "log10": _scaled("Log", 1.0 / math.log(10.0)), "degrees": _scaled(None, 180.0 / math.pi),
    "radians": _scaled(None, math.pi / 180.0), "rsqrt": _chain("Sqrt", "Reciprocal"),
}
_FLOAT_UNARY.update({k: _chain(v) for k, v in {
    "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "reciprocal": "Reciprocal", "sin": "Sin",
    "cos": "Cos", "tan": "Tan", "arcsin": "Asin", "arccos": "Acos", "arctan": "Atan",
    "sinh": "Sinh", "cosh": "Cosh", "arcsinh": "Asinh", "arccosh": "Acosh",
    "arctanh": "Atanh", "erf": "Erf", "floor": "Floor", "ceil": "Ceil"}.items()})
# rounding leaves integers as they are
_INT_IDENTITY = {"round", "_contrib_round_ste", "rint", "fix", "trunc", "floor", "ceil"}
# ops ONNX runs on integers directly, and those that give 0/1 in the input dtype
_ANY_UNARY = {"negative": _chain("Neg"), "abs": _chain("Abs"), "sign": _chain("Sign"),
              "_contrib_sign_ste": _chain("Sign"),
              "square": lambda e, x, dt: _arith(e, "Mul", x, x, dt, None)}
_FLAG_UNARY = {"logical_not": _logical_not}


@converts(*_FLOAT_UNARY, *_ANY_UNARY, *_FLAG_UNARY)
def unary(e: Emitter, n: NodeCtx):
    # the value of the last node is returned: the exporter names it when it is an output
    x, dt, want = n.ins[0], n.in_dtypes[0], n.out_dtypes[0]
    if n.op in _FLAG_UNARY:
        return [e.cast(_FLAG_UNARY[n.op](e, x, dt), want, n.outs[0])]
    if n.op == "negative" and needs_widening(e, "Neg", dt):
        return [e.cast(e.one("Neg", [e.cast(x, "int32")]), dt, n.outs[0])]
    if n.op in _ANY_UNARY:
        return [_ANY_UNARY[n.op](e, x, dt)]
    if _is_int(dt) and n.op in _INT_IDENTITY:
        return [x]
    if dt not in ("float32", "float64"):  # as mshadow: integer and half math in float32
        y = _FLOAT_UNARY[n.op](e, e.cast(x, "float32"), "float32")
        return [cast_like_mxnet(e, y, "float32", want, n.outs[0])]
    return [_FLOAT_UNARY[n.op](e, x, dt)]


@converts("erfinv", "gamma", "gammaln")
def no_exact_form(e: Emitter, n: NodeCtx):
    raise n.fail(f"{n.op} has no ONNX operator, and no exact form in ONNX operators")


@converts("hard_sigmoid")
def hard_sigmoid(e: Emitter, n: NodeCtx):
    x, dt = n.ins[0], n.in_dtypes[0]
    if _is_int(dt):
        raise n.fail(f"hard_sigmoid of {dt} data")
    attrs = dict(alpha=float(n.p.alpha), beta=float(n.p.beta))
    if dt in ("float32", "float64"):
        return [e.one("HardSigmoid", [x], n.outs[0], **attrs)]
    y = e.one("HardSigmoid", [e.cast(x, "float32")], **attrs)  # half types in float32
    return [e.cast(y, dt, n.outs[0])]


@converts("_copy", "_copyto", "BlockGrad", "MakeLoss", "make_loss",
          "_contrib_gradientmultiplier", "_identity_with_attr_like_rhs")
def identity(e: Emitter, n: NodeCtx):
    """The identity at inference (these differ from it in their gradients only)."""
    return [n.ins[0]]


@converts("_rnn_param_concat")
def rnn_param_concat(e: Emitter, n: NodeCtx):
    """Concat of the RNN layers' parameters (it differs from Concat in shape inference only)."""
    return [e.one("Concat", n.ins, n.outs[0], axis=int(n.p.dim))]


@converts("add_n")
def add_n(e: Emitter, n: NodeCtx):
    if len(n.ins) == 1:
        return [n.ins[0]]
    dt = n.in_dtypes[0]
    if not _is_int(dt):
        return [e.one("Sum", n.ins, n.outs[0])]
    total = n.ins[0]  # ONNX Runtime's Sum is float-only: a chain of Adds for integers
    for k, x in enumerate(n.ins[1:]):
        total = _arith(e, "Add", total, x, dt, n.outs[0] if k == len(n.ins) - 2 else None)
    return [total]


def cast_like_mxnet(e: Emitter, x: str, have: str, want: str, out: str | None) -> str:
    """MXNet's cast: floats truncate toward zero; narrow integers wrap; bool is ``x != 0``."""
    if have == want:
        return x
    if not _is_int(have) and want in ("uint8", "int8"):
        x = e.cast(x, "int64")  # through int64, where C++ makes the narrowing defined
    return e.cast(x, want, out)


@converts("Cast")
def cast(e: Emitter, n: NodeCtx):
    return [cast_like_mxnet(e, n.ins[0], n.in_dtypes[0], n.out_dtypes[0], n.outs[0])]


@converts("amp_cast")
def amp_cast(e: Emitter, n: NodeCtx):
    have = n.in_dtypes[0]
    if have not in ("float16", "bfloat16", "float32"):  # other dtypes pass unchanged
        return [n.ins[0]]
    return [cast_like_mxnet(e, n.ins[0], have, n.out_dtypes[0], n.outs[0])]


@converts("smooth_l1")
def smooth_l1(e: Emitter, n: NodeCtx):
    """The two pieces chosen by ``|x|`` against ``1 / sigma**2`` in MXNet's order."""
    x, dt = n.ins[0], n.in_dtypes[0]
    if _is_int(dt):
        raise n.fail(f"smooth_l1 of {dt} data")
    s2 = float(n.p.scalar) ** 2
    inv = math.inf if s2 == 0 else 1.0 / s2
    quad = e.one("Mul", [e.one("Mul", [e.one("Mul", [x, _k(e, 0.5, dt)]), x]), _k(e, s2, dt)])
    half = _k(e, 0.5 * inv, dt)
    neg = e.one("Where", [e.one("Less", [x, _k(e, -inv, dt)]),
                          e.one("Sub", [e.one("Neg", [x]), half]), quad])
    return [e.one("Where", [e.one("Greater", [x, _k(e, inv, dt)]), e.one("Sub", [x, half]),
                            neg], n.outs[0])]


@converts("where")
def where(e: Emitter, n: NodeCtx):
    cond = e.cast(n.ins[0], "bool")  # non-zero (NaN included) selects x
    rank, cond_rank = len(n.in_shapes[1]), len(n.in_shapes[0])
    if cond_rank < rank:  # a 1-D condition selects whole rows
        cond = e.unsqueeze(cond, list(range(cond_rank, rank)))
    return [e.one("Where", [cond, n.ins[1], n.ins[2]], n.outs[0])]


@converts("_contrib_div_sqrt_dim")
def div_sqrt_dim(e: Emitter, n: NodeCtx):
    x, dt, shape = n.ins[0], n.in_dtypes[0], n.in_shapes[0]
    if _is_int(dt):
        raise n.fail(f"_contrib_div_sqrt_dim of {dt} data")
    last = e.cast(e.dim_slice(x, shape, len(shape) - 1), dt)
    return [e.one("Div", [x, e.one("Sqrt", [last])], n.outs[0])]
