"""Core shape ops: Reshape (with MXNet's codes), Flatten, reshape_like, expand_dims, transpose."""
from __future__ import annotations

import math

from ..attrs import Param
from ..base import ShapeError
from .base import Case, OpDef, PlanHints, Special, grad_rule, register


def _infer_reshape(src: tuple, spec: tuple, reverse: bool) -> tuple:
    """Apply MXNet's Reshape codes 0, -1, -2, -3, -4 to ``src`` (left to right or reversed)."""
    given = spec
    if reverse:
        src, spec = src[::-1], spec[::-1]  # MXNet reverses both lists, -4 groups included
    out: list[int] = []
    i = j = 0
    infer_at = -1
    while j < len(spec):
        code = spec[j]
        if code == 0:
            _need(i < len(src), src, spec)
            out.append(src[i]); i += 1
        elif code == -1:
            if infer_at >= 0:
                raise ShapeError(f"Reshape: more than one -1 in shape {spec}")
            infer_at = len(out); out.append(-1); i += 1
        elif code == -2:
            out.extend(src[i:]); i = len(src)
        elif code == -3:
            _need(i + 1 < len(src), src, spec)
            out.append(src[i] * src[i + 1]); i += 2
        elif code == -4:
            j, i = _split_dim(src, spec, i, j, out)
            continue
        else:
            _need(code > 0, src, spec)
            out.append(code); i += 1
        j += 1
    if infer_at >= 0:
        known = math.prod([d for d in out if d != -1])  # a list: torch.compile traces it
        out[infer_at] = math.prod(src) // known if known else 0
    if 0 not in src and math.prod(out) != math.prod(src):  # 0: unknown, left to inference
        raise ShapeError(f"Reshape: target shape size {tuple(out)} is different from source "
                         f"{src if not reverse else src[::-1]} (shape spec {given})")
    return tuple(out[::-1]) if reverse else tuple(out)


def _split_dim(src, spec, i, j, out):
    _need(i < len(src) and j + 2 < len(spec), src, spec)
    d, a, b = src[i], spec[j + 1], spec[j + 2]
    if a == -1:
        a = d // b
    if b == -1:
        b = d // a
    if a * b != d and d:
        raise ShapeError(f"Reshape: -4 split of dimension {d} into ({spec[j+1]}, {spec[j+2]}) "
                         "does not match")
    out.extend((a, b))
    return j + 3, i + 1


def _need(ok: bool, src, spec) -> None:
    if not ok:
        raise ShapeError(f"Reshape: shape spec {spec} does not fit input shape {src}")


def _reshape_shape(p, shapes):
    src = shapes[0]
    if not src:
        return None
    return shapes, [_infer_reshape(tuple(src), _spec(p), p.reverse)]


def _spec(p) -> tuple:
    """The shape codes; the deprecated ``target_shape`` reads 0 as "infer" (MXNet's -1) and
    ``keep_highest`` keeps the input's first dimension in place of its first entry."""
    if p.shape or not p.target_shape:
        return tuple(p.shape)
    spec = tuple(-1 if d == 0 else d for d in p.target_shape)
    return (0,) + spec[1:] if p.keep_highest else spec


