"""MXNet's binary ``.params`` format: :func:`save`, :func:`load`, :func:`load_frombuffer`.

Layout (all little-endian), as ``NDArray::Save`` in MXNet 1.x writes it::

    uint64 0x112 (list magic), uint64 0 (reserved), uint64 array count
    per array:
        uint32 magic       0xF993FAC9 (V2); 0xF993FACA (V3, numpy shape semantics)
        int32  stype       0 = dense, 1 = row_sparse, 2 = csr
        sparse only: the storage shape (int32 ndim, int64 dims[ndim]) of the values
        int32  ndim, int64 dims[ndim]
        int32  dev_type, int32 dev_id, int32 type flag
        sparse only: per aux array (row_sparse: indices; csr: indptr, indices)
            int32 aux type flag, int32 ndim, int64 dims[ndim]
        raw data (sparse: the stored values), then sparse only: each aux array's raw data
    uint64 name count (0 or the array count), per name: uint64 length, bytes

Older files are read too: V1 (magic 0xF993FAC8, no stype) and the first format (no
magic: the record starts with a uint32 ndim followed by uint32 dims). As MXNet 1.9.1 does,
byte for byte, we write V3 records under NumPy shape semantics (``mx.np_shape(True)``) and
V2 records otherwise, except for 0-d arrays, which legacy shapes cannot express: those get
V3 in both. As in MXNet, a zero-size array saved under one semantics does not load under
the other (MXNet refuses every record of the other semantics; we refuse only those whose
shape holds a 0, the dimension the two semantics read differently). Loaded arrays are
placed on the CPU.

Two corner cases differ from MXNet's reader: a V2 record with ndim 0 (which MXNet 1.9.1
writes for a 0-d array but then cannot read back) is read as a 0-d array, and a record
with an unknown shape (an uninitialised NDArray) loads as an empty float32 array of
shape ``(0,)``.
"""
from __future__ import annotations

import math
import os
import struct
import sys
from collections.abc import Iterator

import numpy as np
import torch

from ..base import FLAG_TO_NAME, NAME_TO_FLAG, NAME_TO_TORCH, TORCH_TO_NAME, FileFormatError
from ..fileio import atomic_write
from ..sparse import formats
from ..util import is_np_shape
from .ndarray import NDArray
from .sparse_array import wrap

LIST_MAGIC = 0x112
V1_MAGIC = 0xF993FAC8
V2_MAGIC = 0xF993FAC9
V3_MAGIC = 0xF993FACA
_STYPES = {-1: "undefined", 0: "default", 1: "row_sparse", 2: "csr"}
_STYPE_IDS = {"row_sparse": 1, "csr": 2}
_DEV_TYPES = (1, 2, 3, 5)  # cpu, gpu, cpu_pinned, cpu_shared
_MAX_NDIM = 32


class ParamsFormatError(FileFormatError):
    """A ``.params`` file is truncated or corrupt, or holds arrays symgraph cannot load."""


# ---------------------------------------------------------------------------- saving
def save(fname: str | os.PathLike, data) -> None:
    """Save an NDArray, a list of NDArrays or a dict of name -> NDArray to ``fname``.

    The file is written to a temporary file in the same directory, synced and renamed,
    so a failed save never leaves a partial file behind. Dict order is kept.

    Parameters
    ----------
    fname : str or os.PathLike
        Destination path.
    data : NDArray, list of NDArray or dict of str to NDArray

    Examples
    --------
    >>> import os, tempfile
    >>> from symgraph import ndarray as nd
    >>> path = os.path.join(tempfile.mkdtemp(), 'net.params')
    >>> nd.save(path, {'w': nd.ones((2, 2)), 'b': nd.zeros(2)})
    >>> sorted(nd.load(path))
    ['b', 'w']
    >>> nd.save(path, [1, 2])
    Traceback (most recent call last):
    ...
    ValueError: data needs to either be a NDArray, dict of str, NDArray pairs or a list of \
NDarrays.
    """
    atomic_write(_path(fname), encode(data))


def encode(data) -> list[bytes | memoryview]:
    """The chunks of the ``.params`` file of ``data`` (what :func:`save` writes).

    >>> from symgraph import ndarray as nd
    >>> nd.load_frombuffer(b''.join(encode({'w': nd.ones((2,))})))['w'].asnumpy()
    array([1., 1.], dtype=float32)
    """
    return list(_encode(*_normalize(data)))


