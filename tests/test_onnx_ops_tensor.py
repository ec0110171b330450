"""ONNX export of shape, slicing, creation, indexing, product, normalisation and sort ops:
each case exported in every tested opset and run in ONNX Runtime against symgraph."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as mx
import symgraph.onnx.ops.index  # registers the translations (until ops/__init__ does)
import symgraph.onnx.ops.tensor
from tests.onnx_check import check_onnx, run_onnx, run_symgraph

S = mx.sym
x, y = S.Variable("x"), S.Variable("y")
R = np.random.RandomState(7)


def f(*shape):
    return R.uniform(-1, 1, shape).astype(np.float32)


def ints(high, *shape, dtype=np.float32):
    return R.randint(0, high, shape).astype(dtype)


# (id, symbol, inputs, dynamic)
CASES = [
    ("reshape_0_-1", S.Reshape(x, shape=(0, -1)), {"x": f(2, 3, 4)}, True),
    ("reshape_-2", S.Reshape(x, shape=(0, 4, -2)), {"x": f(3, 4, 5)}, False),
    ("reshape_-3", S.Reshape(x, shape=(-3, 5)), {"x": f(3, 4, 5)}, True),
    ("reshape_-3_-2", S.Reshape(x, shape=(-3, -2)), {"x": f(3, 4, 5, 2)}, True),
    ("reshape_-4", S.Reshape(x, shape=(-4, 1, -1, -2)), {"x": f(3, 4, 5)}, True),
    ("reshape_-4b", S.Reshape(x, shape=(0, -4, 2, -1, 0)), {"x": f(3, 4, 5)}, True),
    ("reshape_rev", S.Reshape(x, shape=(-1, 0), reverse=True), {"x": f(6, 4)}, True),
    ("reshape_rev2", S.Reshape(x, shape=(0, -1, 0), reverse=True), {"x": f(2, 3, 4, 5)}, True),
    ("reshape_plain", S.Reshape(x, shape=(4, 6)), {"x": f(2, 3, 4)}, True),
    ("reshape_target", S.Reshape(x, target_shape=(0, 12)), {"x": f(2, 3, 4)}, False),
    ("reshape_like", S.reshape_like(x, y), {"x": f(6, 2), "y": f(3, 4)}, True),
    ("reshape_like_rng", S.reshape_like(x, y, lhs_begin=0, lhs_end=1, rhs_begin=0,
                                        rhs_end=-2), {"x": f(6, 2, 3), "y": f(2, 3, 4, 5)},
     True),
    ("transpose", S.transpose(x), {"x": f(2, 3, 4)}, False),
    ("transpose_axes", S.transpose(x, axes=(1, 0, 2)), {"x": f(2, 3, 4)}, False),
    ("swapaxis", S.SwapAxis(x, dim1=0, dim2=2), {"x": f(2, 3, 4)}, False),
    ("expand_dims", S.expand_dims(x, axis=-1), {"x": f(2, 3)}, False),
    ("squeeze", S.squeeze(x), {"x": f(1, 3, 1, 2)}, False),
    ("squeeze_dyn", S.squeeze(x), {"x": f(1, 3, 1, 2)}, True),
    ("crop_hw", S.Crop(x, num_args=1, h_w=(2, 2), offset=(1, 1)), {"x": f(1, 2, 4, 5)}, False),
    ("crop_like", S.Crop(x, y, num_args=2, center_crop=True), {"x": f(1, 2, 5, 5),
                                                               "y": f(1, 2, 3, 2)}, False),
    ("squeeze_axis", S.squeeze(x, axis=(0, 2)), {"x": f(1, 3, 1)}, True),
    ("squeeze_all", S.squeeze(x), {"x": f(1, 1)}, False),
    ("split", S.SliceChannel(x, num_outputs=3, axis=1), {"x": f(2, 6, 2)}, True),
    ("split_squeeze", S.SliceChannel(x, num_outputs=3, axis=-1, squeeze_axis=True),
     {"x": f(2, 4, 3)}, False),
    ("split_v2_sections", S._internal._split_v2(x, sections=3, indices=(), axis=1),
     {"x": f(2, 7, 3)}, True),
    ("split_v2_indices", S._internal._split_v2(x, indices=(0, 1, 4), axis=0),
     {"x": f(5, 3)}, True),
    ("slice", S.slice(x, begin=(None, 1), end=(None, None), step=(None, 2)),
     {"x": f(2, 5)}, True),
    ("slice_neg", S.slice(x, begin=(1, None), end=(None, 0), step=(1, -2)),
     {"x": f(3, 6)}, True),
    ("slice_neg2", S.slice(x, begin=(-1, -2), end=(0, None), step=(-1, -1)),
     {"x": f(3, 6)}, False),
    ("slice_axis", S.slice_axis(x, axis=1, begin=-3, end=None), {"x": f(2, 5)}, True),
    ("slice_axis2", S.slice_axis(x, axis=0, begin=1, end=3), {"x": f(4, 5)}, False),
    ("slice_like", S.slice_like(x, y, axes=(1,)), {"x": f(3, 4), "y": f(1, 2)}, True),
    ("slice_like_all", S.slice_like(x, y), {"x": f(3, 4), "y": f(2, 2)}, False),
    ("tile", S.tile(x, reps=(2, 1, 3)), {"x": f(4, 5)}, False),
    ("tile_short", S.tile(x, reps=(2,)), {"x": f(2, 3)}, True),
    ("repeat_none", S.repeat(x, repeats=2), {"x": f(2, 3)}, True),
    ("repeat_axis", S.repeat(x, repeats=3, axis=1), {"x": f(2, 3, 2)}, True),
    ("reverse", S.reverse(x, axis=(0, 2)), {"x": f(2, 3, 4)}, True),
    ("reverse_twice", S.reverse(x, axis=(1, 1)), {"x": f(2, 3)}, False),
    ("stack", S.stack(x, y, axis=1), {"x": f(2, 3), "y": f(2, 3)}, True),
    ("broadcast_to", S.broadcast_to(x, shape=(0, 3, 4)), {"x": f(2, 1, 4)}, True),
    ("broadcast_axis", S.broadcast_axis(x, axis=(0, 2), size=(3, 2)), {"x": f(1, 3, 1)},
     False),
    ("broadcast_like", S.broadcast_like(x, y), {"x": f(1, 3), "y": f(4, 3)}, True),
    ("broadcast_like_axes", S.broadcast_like(x, y, lhs_axes=(0,), rhs_axes=(2,)),
     {"x": f(1, 3), "y": f(4, 3, 5)}, True),
    ("zeros_like", S.zeros_like(x) + x, {"x": f(2, 3)}, True),
    ("ones_like", S.ones_like(x), {"x": f(2, 3)}, True),
    ("shape_array", S.shape_array(x), {"x": f(2, 3)}, True),
    ("size_array", S.size_array(x), {"x": f(2, 3)}, True),
    ("arange", S.arange(1, 7, step=2, repeat=2) + 0, {}, False),
    ("arange_stop", S.broadcast_add(x, S.arange(3)), {"x": f(2, 3)}, False),
    ("zeros", S.broadcast_add(x, S.zeros((2, 3))), {"x": f(2, 3)}, True),
    ("full", S.broadcast_add(x, S.full((1, 3), 2.5)), {"x": f(2, 3)}, True),
    ("arange_like", S.contrib.arange_like(x, start=1, step=2, repeat=2), {"x": f(2, 3)},
     True),
    ("arange_like_axis", S.contrib.arange_like(x, axis=-2, step=0.5), {"x": f(2, 5, 3)},
     True),
    ("pad_constant", S.Pad(x, mode="constant", pad_width=(0, 0, 0, 0, 1, 2, 2, 1),
                           constant_value=1.5), {"x": f(1, 2, 3, 3)}, True),
    ("pad_edge", S.Pad(x, mode="edge", pad_width=(0, 0, 0, 0, 1, 2, 2, 1)),
     {"x": f(1, 2, 3, 3)}, False),
    ("pad_reflect", S.Pad(x, mode="reflect", pad_width=(0, 0, 0, 0, 1, 2, 2, 1)),
     {"x": f(1, 2, 4, 4)}, False),
    ("depth_to_space", S.depth_to_space(x, block_size=2), {"x": f(1, 8, 2, 3)}, True),
    ("space_to_depth", S.space_to_depth(x, block_size=2), {"x": f(1, 2, 4, 6)}, True),
    ("diag_1d", S.diag(x, k=1), {"x": f(4)}, True),
    ("diag_1d_neg", S.diag(x, k=-2), {"x": f(3)}, False),
    ("diag_2d", S.diag(x, k=1), {"x": f(3, 5)}, True),
    ("diag_2d_neg", S.diag(x, k=-1), {"x": f(4, 3)}, False),
    ("diag_3d", S.diag(x, k=1, axis1=2, axis2=0), {"x": f(2, 3, 4)}, True),
    ("diag_3d_neg", S.diag(x, k=-1, axis1=1, axis2=2), {"x": f(2, 3, 4)}, False),
    # indexing
    ("take_clip", S.take(x, y), {"x": f(3, 2), "y": ints(6, 4) - 1}, True),
    ("take_wrap", S.take(x, y, axis=-1, mode="wrap"), {"x": f(4, 3), "y": ints(7, 2, 2) - 3},
     True),
    ("pick", S.pick(x, y, axis=1), {"x": f(3, 4), "y": ints(6, 3) - 1}, True),
    ("pick_keep", S.pick(x, y, axis=0, keepdims=True, mode="wrap"),
     {"x": f(3, 4), "y": ints(7, 4)}, True),
    ("pick_3d", S.pick(x, y, axis=1), {"x": f(2, 3, 4), "y": ints(3, 2, 1, 4)}, False),
    ("batch_take", S.batch_take(x, y), {"x": f(4, 3), "y": ints(5, 4)}, True),
    ("gather_nd", S.gather_nd(x, y), {"x": f(3, 4, 2), "y": ints(3, 2, 5)}, True),
    ("gather_nd_full", S.gather_nd(x, y), {"x": f(3, 4), "y": np.array(
        [[0, 2, -1], [1, -1, 3]], np.float32)}, False),
    ("one_hot", S.one_hot(x, depth=4, on_value=2, off_value=-1),
     {"x": np.array([[0, 3], [-1, 5]], np.float32)}, True),
    ("one_hot_int", S.one_hot(x, depth=3, dtype="int32"), {"x": np.array([1, 2, 0], np.int32)},
     False),
    # products
    ("dot", S.dot(x, y), {"x": f(3, 4), "y": f(4, 5)}, True),
    ("dot_ta", S.dot(x, y, transpose_a=True), {"x": f(4, 3), "y": f(4, 5)}, False),
    ("dot_tb", S.dot(x, y, transpose_a=True, transpose_b=True), {"x": f(4, 3), "y": f(5, 4)},
     False),
    ("dot_nd", S.dot(x, y), {"x": f(2, 3, 4), "y": f(4, 2, 5)}, True),
    ("dot_nd_t", S.dot(x, y, transpose_a=True), {"x": f(4, 3, 2), "y": f(4, 5)}, True),
    ("dot_1d", S.dot(x, y), {"x": f(4), "y": f(4)}, False),
    ("dot_1d2d", S.dot(x, y), {"x": f(4), "y": f(4, 3)}, True),
    ("batch_dot", S.batch_dot(x, y), {"x": f(2, 3, 4), "y": f(2, 4, 5)}, True),
    ("batch_dot_t", S.batch_dot(x, y, transpose_a=True, transpose_b=True),
     {"x": f(2, 4, 3), "y": f(2, 5, 4)}, False),
    ("gemm2", S.linalg.gemm2(x, y, transpose_b=True, alpha=2.0),
     {"x": f(2, 3, 4), "y": f(2, 5, 4)}, False),
    # normalisation
    ("l2_instance", S.L2Normalization(x), {"x": f(3, 5)}, True),
    ("l2_channel", S.L2Normalization(x, mode="channel"), {"x": f(2, 3, 4)}, True),
    ("l2_spatial", S.L2Normalization(x, mode="spatial", eps=0.1), {"x": f(2, 3, 2, 2)}, True),
    ("layer_norm", S.LayerNorm(x, y, S.Variable("z")), {"x": f(2, 3, 4), "y": f(4),
                                                       "z": f(4)}, True),
    ("layer_norm_axis", S.LayerNorm(x, y, S.Variable("z"), axis=1, eps=1e-3),
     {"x": f(2, 3, 4), "y": f(3), "z": f(3)}, True),
    ("layer_norm_mv", S.Group(list(S.LayerNorm(x, y, S.Variable("z"), output_mean_var=True))),
     {"x": f(2, 3, 4), "y": f(4), "z": f(4)}, False),
    ("instance_norm", S.InstanceNorm(x, y, S.Variable("z"), eps=1e-3),
     {"x": f(2, 3, 4, 5), "y": f(3), "z": f(3)}, True),
    ("group_norm", S.GroupNorm(x, y, S.Variable("z"), num_groups=2),
     {"x": f(2, 4, 3), "y": f(2), "z": f(2)}, True),
    ("group_norm_mv", S.Group(list(S.GroupNorm(x, y, S.Variable("z"), num_groups=3, eps=0.1,
                                               output_mean_var=True))),
     {"x": f(2, 6, 2, 2), "y": f(3), "z": f(3)}, True),
    # sorting (ties included: both keep the lower index first)
    ("topk_value", S.topk(x, k=2, ret_typ="value"), {"x": f(3, 5)}, True),
    ("topk_indices", S.topk(x, k=2), {"x": np.array([[1, 3, 3, 0]], np.float32)}, True),
    ("topk_both", S.Group(list(S.topk(x, axis=1, k=3, ret_typ="both", is_ascend=True,
                                      dtype="int32"))), {"x": f(2, 4, 3)}, True),
    ("topk_none", S.topk(x, axis=None, k=5, ret_typ="value"), {"x": f(3, 4)}, True),
    ("topk_mask", S.topk(x, axis=1, k=2, ret_typ="mask"), {"x": f(2, 5, 2)}, True),
    ("topk_all", S.topk(x, axis=0, k=0, dtype="int64"), {"x": f(4, 3)}, True),
    ("sort", S.sort(x), {"x": f(3, 5)}, True),
    ("sort_desc", S.sort(x, axis=1, is_ascend=False), {"x": f(2, 3, 4)}, True),
    ("sort_none", S.sort(x, axis=None), {"x": f(2, 3)}, True),
    ("argsort", S.argsort(x), {"x": np.array([[2, 1, 2, 0, 1]], np.float32)}, True),
    ("argsort_axis", S.argsort(x, axis=0, is_ascend=False, dtype="int32"), {"x": f(4, 3)},
     True),
]


@pytest.mark.parametrize("sym,inputs,dynamic", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_export(sym, inputs, dynamic, tmp_path):
    check_onnx(sym, inputs, tmp_path, dynamic=dynamic)


# exported with one batch size, run with another: (id, symbol, data shape, other batch)
DYNAMIC = [
    ("reshape_codes", S.Reshape(x, shape=(0, -3, -2)), (2, 3, 4, 5), 5),
    ("reshape_-4", S.Reshape(x, shape=(-4, 1, -1, -2)), (2, 3, 4), 4),
    ("reshape_rev", S.Reshape(x, shape=(-1, 0), reverse=True), (2, 3, 4), 3),
    ("argsort", S.argsort(x, axis=0), (3, 4), 6),
    ("topk_all", S.topk(x, axis=0, k=0, ret_typ="value"), (3, 4), 5),
    ("topk_mask", S.topk(x, axis=1, k=2, ret_typ="mask"), (2, 5), 4),
    ("split_v2", S.Group(list(S._internal._split_v2(x, sections=3, indices=(), axis=0))),
     (4, 2), 7),
    ("repeat", S.repeat(x, repeats=2, axis=1), (2, 3), 5),
    ("dot_nd", S.dot(x, S.Variable("w")), (2, 3, 4), 5),
    ("take", S.take(S.Variable("w"), x), (2, 3), 4),
    ("diag", S.diag(x, k=1), (3, 5), 2),
    ("diag_1d", S.diag(x, k=-1), (3,), 5),
    ("arange_like", S.contrib.arange_like(x, axis=0, repeat=2), (3, 2), 5),
    ("squeeze", S.squeeze(x), (2, 1, 3), 4),
    ("split", S.Group(list(S.SliceChannel(x, num_outputs=2, axis=1, squeeze_axis=True))),
     (3, 2), 1),
    ("slice", S.slice(x, begin=(None, 1), end=(-1, None), step=(2, -1)), (5, 3), 8),
    ("broadcast_like", S.broadcast_like(x, S.zeros_like(x), lhs_axes=(1,), rhs_axes=(0,)),
     (3, 1), 5),
]


@pytest.mark.parametrize("sym,shape,batch", [c[1:] for c in DYNAMIC],
                         ids=[c[0] for c in DYNAMIC])
def test_dynamic_batch(sym, shape, batch, tmp_path):
    """A dynamic export runs a batch size other than the one it was exported with."""
    params = {}
    if "w" in sym.list_inputs():
        params["w"] = f(4, 3) if "dot" in sym.list_outputs()[0] else f(5, 2)
    for opset in (12, 18, 21):
        path = str(tmp_path / f"m{opset}.onnx")
        mx.onnx.export_model(sym, {k: mx.nd.array(v) for k, v in params.items()}, [shape],
                             [np.float32], path, opset_version=opset, dynamic=True)
        other = {"x": f(batch, *shape[1:])}
        if "take" in sym.list_outputs()[0]:
            other = {"x": ints(7, batch, *shape[1:]) - 1}
        got = run_onnx(path, other)
        want = run_symgraph(sym, {**other, **params}, {})
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape, (opset, g.shape, w.shape)
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


# attribute combinations the export refuses rather than approximate
REFUSED = [
    ("dot_csr", S.dot(x, y, forward_stype="csr"), {"x": (2, 3), "y": (3, 2)}),
]


def test_take_raise_gathers_in_range_indices(tmp_path):
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    idx = np.array([3, 0, 2, 2], np.float32)
    check_onnx(S.take(x, y, mode="raise", axis=0), {"x": data, "y": idx}, tmp_path)


@pytest.mark.parametrize("sym,shapes", [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_refused(sym, shapes, tmp_path):
    from symgraph.export.graph import ExportError
    names = [n for n in sym.list_inputs() if n in shapes]
    with pytest.raises(ExportError, match="cannot export"):
        mx.onnx.export_model(sym, {}, [shapes[n] for n in names], [np.float32] * len(names),
                             str(tmp_path / "m.onnx"), opset_version=13)


@pytest.mark.parametrize(("ta", "tb"), [(False, False), (True, True)])
def test_batch_dot_n_d(ta, tb, tmp_path):
    """MXNet's batch_dot takes N-D inputs: every dim but the last two is a batch dim."""
    rng = np.random.RandomState(3)
    a = rng.rand(2, 3, 4, 5, 6).astype(np.float32)
    b = rng.rand(2, 3, 4, 6, 5).astype(np.float32)
    check_onnx(S.batch_dot(x, y, transpose_a=ta, transpose_b=tb), {"x": a, "y": b}, tmp_path)
