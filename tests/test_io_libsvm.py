"""mx.io.LibSVMIter (csr batches), after MXNet 1.9.1's test_io.py::test_LibSVMIter."""
import numpy as np
import pytest

import symgraph as mx
from symgraph.base import MXNetError

DATA = "1.0 0:0.5 2:1.2\n-2.0\n-3.0 0:0.6 1:2.4 2:1.2\n4 2:-1.2\n"
LABEL = "1.0\n-2.0 0:0.125\n-3.0 2:1.2\n4 1:1.0 2:-1.2\n"


def test_synthetic_like_mxnet(tmp_path):
    (tmp_path / "data.t").write_text(DATA)
    (tmp_path / "label.t").write_text(LABEL)
    it = mx.io.LibSVMIter(data_libsvm=str(tmp_path / "data.t"), data_shape=(3,),
                          label_libsvm=str(tmp_path / "label.t"), label_shape=(3,),
                          batch_size=3)
    batches = [(b.data[0].asnumpy(), b.label[0].asnumpy(), b.pad) for b in it]
    np.testing.assert_allclose(batches[0][0], [[0.5, 0, 1.2], [0, 0, 0], [0.6, 2.4, 1.2]])
    np.testing.assert_allclose(batches[1][0], [[0, 0, -1.2], [0.5, 0, 1.2], [0, 0, 0]])
    np.testing.assert_allclose(batches[1][1], [[0, 1, -1.2], [0, 0, 0], [0.125, 0, 0]])
    assert [b[2] for b in batches] == [0, 2]
    it.reset()  # the round batch already began the next pass
    assert [b.data[0].asnumpy()[0, 2] for b in it] == [np.float32(1.2)]


def test_labels_from_data_file_and_parts(tmp_path):
    (tmp_path / "d.t").write_text(DATA)
    it = mx.io.LibSVMIter(data_libsvm=str(tmp_path / "d.t"), data_shape=(3,), batch_size=2,
                          num_parts=2, part_index=1)
    b = it.next()
    assert it.provide_label[0].shape == (2,)
    assert b.data[0].stype == "csr"
    # MXNet 1.9.1 splits the file by bytes: part 1 holds the last line only, and the batch
    # wraps around it (checked with MXNet itself)
    np.testing.assert_array_equal(b.label[0].asnumpy(), [4.0, 4.0])


def test_bad_index_raises(tmp_path):
    (tmp_path / "d.t").write_text("1.0 0:0.5\n-3.0 -1:0.6 1:2.4\n")
    with pytest.raises(MXNetError, match=r"d\.t:2.*index -1"):
        mx.io.LibSVMIter(data_libsvm=str(tmp_path / "d.t"), data_shape=(3,), batch_size=1)
    (tmp_path / "d.t").write_text("1.0 0:x\n")
    with pytest.raises(MXNetError, match=r"d\.t:1"):
        mx.io.LibSVMIter(data_libsvm=str(tmp_path / "d.t"), data_shape=(3,), batch_size=1)
