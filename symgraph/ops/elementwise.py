"""Elementwise operators as table rows: unary math, binary same-shape, and scalar forms.

Each row carries the torch reference, a Triton expression (``x``/``y``/``s`` are the
inputs and the scalar; used by the fused-kernel code generator) and a gradient written
with other registered ops. Comparisons return 0/1 in the input dtype, as MXNet does.
"""
from __future__ import annotations

import math

import torch

from ..attrs import Param
from ..sparse import rules
from .base import Case, OpDef, PlanHints, Storage, elemwise_shape, register, unary_shape

# Triton templates ({0}, {1}: inputs; {scalar}: the scalar param), computed in fp32.
_SIG = "(1.0 / (1.0 + tl.exp(-{0})))"
TRITON = {
    "relu": "tl.maximum({0}, 0.0)",
    "sigmoid": _SIG,
    "tanh": "(1.0 - 2.0 / (tl.exp(2.0 * {0}) + 1.0))",
    "exp": "tl.exp({0})", "log": "tl.log({0})", "sqrt": "tl.sqrt({0})",
    "rsqrt": "tl.rsqrt({0})", "square": "({0} * {0})", "abs": "tl.abs({0})",
    "sign": "tl.where({0} > 0.0, 1.0, tl.where({0} < 0.0, -1.0, 0.0))",
    "negative": "(-{0})", "reciprocal": "(1.0 / {0})",
    "log1p": "tl.where(1.0 + {0} == 1.0, {0}, tl.log(1.0 + {0}) * {0} / ((1.0 + {0}) - 1.0))",
    "expm1": "tl.where(tl.abs({0}) < 1e-5, {0} + 0.5 * {0} * {0}, tl.exp({0}) - 1.0)",
    "sin": "tl.sin({0})", "cos": "tl.cos({0})", "tan": "(tl.sin({0}) / tl.cos({0}))",
    "erf": "tl.erf({0})", "softsign": "({0} / (1.0 + tl.abs({0})))",
    "floor": "tl.floor({0})", "ceil": "tl.ceil({0})",
    "round": "(tl.where({0} >= 0.0, tl.floor({0}), tl.ceil({0})) + tl.where(tl.abs({0} - "
             "tl.where({0} >= 0.0, tl.floor({0}), tl.ceil({0}))) >= 0.5, tl.where({0} >= 0.0, "
             "1.0, -1.0), 0.0))",
    "rint": "tl.where({0} - tl.floor({0}) <= 0.5, tl.floor({0}), tl.ceil({0}))",
    "fix": "tl.where({0} >= 0.0, tl.floor({0}), tl.ceil({0}))",
    "trunc": "tl.where({0} >= 0.0, tl.floor({0}), tl.ceil({0}))",
    "cbrt": "tl.where({0} >= 0.0, 1.0, -1.0) * tl.exp(tl.log(tl.abs({0})) / 3.0)",
    "log2": "(tl.log({0}) * 1.4426950408889634)", "log10": "(tl.log({0}) * 0.4342944819032518)",
    "sinh": "(0.5 * (tl.exp({0}) - tl.exp(-{0})))", "cosh": "(0.5 * (tl.exp({0}) + tl.exp(-{0})))",
    "arcsinh": "tl.where({0} >= 0.0, 1.0, -1.0) * tl.log(tl.abs({0}) + "
               "tl.sqrt({0} * {0} + 1.0))",
    "arccosh": "tl.log({0} + tl.sqrt({0} * {0} - 1.0))",
    "arctanh": "(0.5 * tl.log((1.0 + {0}) / (1.0 - {0})))",
    "degrees": "({0} * 57.29577951308232)", "radians": "({0} * 0.017453292519943295)",
    "zeros_like": "({0} * 0.0)", "ones_like": "({0} * 0.0 + 1.0)",
    "_copy": "{0}", "BlockGrad": "{0}",
    "logical_not": "tl.where({0} == 0.0, 1.0, 0.0)",
    "elemwise_add": "({0} + {1})", "elemwise_sub": "({0} - {1})",
    "elemwise_mul": "({0} * {1})", "elemwise_div": "({0} / {1})",
    "_power": "tl.exp({1} * tl.log({0}))", "_maximum": "tl.maximum({0}, {1})",
    "_minimum": "tl.minimum({0}, {1})",
    "_mod": "tl.where({1} == 0.0, 0.0, {0} - tl.floor({0} / {1}) * {1})",
    "_equal": "tl.where({0} == {1}, 1.0, 0.0)", "_not_equal": "tl.where({0} != {1}, 1.0, 0.0)",
    "_greater": "tl.where({0} > {1}, 1.0, 0.0)", "_greater_equal": "tl.where({0} >= {1}, 1.0, 0.0)",
    "_lesser": "tl.where({0} < {1}, 1.0, 0.0)", "_lesser_equal": "tl.where({0} <= {1}, 1.0, 0.0)",
    "_plus_scalar": "({0} + {scalar})", "_minus_scalar": "({0} - {scalar})",
    "_rminus_scalar": "({scalar} - {0})", "_mul_scalar": "({0} * {scalar})",
    "_div_scalar": "({0} / {scalar})", "_rdiv_scalar": "({scalar} / {0})",
    "_maximum_scalar": "tl.maximum({0}, {scalar})", "_minimum_scalar": "tl.minimum({0}, {scalar})",
    "_mod_scalar": "tl.where({scalar} == 0.0, 0.0, {0} - tl.floor({0} / {scalar}) * {scalar})",
    "_rmod_scalar": "tl.where({0} == 0.0, 0.0, {scalar} - tl.floor({scalar} / {0}) * {0})",
    "_equal_scalar": "tl.where({0} == {scalar}, 1.0, 0.0)",
    "_not_equal_scalar": "tl.where({0} != {scalar}, 1.0, 0.0)",
    "_greater_scalar": "tl.where({0} > {scalar}, 1.0, 0.0)",
    "_greater_equal_scalar": "tl.where({0} >= {scalar}, 1.0, 0.0)",
    "_lesser_scalar": "tl.where({0} < {scalar}, 1.0, 0.0)",
    "_lesser_equal_scalar": "tl.where({0} <= {scalar}, 1.0, 0.0)",
    "_backward_relu": "tl.where({1} > 0.0, {0}, 0.0)",
    "_backward_sigmoid": "({0} * {1} * (1.0 - {1}))",
    "_backward_tanh": "({0} * (1.0 - {1} * {1}))",
}


