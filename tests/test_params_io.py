"""MXNet ``.params`` files: reading MXNet's fixtures, byte-identical writing, errors.

The fixtures in tests/fixtures/params/ were written by MXNet 1.9.1 with generate.py
(v1.params and legacy.params are hand-built there and checked to load in MXNet).
"""
from __future__ import annotations

import os
import pathlib
import struct

import numpy as np
import pytest
import torch

from symgraph import ndarray as nd
from symgraph import util
from symgraph.base import FLAG_TO_NAME, NAME_TO_TORCH, MXNetError
from symgraph.ndarray import io as ndio

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "params"


@pytest.fixture(scope="module")
def expected() -> dict[str, np.ndarray]:
    with np.load(FIXTURES / "expected.npz", allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def group(expected: dict, prefix: str) -> dict[str, np.ndarray]:
    """The expected arrays of one fixture file, in file order."""
    return {k.split("__", 1)[1]: v for k, v in expected.items() if k.startswith(prefix + "__")}


def to_nd(arrays: dict[str, np.ndarray]) -> dict[str, nd.NDArray]:
    return {k: nd.array(v, dtype=v.dtype) for k, v in arrays.items()}


def assert_same(got: nd.NDArray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype.type
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.asnumpy(), want)


# ------------------------------------------------------------------ reading MXNet's files
@pytest.mark.parametrize("name", ["dense", "npshape", "v1", "legacy"])
def test_load_list_fixture(name, expected):
    with util.np_shape(name == "npshape"):  # saved under npx.set_np(): MXNet loads it so
        loaded = nd.load(FIXTURES / f"{name}.params")
    want = list(group(expected, name).values())
    assert isinstance(loaded, list) and len(loaded) == len(want)
    for got, w in zip(loaded, want):
        assert_same(got, w)
        assert got.context == nd.array([0]).context


def test_load_named_fixture_keeps_order(expected):
    loaded = nd.load(str(FIXTURES / "named.params"))
    want = group(expected, "named")
    assert isinstance(loaded, dict)
    assert list(loaded) == list(want)
    for key, w in want.items():
        assert_same(loaded[key], w)


def test_load_frombuffer_matches_load():
    raw = (FIXTURES / "named.params").read_bytes()
    from_buf = nd.load_frombuffer(raw)
    from_file = nd.load(FIXTURES / "named.params")
    assert list(from_buf) == list(from_file)
    for key in from_file:
        np.testing.assert_array_equal(from_buf[key].asnumpy(), from_file[key].asnumpy())


def test_sparse_fixture_loads_and_saves_byte_identical(expected, tmp_path):
    loaded = nd.load(FIXTURES / "sparse.params")
    want = group(expected, "sparse")
    assert list(loaded) == list(want)
    for name, arr in loaded.items():
        assert arr.stype == ("row_sparse" if name.startswith("rsp") else "csr"), name
        assert arr.dtype == want[name].dtype.type
        np.testing.assert_array_equal(arr.asnumpy(), want[name])
    nd.save(tmp_path / "again.params", loaded)
    assert (tmp_path / "again.params").read_bytes() == (FIXTURES / "sparse.params").read_bytes()


def test_corrupt_sparse_record_is_refused_before_use(tmp_path):
    raw = bytearray((FIXTURES / "sparse.params").read_bytes())
    rsp = nd.load(FIXTURES / "sparse.params")["rsp_f32"]
    indices = struct.pack("<3q", *rsp.indices.asnumpy().tolist())
    at = bytes(raw).index(indices)
    raw[at:at + 8] = struct.pack("<q", 99)  # a row index past the 6 rows
    with pytest.raises(ndio.ParamsFormatError, match="out of range"):
        nd.load_frombuffer(bytes(raw))


# ------------------------------------------------------------------ writing like MXNet
@pytest.mark.parametrize("name", ["dense", "named", "npshape"])
def test_save_is_byte_identical_to_mxnet(name, expected, tmp_path):
    arrays = to_nd(group(expected, name))
    data = arrays if name == "named" else list(arrays.values())
    out = tmp_path / f"{name}.params"
    with util.np_shape(name == "npshape"):
        nd.save(out, data)
    assert out.read_bytes() == (FIXTURES / f"{name}.params").read_bytes()


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "int64", "uint8",
                                   "int8", "bool", "int16", "bfloat16"])
@pytest.mark.parametrize("shape", [(3,), (2, 3, 4), (1, 1), (), (0, 4)])
def test_round_trip(dtype, shape, tmp_path):
    gen = torch.Generator().manual_seed(0)
    t = (torch.randn(shape, generator=gen) * 50).to(getattr(torch, dtype))
    path = tmp_path / "x.params"
    nd.save(str(path), [nd.NDArray(t)])
    (back,) = nd.load(path)
    assert back._t.dtype == t.dtype and back.shape == shape
    assert torch.equal(back._t, t)


