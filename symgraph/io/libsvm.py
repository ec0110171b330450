"""LibSVM text files as csr rows, and the batch loader of ``mx.io.LibSVMIter``.

MXNet 1.9.1 reads LibSVM files with dmlc-core's ``libsvm`` parser: every non-blank line is
``label[:weight] [qid:n] index:value ...`` with 0-based indices, ``#`` starts a comment,
and ``num_parts``/``part_index`` split the file(s) by bytes, each part moved forward to the
next line start (dmlc's ``InputSplit``), so parts are not equal in rows. The batches are
``CSRNDArray``s. symgraph reads the same rows, and refuses what MXNet would turn into
garbage (an index outside ``data_shape``, indices not ascending, a token that is not a
number) with a :class:`~symgraph.base.FileFormatError` naming the file and line.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), 'd.t')
>>> with open(path, 'w') as f:
...     _ = f.write('1 0:0.5 2:1.5\\n-2\\n3 1:2 # a comment\\n')
>>> labels, rows = read_libsvm(path, 3)
>>> labels.tolist(), rows.indptr.tolist(), rows.indices.tolist()
([1.0, -2.0, 3.0], [0, 2, 2, 3], [0, 2, 1])
"""
from __future__ import annotations

import bisect
import os
import re

import numpy as np
import torch

from ..base import FileFormatError, MXNetError
from ..ndarray import NDArray
from ..ndarray.sparse_array import wrap
from ..sparse import formats
from .native import RowCursor

__all__ = ["SparseBatchLoader", "libsvm_part", "read_libsvm"]

_LINE_END = re.compile(rb"[^\r\n]*[\r\n]+")


def _files(path: str) -> list[tuple[str, bytes]]:
    """The non-empty files at ``path`` (a file, or a folder read in name order) and bytes."""
    if os.path.isdir(path):
        names = [os.path.join(path, f) for f in sorted(os.listdir(path))]
        names = [f for f in names if os.path.isfile(f)]
    elif os.path.exists(path):
        names = [path]
    else:
        raise MXNetError(f'LibSVMIter: cannot open "{path}": No such file or directory')
    blobs = []
    for name in names:
        with open(name, "rb") as f:
            blob = f.read()
        if blob:
            blobs.append((name, blob))
    if not blobs:
        raise MXNetError(f"LibSVMIter: {path} holds no data (empty file or folder)")
    return blobs


def _line_start(blobs: list[bytes], offsets: list[int], at: int) -> int:
    """The byte where a part boundary at ``at`` really falls: past the next line break
    (dmlc's ``SeekRecordBegin``), within the file holding ``at``."""
    f = bisect.bisect_right(offsets, at) - 1
    if at == offsets[f]:
        return at
    match = _LINE_END.match(blobs[f], at - offsets[f])
    return offsets[f] + (match.end() if match else len(blobs[f]))


