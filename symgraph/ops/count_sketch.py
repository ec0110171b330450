"""count_sketch (``_contrib_count_sketch``): MXNet 1.9.1's CountSketch projection, as a
composite (a signed one-hot matrix and one ``dot``).

With ``data`` (..., d), index hashes ``h`` (1, d) in [0, out_dim) and signs ``s`` (1, d)::

    out[..., h[i]] += s[i] * data[..., i]      i.e. out = data @ S,  S[i, h[i]] = s[i]

``S`` is built as ``(h[:, None] == arange(out_dim)) * s[:, None]`` in the data's dtype. The
gradient reaches ``data`` only (``ograd @ S.T``, MXNet's backward); ``h`` and ``s`` get
none, as in MXNet. MXNet runs it on GPU only; symgraph on every device. Data must be 2-D
or 4-D, as MXNet's.

>>> import symgraph as mx
>>> x = mx.nd.array([[1.2, 2.5, 3.4], [3.2, 5.7, 6.6]])
>>> h, s = mx.nd.array([[0, 3, 4]]), mx.nd.array([[1, -1, 1]])
>>> mx.nd.contrib.count_sketch(x, h, s, out_dim=5).asnumpy()
array([[ 1.2,  0. ,  0. , -2.5,  3.4],
       [ 3.2,  0. ,  0. , -5.7,  6.6]], dtype=float32)
"""
from __future__ import annotations

from ..attrs import Param
from ..base import ShapeError
from .base import Case, OpDef, register


def _first_row(b, v, shape: tuple, tag: str):
    """Row 0 of ``v`` (MXNet reads the first d entries of the flattened hash), reshaped."""
    row = b.op("slice_axis", v, axis=0, begin=0, end=1, name=f"{tag}_row")
    return b.op("Reshape", row, shape=shape, name=f"{tag}_col")


def _decompose(b, p, ins):
    data, h, s = ins
    h_col = _first_row(b, h, (-1, 1), "h")
    one = b.op("Reshape", b.op("slice_axis", h_col, axis=0, begin=0, end=1, name="h0"),
               shape=(1,), name="seed")
    buckets = b.op("_contrib_arange_like", b.op("tile", one, reps=(p.out_dim,), name="slots"),
                   name="buckets")
    hit = b.op("broadcast_equal", h_col, b.op("Reshape", buckets, shape=(1, -1),
                                              name="bucket_row"), name="one_hot")
    sketch = b.op("broadcast_mul", hit, _first_row(b, s, (-1, 1), "s"), name="signed")
    sketch = b.op("BlockGrad", sketch, name="sketch")
    return [b.op("dot", data, sketch, name="project")]


def _shape(p, shapes):
    data, h, s = shapes
    if not data:
        return None
    if len(data) not in (2, 4):
        raise ShapeError(f"count_sketch: Data should be 2D or 4D!, got shape {data}")
    for name, got in (("h", h), ("s", s)):
        if got and (len(got) != 2 or got[1] != data[-1]):
            raise ShapeError(f"count_sketch: {name.upper()} should be 2D tensor with same "
                             f"length as input shape[{len(data) - 1}], {name} has shape "
                             f"{got}, data {data}")
    hash_shape = (1, data[-1])
    return ([data, h or hash_shape, s or hash_shape],
            [tuple(data[:-1]) + (p.out_dim,)])


register(OpDef(
    name="_contrib_count_sketch", inputs=("data", "h", "s"), decompose=_decompose,
    infer_shape=_shape,
    params=(Param("out_dim", "int", lower=1, doc="The output dimension."),
            Param("processing_batch_size", "int", 32,
                  doc="How many sketch vectors to process at one time (accepted, unused).")),
    cases=(Case(((4, 6), (1, 6), (1, 6)), {"out_dim": 4}, ints={1: 4}, no_grad_inputs=(1, 2)),
           Case(((2, 1, 3, 5), (1, 5), (1, 5)), {"out_dim": 3, "processing_batch_size": 2},
                ints={1: 3}, no_grad_inputs=(1, 2))),
    doc="""CountSketch: project ``data`` (..., d) to (..., out_dim) with hashes ``h``, ``s``.

    ``h`` (1, d) holds the output index of every input column (integers in
    [0, out_dim)), ``s`` (1, d) its sign (+1 or -1): ``out[..., h[i]] += s[i] * x[..., i]``.

    Examples
    --------
    >>> import symgraph as mx
    >>> cs = mx.sym.contrib.count_sketch(mx.sym.Variable('x'), mx.sym.Variable('h'),
    ...                                  mx.sym.Variable('s'), out_dim=8)
    >>> cs.infer_shape(x=(2, 5))[:2]
    ([(2, 5), (1, 5), (1, 5)], [(2, 8)])
    """))