def save_raw(array: NDArray) -> bytes:
    """One array's record as MXNet serialises a single NDArray (``MXNDArraySaveRawBytes``,
    what pickling an NDArray stores).

    >>> from symgraph import ndarray as nd
    >>> load_raw(save_raw(nd.ones((2,)))).asnumpy()
    array([1., 1.], dtype=float32)
    """
    return b"".join(bytes(chunk) for chunk in _array_chunks(array))


def load_raw(buf: bytes | bytearray | memoryview) -> NDArray:
    """The array of one record written by :func:`save_raw` (or by MXNet's pickling); the
    record is validated like a ``.params`` file's."""
    r = _Reader(memoryview(buf), "<pickled NDArray>")
    array = _read_array(r, 0)
    if r.pos != len(r.buf):
        raise r.error(f"{len(r.buf) - r.pos} unexpected bytes after the array")
    return array


def _path(fname) -> str:
    if not isinstance(fname, (str, os.PathLike)):
        raise TypeError(f"fname required to be a string or os.PathLike, got {type(fname)}")
    return os.fspath(fname)


def _normalize(data) -> tuple[list[NDArray], list[str]]:
    if isinstance(data, NDArray):
        return [data], []
    if isinstance(data, dict):
        if all(isinstance(k, str) and isinstance(v, NDArray) for k, v in data.items()):
            return list(data.values()), list(data.keys())
    elif isinstance(data, (list, tuple)) and all(isinstance(v, NDArray) for v in data):
        return list(data), []
    raise ValueError("data needs to either be a NDArray, dict of str, NDArray pairs "
                     "or a list of NDarrays.")


def _encode(arrays: list[NDArray], names: list[str]) -> Iterator[bytes | memoryview]:
    yield struct.pack("<QQQ", LIST_MAGIC, 0, len(arrays))
    for array in arrays:
        yield from _array_chunks(array)
    yield struct.pack("<Q", len(names))
    for name in names:
        raw = name.encode("utf-8")
        yield struct.pack("<Q", len(raw)) + raw


def _array_chunks(array: NDArray) -> Iterator[bytes | memoryview]:
    if not array._is_sparse:
        yield _array_header(array._t)
        yield _array_payload(array._t)
        return
    value = array._value
    aux = value.aux()
    t = value.data
    dev_type, dev_id = (2, t.device.index or 0) if t.is_cuda else (1, 0)
    head = [struct.pack("<Ii", V3_MAGIC if is_np_shape() else V2_MAGIC, _STYPE_IDS[value.stype]),
            _tshape(t.shape), _tshape(value.shape),
            struct.pack("<iii", dev_type, dev_id, NAME_TO_FLAG[TORCH_TO_NAME[t.dtype]])]
    head += [struct.pack("<i", NAME_TO_FLAG[TORCH_TO_NAME[a.dtype]]) + _tshape(a.shape)
             for a in aux]
    yield b"".join(head)
    yield _array_payload(t)
    for a in aux:
        yield _array_payload(a)


def _tshape(shape) -> bytes:
    return struct.pack(f"<i{len(shape)}q", len(shape), *shape)


def _array_header(t: torch.Tensor) -> bytes:
    shape = tuple(t.shape)
    numpy_record = is_np_shape() or not shape  # legacy shapes cannot express a 0-d array
    dev_type, dev_id = (2, t.device.index or 0) if t.is_cuda else (1, 0)
    flag = NAME_TO_FLAG[TORCH_TO_NAME[t.dtype]]
    return struct.pack(f"<Iii{len(shape)}qiii", V3_MAGIC if numpy_record else V2_MAGIC, 0,
                       len(shape), *shape, dev_type, dev_id, flag)


def _array_payload(t: torch.Tensor) -> memoryview:
    t = t.detach().to("cpu").contiguous()
    arr = t.view(torch.int16).numpy() if t.dtype == torch.bfloat16 else t.numpy()
    if sys.byteorder == "big":
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    return memoryview(np.ascontiguousarray(arr).reshape(-1).view(np.uint8))


# ---------------------------------------------------------------------------- loading
def load(fname: str | os.PathLike) -> list[NDArray] | dict[str, NDArray]:
    """Load arrays saved by :func:`save` or by MXNet's ``nd.save``.

    Returns a list when the file holds no names, else a dict in file order. Arrays are
    loaded on the CPU. Pickles are never read.

    Examples
    --------
    >>> import os, tempfile
    >>> from symgraph import ndarray as nd
    >>> path = os.path.join(tempfile.mkdtemp(), 'x.params')
    >>> nd.save(path, [nd.array([1, 2], dtype='int64')])
    >>> nd.load(path)
    [
    [1 2]
    <NDArray 2 @cpu(0)>]
    >>> with open(path, 'r+b') as f:
    ...     _ = f.truncate(40)
    >>> nd.load(path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symgraph.ndarray.io.ParamsFormatError: ...x.params: truncated file: ...
    """
    path = _path(fname)
    with open(path, "rb") as f:
        buf = f.read()
    return _decode(memoryview(buf), path)


