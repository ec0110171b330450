"""mx.io's file iterators (MNISTIter, CSVIter behind MXDataIter), the unsupported C++
iterators and mx.io.utils, against MXNet 1.9.1's results in tests/fixtures/module_io_more."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import UnsupportedError
from symgraph.io.native import BatchLoader, MXDataIter, libstdcxx_shuffle
from tests import fixture_scripts

HERE = Path(__file__).parent / "fixtures" / "module_io_more"
GOLD = json.loads((HERE / "module_io_more.json").read_text())
SCENARIOS = fixture_scripts.load("module_io_more/scenarios.py")


@pytest.mark.parametrize("name", ["mnist", "mnist_order", "csv"])
def test_file_iterators_match_mxnet(name, tmp_path):
    got = json.loads(json.dumps(SCENARIOS.SCENARIOS[name](mx, str(tmp_path))))
    SCENARIOS.assert_close(got, GOLD[name])


def test_mnist_iter_is_an_mxdataiter_with_a_first_batch(tmp_path):
    image, label = SCENARIOS._mnist_files(str(tmp_path), 12)
    it = mx.io.MNISTIter(image=image, label=label, batch_size=4, shuffle=False, silent=True)
    assert isinstance(it, MXDataIter) and isinstance(it, mx.io.DataIter)
    assert it.first_batch is not None and it.iter_next()
    assert it.next().label[0].asnumpy().tolist() == [0, 1, 2, 3]
    assert it.iter_next() and it.getlabel().asnumpy().tolist() == [4, 5, 6, 7]
    assert it.getpad() == 0 and it.getindex().dtype == np.uint64
    it.debug_skip_load()
    assert it.next().label[0].asnumpy().tolist() == [4, 5, 6, 7]  # the same batch again


def test_mnist_iter_errors(tmp_path):
    image, label = SCENARIOS._mnist_files(str(tmp_path), 4)
    with pytest.raises(mx.MXNetError, match="cannot open"):
        mx.io.MNISTIter(image=str(tmp_path / "missing"), label=label, silent=True)
    with pytest.raises(TypeError):
        mx.io.MNISTIter(image, label)  # keyword arguments only, as MXNet's
    with pytest.raises(StopIteration):  # MXNet reads the first batch at creation
        mx.io.MNISTIter(image=image, label=label, batch_size=5, silent=True)


def test_mnist_pixels_are_scaled_by_1_over_256(tmp_path):
    image, label = SCENARIOS._mnist_files(str(tmp_path), 2, shape=(2, 2))
    batch = next(mx.io.MNISTIter(image=image, label=label, batch_size=2, shuffle=False,
                                 silent=True))
    assert batch.data[0].shape == (2, 1, 2, 2)
    np.testing.assert_array_equal(batch.data[0].asnumpy().reshape(2, 4) * 256,
                                  [[0, 1, 2, 3], [0, 2, 3, 4]])


@pytest.mark.parametrize("n, seed, head", [
    (6, 0, [0, 2, 3, 5, 4, 1]),  # MXNet's MNISTIter(seed=0) over 6 images
    (20, 3, [17, 18, 3, 15, 16, 8, 2, 4, 19, 1, 11, 7]),
])
def test_libstdcxx_shuffle_is_mxnets_order(n, seed, head):
    assert libstdcxx_shuffle(n, seed)[:len(head)].tolist() == head


def test_batch_loader_round_batch_keeps_its_place():
    loader = BatchLoader(np.arange(4.0)[:, None], np.zeros(4), batch_size=3)
    seen = []
    for _ in range(2):
        while loader.next():
            seen.append((loader.index().tolist(), loader.pad()))
        loader.before_first()
    assert seen == [([0, 1, 2], 0), ([3, 0, 1], 2), ([2, 3, 0], 1)]


def test_csv_iter_errors(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("1,2,3\n4,5,6\n")
    with pytest.raises(mx.MXNetError, match="do not match size of shape"):
        mx.io.CSVIter(data_csv=str(path), data_shape=(2,), batch_size=1)
    with pytest.raises(mx.MXNetError, match="float16 is not supported for CSVIter"):
        mx.io.CSVIter(data_csv=str(path), data_shape=(3,), batch_size=1, dtype="float16")
    with pytest.raises(mx.MXNetError, match="cannot open"):
        mx.io.CSVIter(data_csv=str(tmp_path / "none.csv"), data_shape=(3,), batch_size=1)
    with pytest.raises(TypeError):
        mx.io.CSVIter(str(path))


@pytest.mark.parametrize("name", ["ImageRecordIter", "ImageRecordIter_v1",
                                  "ImageRecordUInt8Iter", "ImageRecordUInt8Iter_v1",
                                  "ImageRecordInt8Iter", "ImageDetRecordIter"])
def test_recordio_image_iterators_name_a_missing_file(name, tmp_path):
    missing = str(tmp_path / "train.rec")
    with pytest.raises(mx.MXNetError, match="cannot open path_imgrec .*train.rec"):
        getattr(mx.io, name)(path_imgrec=missing, data_shape=(3, 224, 224), batch_size=2)
    assert getattr(mx.io, name).__name__ == name.replace("_v1", "")


def test_libsvm_missing_file_and_raw_handles():
    with pytest.raises(mx.MXNetError, match="cannot open .*x.libsvm"):
        mx.io.LibSVMIter(data_libsvm="x.libsvm", data_shape=(10,), batch_size=2)
    with pytest.raises(UnsupportedError, match="C\\+\\+ iterator handle"):
        mx.io.MXDataIter(object())


def test_io_utils_helpers():
    from symgraph.io import utils
    data = utils._init_data({"b": np.ones((3, 2)), "a": np.zeros((3, 2))}, False, "data")
    assert [name for name, _ in data] == ["a", "b"]
    assert utils._has_instance(data, mx.nd.NDArray)
    shuffled = utils._getdata_by_idx([("x", mx.nd.array([[1], [2], [3]]))], [2, 0, 1])
    assert shuffled[0][1].asnumpy().ravel().tolist() == [3, 1, 2]
    part = utils._slice_along_batch_axis(mx.nd.array(np.arange(6).reshape(2, 3)), slice(1, 3), 1)
    assert part.asnumpy().tolist() == [[1, 2], [4, 5]]
