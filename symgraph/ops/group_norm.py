"""GroupNorm: normalisation over groups of channels (a composite; MXNet 1.9.1's form).

With ``x`` of shape (N, C, ...) viewed as (N, G, S), ``G = num_groups``, statistics over
S, and ``gamma``/``beta`` of length G (one per group, as MXNet 1.x has them)::

    out = (x - mean) / sqrt(var + eps) * gamma[g] + beta[g]

The hidden outputs ``mean`` and ``std`` have shape (N, G) (visible with
``output_mean_var``).

>>> import symgraph as mx
>>> net = mx.sym.GroupNorm(mx.sym.Variable('x'), num_groups=2, output_mean_var=True,
...                        name='gn0')
>>> net.list_outputs()
['gn0_output', 'gn0_mean', 'gn0_std']
>>> net.infer_shape(x=(2, 4, 3))[:2]
([(2, 4, 3), (2,), (2,)], [(2, 4, 3), (2, 2), (2, 2)])
"""
from __future__ import annotations

from ..attrs import Param
from ..base import ShapeError
from .base import Case, OpDef, register
from .instance_norm import affine, channel_params_shape, normalise


def _decompose(b, p, ins):
    x, gamma, beta = ins
    x3 = b.op("Reshape", x, shape=(0, p.num_groups, -1), name="data3")
    xhat, mean, std = normalise(b, x3, p.eps)
    out = affine(b, xhat, gamma, beta, x)
    return [out, b.op("Reshape", mean, shape=(0, 0), name="mean_out"),
            b.op("Reshape", std, shape=(0, 0), name="std_out")]


def _groups(p, x) -> int:
    if x[1] and x[1] % p.num_groups:
        raise ShapeError(f"GroupNorm: {x[1]} channels cannot be split into "
                         f"num_groups={p.num_groups} groups")
    return p.num_groups


_rule = channel_params_shape("GroupNorm", _groups)


def _shape(p, shapes):
    result = _rule(p, shapes)
    if result is None:
        return None
    stats = (result[1][0][0], p.num_groups)
    return result[0], result[1] + [stats, stats]


register(OpDef(
    name="GroupNorm", inputs=("data", "gamma", "beta"), outputs=("output", "mean", "std"),
    num_visible=lambda p: 3 if p.output_mean_var else 1, decompose=_decompose,
    infer_shape=_shape,
    params=(Param("num_groups", "int", 1, lower=1, doc="Total number of groups."),
            Param("eps", "float", 1e-5, doc="Epsilon added to the variance."),
            Param("output_mean_var", "bool", False, doc="Also output the mean and std.")),
    cases=(Case(((2, 4, 3, 2), (2,), (2,)), {"num_groups": 2}),
           Case(((3, 3, 4), (1,), (1,))),
           Case(((2, 6, 5), (3,), (3,)), {"num_groups": 3, "output_mean_var": True})),
    doc="Group normalisation: channels split into ``num_groups`` groups, each (sample, "
        "group) normalised, then scaled and shifted per group."))
