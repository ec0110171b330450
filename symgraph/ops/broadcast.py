"""Broadcasting binary ops (``broadcast_add`` ...), ``broadcast_to/axis/like``, ``add_n``.

Gradients reduce the broadcast output gradient back to each input's shape with the
hidden ``_sum_like`` op.
"""
from __future__ import annotations

import torch

from ..attrs import MAX_VARIADIC, Param
from ..base import ShapeError
from ..sparse import rules
from .base import Case, OpDef, elemwise_shape, known, register
from .elementwise import mxnet_div, mxnet_mod


def broadcast_shapes(a: tuple, b: tuple) -> tuple:
    """Numpy broadcasting of two known shapes, with MXNet's error wording."""
    n = max(len(a), len(b))
    a1, b1 = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a1, b1):
        if x != y and x != 1 and y != 1:
            raise ShapeError(f"Incompatible shapes for broadcasting: lhs={tuple(a)}, "
                             f"rhs={tuple(b)}")
        out.append(max(x, y) if x and y else 0)
    return tuple(out)


def _bshape(p, shapes):
    a, b = shapes
    if not a or not b:
        return None
    return shapes, [broadcast_shapes(a, b)]


def _sum_like(g, dy, x):
    return g.op("_sum_like", dy, x)


def _bcmp(fn):
    return lambda a, b: fn(a, b).to(a.dtype)


def _zero2(g, a, b, y, dy):
    return g.zeros(a), g.zeros(b)


def _mul(g, a, b):
    return g.op("broadcast_mul", a, b)


_BROADCAST = [
    ("broadcast_add", torch.add, lambda g, a, b, y, dy: (dy, dy), ("broadcast_plus",)),
    ("broadcast_sub", torch.sub, lambda g, a, b, y, dy: (dy, g.op("negative", dy)),
     ("broadcast_minus",)),
    ("broadcast_mul", torch.mul, lambda g, a, b, y, dy: (_mul(g, dy, b), _mul(g, dy, a)), ()),
    ("broadcast_div", mxnet_div,
     lambda g, a, b, y, dy: (g.op("broadcast_div", dy, b),
                             g.op("negative", g.op("broadcast_div", _mul(g, dy, y), b))), ()),
    ("broadcast_power", torch.pow,
     lambda g, a, b, y, dy: (_mul(g, dy, _mul(g, b, g.op("broadcast_div", y, a))),
                             _mul(g, dy, _mul(g, y, g.op("log", a)))), ()),
    ("broadcast_maximum", torch.maximum,
     lambda g, a, b, y, dy: (_mul(g, dy, g.op("broadcast_greater_equal", a, b)),
                             _mul(g, dy, g.op("broadcast_lesser", a, b))), ()),
    ("broadcast_minimum", torch.minimum,
     lambda g, a, b, y, dy: (_mul(g, dy, g.op("broadcast_lesser_equal", a, b)),
                             _mul(g, dy, g.op("broadcast_greater", a, b))), ()),
    ("broadcast_mod", mxnet_mod,
     lambda g, a, b, y, dy: (_mul(g, dy, g.op("_mod_grad", a, b)),
                             _mul(g, dy, g.op("_mod_rgrad", a, b))), ()),
    ("broadcast_hypot", torch.hypot,
     lambda g, a, b, y, dy: (_mul(g, dy, g.op("broadcast_div", a, y)),
                             _mul(g, dy, g.op("broadcast_div", b, y))), ()),
    ("broadcast_equal", _bcmp(torch.eq), _zero2, ()),
    ("broadcast_not_equal", _bcmp(torch.ne), _zero2, ()),
    ("broadcast_greater", _bcmp(torch.gt), _zero2, ()),
    ("broadcast_greater_equal", _bcmp(torch.ge), _zero2, ()),
    ("broadcast_lesser", _bcmp(torch.lt), _zero2, ()),
    ("broadcast_lesser_equal", _bcmp(torch.le), _zero2, ()),
    ("broadcast_logical_and", _bcmp(torch.logical_and), _zero2, ()),
    ("broadcast_logical_or", _bcmp(torch.logical_or), _zero2, ()),
    ("broadcast_logical_xor", _bcmp(torch.logical_xor), _zero2, ()),
]

