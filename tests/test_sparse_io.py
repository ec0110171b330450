"""csr batches of ``mx.io.LibSVMIter`` and ``mx.io.NDArrayIter``, checked against MXNet 1.9.1.

The golden batches come from ``tests/fixtures/sparse_io/generate.py`` (run under MXNet
1.9.1; it also wrote the LibSVM files): every batch of every epoch, replayed here on the
same files and arrays with the same arguments. Error cases follow MXNet 1.9.1's checks
(``src/io/iter_libsvm.cc``, ``iter_sparse_batchloader.h``, ``python/mxnet/io/io.py``) or,
where MXNet would read garbage, expect a FileFormatError naming the file and line.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as spsp
import torch

import symgraph as mx
from symgraph.base import FileFormatError, MXNetError
from symgraph.io.libsvm import libsvm_part, read_libsvm
from symgraph.sparse import formats
from tests import fixture_scripts

GEN = fixture_scripts.load("sparse_io/generate.py")
HERE = fixture_scripts.FIXTURES / "sparse_io"
GOLDEN = np.load(HERE / "sparse_io.npz", allow_pickle=False)


def _check_array(key: str, name: str, arr) -> None:
    if f"{key}/{name}_dense" in GOLDEN.files:
        assert arr.stype == "default", (key, name, arr.stype)
        np.testing.assert_array_equal(arr.asnumpy(), GOLDEN[f"{key}/{name}_dense"])
        return
    assert arr.stype == "csr", (key, name, arr.stype)
    arr.check_format(True)
    for field in ("values", "indices", "indptr"):
        got = (arr.data if field == "values" else getattr(arr, field)).asnumpy()
        want = GOLDEN[f"{key}/{name}_{field}"]
        assert got.dtype == want.dtype, (key, name, field, got.dtype, want.dtype)
        np.testing.assert_array_equal(got, want, err_msg=f"{key}/{name}_{field}")


def _replay(it, case: str, epochs: int) -> None:
    """Every batch of ``epochs`` passes equals MXNet's (data, label, pad, index, count)."""
    for epoch in range(epochs):
        count = 0
        for count, batch in enumerate(it, 1):
            key = f"{case}/e{epoch}/b{count - 1}"
            for i, arr in enumerate(batch.data):
                _check_array(key, f"data{i}", arr)
            for i, arr in enumerate(batch.label or []):
                _check_array(key, f"label{i}", arr)
            assert batch.pad == int(GOLDEN[f"{key}/pad"]), key
            if f"{key}/index" in GOLDEN.files:
                assert np.asarray(batch.index, np.int64).tolist() == \
                    GOLDEN[f"{key}/index"].tolist(), key
        assert count == int(GOLDEN[f"{case}/e{epoch}/count"]), (case, epoch)
        it.reset()


@pytest.mark.parametrize("case", sorted(GEN.LIBSVM_CASES))
def test_libsvm_batches_equal_mxnet(case):
    kwargs, epochs = GEN.LIBSVM_CASES[case]
    kwargs = dict(kwargs)
    if kwargs.pop("label", False):
        kwargs["label_libsvm"] = str(HERE / "label.libsvm")
    it = mx.io.LibSVMIter(data_libsvm=str(HERE / "data.libsvm"), **kwargs)
    batch = kwargs["batch_size"]
    assert it.provide_data[0].shape == (batch, GEN.WIDTH)
    label_shape = (batch, GEN.LABEL_WIDTH) if "label_libsvm" in kwargs else (batch,)
    assert it.provide_label[0].shape == label_shape
    _replay(it, case, epochs)


@pytest.mark.parametrize("case", sorted(GEN.NDARRAY_CASES))
def test_ndarray_iter_csr_batches_equal_mxnet(case):
    batch_size, shuffle, seed, epochs = GEN.NDARRAY_CASES[case]
    dense, label = GOLDEN["nd/in/dense"], GOLDEN["nd/in/label"]
    csr = mx.nd.array(dense).tostype("csr")
    np.random.seed(seed)
    it = mx.io.NDArrayIter({"csr": csr, "dense": dense}, mx.nd.array(label).tostype("csr"),
                           batch_size, shuffle=shuffle, last_batch_handle="discard")
    assert [d.shape for d in it.provide_data] == [(batch_size, 6)] * 2
    _replay(it, case, epochs)


def test_ndarray_iter_keeps_csr_sources_csr_when_shuffled():
    """MXNet 1.9.1 (io/utils.py::_getdata_by_idx): a csr source stays csr after shuffle."""
    dense = np.eye(5, dtype=np.float32)[[3, 0, 4, 1, 2]]
    np.random.seed(0)
    it = mx.io.NDArrayIter({"data": spsp.csr_matrix(dense)}, None, 2, shuffle=True,
                           last_batch_handle="discard")
    assert it.data[0][1].stype == "csr"
    order = np.random.RandomState(0).permutation(5)
    np.testing.assert_array_equal(it.data[0][1].asnumpy(), dense[order])


