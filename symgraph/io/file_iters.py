"""``mx.io.MNISTIter``, ``mx.io.CSVIter`` and ``mx.io.LibSVMIter``: MXNet's C++ file
iterators, in Python.

Both return an :class:`~symgraph.io.native.MXDataIter`, as MXNet's do, with MXNet's
batching: MNISTIter drops a short last batch and shuffles once, at creation, in the order
MXNet's C++ shuffle gives for the same ``seed``; CSVIter completes a short last batch from
the first rows (``round_batch``) and numbers rows in ``index``.
"""
from __future__ import annotations

import logging
import os

import numpy as np
import torch

from ..base import MXNetError
from ..ndarray import NDArray
from .native import BatchLoader, MXDataIter, NativeIter, libstdcxx_shuffle

__all__ = ["CSVIter", "LibSVMIter", "MNISTIter"]

_TRUE = ("1", "true", "True")


def _flag(value) -> bool:
    return value in _TRUE or value is True or (isinstance(value, int) and value != 0)


def _read_idx(path: str, ndim: int) -> np.ndarray:
    """An idx-ubyte file (MNIST's format: magic, big-endian dims, bytes) as uint8 array."""
    try:
        raw = np.fromfile(path, np.uint8)
    except OSError as err:
        raise MXNetError(f'MNISTIter: cannot open "{path}": {err.strerror}') from err
    header = 4 * (ndim + 1)
    dims = [int.from_bytes(raw[4 * (i + 1):4 * (i + 2)].tobytes(), "big") for i in range(ndim)]
    size = int(np.prod(dims))
    if raw.size < header + size:
        raise MXNetError(f"MNISTIter: {path} holds fewer bytes than its header's shape {dims}")
    return raw[header:header + size].reshape(dims)


class _MNISTSource(NativeIter):
    """Whole batches of (part of) MNIST, pixels scaled by 1/256, shuffled once."""

    def __init__(self, images: np.ndarray, labels: np.ndarray, batch_size: int, flat: bool):
        self._images, self._labels = images, labels
        self.batch_size, self._flat = batch_size, flat
        self._loc = 0

    def before_first(self) -> None:
        self._loc = 0

    def next(self) -> bool:
        if self._loc + self.batch_size > self._images.shape[0]:
            return False
        self._loc += self.batch_size
        return True

    def _rows(self) -> slice:
        return slice(self._loc - self.batch_size, self._loc)

    def data(self) -> NDArray:
        pixels = torch.from_numpy(self._images[self._rows()]).to(torch.float32) / 256
        n, h, w = pixels.shape
        return NDArray(pixels.reshape(n, h * w) if self._flat else pixels.reshape(n, 1, h, w))

    def label(self) -> NDArray:
        return NDArray(torch.from_numpy(self._labels[self._rows()]).to(torch.float32))

    def index(self) -> np.ndarray:
        return np.zeros(self.batch_size, np.uint64)  # MXNet's MNIST leaves it unset