def _power_scalar_expr(p) -> str:
    """Small integer exponents multiply (exact, and right for negative bases)."""
    s = p.scalar
    if s == int(s) and 0 <= s <= 4:
        return "(" + " * ".join(["{0}"] * int(s)) + ")" if s else "({0} * 0.0 + 1.0)"
    return "tl.exp({scalar} * tl.log({0}))"


TRITON["_power_scalar"] = _power_scalar_expr


def _atan(v: str) -> str:
    """atan with Cephes' range reduction and minimax polynomial (about 1e-7 relative)."""
    a = f"tl.abs({v})"
    big, mid = f"({a} > 2.414213562373095)", f"({a} > 0.4142135623730950)"
    r = f"tl.where({big}, -1.0 / {a}, tl.where({mid}, ({a} - 1.0) / ({a} + 1.0), {a}))"
    base = f"tl.where({big}, 1.5707963267948966, tl.where({mid}, 0.7853981633974483, 0.0))"
    z = f"(({r}) * ({r}))"
    poly = (f"((((8.05374449538e-2 * {z} - 1.38776856032e-1) * {z} + 1.99777106478e-1) * {z}"
            f" - 3.33329491539e-1) * {z} * ({r}) + ({r}))")
    return f"(tl.where({v} < 0.0, -1.0, 1.0) * ({base} + {poly}))"


def _lgamma(v: str) -> str:
    """log|Gamma(x)| for x > 0: shift by 6, then Stirling's series."""
    z = f"({v} + 6.0)"
    shift = f"tl.log({v} * ({v} + 1.0) * ({v} + 2.0) * ({v} + 3.0) * ({v} + 4.0) * ({v} + 5.0))"
    series = (f"(({z} - 0.5) * tl.log({z}) - {z} + 0.9189385332046727 + 1.0 / (12.0 * {z})"
              f" - 1.0 / (360.0 * {z} * {z} * {z}) + 1.0 / (1260.0 * {z} * {z} * {z} * {z} * {z}))")
    return f"({series} - {shift})"


def _digamma(v: str) -> str:
    """digamma for x > 0: shift by 6, then the asymptotic series."""
    z = f"({v} + 6.0)"
    shift = " + ".join(f"1.0 / ({v} + {k}.0)" for k in range(6))
    series = (f"(tl.log({z}) - 0.5 / {z} - 1.0 / (12.0 * {z} * {z}) + "
              f"1.0 / (120.0 * {z} * {z} * {z} * {z}) - 1.0 / (252.0 * {z} * {z} * {z} * {z} *"
              f" {z} * {z}))")
    return f"({series} - ({shift}))"


def _horner(coefs: tuple[float, ...], t: str) -> str:
    """``c0 * t**(n-1) + ... + c(n-1)`` as a Horner chain."""
    out = repr(coefs[0])
    for c in coefs[1:]:
        out = f"({out} * {t} + {c!r})"
    return out


def _erfinv(v: str) -> str:
    """erfinv by Giles' single-precision rational approximation (about 4e-7 relative)."""
    w = f"(-tl.log((1.0 - {v}) * (1.0 + {v})))"
    small = _horner((2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                     0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941),
                    f"({w} - 2.5)")
    large = _horner((-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                     0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682),
                    f"(tl.sqrt({w}) - 3.0)")
    return f"(tl.where({w} < 5.0, {small}, {large}) * {v})"


def _reflect(v: str, positive: str, negative: str) -> str:
    """``positive`` for x > 0, else ``negative`` (Euler's reflection, 1 - x > 0)."""
    return f"tl.where({v} > 0.0, {positive}, {negative})"


