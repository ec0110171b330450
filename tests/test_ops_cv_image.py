"""MXNet's OpenCV operators (symgraph/ops/cv_image.py) against MXNet 1.9.1's results
(tests/fixtures/mx_image/, made by its generate.py) and their error cases.

Decoding is exact for baseline, progressive and grayscale JPEGs and for RGBA and gray PNGs;
``_cvimresize`` is exact for interpolations 0, 1, 3, 4 on uint8 and within one level for
bicubic (2): MXNet bundles an older OpenCV whose bicubic weights differ in the last bit.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import DTypeError, FileFormatError, MXNetError, ShapeError

HERE = Path(__file__).resolve().parent / "fixtures" / "mx_image"
EXPECTED = np.load(HERE / "expected.npz")
FILES = ("base.jpg", "prog.jpg", "gray.jpg", "rgba.png", "gray.png", "exif_jfif.jpg",
         "exif_only.jpg")


def _buf(name: str) -> mx.nd.NDArray:
    return mx.nd.array(np.frombuffer((HERE / name).read_bytes(), np.uint8), dtype="uint8")


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("flag,to_rgb", [(0, 1), (1, 0), (1, 1)])
def test_cvimdecode_equals_mxnet(name, flag, to_rgb):
    got = mx.nd._internal._cvimdecode(_buf(name), flag=flag, to_rgb=to_rgb)
    want = EXPECTED[f"decode/{name}/{flag}/{to_rgb}"]
    assert got.dtype == np.uint8 and got.shape == want.shape
    np.testing.assert_array_equal(got.asnumpy(), want)


@pytest.mark.parametrize("name", ["prog.jpg", "rgba.png"])
def test_cvimread_equals_mxnet(name):
    got = mx.nd._internal._cvimread(filename=str(HERE / name))
    np.testing.assert_array_equal(got.asnumpy(), EXPECTED[f"imread/{name}"])


def test_cvimread_missing_file_names_it():
    with pytest.raises(MXNetError, match="couldn't open file") as err:
        mx.nd._internal._cvimread(filename="/no/such/dir/x.jpg")
    assert isinstance(err.value, OSError) and "/no/such/dir/x.jpg" in str(err.value)


@pytest.mark.parametrize("data,message", [(b"", "empty buffer"),
                                          (b"clearly not image content", "Invalid image")])
def test_cvimdecode_refuses_bad_buffers(data, message):
    buf = mx.nd.array(np.frombuffer(data, np.uint8), dtype="uint8")
    with pytest.raises(FileFormatError, match=message):
        mx.nd._internal._cvimdecode(buf)


def test_cvimdecode_needs_a_uint8_buffer():
    with pytest.raises(DTypeError, match="uint8"):
        mx.nd._internal._cvimdecode(mx.nd.array([1.0, 2.0]))


def test_cvimdecode_truncated_jpeg_is_an_error_or_partial_image_not_a_crash():
    data = (HERE / "base.jpg").read_bytes()[:40]
    with pytest.raises(FileFormatError):
        mx.nd._internal._cvimdecode(mx.nd.array(np.frombuffer(data, np.uint8), dtype="uint8"))


@pytest.mark.parametrize("interp", range(5))
@pytest.mark.parametrize("size", [(30, 20), (13, 11), (27, 6)])
def test_cvimresize_uint8_against_mxnet(interp, size):
    base = mx.nd._internal._cvimdecode(_buf("base.jpg"))
    got = mx.nd._internal._cvimresize(base, w=size[0], h=size[1], interp=interp).asnumpy()
    want = EXPECTED[f"resize/u8/{interp}/{size[0]}x{size[1]}"]
    assert got.dtype == np.uint8 and got.shape == want.shape
    diff = np.abs(got.astype(int) - want.astype(int))
    assert diff.max() <= (1 if interp == 2 else 0)
    assert (diff > 0).mean() < 0.1


@pytest.mark.parametrize("interp", range(5))
def test_cvimresize_float32_against_mxnet(interp):
    base = mx.nd._internal._cvimdecode(_buf("base.jpg"))[:6, :8].astype("float32")
    got = mx.nd._internal._cvimresize(base, 5, 9, interp).asnumpy()
    np.testing.assert_allclose(got, EXPECTED[f"resize/f32/{interp}"], rtol=1e-5, atol=1e-4)


def test_cvimresize_out_and_errors():
    src = mx.nd.array(np.arange(24).reshape(2, 4, 3), dtype="uint8")
    out = mx.nd.zeros((4, 8, 3), dtype="uint8")
    mx.nd._internal._cvimresize(src, 8, 4, interp=0, out=out)
    np.testing.assert_array_equal(out.asnumpy(), src.asnumpy().repeat(2, 0).repeat(2, 1))
    with pytest.raises(MXNetError, match="interpolation"):
        mx.nd._internal._cvimresize(src, 8, 4, interp=7)
    with pytest.raises(ShapeError, match=r"\(H, W, C\)"):
        mx.nd._internal._cvimresize(mx.nd.zeros((4, 4)), 2, 2)
    with pytest.raises(MXNetError, match="greater equal"):
        mx.nd._internal._cvimresize(src, 0, 4)


@pytest.mark.parametrize("btype", range(5))
def test_cvcopymakeborder_against_mxnet(btype):
    base = mx.nd._internal._cvimdecode(_buf("base.jpg"))[:8, :9]
    got = mx.nd._internal._cvcopyMakeBorder(base, 2, 3, 4, 1, type=btype, values=(10, 200, 30))
    np.testing.assert_array_equal(got.asnumpy(), EXPECTED[f"border/{btype}"])


def test_cvcopymakeborder_single_value_and_numpy_reflection():
    base = mx.nd._internal._cvimdecode(_buf("base.jpg"))[:5, :5]
    got = mx.nd._internal._cvcopyMakeBorder(base, 1, 1, 2, 2, value=77)
    np.testing.assert_array_equal(got.asnumpy(), EXPECTED["border/value"])
    src = np.arange(3 * 4, dtype=np.float32).reshape(3, 4, 1)
    pads = ((1, 1), (1, 1), (0, 0))
    for btype, mode in ((1, "edge"), (2, "symmetric"), (3, "wrap"), (4, "reflect")):
        got = mx.nd._internal._cvcopyMakeBorder(mx.nd.array(src), 1, 1, 1, 1, type=btype)
        np.testing.assert_array_equal(got.asnumpy(), np.pad(src, pads, mode=mode))


def test_shape_rules_and_bound_graphs():
    data = mx.sym.Variable("d")
    resized = mx.sym._internal._cvimresize(data, w=5, h=4)
    assert resized.infer_shape(d=(9, 7, 3))[1] == [(4, 5, 3)]
    border = mx.sym._internal._cvcopyMakeBorder(data, top=1, bot=2, left=3, right=4)
    assert border.infer_shape(d=(9, 7, 1))[1] == [(12, 14, 1)]
    exe_args = {"d": mx.nd.zeros((9, 7, 3), dtype="uint8")}
    with pytest.raises(ShapeError, match="_cvimresize"):
        resized.bind(mx.cpu(), exe_args).forward()


def test_npi_aliases_are_the_same_ops():
    from symgraph.ops.base import get_op
    for name in ("cvimdecode", "cvimread", "cvimresize"):
        assert get_op(f"_npi_{name}") is get_op(f"_{name}")


def test_legacy_imdecode_decodes_bgr_chw_and_subtracts_mean():
    from symgraph.ndarray.register import invoke
    data = (HERE / "base.jpg").read_bytes().decode("latin-1")
    got = invoke("_imdecode", (), {"str_img": data, "c": 3})
    bgr = EXPECTED["decode/base.jpg/1/0"].transpose(2, 0, 1).astype(np.float32)
    np.testing.assert_array_equal(got.asnumpy(), bgr)
    mean = mx.nd.ones(bgr.shape)
    clipped = invoke("_imdecode", (mean,), {"str_img": data, "_has_mean": True})
    np.testing.assert_array_equal(clipped.asnumpy(), bgr - 1)
    with pytest.raises(FileFormatError):
        mx.nd.imdecode(b"")  # MXNet 1.9.1's Python 3 nd.imdecode fails too