@pytest.mark.parametrize("handle", ["pad", "roll_over"])
@pytest.mark.parametrize("where", ["data", "label"])
def test_ndarray_iter_refuses_csr_without_discard(handle, where):
    """MXNet 1.9.1's NDArrayIter: csr data or label needs last_batch_handle='discard'."""
    csr = mx.nd.sparse.csr_matrix(np.eye(4, dtype=np.float32))
    data, label = (csr, np.zeros(4)) if where == "data" else (np.zeros((4, 2)), csr)
    with pytest.raises(NotImplementedError, match="discard"):
        mx.io.NDArrayIter(data, label, 2, last_batch_handle=handle)


def test_ndarray_iter_row_sparse_batches_are_dense_and_pad():
    """MXNet 1.9.1 slices row_sparse sources through slice_axis's dense fallback: dense
    batches, and 'pad' is allowed (only csr is refused)."""
    dense = np.arange(21, dtype=np.float32).reshape(7, 3) * (np.arange(7) % 2)[:, None]
    it = mx.io.NDArrayIter(mx.nd.array(dense).tostype("row_sparse"), None, 3)
    batches = [(b.data[0].stype, b.data[0].asnumpy(), b.pad) for b in it]
    assert [(s, p) for s, _, p in batches] == [("default", 0), ("default", 0), ("default", 2)]
    np.testing.assert_array_equal(batches[2][1], dense[[6, 0, 1]])


def test_ndarray_iter_parts_of_csr_stay_csr():
    dense = np.diag(np.arange(1, 6, dtype=np.float32))
    it = mx.io.NDArrayIter(mx.nd.sparse.csr_matrix(dense), None, 2,
                           last_batch_handle="discard", num_parts=2, part_index=1)
    assert it.data[0][1].stype == "csr"
    np.testing.assert_array_equal(it.data[0][1].asnumpy(), dense[[3, 4, 0]])


# ------------------------------------------------------------------ parts and bytes

def test_parts_split_by_bytes_as_dmlc():
    """dmlc InputSplit: ceil(bytes / parts) per part, each end moved past a line break.
    MXNet 1.9.1 on this file: part 1 of 3 holds line 3 only, part 1 of 2 line 4 only."""
    blob = b"1.0 0:0.5 2:1.2\n-2.0\n-3.0 0:0.6 1:2.4 2:1.2\n4 2:-1.2\n"
    assert [libsvm_part([blob], 3, k) for k in range(3)] == [(0, 21), (21, 44), (44, 53)]
    assert [libsvm_part([blob], 2, k) for k in range(2)] == [(0, 44), (44, 53)]
    assert libsvm_part([blob], 60, 59) == (53, 53)
    # two files (MXNet 1.9.1 on a folder of them: part 0 holds rows 1-2, part 1 rows 3-4):
    # the cut at byte 21 = ceil(41 / 2) falls on the second file's first line break
    assert libsvm_part([b"1 0:1\n", blob[:35]], 2, 0) == (0, 22)


def test_parts_cover_every_row_once(tmp_path):
    path = tmp_path / "d.t"
    lines = [f"{i} {i % 7}:{i}" for i in range(41)]
    path.write_text("\n".join(lines) + "\n")
    for parts in (1, 2, 3, 5, 8):
        labels = [read_libsvm(str(path), 7, parts, k)[0].tolist() for k in range(parts)]
        assert sum(labels, []) == [float(i) for i in range(41)], parts


def test_folder_reads_files_in_name_order(tmp_path):
    (tmp_path / "b.t").write_text("2 1:2\n3 2:3")  # no final line break
    (tmp_path / "a.t").write_text("1 0:1\n")
    (tmp_path / "c.t").write_text("")
    labels, rows = read_libsvm(str(tmp_path), 3)
    assert labels.tolist() == [1.0, 2.0, 3.0]
    assert rows.indices.tolist() == [0, 1, 2]


def test_label_file_rows_split_on_their_own_bytes(tmp_path):
    """MXNet 1.9.1: each file is split by its own bytes. Part 1 of 2 of the data is its
    line 4 (line 3 starts on the boundary, so part 0 holds it), of the labels lines 3-4."""
    (tmp_path / "d.t").write_text("1 0:1\n2 1:1\n3 2:1\n4 0:2\n")
    (tmp_path / "l.t").write_text("0 0:1.5 1:2.5\n0 1:20\n0 0:3\n0 1:40\n")
    kwargs = {"data_shape": (3,), "batch_size": 1, "label_libsvm": str(tmp_path / "l.t"),
              "label_shape": (2,), "num_parts": 2}
    it = mx.io.LibSVMIter(data_libsvm=str(tmp_path / "d.t"), part_index=1, **kwargs)
    got = [(b.data[0].asnumpy().tolist(), b.label[0].asnumpy().tolist()) for b in it]
    assert got == [([[2.0, 0.0, 0.0]], [[3.0, 0.0]])]
    # part 0: 3 data rows, 2 label rows (MXNet: "Data LibSVM's row is smaller than ...")
    with pytest.raises(MXNetError, match="has 3 rows but that of .*l.t only 2"):
        mx.io.LibSVMIter(data_libsvm=str(tmp_path / "d.t"), part_index=0, **kwargs)


# ------------------------------------------------------------------ errors