_POSITIVE = {"broadcast_div", "broadcast_power", "broadcast_mod"}
# csr lhs, dense rhs broadcast to it: csr (MXNet 1.9.1; every other sparse mix falls back)
_SPARSE = {"broadcast_mul": rules.broadcast_scale(torch.mul, True, "broadcast_mul"),
           "broadcast_div": rules.broadcast_scale(mxnet_div, False, "broadcast_div")}


def _broadcast_expr(name: str) -> str | None:
    """The Triton template of the same-shape op a broadcast op matches."""
    from .elementwise import TRITON
    same = {"broadcast_add": "elemwise_add", "broadcast_sub": "elemwise_sub",
            "broadcast_mul": "elemwise_mul", "broadcast_div": "elemwise_div",
            "broadcast_power": "_power", "broadcast_maximum": "_maximum",
            "broadcast_minimum": "_minimum", "broadcast_mod": "_mod",
            "broadcast_hypot": "_hypot"}.get(name)
    if same is None and name.startswith("broadcast_logical_"):
        op = {"and": "&", "or": "|", "xor": "^"}[name.rsplit("_", 1)[1]]
        return f"tl.where(({{0}} != 0.0) {op} ({{1}} != 0.0), 1.0, 0.0)"
    return TRITON.get(same or "_" + name[len("broadcast_"):])


def _register_broadcast(name, fn, grad, aliases):
    def gradient(g, p, ins, outs, og):
        da, db = grad(g, ins[0], ins[1], outs[0], og[0])
        return [_sum_like(g, da, ins[0]), _sum_like(g, db, ins[1])]
    low, high = (0.5, 2.0) if name in _POSITIVE else (-1.0, 1.0)
    register(OpDef(
        name=name, inputs=("lhs", "rhs"), infer_shape=_bshape, gradient=gradient,
        aliases=aliases, forward=lambda p, ins, aux, rt: (fn(ins[0], ins[1]),),
        expr=_broadcast_expr(name), storage=_SPARSE.get(name),
        cases=(Case(((3, 1, 4), (1, 5, 4)), low=low, high=high),
               Case(((2, 3), (3,)), low=low, high=high)),
        doc=f"``{name}`` with numpy-style broadcasting of the two inputs."))


for _row in _BROADCAST:
    _register_broadcast(*_row)