def _reshape_inputs_from_output(p, shapes, outs):
    """MXNet's Reshape also infers backwards: an input with one unknown dimension takes it
    from the output's size."""
    data, out = shapes[0], outs[0] if outs else ()
    if not data or not out or 0 in out or list(data).count(0) != 1:
        return None
    total, known = 1, 1
    for d in out:
        total *= d
    for d in data:
        known *= d or 1
    if total % known:
        return None
    return [tuple(total // known if d == 0 else d for d in data)] + list(shapes[1:])


def _like_grad(g, p, ins, outs, og):
    return [g.op("reshape_like", og[0], ins[0])]


register(OpDef(
    name="Reshape", aliases=("reshape",), hints=PlanHints(view=True),
    params=(Param("shape", "shape", (), doc="Target shape with codes 0,-1,-2,-3,-4."),
            Param("reverse", "bool", False, doc="Match special codes right to left."),
            Param("target_shape", "shape", (), doc="Deprecated."),
            Param("keep_highest", "bool", False, doc="Deprecated.")),
    infer_shape=_reshape_shape, gradient=_like_grad,
    special=Special(infer_inputs_from_outputs=_reshape_inputs_from_output),
    forward=lambda p, ins, aux, rt: (ins[0].reshape(_reshape_shape(p, [tuple(ins[0].shape)])
                                                    [1][0]),),
    cases=(Case(((2, 3, 4),), {"shape": (0, -1)}), Case(((2, 3, 4),), {"shape": (-3, 4)}),
           Case(((2, 3, 4),), {"shape": (-4, 1, 2, -2)}), Case(((6, 4),), {"shape": (-1, 0),
                                                                           "reverse": True}),
           Case(((2, 3, 4),), {"shape": (0, -2)})),
    doc="Reshape with MXNet's special codes: 0 copy, -1 infer, -2 copy rest, -3 merge two, "
        "-4 split one."))


def _flatten_shape(p, shapes):
    src = shapes[0]
    if not src:
        return None
    return shapes, [(src[0], math.prod(src[1:]))]


register(OpDef(
    name="Flatten", aliases=("flatten",), infer_shape=_flatten_shape, gradient=_like_grad,
    hints=PlanHints(view=True),
    forward=lambda p, ins, aux, rt: (ins[0].reshape(ins[0].shape[0], -1),),
    cases=(Case(((2, 3, 4),)), Case(((3, 2),))),
    doc="Collapse all axes but the first: (N, a, b, ...) -> (N, a*b*...)."))


def _like_range(side: str, ndim: int, begin, end) -> tuple[int, int]:
    """MXNet's canonical ``[begin, end)`` of ``side`` (None: 0 / ndim; negative from the end)."""
    b = 0 if begin is None else begin + ndim if begin < 0 else begin
    e = ndim if end is None else end + ndim if end < 0 else end
    if e > ndim:
        raise ShapeError(f"reshape_like: invalid end for {side}_end={end} as dimension number "
                         f"is {ndim}")
    if not 0 <= b < e:
        raise ShapeError(f"reshape_like: invalid begin, end, get {side}_begin={begin}, "
                         f"{side}_end={end} for {ndim} dimensions")
    return b, e


def reshape_like_target(p, a: tuple, b: tuple) -> tuple:
    """The shape ``reshape_like`` gives ``lhs`` of shape ``a`` with ``rhs`` of shape ``b``."""
    lb, le = _like_range("lhs", len(a), p.lhs_begin, p.lhs_end)
    rb, re = _like_range("rhs", len(b), p.rhs_begin, p.rhs_end)
    out = tuple(a[:lb]) + tuple(b[rb:re]) + tuple(a[le:])
    if math.prod(a) != math.prod(out):
        raise ShapeError(f"reshape_like: cannot reshape lhs with shape {a} to new shape {out} "
                         f"because they have different size (rhs {b})")
    return out


def _reshape_like_shape(p, shapes):
    a, b = shapes
    if not a or not b:
        return None
    return shapes, [reshape_like_target(p, a, b)]


register(OpDef(
    name="reshape_like", inputs=("lhs", "rhs"), infer_shape=_reshape_like_shape,
    hints=PlanHints(view=True),
    params=tuple(Param(f"{side}_{end}", "int_or_none", None,
                       doc=f"{end.capitalize()} of the {side} dimensions reshaped (None: "
                           f"{'the first' if end == 'begin' else 'past the last'}).")
                 for side in ("lhs", "rhs") for end in ("begin", "end")),
    forward=lambda p, ins, aux, rt: (
        ins[0].reshape(reshape_like_target(p, tuple(ins[0].shape), tuple(ins[1].shape))),),
    gradient=lambda g, p, ins, outs, og: [g.op("reshape_like", og[0], ins[0]), None],
    cases=(Case(((6, 2), (3, 4)), no_grad_inputs=(1,)),
           Case(((6, 2, 3), (2, 3, 4, 5)), {"lhs_begin": 0, "lhs_end": 1, "rhs_begin": 0,
                                            "rhs_end": -2}, no_grad_inputs=(1,))),
    doc="Reshape ``lhs`` to the shape of ``rhs`` (same size), or dimensions "
        "``[lhs_begin, lhs_end)`` of ``lhs`` to dimensions ``[rhs_begin, rhs_end)`` of "
        "``rhs``."))


def _expand_shape(p, shapes):
    src = shapes[0]
    if not src:
        return None
    axis = p.axis if p.axis >= 0 else p.axis + len(src) + 1
    if not 0 <= axis <= len(src):
        raise ShapeError(f"expand_dims: axis {p.axis} out of range for shape {src}")
    return shapes, [tuple(src[:axis]) + (1,) + tuple(src[axis:])]


register(OpDef(
    name="expand_dims", params=(Param("axis", "int"),), infer_shape=_expand_shape,
    hints=PlanHints(view=True),
    gradient=_like_grad,
    forward=lambda p, ins, aux, rt: (ins[0].reshape(_expand_shape(p, [tuple(ins[0].shape)])
                                                    [1][0]),),
    cases=(Case(((2, 3),), {"axis": 1}), Case(((2, 3),), {"axis": -1})),
    doc="Insert an axis of length 1 at ``axis``."))


def _axes(p, ndim: int) -> tuple:
    if not p.axes:
        return tuple(range(ndim - 1, -1, -1))
    if sorted(a % ndim for a in p.axes) != list(range(ndim)):
        raise ShapeError(f"transpose permutation isn't a permutation of operand dimensions, got "
                         f"permutation {p.axes} for operand of {ndim} dimensions")
    return tuple(a % ndim for a in p.axes)


def _transpose_shape(p, shapes):
    src = shapes[0]
    if not src:
        return None
    return shapes, [tuple(src[a] for a in _axes(p, len(src)))]


def _transpose_input_from_output(p, shapes, outs):
    """MXNet's TransposeShape run backwards: the output's known dims fill the input's."""
    out, src = (outs[0] if outs else ()), shapes[0]
    if not out or (src and len(src) != len(out)):
        return None
    src = src or (0,) * len(out)
    back = list(src)
    for k, a in enumerate(_axes(p, len(out))):
        back[a] = back[a] or out[k]
    return [tuple(back)]


def triton_transpose(p, ins, aux, rt):
    """transpose as one strided Triton copy."""
    from ..kernels.copy import permute
    return (permute(ins[0], _axes(p, ins[0].dim())),)


register(OpDef(
    name="transpose", params=(Param("axes", "shape", ()),), infer_shape=_transpose_shape,
    special=Special(infer_inputs_from_outputs=_transpose_input_from_output),
    forward=lambda p, ins, aux, rt: (ins[0].permute(_axes(p, ins[0].dim())).contiguous(),),
    kernel=triton_transpose,
    gradient=lambda g, p, ins, outs, og: [g.op("_transpose_back", og[0], ins[0], axes=p.axes)],
    cases=(Case(((2, 3, 4),), {}), Case(((2, 3, 4),), {"axes": (1, 0, 2)}),
           Case(((2, 3, 4),), {"axes": (2, 0, 1)})),
    doc="Permute axes (reverse them when ``axes`` is empty)."))


def _inverse(perm: tuple) -> tuple:
    inv = [0] * len(perm)
    for i, a in enumerate(perm):
        inv[a] = i
    return tuple(inv)


def triton_transpose_back(p, ins, aux, rt):
    """The transpose gradient as one strided Triton copy."""
    from ..kernels.copy import permute
    return (permute(ins[0], _inverse(_axes(p, ins[0].dim()))),)


register(OpDef(
    name="_transpose_back", params=(Param("axes", "shape", ()),), inputs=("ograd", "data"),
    hidden=True, infer_shape=grad_rule(_transpose_shape),
    forward=lambda p, ins, aux, rt: (
        ins[0].permute(_inverse(_axes(p, ins[0].dim()))).contiguous(),),
    kernel=triton_transpose_back,
    gradient=lambda g, p, ins, outs, og: [g.op("transpose", og[0], axes=p.axes), None],
    cases=(Case(((4, 2, 3), (2, 3, 4)), {"axes": (2, 0, 1)}, no_grad_inputs=(1,)),),
    doc="Undo ``transpose(axes)``: the gradient of transpose."))