def load_frombuffer(buf: bytes | bytearray | memoryview) -> list[NDArray] | dict[str, NDArray]:
    """Load arrays from the bytes of a ``.params`` file (MXNet's ``nd.load_frombuffer``).

    >>> from symgraph import ndarray as nd
    >>> nd.load_frombuffer(b'not a params file')
    Traceback (most recent call last):
    ...
    symgraph.ndarray.io.ParamsFormatError: <buffer>: not an MXNet NDArray file (header magic \
0x6170206120746f6e, expected 0x112)
    """
    if not isinstance(buf, (bytes, bytearray, memoryview)):
        raise TypeError(f"buf must be bytes-like, got {type(buf)}")
    return _decode(memoryview(buf).cast("B"), "<buffer>")


class _Reader:
    """Sequential little-endian reads that name the file and field when they fail."""

    def __init__(self, buf: memoryview, source: str):
        self.buf, self.source, self.pos = buf, source, 0

    def error(self, message: str) -> ParamsFormatError:
        return ParamsFormatError(f"{self.source}: {message}")

    def read(self, n: int, what: str) -> memoryview:
        left = len(self.buf) - self.pos
        if n > left:
            raise self.error(f"truncated file: reading {what} needs {n} bytes at offset "
                             f"{self.pos}, {left} left")
        self.pos += n
        return self.buf[self.pos - n:self.pos]

    def unpack(self, fmt: str, what: str) -> tuple:
        return struct.unpack("<" + fmt, self.read(struct.calcsize("<" + fmt), what))

    def shape(self, what: str, legacy_ndim: int | None = None) -> tuple[int, ...] | None:
        """A TShape (int32 ndim, int64 dims), or the first format's uint32 dims."""
        if legacy_ndim is not None:
            return self.unpack(f"{legacy_ndim}I", f"{what} shape")
        (ndim,) = self.unpack("i", f"{what} ndim")
        if ndim == -1:
            return None  # unknown shape: an uninitialised NDArray
        if not 0 <= ndim <= _MAX_NDIM:
            raise self.error(f"{what} has an invalid ndim {ndim}")
        dims = self.unpack(f"{ndim}q", f"{what} shape")
        if -1 in dims:
            return None
        if any(d < 0 for d in dims):
            raise self.error(f"{what} has an invalid shape {dims}")
        return dims


def _decode(buf: memoryview, source: str) -> list[NDArray] | dict[str, NDArray]:
    r = _Reader(buf, source)
    (magic,) = r.unpack("Q", "the header")
    if magic != LIST_MAGIC:
        raise r.error(f"not an MXNet NDArray file (header magic 0x{magic:x}, expected "
                      f"0x{LIST_MAGIC:x})")
    r.unpack("Q", "the reserved field")
    (count,) = r.unpack("Q", "the array count")
    if count > (len(buf) - r.pos) // 4:
        raise r.error(f"corrupt file: it claims {count} arrays but only "
                      f"{len(buf) - r.pos} bytes follow")
    arrays = [_read_array(r, i) for i in range(count)]
    names = _read_names(r, count)
    if not names:
        return arrays
    return dict(zip(names, arrays))


def _read_array(r: _Reader, i: int) -> NDArray:
    what = f"array {i}"
    (magic,) = r.unpack("I", f"{what} magic")
    if magic in (V2_MAGIC, V3_MAGIC):
        (stype,) = r.unpack("i", f"{what} storage type")
        if stype in (1, 2):
            return _read_sparse(r, what, _STYPES[stype])
        if stype != 0:
            raise r.error(f"{what} has an unknown storage type {stype}")
        shape = r.shape(what)
    elif magic == V1_MAGIC:
        shape = r.shape(what)
    elif magic <= _MAX_NDIM:  # the first format: no magic, the record starts with ndim
        shape = r.shape(what, legacy_ndim=magic)
    else:
        raise r.error(f"{what} has an unknown magic number 0x{magic:08x} at offset {r.pos - 4}")
    if shape is None:
        return NDArray(torch.empty(0))
    _check_semantics(r, what, magic, shape)
    dev_type, _dev_id, flag = r.unpack("iii", f"{what} context and dtype")
    if dev_type not in _DEV_TYPES:
        raise r.error(f"{what} has an invalid device type {dev_type}")
    if flag not in FLAG_TO_NAME:
        raise r.error(f"{what} has an unsupported type flag {flag}")
    name = FLAG_TO_NAME[flag]
    count = math.prod(shape)
    itemsize = NAME_TO_TORCH[name].itemsize
    raw = r.read(count * itemsize, f"{what} data ({count} x {name})")
    return NDArray(_tensor_from_bytes(raw, name, shape))