def _mod_grad(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """MXNet's ``mod_grad``: d(a mod b)/da, 1 for floats and 0 for integers."""
    shape = torch.broadcast_shapes(a.shape, b.shape)
    return torch.full(shape, 1 if a.is_floating_point() else 0, dtype=a.dtype, device=a.device)


def _mod_rgrad(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """MXNet's ``mod_rgrad``: d(a mod b)/db, ``-floor(a / b)`` for floats and 0 for integers."""
    if not a.is_floating_point():
        return torch.zeros(torch.broadcast_shapes(a.shape, b.shape), dtype=a.dtype,
                           device=a.device)
    return -torch.floor(a / b)


for _name, _fn, _expr in (("_mod_grad", _mod_grad, "({0} * 0.0 + 1.0)"),
                          ("_mod_rgrad", _mod_rgrad, "(-tl.floor({0} / {1}))")):
    register(OpDef(
        name=_name, inputs=("lhs", "rhs"), hidden=True, infer_shape=_bshape, expr=_expr,
        forward=lambda p, ins, aux, rt, fn=_fn: (fn(ins[0], ins[1]),),
        gradient=lambda g, p, ins, outs, og: list(_zero2(g, ins[0], ins[1], None, None)),
        cases=(Case(((3, 4), (3, 4)), low=0.5, high=2.0, grad=False),
               Case(((2, 3), (3,)), low=0.5, high=2.0, grad=False)),
        doc=f"The gradient helper ``{_name}`` of ``mod`` (zero for integer dtypes)."))


def _sum_like_forward(p, ins, aux, rt):
    dy, x = ins
    shape = tuple(x.shape)
    lead = dy.dim() - len(shape)
    axes = list(range(lead)) + [lead + i for i, d in enumerate(shape) if d == 1 and
                                dy.shape[lead + i] != 1]
    out = dy.sum(dim=axes, keepdim=True) if axes else dy
    return (out.reshape(shape),)


def triton_sum_like(p, ins, aux, rt):
    """_sum_like as one Triton reduce-sum over the broadcast axes."""
    from ..kernels.copy import reduce_sum
    dy, x = ins
    shape = tuple(x.shape)
    lead = dy.dim() - len(shape)
    axes = list(range(lead)) + [lead + i for i, d in enumerate(shape) if d == 1 and
                                dy.shape[lead + i] != 1]
    return (reduce_sum(dy, axes).reshape(shape),)


def triton_broadcast(p, ins, aux, rt):
    """broadcast_to/axis/like as one Triton copy of a stride-0 view."""
    from ..kernels.copy import broadcast_to
    if len(ins) == 2:
        return (broadcast_to(ins[0], _like_target(p, tuple(ins[0].shape),
                                                  tuple(ins[1].shape))),)
    shape_rule = _to_shape if "shape" in p else _axis_shape
    return (broadcast_to(ins[0], shape_rule(p, [tuple(ins[0].shape)])[1][0]),)


register(OpDef(
    name="_sum_like", inputs=("data", "like"), hidden=True, forward=_sum_like_forward,
    kernel=triton_sum_like,
    infer_shape=lambda p, s: (s, [s[1]]) if s[1] else None,
    gradient=lambda g, p, ins, outs, og: [g.op("broadcast_like", og[0], ins[0]), None],
    cases=(Case(((3, 5, 4), (3, 1, 4)), no_grad_inputs=(1,)),
           Case(((2, 3), (3,)), no_grad_inputs=(1,))),
    doc="Sum ``data`` over broadcast axes down to the shape of ``like``."))


def _like_target(p, a: tuple, b: tuple) -> tuple:
    """The output shape: ``b``, or ``a`` with its ``lhs_axes`` taking ``b``'s ``rhs_axes``."""
    if p.lhs_axes is None or p.rhs_axes is None:  # MXNet: both or neither
        broadcast_shapes(a, b)
        return b
    la, ra = tuple(p.lhs_axes), tuple(p.rhs_axes)
    if len(la) != len(ra) or not la:
        raise ShapeError(f"broadcast_like: lhs_axes {la} and rhs_axes {ra} must have the same "
                         "nonzero length (an empty axes tuple is not allowed)")
    out = list(a)
    for i, j in zip(la, ra):
        for axis, shape, arg in ((i, a, "lhs_axes"), (j, b, "rhs_axes")):
            if not -len(shape) <= axis < len(shape):
                raise ShapeError(f"broadcast_like: invalid axis {axis} in {arg} for shape "
                                 f"{shape}")
        i, j = i % len(a), j % len(b)
        if a[i] != 1:  # MXNet refuses an equal size too
            raise ShapeError(f"broadcast_like: lhs axis {i} has size {a[i]}, cannot broadcast "
                             f"to rhs axis {j} of size {b[j]} (lhs shape {a}, rhs shape {b})")
        out[i] = b[j]
    return tuple(out)


def _like_shape(p, shapes):
    a, b = shapes
    axes = p.lhs_axes is not None and p.rhs_axes is not None
    if not a or not b or (axes and not (known(a) and known(b))):
        return None
    return shapes, [_like_target(p, a, b)]


register(OpDef(
    name="broadcast_like", inputs=("lhs", "rhs"), expr="{0}",
    params=(Param("lhs_axes", "shape_or_none", None), Param("rhs_axes", "shape_or_none", None)),
    forward=lambda p, ins, aux, rt: (ins[0].expand(
        _like_target(p, tuple(ins[0].shape), tuple(ins[1].shape))).contiguous(),),
    infer_shape=_like_shape, kernel=triton_broadcast,
    gradient=lambda g, p, ins, outs, og: [_sum_like(g, og[0], ins[0]), None],
    cases=(Case(((3, 1), (3, 4)), no_grad_inputs=(1,)),
           Case(((1, 4), (5, 2)), {"lhs_axes": (0,), "rhs_axes": (0,)}, no_grad_inputs=(1,))),
    doc="Broadcast ``lhs`` to the shape of ``rhs`` (only ``lhs_axes`` to ``rhs``'s "
        "``rhs_axes`` when given)."))


def _to_shape(p, shapes):
    x = shapes[0]
    if not x:
        return None
    target = tuple(d if t == 0 else t for d, t in zip(x, p.shape))
    if len(p.shape) != len(x):
        raise ShapeError(f"broadcast_to: shape {p.shape} has {len(p.shape)} dims, input has "
                         f"shape {x}")
    for d, t in zip(x, target):
        if d != t and d != 1:
            raise ShapeError(f"broadcast_to: cannot broadcast {x} to {p.shape}")
    return shapes, [target]


register(OpDef(
    name="broadcast_to", params=(Param("shape", "shape", ()),), infer_shape=_to_shape,
    kernel=triton_broadcast,
    expr="{0}",
    forward=lambda p, ins, aux, rt: (
        ins[0].expand(_to_shape(p, [tuple(ins[0].shape)])[1][0]).contiguous(),),
    gradient=lambda g, p, ins, outs, og: [_sum_like(g, og[0], ins[0])],
    cases=(Case(((3, 1, 2),), {"shape": (3, 4, 2)}), Case(((1, 2),), {"shape": (0, 2)})),
    doc="Broadcast to ``shape`` (0 keeps the input's dimension)."))


def _axis_shape(p, shapes):
    x = shapes[0]
    if not x:
        return None
    axes = (p.axis,) if isinstance(p.axis, int) else tuple(p.axis)
    sizes = (p.size,) if isinstance(p.size, int) else tuple(p.size)
    out = list(x)
    for a, s in zip(axes, sizes):
        if not -len(x) <= a < len(x):
            raise ShapeError(f"broadcast_axis: axis {a} is out of range for an input of "
                             f"{len(x)} dimensions")
        if s < 0:
            raise ShapeError(f"broadcast_axis: size {s} for axis {a} is negative")
        if x[a] != 1:
            raise ShapeError(f"broadcast_axis: axis {a} has size {x[a]}, must be 1")
        out[a] = s
    return shapes, [tuple(out)]


register(OpDef(
    name="broadcast_axis", aliases=("broadcast_axes",), expr="{0}",
    params=(Param("axis", "axis", ()), Param("size", "axis", ())), infer_shape=_axis_shape,
    kernel=triton_broadcast,
    forward=lambda p, ins, aux, rt: (
        ins[0].expand(_axis_shape(p, [tuple(ins[0].shape)])[1][0]).contiguous(),),
    gradient=lambda g, p, ins, outs, og: [_sum_like(g, og[0], ins[0])],
    cases=(Case(((3, 1, 2),), {"axis": 1, "size": 4}),),
    doc="Broadcast the given axes (of size 1) to ``size``."))


def _add_n_forward(p, ins, aux, rt):
    out = ins[0] + ins[1] if len(ins) > 1 else ins[0].clone()
    for x in ins[2:]:
        out += x
    return (out,)


register(OpDef(
    name="add_n", aliases=("ElementWiseSum",), key_var_num_args="num_args",
    params=(Param("num_args", "int", lower=1, upper=MAX_VARIADIC),),
    inputs=lambda p: [f"arg{i}" for i in range(p.num_args)], infer_shape=elemwise_shape,
    forward=_add_n_forward, gradient=lambda g, p, ins, outs, og: [og[0]] * len(ins),
    storage=rules.ADD_N,
    expr=lambda p: "(" + " + ".join(f"{{{i}}}" for i in range(p.num_args)) + ")",
    cases=(Case(((3, 4), (3, 4), (3, 4)), {"num_args": 3}),),
    doc="Sum of all inputs (all of one shape)."))