_PI = "3.141592653589793"
TRITON["arctan"] = _atan("{0}")
TRITON["arcsin"] = _atan("({0} / tl.sqrt(1.0 - {0} * {0}))")
TRITON["arccos"] = f"(1.5707963267948966 - {_atan('({0} / tl.sqrt(1.0 - {0} * {0}))')})"
TRITON["gammaln"] = _lgamma("{0}")
# psi(x) = psi(1 - x) - pi / tan(pi x);  Gamma(x) = pi / (sin(pi x) Gamma(1 - x))
TRITON["_digamma"] = _reflect("{0}", _digamma("{0}"), f"({_digamma('(1.0 - {0})')} - {_PI} * "
                              f"tl.cos({_PI} * {{0}}) / tl.sin({_PI} * {{0}}))")
TRITON["gamma"] = _reflect("{0}", f"tl.exp({_lgamma('{0}')})",
                           f"({_PI} / (tl.sin({_PI} * {{0}}) * tl.exp({_lgamma('(1.0 - {0})')})))")
TRITON["erfinv"] = _erfinv("{0}")
TRITON["rcbrt"] = "(tl.where({0} >= 0.0, 1.0, -1.0) * tl.exp(tl.log(tl.abs({0})) / -3.0))"
TRITON["_hypot"] = "tl.sqrt({0} * {0} + {1} * {1})"
TRITON["_grad_add"] = TRITON["elemwise_add"]
TRITON["_hypot_scalar"] = "tl.sqrt({0} * {0} + {scalar} * {scalar})"
for _op, _sym in (("and", "&"), ("or", "|"), ("xor", "^")):
    TRITON[f"_logical_{_op}"] = f"tl.where(({{0}} != 0.0) {_sym} ({{1}} != 0.0), 1.0, 0.0)"


def _logical_scalar_expr(op: str):
    """``x op s`` with the scalar's truth decided when the template is made."""
    def expr(p) -> str:
        nonzero, zero = "tl.where({0} != 0.0, 1.0, 0.0)", "tl.where({0} != 0.0, 0.0, 1.0)"
        table = {("and", True): nonzero, ("and", False): "tl.where({0} != 0.0, 0.0, 0.0)",
                 ("or", True): "tl.where({0} != 0.0, 1.0, 1.0)", ("or", False): nonzero,
                 ("xor", True): zero, ("xor", False): nonzero}
        return table[op, p.scalar != 0]
    return expr


for _op in ("and", "or", "xor"):
    TRITON[f"_logical_{_op}_scalar"] = _logical_scalar_expr(_op)
TRITON["_rpower_scalar"] = lambda p: f"tl.exp({{0}} * {math.log(p.scalar)!r})"

_UNARY_CASES = (Case(((3, 5),)), Case(((2, 3, 4),)))

# The unary ops MXNet 1.9.1 runs on row_sparse and csr storage (f(0) == 0: the output keeps
# the input's storage); every other unary op gives a dense output (tests/test_sparse_elemwise.py
# holds the table recorded from MXNet).
_KEEPS_SPARSE = frozenset((
    "abs", "sign", "negative", "relu", "square", "sqrt", "rint", "round", "fix", "floor", "ceil",
    "trunc", "sin", "tan", "arcsin", "arctan", "sinh", "tanh", "arcsinh", "arctanh", "expm1",
    "log1p", "degrees", "radians", "cbrt", "_copy", "BlockGrad", "_contrib_round_ste",
    "_contrib_sign_ste"))


def _unary_storage(name: str) -> Storage | None:
    if name == "zeros_like":
        return rules.ZEROS_LIKE
    return rules.KEEP_SPARSE if name in _KEEPS_SPARSE else None


def _keep_dtype(fn):
    """Wrap a torch function so integer inputs keep their dtype (MXNet never promotes)."""
    def run(*xs):
        out = fn(*xs)
        return out if out.dtype == xs[0].dtype else out.to(xs[0].dtype)
    return run