def MNISTIter(*, image: str = "./train-images-idx3-ubyte",  # MXNet's name
              label: str = "./train-labels-idx1-ubyte", batch_size: int = 128,
              shuffle=True, flat=False, seed: int = 0, silent=False, num_parts: int = 1,
              part_index: int = 0, **kwargs) -> MXDataIter:
    """Iterate over the MNIST idx-ubyte files (MXNet 1.9.1's ``mx.io.MNISTIter``).

    Data batches are ``(batch_size, 1, 28, 28)`` (``flat``: ``(batch_size, 784)``) float32
    pixels divided by 256, labels ``(batch_size,)`` float32; a short last batch is dropped.
    With ``num_parts``, the images ``n*k//num_parts`` to ``n*(k+1)//num_parts`` of part
    ``k = part_index`` are read. ``shuffle`` permutes them once, as MXNet's C++ shuffle
    seeded with ``seed``. Other MXNet keywords (``data_shape``, ``prefetch_buffer``,
    ``ctx``, ``dtype``...) are accepted; ``data_name``/``label_name`` name the inputs.

    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> def idx(name, arr, magic):
    ...     with open(os.path.join(folder, name), 'wb') as f:
    ...         f.write(magic.to_bytes(4, 'big'))
    ...         f.write(b''.join(d.to_bytes(4, 'big') for d in arr.shape) + arr.tobytes())
    >>> idx('img', np.arange(20 * 4, dtype=np.uint8).reshape(20, 2, 2), 0x803)
    >>> idx('lab', np.arange(20, dtype=np.uint8), 0x801)
    >>> it = MNISTIter(image=os.path.join(folder, 'img'), label=os.path.join(folder, 'lab'),
    ...                batch_size=6, seed=0, flat=True, silent=True, label_name='sm_label')
    >>> it.provide_data, it.provide_label
    ([DataDesc[data,(6, 4),<class 'numpy.float32'>,NCHW]], \
[DataDesc[sm_label,(6,),<class 'numpy.float32'>,NCHW]])
    >>> [b.label[0].asnumpy().astype(int).tolist() for b in it]
    [[16, 2, 3, 5, 14, 18], [13, 19, 4, 7, 6, 8], [9, 10, 15, 12, 0, 17]]
    """
    images, labels = _read_idx(image, 3), _read_idx(label, 1)
    if images.shape[0] != labels.shape[0]:
        raise MXNetError(f"MNISTIter: {images.shape[0]} images but {labels.shape[0]} labels")
    n = images.shape[0]
    num_parts, part_index = int(num_parts), int(part_index)
    rows = slice(n * part_index // num_parts, n * (part_index + 1) // num_parts)
    images, labels = images[rows], labels[rows]
    if _flag(shuffle):
        order = libstdcxx_shuffle(images.shape[0], int(seed))
        images, labels = images[order], labels[order]
    source = _MNISTSource(images, labels, int(batch_size), _flag(flat))
    if not _flag(silent):
        shape = (batch_size, images[0].size) if _flag(flat) else (batch_size,) + images.shape[1:]
        # a named logger: the root one's logging.info would configure the root logger and
        # turn the script's later logging.basicConfig(level=...) into a no-op
        logging.getLogger(__name__).info("MNISTIter: load %d images, shuffle=%d, shape=%s",
                                         images.shape[0], _flag(shuffle), shape)
    return MXDataIter(source, **kwargs)


_CSV_DTYPES = {"float32": np.float32, "int32": np.int32, "int64": np.int64}


def _csv_files(path: str) -> list[str]:
    if os.path.isdir(path):
        return [os.path.join(path, f) for f in sorted(os.listdir(path))
                if os.path.isfile(os.path.join(path, f))]
    if not os.path.exists(path):
        raise MXNetError(f'CSVIter: cannot open "{path}": No such file or directory')
    return [path]


def _read_csv(path: str, shape: tuple, dtype) -> np.ndarray:
    """The rows of the CSV file(s) at ``path`` (blank lines skipped), each of ``shape``."""
    parse = float if dtype == np.float32 else (lambda tok: int(float(tok)))
    rows = []
    for name in _csv_files(path):
        with open(name) as f:
            rows += [[parse(tok) for tok in line.split(",")] for line in f if line.strip()]
    size = int(np.prod(shape))
    for row in rows:
        if len(row) != size:
            raise MXNetError(f"CSVIter: the data size in CSV do not match size of shape: "
                             f"specified shape={list(shape)}, the csv row-length={len(row)}")
    return np.asarray(rows, dtype=dtype).reshape((len(rows),) + tuple(shape))


def CSVIter(*, data_csv: str, data_shape, batch_size: int, label_csv: str = "NULL",
            label_shape=(1,), round_batch=True, dtype=None, **kwargs) -> MXDataIter:
    """Iterate over the rows of CSV files (MXNet 1.9.1's ``mx.io.CSVIter``).

    Each row (of ``data_csv``, a file or a folder of files) reshaped to ``data_shape`` is
    one example; labels are the rows of ``label_csv`` (``label_shape``; a one-element label
    is a scalar) or 0. ``dtype`` is 'float32' (default), 'int32' or 'int64'. A short last
    batch is completed from the first rows with ``round_batch`` (the next pass then
    continues after them, ``reset`` keeping its place), else its tail keeps the previous
    batch's rows; ``pad`` counts them either way, ``index`` numbers the rows.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), 'data.csv')
    >>> with open(path, 'w') as f:
    ...     _ = f.write('1,2,3\\n2,3,4\\n3,4,5\\n4,5,6\\n')
    >>> it = CSVIter(data_csv=path, data_shape=(3,), batch_size=3)
    >>> [(b.data[0].asnumpy()[:, 0].tolist(), b.pad) for b in it]
    [([1.0, 2.0, 3.0], 0), ([4.0, 1.0, 2.0], 2)]
    >>> it.reset(); [(b.data[0].asnumpy()[:, 0].tolist(), b.pad) for b in it]
    [([3.0, 4.0, 1.0], 1)]
    """
    name = "float32" if dtype in (None, "None") else np.dtype(dtype).name
    if name not in _CSV_DTYPES:
        raise MXNetError(f"{name} is not supported for CSVIter")
    dtype = _CSV_DTYPES[name]
    data = _read_csv(data_csv, tuple(data_shape), dtype)
    if label_csv in (None, "NULL"):
        label = np.zeros(data.shape[0], dtype)
    else:
        label = _read_csv(label_csv, tuple(label_shape), dtype)
        label = label.reshape(-1) if label[0].size == 1 else label
        if label.shape[0] != data.shape[0]:
            raise MXNetError(f"CSVIter: {data_csv} has {data.shape[0]} rows but {label_csv} "
                             f"has {label.shape[0]}")
    loader = BatchLoader(data, label, int(batch_size), _flag(round_batch))
    return MXDataIter(loader, **kwargs)


class _CSRRows:
    """Rows of a sparse matrix (CSR arrays) that densify when sliced, so a BatchLoader
    holds a LibSVM file sparse and hands out dense batches."""

    def __init__(self, indptr, indices, values, shape: tuple):
        self._indptr, self._indices, self._values = indptr, indices, values
        self.shape, self.dtype = shape, np.dtype(np.float32)

    def __getitem__(self, rows: slice) -> np.ndarray:
        start, stop, _ = rows.indices(self.shape[0])
        out = np.zeros((max(0, stop - start), int(np.prod(self.shape[1:]))), np.float32)
        lo, hi = self._indptr[start], self._indptr[max(start, stop)]
        row_of = np.repeat(np.arange(max(0, stop - start)), np.diff(self._indptr[start:stop + 1]))
        out[row_of, self._indices[lo:hi]] = self._values[lo:hi]
        return out.reshape((-1,) + self.shape[1:])


def _read_libsvm(path: str, width: int):
    """``(labels, indptr, indices, values)`` of a LibSVM file (0-based ``index:value``)."""
    labels, indptr, indices, values = [], [0], [], []
    try:
        f = open(path)  # closed below
    except OSError as err:
        raise MXNetError(f'LibSVMIter: cannot open "{path}": {err.strerror}') from err
    with f:
        for number, line in enumerate(f, 1):
            tokens = line.split("#")[0].split()
            if not tokens:
                continue
            try:
                labels.append(float(tokens[0].split(":")[0]))
                pairs = [t.split(":") for t in tokens[1:] if not t.startswith("qid:")]
                cols = [int(k) for k, _ in pairs]
                vals = [float(v) for _, v in pairs]
            except ValueError as err:
                raise MXNetError(f"LibSVMIter: {path}:{number}: cannot parse {line!r}") from err
            bad = [c for c in cols if not 0 <= c < width]
            if bad:
                raise MXNetError(f"LibSVMIter: {path}:{number}: feature index {bad[0]} is "
                                 f"outside data_shape [0, {width})")
            indices += cols
            values += vals
            indptr.append(len(indices))
    return (np.asarray(labels, np.float32), np.asarray(indptr, np.int64),
            np.asarray(indices, np.int64), np.asarray(values, np.float32))


def LibSVMIter(*, data_libsvm: str, data_shape, batch_size: int,  # MXNet's name
               label_libsvm: str = "NULL", label_shape=(1,), num_parts: int = 1,
               part_index: int = 0, round_batch=True, **kwargs) -> MXDataIter:
    """Iterate over LibSVM files (MXNet 1.9.1's ``mx.io.LibSVMIter``), as dense batches.

    Each line of ``data_libsvm`` is ``label index:value ...`` with 0-based feature indices
    below ``data_shape[0]``. Labels are the lines' first numbers (``(batch_size,)``) or,
    with ``label_libsvm``, that file's sparse rows densified to ``label_shape``. MXNet
    returns data as ``CSRNDArray``; symgraph has no sparse storage yet (issue #20), so the
    batches are dense NDArrays with the same values (the file is held sparse in memory and
    densified one batch at a time). A short last batch is completed from the first rows
    with ``round_batch`` (``pad`` counts them). ``num_parts``/``part_index`` take the rows
    ``n*k//num_parts`` to ``n*(k+1)//num_parts``.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), 'data.t')
    >>> with open(path, 'w') as f:
    ...     _ = f.write('1.0 0:0.5 2:1.2\\n-2.0\\n-3.0 0:0.6 1:2.4 2:1.2\\n4 2:-1.2\\n')
    >>> it = LibSVMIter(data_libsvm=path, data_shape=(3,), batch_size=3)
    >>> [b.data[0].asnumpy().tolist() for b in it][1]
    [[0.0, 0.0, -1.2000000476837158], [0.5, 0.0, 1.2000000476837158], [0.0, 0.0, 0.0]]
    >>> it.getlabel().asnumpy().tolist()
    [4.0, 1.0, -2.0]
    """
    data_shape, label_shape = tuple(data_shape), tuple(label_shape)
    if len(data_shape) != 1:
        raise MXNetError(f"LibSVMIter: data_shape must have one dimension, got {data_shape}")
    labels, *csr = _read_libsvm(data_libsvm, data_shape[0])
    n = labels.shape[0]
    rows = slice(n * int(part_index) // int(num_parts), n * (int(part_index) + 1) // int(num_parts))
    data = _part(csr, rows, data_shape)
    if label_libsvm in (None, "NULL"):
        label = labels[rows]
    else:
        other, *label_csr = _read_libsvm(label_libsvm, int(np.prod(label_shape)))
        if other.shape[0] != n:
            raise MXNetError(f"LibSVMIter: {data_libsvm} has {n} rows but {label_libsvm} "
                             f"has {other.shape[0]}")
        label = _part(label_csr, rows, label_shape)
    loader = BatchLoader(data, label, int(batch_size), _flag(round_batch))
    return MXDataIter(loader, **kwargs)


def _part(csr, rows: slice, shape: tuple) -> _CSRRows:
    indptr, indices, values = csr
    lo, hi = indptr[rows.start], indptr[rows.stop]
    return _CSRRows(indptr[rows.start:rows.stop + 1] - lo, indices[lo:hi], values[lo:hi],
                    (rows.stop - rows.start,) + shape)
