"""ONNX export of SequenceReverse, SequenceMask and SequenceLast: ONNX Runtime gives
symgraph's outputs, with and without lengths, for both time axes and several dtypes."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as mx
import symgraph.onnx.ops.sequence
from tests.onnx_check import check_onnx, run_onnx, run_symgraph

RNG = np.random.default_rng(7)
X, L = mx.sym.Variable("data"), mx.sym.Variable("len")


def _x(*shape, dtype=np.float32):
    return (RNG.uniform(-5, 5, shape) * 2).astype(dtype)


# lengths with a zero, a full one, a fraction (truncated) and ones past T or below 0
LENS5 = np.array([0, 5, 2.7, 9, -1], np.float32)
LENS3 = np.array([1, 3, 2.2], np.float32)

CASES = [
    ("reverse_all", mx.sym.SequenceReverse(X), {"data": _x(4, 3, 2)}),
    ("reverse_all_int", mx.sym.SequenceReverse(X), {"data": _x(5, 2, dtype=np.int32)}),
    ("reverse_len", mx.sym.SequenceReverse(X, L, use_sequence_length=True),
     {"data": _x(5, 5, 2), "len": LENS5}),
    ("reverse_len_f16", mx.sym.SequenceReverse(X, L, use_sequence_length=True),
     {"data": _x(4, 3, 2, 2, dtype=np.float16), "len": LENS3}),
    ("reverse_len_i64", mx.sym.SequenceReverse(X, L, use_sequence_length=True),
     {"data": _x(3, 3, dtype=np.int64), "len": LENS3}),
    ("mask_none", mx.sym.SequenceMask(X, value=3.0), {"data": _x(3, 2, 4)}),
    ("mask_axis0", mx.sym.SequenceMask(X, L, use_sequence_length=True, value=-7.5),
     {"data": _x(6, 5, 2), "len": LENS5}),
    ("mask_axis1", mx.sym.SequenceMask(X, L, use_sequence_length=True, axis=1, value=-5),
     {"data": _x(3, 4, 1, 2), "len": LENS3}),
    ("mask_rank2_int", mx.sym.SequenceMask(X, L, use_sequence_length=True, axis=1, value=2),
     {"data": _x(3, 4, dtype=np.int32), "len": LENS3}),
    ("mask_f64", mx.sym.SequenceMask(X, L, use_sequence_length=True, value=1.5),
     {"data": _x(4, 3, 2, dtype=np.float64), "len": LENS3.astype(np.float64)}),
    ("last_none", mx.sym.SequenceLast(X), {"data": _x(4, 3, 2)}),
    ("last_none_axis1", mx.sym.SequenceLast(X, axis=1), {"data": _x(3, 4, 2)}),
    ("last_axis0", mx.sym.SequenceLast(X, L, use_sequence_length=True),
     {"data": _x(6, 5, 2, 3), "len": LENS5}),
    ("last_axis1", mx.sym.SequenceLast(X, L, use_sequence_length=True, axis=1),
     {"data": _x(3, 4), "len": LENS3}),
]


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("name,sym,inputs", CASES, ids=[c[0] for c in CASES])
def test_sequence(name, sym, inputs, dynamic, tmp_path):
    check_onnx(sym, inputs, tmp_path, dynamic=dynamic, rtol=0, atol=0)


DYNAMIC_OTHER = [
    ("reverse", mx.sym.SequenceReverse(X, L, use_sequence_length=True), (4, 3, 2), (7, 5, 2)),
    ("reverse_all", mx.sym.SequenceReverse(X), (4, 3, 2), (6, 2, 2)),
    ("mask", mx.sym.SequenceMask(X, L, use_sequence_length=True, axis=1), (3, 4, 2), (5, 7, 2)),
    ("last", mx.sym.SequenceLast(X, L, use_sequence_length=True), (4, 3, 2), (7, 5, 2)),
]


@pytest.mark.parametrize("name,sym,first,second", DYNAMIC_OTHER,
                         ids=[c[0] for c in DYNAMIC_OTHER])
def test_dynamic_other_shape(name, sym, first, second, tmp_path):
    """A dynamic export run with other time and batch sizes than it was exported with."""
    batch = 0 if name == "mask" else 1
    names = sym.list_arguments()
    shapes = [first, (first[batch],)][:len(names)]
    path = str(tmp_path / "m.onnx")
    mx.onnx.export_model(sym, {}, shapes, np.float32, path, dynamic=True)
    inputs = {"data": _x(*second),
              "len": RNG.integers(-1, second[1 - batch] + 2, second[batch]).astype(np.float32)}
    inputs = {k: v for k, v in inputs.items() if k in names}
    want = run_symgraph(sym, inputs, {})[0]
    np.testing.assert_array_equal(run_onnx(path, inputs)[0], want)


def test_reverse_axis_refused(tmp_path):
    sym = mx.sym.SequenceReverse(X, axis=1)
    with pytest.raises(mx.base.MXNetError, match="axis"):
        mx.onnx.export_model(sym, {}, [(3, 4, 2)], np.float32, str(tmp_path / "m.onnx"))