def libsvm_part(blobs: list[bytes], num_parts: int, part_index: int) -> tuple[int, int]:
    """Byte range ``[begin, end)`` of part ``part_index`` of ``num_parts`` of files (their
    bytes ``blobs``) read one after the other, as dmlc's ``InputSplit`` cuts it: equal
    ``ceil(total / num_parts)`` byte ranges, each end moved past the next line break (a
    line starting right on a boundary goes to the earlier part).

    >>> blob = b'1.0 0:0.5 2:1.2\\n-2.0\\n-3.0 0:0.6 1:2.4 2:1.2\\n4 2:-1.2\\n'
    >>> [libsvm_part([blob], 3, k) for k in range(3)]  # cut at bytes 18 and 36
    [(0, 21), (21, 44), (44, 53)]
    """
    offsets = [0]
    for blob in blobs:
        offsets.append(offsets[-1] + len(blob))
    total = offsets[-1]
    step = -(-total // num_parts)
    begin, end = min(step * part_index, total), min(step * (part_index + 1), total)
    if begin == end:
        return begin, end
    return _line_start(blobs, offsets, begin), _line_start(blobs, offsets, end)


class _Rows:
    """Rows parsed so far: labels and csr arrays, growing line by line."""

    def __init__(self):
        self.labels: list[float] = []
        self.indptr, self.indices, self.values = [0], [], []


def _bad(path: str, number: int, line: bytes, why: str) -> FileFormatError:
    text = line.decode("utf-8", "replace").strip()
    return FileFormatError(f"LibSVMIter: {path}:{number}: {why} in line {text!r}")


def _parse_line(rows: _Rows, line: bytes, width: int, where: tuple[str, int]) -> None:
    """Append the row of one line (nothing for a blank or comment line)."""
    tokens = line.split()
    if not tokens or tokens[0].startswith(b"#"):
        return
    try:
        label = float(tokens[0].split(b":")[0])  # label[:weight]; the weight is unused
        feats = tokens[2:] if len(tokens) > 1 and tokens[1].startswith(b"qid:") else tokens[1:]
        stop = next((i for i, t in enumerate(feats) if t.startswith(b"#")), len(feats))
        pairs = [t.split(b":") for t in feats[:stop]]
        cols = [int(p[0]) for p in pairs]
        vals = [float(p[1]) for p in pairs]
    except (ValueError, IndexError) as err:
        raise _bad(*where, line, "expected 'label index:value ...'") from err
    if any(len(p) != 2 for p in pairs):
        raise _bad(*where, line, "expected index:value pairs")
    bad = [c for c in cols if not 0 <= c < width]
    if bad:
        raise _bad(*where, line, f"feature index {bad[0]} is outside [0, {width})")
    if any(b <= a for a, b in zip(cols, cols[1:])):
        raise _bad(*where, line, "feature indices are not ascending")
    rows.labels.append(label)
    rows.indices += cols
    rows.values += vals
    rows.indptr.append(len(rows.indices))


def read_libsvm(path: str, width: int, num_parts: int = 1,
                part_index: int = 0) -> tuple[torch.Tensor, formats.CSR]:
    """The labels (float32) and rows (a csr ``(n, width)`` float32 value) of part
    ``part_index`` of ``num_parts`` of the LibSVM file or folder ``path``.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), 'd.t')
    >>> with open(path, 'w') as f:
    ...     _ = f.write('1 0:0.5\\n2 3:1\\n')
    >>> read_libsvm(path, 3)
    Traceback (most recent call last):
    ...
    symgraph.base.FileFormatError: LibSVMIter: ...d.t:2: feature index 3 is outside [0, 3) \
in line '2 3:1'
    """
    blobs = _files(path)
    begin, end = libsvm_part([b for _, b in blobs], num_parts, part_index)
    rows, offset = _Rows(), 0
    for name, blob in blobs:
        lo, hi = max(begin - offset, 0), min(end - offset, len(blob))
        offset += len(blob)
        if lo >= hi:
            continue
        first = blob.count(b"\n", 0, lo) + 1
        for number, line in enumerate(blob[lo:hi].splitlines(), first):
            _parse_line(rows, line, width, (name, number))
    csr = formats.CSR(torch.tensor(rows.values, dtype=torch.float32),
                      torch.tensor(rows.indices, dtype=formats.INDEX),
                      torch.tensor(rows.indptr, dtype=formats.INDEX),
                      (len(rows.labels), width))
    return torch.tensor(rows.labels, dtype=torch.float32), csr


class SparseBatchLoader(RowCursor):
    """Batches of csr rows (MXNet's C++ ``SparseBatchLoader``): ``data`` a ``CSRNDArray``,
    ``label`` a dense ``(batch_size,)`` NDArray or a ``CSRNDArray``. The last batch is
    always completed from the first rows (MXNet has no ``round_batch=False`` here)."""

    def __init__(self, data: formats.CSR, label: torch.Tensor | formats.CSR, batch_size: int):
        super().__init__(data.shape[0], batch_size, round_batch=True)
        self._src, self._lab = data, label
        self._rows = np.zeros(0, np.int64)

    def take(self, rows: np.ndarray) -> None:
        self._rows = rows

    def _batch(self, source) -> NDArray:
        rows = torch.from_numpy(self._rows)
        if isinstance(source, formats.CSR):
            return wrap(formats.csr_take_rows(source, rows))
        return NDArray(source.index_select(0, rows))

    def data(self) -> NDArray:
        return self._batch(self._src)

    def label(self) -> NDArray:
        return self._batch(self._lab)

    def index(self) -> np.ndarray:
        return self._rows.astype(np.uint64)