def _read_sparse(r: _Reader, what: str, stype: str) -> NDArray:
    """A row_sparse or csr record, validated (shapes agree, indices in range) before use."""
    storage = r.shape(f"{what} storage")
    shape = r.shape(what)
    if storage is None or shape is None:
        raise r.error(f"{what}: a {stype} record needs known shapes")
    dev_type, _dev_id, flag = r.unpack("iii", f"{what} context and dtype")
    if dev_type not in _DEV_TYPES:
        raise r.error(f"{what} has an invalid device type {dev_type}")
    n_aux = 1 if stype == "row_sparse" else 2
    specs = [(flag, storage)]
    for k in range(n_aux):
        (aux_flag,) = r.unpack("i", f"{what} aux {k} type")
        specs.append((aux_flag, r.shape(f"{what} aux {k}")))
    arrays = []
    for k, (f, s) in enumerate(specs):
        if f not in FLAG_TO_NAME or s is None:
            raise r.error(f"{what} part {k} has an unsupported type flag {f} or shape {s}")
        name = FLAG_TO_NAME[f]
        count = math.prod(s)
        raw = r.read(count * NAME_TO_TORCH[name].itemsize, f"{what} part {k} ({count} x {name})")
        arrays.append(_tensor_from_bytes(raw, name, s))
    try:
        value = _sparse_value(stype, arrays, tuple(shape))
        formats.check_format(value, full_check=True)
    except (formats.SparseFormatError, ValueError, RuntimeError) as err:
        raise r.error(f"{what}: invalid {stype} array: {err}") from None
    return wrap(value)


def _sparse_value(stype: str, arrays: list[torch.Tensor], shape: tuple):
    if any(a.dtype != torch.int64 for a in arrays[1:]):
        raise ValueError("aux arrays must be int64")
    if stype == "row_sparse":
        data, indices = arrays
        if len(shape) < 1 or data.dim() != len(shape):
            raise ValueError(f"values of shape {tuple(data.shape)} for shape {shape}")
        return formats.RowSparse(data, indices, shape)
    data, indptr, indices = arrays
    if len(shape) != 2:
        raise ValueError(f"a csr array is 2-D, got shape {shape}")
    return formats.CSR(data, indices, indptr, shape)


def _check_semantics(r: _Reader, what: str, magic: int, shape: tuple) -> None:
    """Refuse a zero-size shape saved under the other shape semantics, as MXNet does."""
    if 0 not in shape or (magic == V3_MAGIC) == is_np_shape():
        return
    if magic == V3_MAGIC:
        raise r.error(f"{what} of shape {shape} was saved in NumPy shape semantics and must "
                      "be loaded in the same semantics: turn it on with "
                      "`with mx.np_shape(True)` around the load")
    raise r.error(f"{what} of shape {shape} was not saved in NumPy shape semantics (a 0 is an "
                  "unknown dimension there) but is loaded in NumPy shape semantics: turn it "
                  "off with `with mx.np_shape(False)` around the load")


def _tensor_from_bytes(raw: memoryview, name: str, shape: tuple) -> torch.Tensor:
    if name == "bfloat16":
        arr = np.frombuffer(raw, dtype="<i2").astype(np.int16)
        return torch.from_numpy(arr).view(torch.bfloat16).reshape(shape)
    arr = np.frombuffer(raw, dtype=np.dtype(name).newbyteorder("<")).astype(name)
    return torch.from_numpy(arr).reshape(shape)


def _read_names(r: _Reader, count: int) -> list[str]:
    (n,) = r.unpack("Q", "the name count")
    if n not in (0, count):
        raise r.error(f"corrupt file: {count} arrays but {n} names")
    names = []
    for i in range(n):
        (length,) = r.unpack("Q", f"the length of name {i}")
        raw = r.read(length, f"name {i}")
        try:
            names.append(bytes(raw).decode("utf-8"))
        except UnicodeDecodeError as err:
            raise r.error(f"name {i} is not valid UTF-8") from err
    return names
