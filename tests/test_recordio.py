"""mx.recordio against MXNet 1.9.1's bytes (tests/fixtures/recordio, made by MXNet)."""
import json
import os
import pickle

import numpy as np
import pytest

import symgraph as mx
from symgraph.recordio import RecordIOError

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "recordio")
with open(os.path.join(FIX, "packs.json")) as _f:
    SPEC = json.load(_f)
PAYLOADS = [bytes.fromhex(p) for p in SPEC["payloads"]]


def _read_all(path):
    r = mx.recordio.MXRecordIO(path, "r")
    out = []
    while (rec := r.read()) is not None:
        out.append(rec)
    r.close()
    return out


def test_reads_mxnet_file():
    assert _read_all(os.path.join(FIX, "mx_plain.rec")) == PAYLOADS


def test_writes_mxnet_bytes(tmp_path):
    path = str(tmp_path / "a.rec")
    w = mx.recordio.MXRecordIO(path, "w")
    for p in PAYLOADS:
        w.write(p)
    assert not os.path.exists(path)  # atomic: appears on close
    w.close()
    with open(path, "rb") as f, open(os.path.join(FIX, "mx_plain.rec"), "rb") as g:
        assert f.read() == g.read()
    assert os.listdir(tmp_path) == ["a.rec"]


def test_pack_matches_mxnet():
    for item in SPEC["packs"]:
        flag, label, id_, id2 = item["header"]
        header = mx.recordio.IRHeader(flag, label if isinstance(label, list) else label,
                                      id_, id2)
        packed = mx.recordio.pack(header, bytes.fromhex(item["payload"]))
        assert packed.hex() == item["packed"]
        head, s = mx.recordio.unpack(packed)
        assert s == bytes.fromhex(item["payload"])
        np.testing.assert_array_equal(head.label, np.asarray(label, np.float32))


def test_indexed_both_ways(tmp_path):
    r = mx.recordio.MXIndexedRecordIO(os.path.join(FIX, "mx_indexed.idx"),
                                      os.path.join(FIX, "mx_indexed.rec"), "r")
    assert r.keys == [10, 11, 12]
    head, s = mx.recordio.unpack(r.read_idx(11))
    assert head.flag == 3 and head.label.tolist() == [1.0, 2.0, 3.0] and s == b"abc"
    head, s = mx.recordio.unpack(r.read_idx(12))
    assert head == mx.recordio.IRHeader(0, 2.0, 2 ** 40, 3) and s == b""
    idx, rec = str(tmp_path / "b.idx"), str(tmp_path / "b.rec")
    w = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    for key in r.keys:
        w.write_idx(key, r.read_idx(key))
    w.close()
    for ours, theirs in ((idx, "mx_indexed.idx"), (rec, "mx_indexed.rec")):
        with open(ours, "rb") as f, open(os.path.join(FIX, theirs), "rb") as g:
            assert f.read() == g.read()


def test_pickle_reopens(tmp_path):
    r = mx.recordio.MXIndexedRecordIO(os.path.join(FIX, "mx_indexed.idx"),
                                      os.path.join(FIX, "mx_indexed.rec"), "r")
    r.read_idx(10)
    copy = pickle.loads(pickle.dumps(r))
    assert copy.is_open and copy.keys == [10, 11, 12]
    assert mx.recordio.unpack(copy.read_idx(10))[1] == b"img"


@pytest.mark.parametrize("cut", [3, 12, 20])
def test_truncated_file_raises(tmp_path, cut):
    data = open(os.path.join(FIX, "mx_plain.rec"), "rb").read()
    path = str(tmp_path / "t.rec")
    with open(path, "wb") as f:
        f.write(data[:len(data) - cut])
    with pytest.raises(RecordIOError, match=r"t\.rec.*offset \d+"):
        _read_all(path)


def test_corrupt_magic_and_index(tmp_path):
    path = str(tmp_path / "c.rec")
    with open(path, "wb") as f:
        f.write(b"\x0a\x23\xd7\xce\x01\0\0\0a\0\0\0BAD!\0\0\0\0")
    with pytest.raises(RecordIOError, match="offset 12"):
        _read_all(path)
    idx = str(tmp_path / "c.idx")
    with open(idx, "w") as f:
        f.write("0\t0\n1\t999\n")
    with pytest.raises(RecordIOError, match="line 2"):
        mx.recordio.MXIndexedRecordIO(idx, path, "r")
    with pytest.raises(RecordIOError, match="shorter"):
        mx.recordio.unpack(b"abc")


def test_pack_img_roundtrip_bgr():
    img = np.zeros((8, 10, 3), np.uint8)
    img[..., 0] = 255  # blue in OpenCV's BGR order
    head, out = mx.recordio.unpack_img(mx.recordio.pack_img((0, 2.0, 5, 0), img, 3, ".png"))
    np.testing.assert_array_equal(out, img)
    assert head == mx.recordio.IRHeader(0, 2.0, 5, 0)
    head, out = mx.recordio.unpack_img(mx.recordio.pack_img((0, [1, 2], 5, 0), img, 90))
    assert np.abs(out.astype(int) - img).max() <= 2 and head.flag == 2