ROWS = "1 0:0.5 2:1.2\n-2\n"


@pytest.mark.parametrize("text, line, message", [
    ("1 0:0.5\n-3 -1:0.6 1:2.4\n", 2, "feature index -1 is outside"),   # MXNet: sign check
    ("1 0:0.5\n2 3:1\n", 2, r"feature index 3 is outside \[0, 3\)"),
    ("1 2:1 0:1\n", 1, "not ascending"),
    ("1 0:1 0:2\n", 1, "not ascending"),
    ("1 0:x\n", 1, "expected 'label index:value"),
    ("1 0 1:2\n", 1, "expected 'label index:value"),                     # MXNet: value check
    ("1 0:1:2\n", 1, "index:value pairs"),
    ("abc 0:1\n", 1, "expected 'label index:value"),
    ("1 0:1\n\n2 1:1\r\nfoo\n", 4, "expected 'label index:value"),
])
def test_malformed_lines_name_file_and_line(tmp_path, text, line, message):
    path = tmp_path / "bad.t"
    path.write_bytes(text.encode())
    with pytest.raises(FileFormatError, match=rf"bad\.t:{line}: .*{message}"):
        mx.io.LibSVMIter(data_libsvm=str(path), data_shape=(3,), batch_size=1)


@pytest.mark.parametrize("kwargs, message", [
    ({"data_shape": (3, 1)}, "dimension of data_shape is expected to be 1"),
    ({"num_parts": 0}, "number of parts should be positive"),
    ({"num_parts": 2, "part_index": 2}, r"part_index=2 must be in \[0, 2\)"),
    ({"label_shape": (2,)}, r"label_shape is expected to be \(1,\)"),
    ({"label_libsvm": "x.t", "label_shape": (1,)}, "label_shape must be 1-D and not"),
    ({"round_batch": False}, "doesn't support round_batch == false"),
    ({"dtype": "float64"}, "dtype float64 is not supported"),
    ({"batch_size": 5}, "number of input must be bigger than batch size"),
])
def test_parameter_errors_as_mxnet(tmp_path, kwargs, message):
    path = tmp_path / "d.t"
    path.write_text(ROWS)
    args = {"data_shape": (3,), "batch_size": 1, **kwargs}
    with pytest.raises(MXNetError, match=message):
        mx.io.LibSVMIter(data_libsvm=str(path), **args)


def test_missing_empty_and_short_label_files(tmp_path):
    (tmp_path / "d.t").write_text(ROWS)
    (tmp_path / "e.t").write_text("")
    (tmp_path / "l.t").write_text("0 0:1\n")
    with pytest.raises(MXNetError, match="cannot open .*nope.t"):
        mx.io.LibSVMIter(data_libsvm=str(tmp_path / "nope.t"), data_shape=(3,), batch_size=1)
    with pytest.raises(MXNetError, match="holds no data"):
        mx.io.LibSVMIter(data_libsvm=str(tmp_path / "e.t"), data_shape=(3,), batch_size=1)
    with pytest.raises(MXNetError, match="has 2 rows but that of .*l.t only 1"):
        mx.io.LibSVMIter(data_libsvm=str(tmp_path / "d.t"), data_shape=(3,), batch_size=1,
                         label_libsvm=str(tmp_path / "l.t"), label_shape=(2,))


def test_batch_larger_than_twice_the_rows_fails_before_moving(tmp_path):
    """MXNet 1.9.1 (iter_sparse_batchloader.h) fails a batch that needs more rows than a
    wrap-around gives; here the check comes before the cursor moves."""
    (tmp_path / "d.t").write_text("1 0:1\n2 1:1\n3 2:1\n4 0:2\n")
    it = mx.io.LibSVMIter(data_libsvm=str(tmp_path / "d.t"), data_shape=(3,), batch_size=7)
    assert [b.pad for b in it] == [3]
    it.reset()  # the next pass starts at row 3: 1 row + 6 wrapped > 4 rows
    with pytest.raises(MXNetError, match="bigger than batch size"):
        it.next()
    with pytest.raises(MXNetError, match="bigger than batch size"):
        it.next()


@pytest.mark.parametrize("rows", [[8, 0, 0, 5, 3], [1, 1, 7, 2], [], [6, 2, 4, 1, 8, 0]])
def test_csr_take_rows_matches_scipy(rows):
    """Rows in any order, repeated, and empty (rows 1, 2, 6 and 7 of the matrix are)."""
    rng = np.random.RandomState(3)
    dense = (rng.rand(9, 6) < 0.4) * rng.rand(9, 6)
    dense[[1, 2, 6, 7]] = 0
    value = formats.from_dense(torch.tensor(dense, dtype=torch.float32), "csr")
    got = formats.csr_take_rows(value, torch.tensor(rows, dtype=torch.int64))
    want = spsp.csr_matrix(dense.astype(np.float32))[np.array(rows, dtype=np.int64)]
    assert got.shape == want.shape
    assert got.indptr.tolist() == want.indptr.tolist()
    assert got.indices.tolist() == want.indices.tolist()
    np.testing.assert_array_equal(got.data.numpy(), want.data)