def test_round_trip_single_array_and_empty_containers(tmp_path):
    path = tmp_path / "x.params"
    nd.save(path, nd.array([1, 2]))
    (only,) = nd.load(path)
    np.testing.assert_array_equal(only.asnumpy(), [1, 2])
    for empty in ([], {}):  # MXNet writes no names for an empty dict, so it loads as []
        nd.save(path, empty)
        assert nd.load(path) == []


def test_save_of_non_contiguous_view(tmp_path):
    base = nd.array(np.arange(12).reshape(3, 4))
    view = nd.NDArray(base._t.t())
    nd.save(tmp_path / "v.params", {"v": view})
    np.testing.assert_array_equal(nd.load(tmp_path / "v.params")["v"].asnumpy(),
                                  np.arange(12).reshape(3, 4).T)


@pytest.mark.parametrize("bad", [[1, 2], {"a": np.zeros(2)}, {1: nd.zeros(2)}, "x", None])
def test_save_rejects_bad_data(bad, tmp_path):
    with pytest.raises(ValueError, match="data needs to either be"):
        nd.save(tmp_path / "x.params", bad)
    assert not list(tmp_path.iterdir())


# ------------------------------------------------------------------ atomicity
def test_failed_save_keeps_previous_file(tmp_path, monkeypatch):
    path = tmp_path / "model.params"
    nd.save(path, {"w": nd.ones((2, 2))})
    before = path.read_bytes()
    calls = []

    def failing_payload(t):
        calls.append(t)
        if len(calls) == 2:
            raise OSError("disk full")
        return real_payload(t)

    real_payload = ndio._array_payload
    monkeypatch.setattr(ndio, "_array_payload", failing_payload)
    with pytest.raises(OSError, match="disk full"):
        nd.save(path, {"a": nd.zeros((3,)), "b": nd.zeros((4,))})
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["model.params"]  # no temp file left


def test_failed_rename_leaves_no_temp_file(tmp_path, monkeypatch):
    def failing_replace(src, dst):
        raise OSError("rename failed")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="rename failed"):
        nd.save(tmp_path / "m.params", [nd.zeros(2)])
    assert not list(tmp_path.iterdir())


# ------------------------------------------------------------------ corrupt files
def _file(tmp_path, raw: bytes) -> pathlib.Path:
    path = tmp_path / "bad.params"
    path.write_bytes(raw)
    return path


def _good_bytes() -> bytes:
    return (FIXTURES / "named.params").read_bytes()


def _patched(offset: int, fmt: str, value) -> bytes:
    raw = bytearray(_good_bytes())
    struct.pack_into("<" + fmt, raw, offset, value)
    return bytes(raw)


# (description, file bytes, message pattern). Offsets: 24 = first array's magic,
# 28 = its stype, 32 = its ndim, 36 = its first dim.
CORRUPT = [
    ("empty file", b"", "truncated file: reading the header"),
    ("wrong header", b"\x00" * 24, "not an MXNet NDArray file"),
    ("truncated data", _good_bytes()[:80], "truncated file: reading array 0 data"),
    ("truncated names", _good_bytes()[:-3], "truncated file: reading name 3"),
    ("huge array count", struct.pack("<QQQ", 0x112, 0, 2**40), "claims 1099511627776 arrays"),
    ("bad magic", _patched(24, "I", 0xDEADBEEF), "unknown magic number 0xdeadbeef"),
    ("unknown stype", _patched(28, "i", 7), "unknown storage type 7"),
    ("sparse stype on a dense record", _patched(28, "i", 2), "array 0"),
    ("bad ndim", _patched(32, "i", 1000), "invalid ndim 1000"),
    ("negative dim", _patched(36, "q", -5), "invalid shape"),
    ("huge dim", _patched(36, "q", 2**40), "truncated file: reading array 0 data"),
]


@pytest.mark.parametrize("desc,raw,pattern", CORRUPT, ids=[c[0] for c in CORRUPT])
def test_corrupt_file_errors(desc, raw, pattern, tmp_path):
    path = _file(tmp_path, raw)
    with pytest.raises(ndio.ParamsFormatError, match=pattern) as info:
        nd.load(path)
    assert str(path) in str(info.value)
    assert isinstance(info.value, MXNetError)


def test_bad_type_flag_and_name_count(tmp_path):
    record = struct.pack("<IiiqiiI", 0xF993FAC9, 0, 1, 1, 1, 0, 99) + b"\0" * 4
    raw = struct.pack("<QQQ", 0x112, 0, 1) + record + struct.pack("<Q", 0)
    with pytest.raises(ndio.ParamsFormatError, match="unsupported type flag 99"):
        nd.load(_file(tmp_path, raw))
    good = struct.pack("<IiiqiiI", 0xF993FAC9, 0, 1, 1, 1, 0, 0) + b"\0" * 4
    raw = struct.pack("<QQQ", 0x112, 0, 1) + good + struct.pack("<Q", 2)
    with pytest.raises(ndio.ParamsFormatError, match="1 arrays but 2 names"):
        nd.load(_file(tmp_path, raw))


