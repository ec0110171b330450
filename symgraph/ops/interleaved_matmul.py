"""MXNet's multi-head attention products on interleaved projections (composites of
``Reshape``/``slice_axis``/``transpose``/``batch_dot``), MXNet 1.9.1's layouts.

Sequences are time-major. With ``H = heads`` and ``D`` the head size::

    queries_keys_values  (L, B, H * 3 * D)   laid out as (L, B, H, 3, D): q, k, v per head
    keys_values          (L, B, H * 2 * D)   laid out as (L, B, H, 2, D): k, v per head
    queries              (L, B, H * D)       laid out as (L, B, H, D)

    selfatt_qk(qkv)        = (q / sqrt(D)) @ k^T           (B * H, L, L)
    selfatt_valatt(qkv, A) = A @ v, back to (L, B, H * D)
    encdec_qk(q, kv)       = (q / sqrt(D)) @ k^T           (B * H, Lq, Lk)
    encdec_valatt(kv, A)   = A @ v, back to (Lq, B, H * D)

where a head's (L, D) block becomes batch entry ``b * H + h``. ``sqrt(D)`` is taken from the
data (a sum of ones over the head axis), so the decomposition does not depend on shapes.

>>> import symgraph as mx
>>> qkv = mx.sym.Variable('qkv')
>>> att = mx.sym.contrib.interleaved_matmul_selfatt_qk(qkv, heads=2)
>>> att.infer_shape(qkv=(5, 3, 24))[1]
[(6, 5, 5)]
>>> out = mx.sym.contrib.interleaved_matmul_selfatt_valatt(qkv, att, heads=2)
>>> out.infer_shape(qkv=(5, 3, 24))[1]
[(5, 3, 8)]
"""
from __future__ import annotations

from ..attrs import Param
from ..base import ShapeError
from .base import Case, OpDef, register

_HEADS = (Param("heads", "int", lower=1, doc="Number of attention heads."),)


def _heads_first(b, x, tag: str):
    """(L, B, H, D) -> (B * H, L, D)."""
    x = b.op("transpose", x, axes=(1, 2, 0, 3), name=f"{tag}_t")
    return b.op("Reshape", x, shape=(-3, 0, 0), name=f"{tag}_bh")


def _part(b, x, p, n: int, i: int, tag: str):
    """Part ``i`` of ``n`` interleaved per head (q, k or v) as (B * H, L, D)."""
    x = b.op("Reshape", x, shape=(0, 0, p.heads, n, -1), name=f"{tag}_split")
    x = b.op("slice_axis", x, axis=3, begin=i, end=i + 1, name=tag)
    return _heads_first(b, b.op("Reshape", x, shape=(0, 0, 0, -1), name=f"{tag}_4d"), tag)


def _scaled(b, q):
    """``q / sqrt(D)``, D being q's last axis."""
    ones = b.op("ones_like", q, name="ones")
    dim = b.op("sum", ones, axis=-1, keepdims=True, name="head_dim")
    return b.op("broadcast_mul", q, b.op("rsqrt", dim, name="inv_sqrt_dim"), name="q_scaled")


def _attend(b, p, v, att):
    """``att @ v`` from (B * H, Lq, D) back to (Lq, B, H * D)."""
    out = b.op("batch_dot", att, v, name="weighted")
    out = b.op("Reshape", out, shape=(-4, -1, p.heads, 0, 0), name="weighted_4d")
    out = b.op("transpose", out, axes=(2, 0, 1, 3), name="weighted_t")
    return b.op("Reshape", out, shape=(0, 0, -3), name="output")


def _selfatt_qk(b, p, ins):
    q = _scaled(b, _part(b, ins[0], p, 3, 0, "q"))
    return [b.op("batch_dot", q, _part(b, ins[0], p, 3, 1, "k"), transpose_b=True,
                 name="output")]


def _selfatt_valatt(b, p, ins):
    return [_attend(b, p, _part(b, ins[0], p, 3, 2, "v"), ins[1])]


