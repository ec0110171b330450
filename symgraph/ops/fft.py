"""fft and ifft (``_contrib_fft``, ``_contrib_ifft``): MXNet 1.9.1's 1-D discrete Fourier
transforms over the last axis, as composites (a DFT matrix and one ``dot``).

With ``d`` points and ``theta[k, n] = 2 * pi * ((k * n) mod d) / d``::

    fft:  x (..., d) real          -> y (..., 2d) = [Re X_0, Im X_0, Re X_1, Im X_1, ...],
          X_k = sum_n x_n exp(-i theta[k, n])
    ifft: y (..., 2d) interleaved  -> x (..., d) = Re(sum_k Y_k exp(+i theta[k, n])),
          not divided by d (MXNet leaves the normalisation out: ifft(fft(x)) = d * x)

Both are ``dot`` with the matrix ``M`` (2d, d), rows ``2k`` = ``cos theta[k]`` and ``2k + 1``
= ``-sin theta[k]``: fft is ``x @ M.T``, ifft is ``y @ M``. So each one's gradient is the
other applied to the head gradient, which is what MXNet's backward computes. MXNet runs
them on GPU only (cuFFT); symgraph on every device. Data must be 2-D or 4-D, as MXNet's.

Limits of the matrix form: it costs O(d^2) per row and holds 2 d^2 values, and the angles
are exact while ``k * n`` is exact in the data's dtype (d <= 4096 in float32, d <= 45 in
float16); transforms beyond that want a dedicated FFT primitive.

>>> import symgraph as mx
>>> y = mx.nd.contrib.fft(mx.nd.array([[1, 2, 3, 4]]))
>>> y.asnumpy().round(4)
array([[10.,  0., -2.,  2., -2.,  0., -2., -2.]], dtype=float32)
>>> mx.nd.contrib.ifft(y).asnumpy().round(4)
array([[ 4.,  8., 12., 16.]], dtype=float32)
"""
from __future__ import annotations

import math

from ..attrs import Param
from ..base import ShapeError
from .base import Case, OpDef, register


def _dft_matrix(b, n):
    """M (2d, d) from ``n`` = 0, 1, ..., d - 1 (no gradient flows into it)."""
    count = b.op("sum", b.op("ones_like", n, name="ones"), name="points")
    kn = b.op("broadcast_mul", b.op("Reshape", n, shape=(-1, 1), name="k"),
              b.op("Reshape", n, shape=(1, -1), name="n"), name="kn")
    phase = b.op("broadcast_div", b.op("broadcast_mod", kn, count, name="kn_mod"), count,
                 name="phase")
    theta = b.op("_mul_scalar", phase, scalar=2 * math.pi, name="theta")
    rows = b.op("stack", b.op("cos", theta), b.op("negative", b.op("sin", theta)), axis=1,
                num_args=2, name="cos_sin")
    return b.op("BlockGrad", b.op("Reshape", rows, shape=(-3, 0), name="dft"), name="const")


def _fft(b, p, ins):
    n = b.op("_contrib_arange_like", ins[0], axis=-1, name="index")
    return [b.op("dot", ins[0], _dft_matrix(b, n), transpose_b=True, name="transform")]


def _ifft(b, p, ins):
    half = b.op("_contrib_arange_like", ins[0], axis=-1, step=0.5, name="half_index")
    n = b.op("slice_axis", b.op("Reshape", half, shape=(-1, 2), name="pairs"), axis=1,
             begin=0, end=1, name="index2")
    n = b.op("Reshape", n, shape=(-1,), name="index")
    return [b.op("dot", ins[0], _dft_matrix(b, n), name="transform")]


def _shape_rule(op: str, factor: float):
    def rule(p, shapes):
        data = shapes[0]
        if not data:
            return None
        if len(data) not in (2, 4):
            raise ShapeError(f"{op}: data must be 2-D (N, d) or 4-D (N1, N2, N3, d), got "
                             f"shape {data}")
        if factor < 1 and data[-1] % 2:
            raise ShapeError(f"{op}: the last axis holds (real, imag) pairs and must be even, "
                             f"got shape {data}")
        return [data], [tuple(data[:-1]) + (int(data[-1] * factor),)]
    return rule


_PARAMS = (Param("compute_size", "int", 128,
                 doc="Maximum sub-batch forwarded at one time (accepted, unused)."),)

register(OpDef(
    name="_contrib_fft", params=_PARAMS, decompose=_fft,
    infer_shape=_shape_rule("fft", 2),
    cases=(Case(((3, 5),)), Case(((2, 1, 3, 4),), {"compute_size": 2})),
    doc="""1-D FFT of real data over the last axis; (real, imag) pairs interleaved.

    ``data`` is (N, d) or (N1, N2, N3, d); the output has the last axis doubled:
    ``[real0, imag0, real1, imag1, ...]``.

    Examples
    --------
    >>> import symgraph as mx
    >>> mx.sym.contrib.fft(mx.sym.Variable('x')).infer_shape(x=(3, 4))[1]
    [(3, 8)]
    """))

register(OpDef(
    name="_contrib_ifft", params=_PARAMS, decompose=_ifft,
    infer_shape=_shape_rule("ifft", 0.5),
    cases=(Case(((3, 10),)), Case(((2, 1, 3, 8),), {"compute_size": 2})),
    doc="""1-D inverse FFT over the last axis (interleaved pairs in), real part out.

    ``data`` is (N, 2d) or (N1, N2, N3, 2d) holding ``[real0, imag0, real1, imag1, ...]``;
    the output is the real part (N, d), not divided by ``d``.

    Examples
    --------
    >>> import symgraph as mx
    >>> mx.sym.contrib.ifft(mx.sym.Variable('x')).infer_shape(x=(3, 8))[1]
    [(3, 4)]
    """))
