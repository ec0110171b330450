"""``_histogram`` (``mx.nd.histogram`` / ``mx.sym.histogram``): counts of values per bin.

Either ``bin_cnt`` equal bins over ``range = (lo, hi)`` (a zero-width range widens to
``(lo - 0.5, hi + 0.5)``), or a second input ``bins`` holding sorted edges. Bin ``i`` counts
``e[i] <= x < e[i + 1]``, the last bin also ``x == e[-1]`` (numpy's rule); values outside
are not counted. Outputs: the counts (int64) and the edges (in the data's dtype). Like
MXNet's, the op has no gradient. The Triton path is one kernel with atomic adds
(``symgraph.kernels.reduce.histogram``).

>>> import symgraph as mx
>>> counts, edges = mx.nd.histogram(mx.nd.array([0, 1, 2, 3, 4, 5]), bins=3, range=(0, 5))
>>> counts.asnumpy(), edges.asnumpy()
(array([2, 2, 2]), array([0.       , 1.6666666, 3.3333333, 5.       ], dtype=float32))
>>> mx.sym.histogram(mx.sym.Variable('a'), bins=mx.sym.Variable('b')).infer_shape(a=(4, 3),
...                                                                              b=(6,))[1]
[(5,), (6,)]
"""
from __future__ import annotations

from ..attrs import Param
from ..base import AttrError, ShapeError
from .base import Case, OpDef, register

_PARAMS = (
    Param("bin_cnt", "int_or_none", None, doc="The number of equal bins (None: ``bins`` input)."),
    Param("range", "floats_or_none", None, doc="``(lo, hi)`` of the equal bins."),
)


def _inputs(p):
    return ["data"] if p.bin_cnt is not None else ["data", "bins"]


def _range(p) -> tuple[float, float]:
    """The bins' range; MXNet widens an empty one by 0.5 on each side."""
    if p.range is None or len(p.range) != 2:
        raise AttrError(f"_histogram: range must be given as (lo, hi) with bin_cnt, got "
                        f"{p.range}")
    lo, hi = p.range
    return (lo - 0.5, hi + 0.5) if lo == hi else (lo, hi)


def _shape(p, shapes):
    if p.bin_cnt is not None:
        if p.bin_cnt < 1:
            raise ShapeError(f"_histogram: bin_cnt must be positive, got {p.bin_cnt}")
        _range(p)
        return shapes, [(p.bin_cnt,), (p.bin_cnt + 1,)]
    bins = shapes[1]
    if not bins:
        return None
    if len(bins) != 1 or bins[0] < 2:
        raise ShapeError(f"_histogram: bins must be a 1-D array of at least 2 edges, got shape "
                         f"{tuple(bins)}")
    return shapes, [(bins[0] - 1,), bins]


def _type(p, types):
    if types[0] is None:
        return None
    return list(types), ["int64", types[0]]


def _forward(p, ins, aux, rt):
    from ..kernels.reduce import histogram_ref
    if p.bin_cnt is not None:
        return histogram_ref(ins[0], p.bin_cnt, *_range(p))
    return histogram_ref(ins[0], ins[1])


def triton_histogram(p, ins, aux, rt):
    """Counts by atomic adds in one kernel (``symgraph.kernels.reduce.histogram``)."""
    from ..kernels.reduce import histogram
    if p.bin_cnt is not None:
        return histogram(ins[0], p.bin_cnt, *_range(p))
    return histogram(ins[0], ins[1])


register(OpDef(
    name="_histogram", differentiable=False, params=_PARAMS, inputs=_inputs,
    outputs=("output0", "output1"),
    infer_shape=_shape, infer_type=_type, forward=_forward, kernel=triton_histogram,
    cases=(Case(((4, 7),), {"bin_cnt": 5, "range": (-0.5, 0.8)}, grad=False),
           Case(((13,),), {"bin_cnt": 3, "range": (0.2, 0.2)}, grad=False)),
    doc="""Counts (int64) of the data in equal bins over ``range`` (``bin_cnt``) or between
    the sorted edges of the ``bins`` input, and the bin edges. No gradient.
    """))