def _encdec_qk(b, p, ins):
    q = b.op("Reshape", ins[0], shape=(0, 0, p.heads, -1), name="q_4d")
    q = _scaled(b, _heads_first(b, q, "q"))
    return [b.op("batch_dot", q, _part(b, ins[1], p, 2, 0, "k"), transpose_b=True,
                 name="output")]


def _encdec_valatt(b, p, ins):
    return [_attend(b, p, _part(b, ins[0], p, 2, 1, "v"), ins[1])]


def _proj(op: str, x, p, n: int) -> tuple[int, int, int]:
    """(L, B, D) of a projection interleaving ``n`` parts per head; a ShapeError if it is
    not 3-D or its last axis does not split into ``heads * n`` equal parts."""
    if len(x) != 3:
        raise ShapeError(f"{op}: input must be 3-D (seq_length, batch, units), got {x}")
    if x[2] and x[2] % (p.heads * n):
        raise ShapeError(f"{op}: last axis {x[2]} of input {x} does not split into "
                         f"heads={p.heads} x {n} equal parts")
    return x[0], x[1], x[2] // (p.heads * n)


def _qk_shape(op: str, n: int):
    def rule(p, shapes):
        q, kv = (shapes[0], shapes[0]) if n == 3 else shapes
        if not q or not kv:
            return None
        (lq, bq, dq), (lk, bk, dk) = _proj(op, q, p, 1 if n == 2 else 3), _proj(op, kv, p, n)
        if (bq, dq) != (bk, dk):
            raise ShapeError(f"{op}: queries {q} and keys {kv} disagree on batch or head size "
                             f"(heads={p.heads})")
        return shapes, [(bq * p.heads, lq, lk)]
    return rule


def _valatt_shape(op: str, n: int):
    def rule(p, shapes):
        kv, att = shapes
        if not kv:
            return None
        lk, bk, d = _proj(op, kv, p, n)
        if att and (len(att) != 3 or att[0] != bk * p.heads or att[2] != lk):
            raise ShapeError(f"{op}: attention {att} does not match (batch * heads, "
                             f"query length, {lk}) for values {kv} with heads={p.heads}")
        if not att:
            return None
        return shapes, [(att[1], bk, p.heads * d)]
    return rule


def _register(name, inputs, decompose, shape, cases, doc) -> None:
    register(OpDef(name=name, inputs=inputs, params=_HEADS, decompose=decompose,
                   infer_shape=shape, cases=cases, doc=doc))


_register("_contrib_interleaved_matmul_selfatt_qk", ("queries_keys_values",), _selfatt_qk,
          _qk_shape("interleaved_matmul_selfatt_qk", 3),
          (Case(((4, 2, 12),), {"heads": 2}), Case(((3, 1, 9),), {"heads": 3})),
          "Scaled q @ k^T per head of interleaved (q, k, v) projections.")
_register("_contrib_interleaved_matmul_selfatt_valatt", ("queries_keys_values", "attention"),
          _selfatt_valatt, _valatt_shape("interleaved_matmul_selfatt_valatt", 3),
          (Case(((4, 2, 12), (4, 4, 4)), {"heads": 2}),
           Case(((3, 1, 9), (3, 3, 3)), {"heads": 3})),
          "Attention-weighted values per head of interleaved (q, k, v) projections.")
_register("_contrib_interleaved_matmul_encdec_qk", ("queries", "keys_values"), _encdec_qk,
          _qk_shape("interleaved_matmul_encdec_qk", 2),
          (Case(((3, 2, 4), (5, 2, 8)), {"heads": 2}),),
          "Scaled q @ k^T per head, keys from interleaved (k, v) projections.")
_register("_contrib_interleaved_matmul_encdec_valatt", ("keys_values", "attention"),
          _encdec_valatt, _valatt_shape("interleaved_matmul_encdec_valatt", 2),
          (Case(((5, 2, 8), (4, 3, 5)), {"heads": 2}),),
          "Attention-weighted values per head, values from interleaved (k, v) projections.")