def test_legacy_mode_scalar_and_unknown_shape(tmp_path):
    # oracle: MXNet 1.9.1 in legacy mode saves nd.array(3.0) as a V2 record with ndim 0
    # followed by its data (and then cannot load it); we read it as the 0-d array it is.
    record = struct.pack("<IiiiiI", 0xF993FAC9, 0, 0, 1, 0, 0) + struct.pack("<f", 3.0)
    raw = struct.pack("<QQQ", 0x112, 0, 1) + record + struct.pack("<Q", 0)
    (scalar,) = nd.load(_file(tmp_path, raw))
    assert scalar.shape == () and scalar.asscalar() == 3.0
    unknown = struct.pack("<Iii", 0xF993FACA, 0, -1)  # an uninitialised NDArray
    raw = struct.pack("<QQQ", 0x112, 0, 1) + unknown + struct.pack("<Q", 0)
    (empty,) = nd.load(_file(tmp_path, raw))
    assert empty.shape == (0,)


def test_load_never_unpickles(tmp_path):
    import pickle

    path = _file(tmp_path, pickle.dumps({"w": np.zeros(2)}))
    with pytest.raises(ndio.ParamsFormatError, match="not an MXNet NDArray file"):
        nd.load(path)


def test_path_types(tmp_path):
    with pytest.raises(TypeError, match="fname"):
        nd.save(123, [nd.zeros(1)])
    with pytest.raises(FileNotFoundError):
        nd.load(tmp_path / "missing.params")


_ZERO_SIZE_SHAPES = [(2, 0, 1), (0,), (0, 4), (3, 0, 0, 0), (2, 1), (0, 5, 0)]


def _record_magics(path) -> list[int]:
    """The magic of every array record of a dense ``.params`` file, in order."""
    buf = pathlib.Path(path).read_bytes()
    (count,) = struct.unpack_from("<Q", buf, 16)
    magics, pos = [], 24
    for _ in range(count):
        magic, _stype, ndim = struct.unpack_from("<Iii", buf, pos)
        shape = struct.unpack_from(f"<{ndim}q", buf, pos + 12)
        flag = struct.unpack_from("<i", buf, pos + 12 + 8 * ndim + 8)[0]
        itemsize = NAME_TO_TORCH[FLAG_TO_NAME[flag]].itemsize
        pos += 12 + 8 * ndim + 12 + itemsize * int(np.prod(shape))
        magics.append(magic)
    return magics


@pytest.mark.parametrize("save_np,load_np", [(False, False), (True, False), (False, True),
                                             (True, True)])
def test_save_load_scalar_zero_size_ndarrays(tmp_path, save_np, load_np):
    # Port of MXNet's test of the same name. oracle: MXNet 1.9.1 writes V3 records
    # (0xF993FACA) under np_shape and V2 otherwise; a V3 file with zero-size arrays does not
    # load in legacy mode, nor a V2 file whose shapes hold a 0 under np_shape (MXNetError).
    shapes = _ZERO_SIZE_SHAPES + ([(), ()] if save_np else [])
    rng = np.random.default_rng(0)
    path = tmp_path / "dataset"
    with util.np_shape(save_np):
        arrays = [nd.array(rng.integers(0, 10, size=s)) for s in shapes]
        nd.save(path, arrays)
    assert set(_record_magics(path)) == {ndio.V3_MAGIC if save_np else ndio.V2_MAGIC}
    with util.np_shape(load_np):
        if save_np != load_np:
            with pytest.raises(MXNetError, match="mx.np_shape"):
                nd.load(path)
            return
        loaded = nd.load(path)
    assert [a.shape for a in loaded] == shapes
    for got, want in zip(loaded, arrays):
        np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())


def test_legacy_mode_scalar_round_trip(tmp_path):
    # Legacy shapes cannot express a 0-d array (MXNet writes ndim 0 and cannot read it
    # back), so a 0-d array keeps a V3 record in legacy mode and loads back in legacy mode;
    # V3 records without a zero-size shape load in legacy mode too.
    nd.save(tmp_path / "s", [nd.array(3.0), nd.array([1.0, 2.0])])
    assert _record_magics(tmp_path / "s") == [ndio.V3_MAGIC, ndio.V2_MAGIC]
    scalar, vector = nd.load(tmp_path / "s")
    assert scalar.shape == () and scalar.asscalar() == 3.0 and vector.shape == (2,)