def mxnet_div(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """MXNet's ``div``: C's truncating division for integers, where 0 divisors give 0.

    (MXNet 1.9.1 dies of SIGFPE on an integer division by zero; we give 0, as its ``mod`` does.)
    """
    if a.is_floating_point() or b.is_floating_point():
        return torch.div(a, b)
    zero = b == 0
    safe = torch.where(zero, torch.ones_like(b), b)
    return torch.where(zero, torch.zeros_like(a), torch.div(a, safe, rounding_mode="trunc"))


def mxnet_mod(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """MXNet's ``mod``: the divisor's sign (like Python), and 0 where the divisor is 0."""
    zero = b == 0
    safe = torch.where(zero, torch.ones_like(b), b)
    return torch.where(zero, torch.zeros_like(a), torch.remainder(a, safe))


def unary(name: str, ref, grad=None, expr: str = "", low: float = -1.0, high: float = 1.0,
          aliases: tuple[str, ...] = (), doc: str = "", fd: bool = True,
          hidden: bool = False, view: bool = False) -> OpDef:
    """Register a one-input elementwise op; ``grad(g, x, y, dy)`` returns dx.

    ``fd=False`` marks ops whose gradient is zero by definition, not by calculus.
    """
    cases = tuple(Case(c.shapes, low=low, high=high, grad=fd) for c in _UNARY_CASES)
    gradient = None
    if grad is not None:
        def gradient(g, p, ins, outs, ograds):
            return [grad(g, ins[0], outs[0], ograds[0])]
    return register(OpDef(
        name=name, forward=lambda p, ins, aux, rt: (ref(ins[0]),), infer_shape=unary_shape,
        gradient=gradient, aliases=aliases, cases=cases, hidden=hidden,
        storage=_unary_storage(name),
        hints=PlanHints(view=view, inplace=() if view else ((0, 0),),
                       activation=name if name in ("relu", "sigmoid", "tanh") else None),
        expr=TRITON.get(name),
        doc=doc or f"Elementwise ``{name}``. Triton expression: ``{expr}``."))


def _zero_grad(g, x, y, dy):
    return g.zeros(x)


def _mul(g, a, b):
    return g.op("elemwise_mul", a, b)


def _scalar(g, op, x, s):
    return g.op(op, x, scalar=s)


unary("relu", torch.relu, lambda g, x, y, dy: g.op("_backward_relu", dy, y), "max(x, 0)")
unary("sigmoid", torch.sigmoid, lambda g, x, y, dy: g.op("_backward_sigmoid", dy, y),
      "1 / (1 + exp(-x))")
unary("tanh", torch.tanh, lambda g, x, y, dy: g.op("_backward_tanh", dy, y), "tanh(x)")
unary("exp", torch.exp, lambda g, x, y, dy: _mul(g, dy, y), "exp(x)")
unary("log", torch.log, lambda g, x, y, dy: g.op("elemwise_div", dy, x), "log(x)",
      low=0.5, high=2.0)
unary("sqrt", torch.sqrt,
      lambda g, x, y, dy: g.op("elemwise_div", dy, _scalar(g, "_mul_scalar", y, 2.0)),
      "sqrt(x)", low=0.5, high=2.0)
unary("rsqrt", torch.rsqrt,
      lambda g, x, y, dy: _mul(g, dy, _scalar(g, "_mul_scalar",
                                              _scalar(g, "_power_scalar", y, 3.0), -0.5)),
      "1 / sqrt(x)", low=0.5, high=2.0)
unary("square", torch.square,
      lambda g, x, y, dy: _mul(g, dy, _scalar(g, "_mul_scalar", x, 2.0)), "x * x")
unary("abs", torch.abs, lambda g, x, y, dy: _mul(g, dy, g.op("sign", x)), "abs(x)")
unary("sign", torch.sign, _zero_grad, "sign(x)")
unary("negative", torch.neg, lambda g, x, y, dy: g.op("negative", dy), "-x")
unary("reciprocal", torch.reciprocal,
      lambda g, x, y, dy: g.op("negative", _mul(g, dy, g.op("square", y))), "1 / x",
      low=0.5, high=2.0)
unary("log1p", torch.log1p,
      lambda g, x, y, dy: g.op("elemwise_div", dy, _scalar(g, "_plus_scalar", x, 1.0)),
      "log(1 + x)", low=0.0, high=2.0)
unary("expm1", torch.expm1,
      lambda g, x, y, dy: _mul(g, dy, _scalar(g, "_plus_scalar", y, 1.0)), "exp(x) - 1")
unary("sin", torch.sin, lambda g, x, y, dy: _mul(g, dy, g.op("cos", x)), "sin(x)")
unary("cos", torch.cos, lambda g, x, y, dy: g.op("negative", _mul(g, dy, g.op("sin", x))),
      "cos(x)")
unary("erf", torch.erf,
      lambda g, x, y, dy: _mul(g, dy, _scalar(g, "_mul_scalar", g.op(
          "exp", g.op("negative", g.op("square", x))), 1.1283791670955126)), "erf(x)")
unary("softsign", lambda x: x / (1 + x.abs()),
      lambda g, x, y, dy: g.op("elemwise_div", dy, g.op("square", _scalar(
          g, "_plus_scalar", g.op("abs", x), 1.0))), "x / (1 + abs(x))")
unary("floor", torch.floor, _zero_grad, "floor(x)")
unary("ceil", torch.ceil, _zero_grad, "ceil(x)")
def round_half_away(x: torch.Tensor) -> torch.Tensor:
    """C's round(): exact, where floor(|x| + 0.5) rounds 0.49999997 up in float32."""
    whole = torch.trunc(x)
    return whole + torch.sign(x) * ((x - whole).abs() >= 0.5).to(x.dtype)


unary("round", round_half_away, _zero_grad, "round half away from zero")
unary("rint", lambda x: torch.where(x - torch.floor(x) <= 0.5, torch.floor(x), torch.ceil(x)),
      _zero_grad, "x - floor(x) <= 0.5 ? floor(x) : ceil(x)")
unary("fix", torch.trunc, _zero_grad, "round toward zero")
unary("trunc", torch.trunc, _zero_grad, "trunc(x)")
unary("cbrt", lambda x: torch.sign(x) * torch.abs(x).pow(1.0 / 3.0),
      lambda g, x, y, dy: g.op("elemwise_div", dy, _scalar(g, "_mul_scalar", g.op("square", y),
                                                           3.0)), "cbrt(x)", low=0.5, high=2.0)
unary("log2", torch.log2, lambda g, x, y, dy: g.op("elemwise_div", dy, _scalar(
    g, "_mul_scalar", x, math.log(2.0))), "log2(x)", low=0.5, high=2.0)
unary("log10", torch.log10, lambda g, x, y, dy: g.op("elemwise_div", dy, _scalar(
    g, "_mul_scalar", x, math.log(10.0))), "log10(x)", low=0.5, high=2.0)
unary("tan", torch.tan, lambda g, x, y, dy: _mul(g, dy, _scalar(g, "_plus_scalar", g.op(
    "square", y), 1.0)), "tan(x)")
unary("arcsin", torch.asin, lambda g, x, y, dy: _mul(g, dy, g.op("rsqrt", _scalar(
    g, "_rminus_scalar", g.op("square", x), 1.0))), "asin(x)", low=-0.8, high=0.8)
unary("arccos", torch.acos, lambda g, x, y, dy: g.op("negative", _mul(g, dy, g.op("rsqrt", _scalar(
    g, "_rminus_scalar", g.op("square", x), 1.0)))), "acos(x)", low=-0.8, high=0.8)
unary("arctan", torch.atan, lambda g, x, y, dy: g.op("elemwise_div", dy, _scalar(
    g, "_plus_scalar", g.op("square", x), 1.0)), "atan(x)")
unary("sinh", torch.sinh, lambda g, x, y, dy: _mul(g, dy, g.op("cosh", x)), "sinh(x)")
unary("cosh", torch.cosh, lambda g, x, y, dy: _mul(g, dy, g.op("sinh", x)), "cosh(x)")
unary("arcsinh", torch.asinh, lambda g, x, y, dy: _mul(g, dy, g.op("rsqrt", _scalar(
    g, "_plus_scalar", g.op("square", x), 1.0))), "asinh(x)")
unary("arccosh", torch.acosh, lambda g, x, y, dy: _mul(g, dy, g.op("rsqrt", _scalar(
    g, "_minus_scalar", g.op("square", x), 1.0))), "acosh(x)", low=1.5, high=3.0)
unary("arctanh", torch.atanh, lambda g, x, y, dy: g.op("elemwise_div", dy, _scalar(
    g, "_rminus_scalar", g.op("square", x), 1.0)), "atanh(x)", low=-0.8, high=0.8)
unary("degrees", torch.rad2deg, lambda g, x, y, dy: _scalar(g, "_mul_scalar", dy,
                                                            180.0 / math.pi), "x * 180 / pi")
unary("radians", torch.deg2rad, lambda g, x, y, dy: _scalar(g, "_mul_scalar", dy,
                                                            math.pi / 180.0), "x * pi / 180")
unary("gammaln", torch.lgamma, lambda g, x, y, dy: _mul(g, dy, g.op("_digamma", x)),
      "lgamma(x)", low=0.5, high=3.0)


def _pole(x: torch.Tensor) -> torch.Tensor:
    """Where ``x`` is 0 or a negative integer (the poles of Gamma and digamma)."""
    return (x <= 0) & (x == torch.floor(x))


def _digamma_ref(x: torch.Tensor) -> torch.Tensor:
    """digamma, +inf at its poles as MXNet's (cephes) psi, where torch gives -inf or nan."""
    return torch.where(_pole(x), torch.full_like(x, math.inf), torch.digamma(x))


unary("_digamma", _digamma_ref, None, "digamma(x)", low=0.5, high=3.0, hidden=True)


def _gamma(x: torch.Tensor) -> torch.Tensor:
    """Gamma(x) = +-exp(lgamma(x)): negative for x in (-1, 0), (-3, -2), ...; +inf at 0
    and nan at the negative integers (C's tgamma, as MXNet)."""
    odd = torch.remainder(torch.ceil(-x), 2.0) == 1
    out = torch.where((x < 0) & odd, -1.0, 1.0).to(x.dtype) * torch.exp(torch.lgamma(x))
    return torch.where(_pole(x) & (x < 0), torch.full_like(x, math.nan), out)


unary("gamma", _gamma, lambda g, x, y, dy: _mul(g, dy, _mul(g, y, g.op("_digamma", x))),
      "Gamma(x)", low=0.5, high=3.0)
unary("rcbrt", lambda x: torch.reciprocal(torch.sign(x) * torch.abs(x).pow(1.0 / 3.0)),
      lambda g, x, y, dy: _mul(g, dy, _scalar(g, "_mul_scalar", _scalar(
          g, "_power_scalar", y, 4.0), -1.0 / 3.0)), "1 / cbrt(x)", low=0.5, high=2.0)
unary("erfinv", torch.erfinv,
      lambda g, x, y, dy: _mul(g, dy, _scalar(g, "_mul_scalar", g.op("exp", g.op("square", y)),
                                              0.5 * math.sqrt(math.pi))),
      "erfinv(x)", low=-0.9, high=0.9)
unary("logical_not", lambda x: torch.logical_not(x).to(x.dtype), _zero_grad, "!x")
unary("zeros_like", torch.zeros_like, _zero_grad, "0")
unary("ones_like", torch.ones_like, _zero_grad, "1")
unary("_copy", torch.clone, lambda g, x, y, dy: dy, "x", aliases=("identity",), view=True)
unary("BlockGrad", torch.clone, _zero_grad, "x", aliases=("stop_gradient",), fd=False, view=True,
      doc="Pass the input through unchanged and stop gradients from flowing back.")


# ------------------------------------------------------------------ binary (same shape)

def binary(name: str, ref, grad, expr: str, aliases: tuple[str, ...] = (), low=-1.0, high=1.0,
           doc: str = "", sparse: rules.Storage | None = None) -> OpDef:
    """Register a two-input same-shape op; ``grad(g, a, b, y, dy)`` returns (da, db);
    ``sparse``: its storage rule (:mod:`symgraph.sparse.rules`)."""
    def gradient(g, p, ins, outs, ograds):
        return list(grad(g, ins[0], ins[1], outs[0], ograds[0]))
    return register(OpDef(
        name=name, forward=lambda p, ins, aux, rt: (ref(ins[0], ins[1]),),
        infer_shape=elemwise_shape, inputs=("lhs", "rhs"), gradient=gradient, aliases=aliases,
        hints=PlanHints(inplace=((0, 0), (0, 1))), expr=TRITON.get(name),
        storage=sparse if sparse else None,
        cases=(Case(((3, 5), (3, 5)), low=low, high=high),),
        doc=doc or f"Elementwise ``{name}`` of two arrays of one shape: ``{expr}``."))


def _where_mask(g, cond, dy):
    return _mul(g, dy, cond)


binary("elemwise_add", torch.add, lambda g, a, b, y, dy: (dy, dy), "x + y",
       aliases=("_add", "_plus", "_Plus"), sparse=rules.additive_rule(torch.add, 1.0))
binary("elemwise_sub", torch.sub, lambda g, a, b, y, dy: (dy, g.op("negative", dy)), "x - y",
       aliases=("_sub", "_minus", "_Minus"), sparse=rules.additive_rule(torch.sub, -1.0))
binary("elemwise_mul", torch.mul, lambda g, a, b, y, dy: (_mul(g, dy, b), _mul(g, dy, a)),
       "x * y", aliases=("_mul", "_Mul"), sparse=rules.MULTIPLY)
binary("elemwise_div", mxnet_div,
       lambda g, a, b, y, dy: (g.op("elemwise_div", dy, b),
                               g.op("negative", g.op("elemwise_div", _mul(g, dy, y), b))),
       "x / y", aliases=("_div", "_Div"), low=0.5, high=2.0)
binary("_power", torch.pow,
       lambda g, a, b, y, dy: (_mul(g, dy, _mul(g, b, g.op("elemwise_div", y, a))),
                               _mul(g, dy, _mul(g, y, g.op("log", a)))),
       "pow(x, y)", aliases=("_Power",), low=0.5, high=2.0)
binary("_maximum", torch.maximum,
       lambda g, a, b, y, dy: (_where_mask(g, g.op("_greater_equal", a, b), dy),
                               _where_mask(g, g.op("_lesser", a, b), dy)),
       "max(x, y)", aliases=("_Maximum",), sparse=rules.union_rule(torch.maximum))
binary("_minimum", torch.minimum,
       lambda g, a, b, y, dy: (_where_mask(g, g.op("_lesser_equal", a, b), dy),
                               _where_mask(g, g.op("_greater", a, b), dy)),
       "min(x, y)", aliases=("_Minimum",), sparse=rules.union_rule(torch.minimum))
binary("_mod", _keep_dtype(mxnet_mod),
       lambda g, a, b, y, dy: (_mul(g, dy, g.op("_mod_grad", a, b)),
                               _mul(g, dy, g.op("_mod_rgrad", a, b))),
       "x - floor(x / y) * y", aliases=("_Mod",), low=0.5, high=2.0)


def _cmp(fn):
    return lambda a, b: fn(a, b).to(a.dtype)


def _no_grad2(g, a, b, y, dy):
    return g.zeros(a), g.zeros(b)


binary("_hypot", torch.hypot,
       lambda g, a, b, y, dy: (_mul(g, dy, g.op("elemwise_div", a, y)),
                               _mul(g, dy, g.op("elemwise_div", b, y))),
       "sqrt(x * x + y * y)", aliases=("_Hypot",), sparse=rules.union_rule(torch.hypot))
binary("_grad_add", torch.add, lambda g, a, b, y, dy: (dy, dy), "x + y",
       sparse=rules.additive_rule(torch.add, 1.0),
       doc="``lhs + rhs``: the sum MXNet's autodiff writes when it adds gradients.")


def _logical(fn):
    return lambda a, b: fn(a != 0, b != 0).to(a.dtype)


for _name, _fn, _alias in [("_logical_and", torch.logical_and, "_Logical_And"),
                           ("_logical_or", torch.logical_or, "_Logical_Or"),
                           ("_logical_xor", torch.logical_xor, "_Logical_Xor")]:
    binary(_name, _logical(_fn), lambda g, a, b, y, dy: (g.zeros(a), g.zeros(b)),
           f"{_name[1:]}(x, y) as 1/0", aliases=(_alias,))

for _name, _fn, _alias in [("_equal", torch.eq, "_Equal"), ("_not_equal", torch.ne, "_Not_Equal"),
                           ("_greater", torch.gt, "_Greater"),
                           ("_greater_equal", torch.ge, "_Greater_Equal"),
                           ("_lesser", torch.lt, "_Lesser"),
                           ("_lesser_equal", torch.le, "_Lesser_Equal")]:
    binary(_name, _cmp(_fn), _no_grad2, f"{_name}(x, y)", aliases=(_alias,))


# ------------------------------------------------------------------ scalar forms

_SCALAR = (Param("scalar", "float", 1.0, doc="The scalar operand."),
           Param("is_int", "bool", True, doc="Whether the scalar is an integer (MXNet 1.9)."))


def scalar(name: str, ref, grad, expr: str, aliases: tuple[str, ...] = (), low=-1.0,
           high=1.0, case_scalar: float = 1.5, sparse: rules.Storage | None = None) -> OpDef:
    """Register an array-with-scalar op; ``ref(x, s)``; ``grad(g, x, y, dy, s)`` returns dx."""
    def gradient(g, p, ins, outs, ograds):
        return [grad(g, ins[0], outs[0], ograds[0], p.scalar)]
    fwd = _keep_dtype(ref)
    return register(OpDef(
        name=name, forward=lambda p, ins, aux, rt: (fwd(ins[0], _typed(ins[0], p.scalar)),),
        infer_shape=unary_shape, params=_SCALAR, gradient=gradient, aliases=aliases,
        hints=PlanHints(inplace=((0, 0),)), expr=TRITON.get(name),
        storage=sparse if sparse else None,
        cases=(Case(((3, 5),), {"scalar": case_scalar}, low=low, high=high),),
        doc=f"``{expr}`` with ``s`` the scalar attribute."))


def _typed(x: torch.Tensor, s: float):
    """The scalar in the input's type: MXNet casts it to an integer input's dtype first
    (``int32 * 88.4`` multiplies by 88)."""
    if x.dtype.is_floating_point or x.dtype == torch.bool:
        return s
    return int(s)  # C's conversion truncates toward zero


def _smul(g, dy, s):
    return _scalar(g, "_mul_scalar", dy, s)


_ZERO_SCALAR = rules.scalar_rule(rules.scalar_is_zero)  # x + s, x - s: sparse for s == 0 only
scalar("_plus_scalar", torch.add, lambda g, x, y, dy, s: dy, "x + s", ("_PlusScalar",),
       sparse=_ZERO_SCALAR)
scalar("_minus_scalar", torch.sub, lambda g, x, y, dy, s: dy, "x - s", ("_MinusScalar",),
       sparse=_ZERO_SCALAR)
scalar("_rminus_scalar", lambda x, s: s - x, lambda g, x, y, dy, s: g.op("negative", dy),
       "s - x", ("_RMinusScalar",))
scalar("_mul_scalar", torch.mul, lambda g, x, y, dy, s: _smul(g, dy, s), "x * s",
       ("_MulScalar",), sparse=rules.scalar_rule())
scalar("_div_scalar", torch.div, lambda g, x, y, dy, s: _smul(g, dy, 1.0 / s), "x / s",
       ("_DivScalar",), sparse=rules.scalar_rule())
def _rdiv(x: torch.Tensor, s) -> torch.Tensor:
    """``s / x`` as MXNet divides: a true division (torch's ``s / x`` multiplies by the
    reciprocal: ``55 / 55`` on int32 gave 0.99999994, truncated to 0), integers truncating."""
    return mxnet_div(torch.full((), s, dtype=x.dtype, device=x.device), x)


scalar("_rdiv_scalar", _rdiv,
       lambda g, x, y, dy, s: g.op("negative", g.op("elemwise_div", _mul(g, dy, y), x)),
       "s / x", ("_RDivScalar",), low=0.5, high=2.0)
def _int_pow(x: torch.Tensor, s) -> torch.Tensor:
    """pow for an integer array and scalar: C's pow in double, truncated back (negative
    exponents included, which torch refuses for integers)."""
    return torch.pow(x, s) if x.dtype.is_floating_point else torch.pow(x.double(), s)


scalar("_power_scalar", _int_pow,
       lambda g, x, y, dy, s: _mul(g, dy, _smul(g, _scalar(g, "_power_scalar", x, s - 1.0), s)),
       "pow(x, s)", ("_PowerScalar",), low=0.5, high=2.0)
scalar("_rpower_scalar", lambda x, s: torch.pow(s, x),
       lambda g, x, y, dy, s: _smul(g, _mul(g, dy, y), math.log(s)),
       "pow(s, x)", ("_RPowerScalar",))
scalar("_maximum_scalar", lambda x, s: torch.clamp(x, min=s),
       lambda g, x, y, dy, s: _mul(g, dy, _scalar(g, "_greater_equal_scalar", x, s)),
       "max(x, s)", ("_MaximumScalar",), case_scalar=0.1)
scalar("_minimum_scalar", lambda x, s: torch.clamp(x, max=s),
       lambda g, x, y, dy, s: _mul(g, dy, _scalar(g, "_lesser_equal_scalar", x, s)),
       "min(x, s)", ("_MinimumScalar",), case_scalar=0.1)
scalar("_mod_scalar", lambda x, s: mxnet_mod(x, torch.full_like(x, s)),
       lambda g, x, y, dy, s: dy, "x - floor(x / s) * s",
       ("_ModScalar",), low=0.1, high=1.0)
scalar("_rmod_scalar", lambda x, s: mxnet_mod(torch.full_like(x, s), x),
       lambda g, x, y, dy, s: g.op("negative", _mul(g, dy, g.op("floor", g.op(
           "_rdiv_scalar", x, scalar=s)))), "s - floor(s / x) * x", ("_RModScalar",),
       low=0.6, high=1.0)

scalar("_hypot_scalar", lambda x, s: torch.hypot(x, torch.full_like(x, s)),
       lambda g, x, y, dy, s: _mul(g, dy, g.op("elemwise_div", x, y)), "sqrt(x * x + s * s)",
       ("_HypotScalar",))

for _name, _fn, _alias in [("_logical_and_scalar", torch.logical_and, "_LogicalAndScalar"),
                           ("_logical_or_scalar", torch.logical_or, "_LogicalOrScalar"),
                           ("_logical_xor_scalar", torch.logical_xor, "_LogicalXorScalar")]:
    scalar(_name, lambda x, s, fn=_fn: fn(x != 0, torch.tensor(s != 0)),
           lambda g, x, y, dy, s: g.zeros(x), f"{_name[1:-7]}(x, s) as 1/0", (_alias,),
           case_scalar=0.0 if "or" in _name else 1.5)

for _name, _fn, _alias in [
        ("_equal_scalar", torch.eq, "_EqualScalar"),
        ("_not_equal_scalar", torch.ne, "_NotEqualScalar"),
        ("_greater_scalar", torch.gt, "_GreaterScalar"),
        ("_greater_equal_scalar", torch.ge, "_GreaterEqualScalar"),
        ("_lesser_scalar", torch.lt, "_LesserScalar"),
        ("_lesser_equal_scalar", torch.le, "_LesserEqualScalar")]:
    scalar(_name, _cmp(_fn), lambda g, x, y, dy, s: g.zeros(x), f"{_name}(x, s)",
           (_alias,), sparse=rules.scalar_rule(rules.zero_kept(_cmp(_fn))))


# ------------------------------------------------------------------ activation gradients
# One pass each on the torch path; on the Triton path their expressions fuse like any other.

def _activation_backward(name: str, ref, expr: str, grad, sparse: bool = False) -> OpDef:
    return register(OpDef(
        name=name, inputs=("ograd", "output"), hidden=True, infer_shape=elemwise_shape,
        hints=PlanHints(inplace=((0, 0),)), expr=TRITON.get(name),
        storage=rules.masked_rule(ref) if sparse else None,
        forward=lambda p, ins, aux, rt: (ref(ins[0], ins[1]),),
        gradient=lambda g, p, ins, outs, og: list(grad(g, ins[0], ins[1], og[0])),
        cases=(Case(((3, 5), (3, 5)), low=0.1, high=0.9),),
        doc=f"Gradient of an activation from its output ``y``: ``{expr}``."))


_activation_backward(
    "_backward_relu", lambda dy, y: torch.ops.aten.threshold_backward.default(dy, y, 0),
    "dy * (y > 0)",
    lambda g, dy, y, dz: (g.op("_backward_relu", dz, y), g.zeros(y)), sparse=True)
_activation_backward(
    "_backward_sigmoid", torch.ops.aten.sigmoid_backward.default, "dy * y * (1 - y)",
    lambda g, dy, y, dz: (g.op("_backward_sigmoid", dz, y),
                          _mul(g, _mul(g, dz, dy), _scalar(g, "_rminus_scalar",
                                                             _scalar(g, "_mul_scalar", y, 2.0),
                                                             1.0))))
_activation_backward(
    "_backward_tanh", torch.ops.aten.tanh_backward.default, "dy * (1 - y * y)",
    lambda g, dy, y, dz: (g.op("_backward_tanh", dz, y),
                          _scalar(g, "_mul_scalar", _mul(g, _mul(g, dz, dy), y), -2.0)))


# ------------------------------------------------------------------ hard_sigmoid

def _hard_sigmoid_grad(g, p, ins, outs, og):
    """alpha * dy where 0 < y < 1 (strictly, as MXNet: no gradient at the kinks)."""
    y = outs[0]
    inside = _mul(g, _scalar(g, "_greater_scalar", y, 0.0), _scalar(g, "_lesser_scalar", y, 1.0))
    return [_scalar(g, "_mul_scalar", _mul(g, og[0], inside), p.alpha)]


def _hard_sigmoid(p, ins, aux, rt):
    x = ins[0]
    return (torch.clamp(x * p.alpha + p.beta, 0.0, 1.0).to(x.dtype),)


register(OpDef(
    name="hard_sigmoid", forward=_hard_sigmoid, infer_shape=unary_shape,
    hints=PlanHints(inplace=((0, 0),)),
    params=(Param("alpha", "float", 0.2, doc="Slope."), Param("beta", "float", 0.5,
                                                            doc="Offset.")),
    expr="tl.minimum(tl.maximum({alpha} * {0} + {beta}, 0.0), 1.0)",
    gradient=_hard_sigmoid_grad,
    cases=(Case(((3, 5),), low=-4.0, high=4.0), Case(((2, 3, 4),), {"alpha": 0.7, "beta": 0.1})),
    doc="``clip(alpha * x + beta, 0, 1)``; the gradient is ``alpha`` strictly inside."))
