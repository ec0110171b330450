"""The optimizer-states format that ``Updater.get_states``/``set_states`` read and write.

The states are saved without pickle (MXNet pickles them, and unpickling runs arbitrary
code): ``MAGIC``, an 8-byte little-endian header length, a JSON header and an ``.npz``
archive written by ``np.savez`` (stored, uncompressed members ``a<i>.npy``). The header
holds the state tree (None, numbers, strings and ``@tuple``/``@list``/``@dict``/``@nd``
nodes, ``@nd`` referring to an array of the archive) and, with ``dump_optimizer=True``,
the optimizer: its registered class name, its attributes (update counters and scheduler
included) and its current device.

A file is data: :func:`loads_states` checks everything before it builds anything, and
every failure is a :class:`StatesFormatError` naming the file and the key. It reads the
header only up to ``MAX_HEADER_BYTES`` and ``MAX_DEPTH`` levels of nesting; the archive
only when every member is stored (a deflated member could expand a small file into
gigabytes), declares no more bytes than the file holds, is referred to by the header and
holds a numeric array whose ``.npy`` header is the one ``np.save`` writes; the optimizer
only from the fields its class declares (``savable_fields``, see
:mod:`symgraph.optimizer.fields`), each checked by type and range.
"""
from __future__ import annotations

import io
import json
import math
import re
import struct
import zipfile
import zlib

import numpy as np

from ..base import FileFormatError
from ..ndarray import NDArray
from ..ndarray import array as _nd_array
from . import fields
from .optimizer import Optimizer

MAGIC = b"SYMGRAPH-OPTIMIZER-STATES\n"
FORMAT = "symgraph-optimizer-states"
VERSION = 1
MAX_HEADER_BYTES = 64 << 20
MAX_DEPTH = 32
_MAX_NDIM = 32
_NPY_MAGIC = b"\x93NUMPY"
_NPY_MAX_HEADER = 1 << 16
# the header np.save writes, exactly: no literal_eval of file data
_NPY_HEADER = re.compile(r"\{'descr': '([<|][a-z][0-9]{1,2})', 'fortran_order': (True|False), "
                         r"'shape': \(((?:[0-9]{1,19}(?:, [0-9]{1,19})*,?)?)\), \} *\n")
_NPY_DTYPES = {"<f2": "float16", "<f4": "float32", "<f8": "float64", "|u1": "uint8",
               "|i1": "int8", "<i2": "int16", "<i4": "int32", "<i8": "int64", "|b1": "bool"}
_MEMBER = re.compile(r"a(0|[1-9][0-9]{0,8})\.npy")
_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, struct.error, zlib.error, ValueError,
               OverflowError, EOFError, NotImplementedError, KeyError, IndexError, OSError)


class StatesFormatError(FileFormatError):
    """An optimizer-states file is truncated, corrupt or over a limit, or holds values its
    optimizer cannot take; the message names the file and the key."""


# ------------------------------------------------------------------------------ writing
class _Encoder:
    """JSON-able tree of a value; NDArrays go to ``self.arrays``."""

    def __init__(self):
        self.arrays: list[np.ndarray] = []

    def __call__(self, v):
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, np.generic):
            return v.item()
        if isinstance(v, NDArray):
            self.arrays.append(v.asnumpy())
            return {"@nd": len(self.arrays) - 1}
        if isinstance(v, (tuple, list)):
            return {"@tuple" if isinstance(v, tuple) else "@list": [self(x) for x in v]}
        if isinstance(v, dict):
            return {"@dict": [[self(k), self(x)] for k, x in v.items()]}
        if type(v) in fields.SCHEDULER_FIELDS:
            return {"@sched": type(v).__name__, "state": self(vars(v))}
        raise TypeError(f"cannot save optimizer state value of type {type(v).__name__} "
                        "(only numbers, strings, NDArrays, tuples, lists, dicts and the "
                        "schedulers of symgraph.lr_scheduler are saved)")


def _dump_optimizer(opt: Optimizer, enc: _Encoder) -> dict:
    name = type(opt).__name__.lower()
    if Optimizer.opt_registry.get(name) is not type(opt):
        raise TypeError(f"optimizer class {type(opt).__name__} is not registered; "
                        "register it with mx.optimizer.register to save it")
    attrs = {k: v for k, v in vars(opt).items()
             if k not in ("param_dict", "_index_update_count")}
    unknown = sorted(set(attrs) - set(fields.fields_of(type(opt))))
    if unknown:
        raise TypeError(f"cannot save attribute {unknown[0]!r} of optimizer "
                        f"{type(opt).__name__}: a states file sets only the fields its class "
                        "declares in savable_fields")
    current = next((dev for dev, counts in opt._all_index_update_counts.items()
                    if counts is opt._index_update_count), 0)
    return {"class": name, "attrs": enc(attrs), "current_context": current}


def dumps_states(states: dict, optimizer: Optimizer | None = None) -> bytes:
    """Serialize an updater's states (and optionally its optimizer) without pickle."""
    enc = _Encoder()
    header = {"format": FORMAT, "version": VERSION, "states": enc(states),
              "optimizer": None if optimizer is None else _dump_optimizer(optimizer, enc)}
    buf = io.BytesIO()
    np.savez(buf, **{f"a{i}": a for i, a in enumerate(enc.arrays)})
    head = json.dumps(header).encode("utf-8")
    return MAGIC + struct.pack("<Q", len(head)) + head + buf.getvalue()


# ------------------------------------------------------------------------------ reading
def read_header(blob, source: str) -> tuple[dict, bytes]:
    """The JSON header of a states blob (a dict) and the bytes after it."""
    if not isinstance(blob, (bytes, bytearray, memoryview)) \
            or bytes(blob[:len(MAGIC)]) != MAGIC:
        raise StatesFormatError(f"{source}: not a symgraph optimizer-states blob (MXNet's "
                                "pickled optimizer states are not read: see docs/compat.md, "
                                "'Training')")
    start = len(MAGIC) + 8
    if len(blob) < start:
        raise StatesFormatError(f"{source}: truncated in the header length")
    (size,) = struct.unpack_from("<Q", blob, len(MAGIC))
    if size > MAX_HEADER_BYTES:
        raise StatesFormatError(f"{source}: header length {size} is over the limit of "
                                f"{MAX_HEADER_BYTES} bytes")
    if size > len(blob) - start:
        raise StatesFormatError(f"{source}: header length {size} runs past the end of the "
                                f"file ({len(blob)} bytes)")
    try:
        header = json.loads(bytes(blob[start:start + size]).decode("utf-8"))
    except (ValueError, RecursionError) as err:  # JSONDecodeError, bad UTF-8, deep nesting
        raise StatesFormatError(f"{source}: header is not valid JSON ({err!s:.200})") from None
    if not isinstance(header, dict):
        raise StatesFormatError(f"{source}: header is not a JSON object")
    return header, bytes(blob[start + size:])


def with_checkpoint_meta(blob: bytes, meta: dict[str, str]) -> bytes:
    """``blob`` with ``meta`` (the params file it is saved with) recorded in its header."""
    header, rest = read_header(blob, "<states>")
    header["checkpoint"] = dict(meta)
    head = json.dumps(header).encode("utf-8")
    return MAGIC + struct.pack("<Q", len(head)) + head + rest


def checkpoint_meta(blob: bytes, source: str) -> dict[str, str] | None:
    """The pairing record of a states blob (None when it was saved alone)."""
    header, _ = read_header(blob, source)
    meta = header.get("checkpoint")
    if meta is None:
        return None
    if not (isinstance(meta, dict) and isinstance(meta.get("params_sha256"), str)):
        raise StatesFormatError(f"{source}: malformed checkpoint record in the header")
    return meta


def loads_states(blob, source: str = "<states>") -> tuple[dict, Optimizer | None]:
    """Read what :func:`dumps_states` wrote: ``(states, optimizer or None)``, validated.

    >>> loads_states(MAGIC + (1000).to_bytes(8, 'little') + b'{}', 'x.states')
    Traceback (most recent call last):
    ...
    symgraph.optimizer.states_file.StatesFormatError: x.states: header length 1000 runs past \
the end of the file (36 bytes)
    """
    header, rest = read_header(blob, source)
    _check_header(header, source)
    decode = _Decoder(_Archive(rest, source), source)
    states = decode.states(header["states"])
    desc = header["optimizer"]
    opt = None if desc is None else _load_optimizer(desc, decode, source)
    decode.archive.check_all_used(decode.used)
    return states, opt


_HEADER_KEYS = {"format", "version", "states", "optimizer"}
_OPTIONAL_KEYS = {"checkpoint"}  # symgraph.checkpoint's pairing record


def _check_header(header: dict, source: str) -> None:
    missing = sorted(_HEADER_KEYS - set(header))
    if missing:
        raise StatesFormatError(f"{source}: header has no {missing[0]!r}")
    unknown = sorted(set(header) - _HEADER_KEYS - _OPTIONAL_KEYS)
    if unknown:
        raise StatesFormatError(f"{source}: header has an unknown key {unknown[0]!r:.60}")
    if header["format"] != FORMAT:
        raise StatesFormatError(f"{source}: header format is {header['format']!r:.60}, not "
                                f"{FORMAT!r}")
    version = header["version"]
    if isinstance(version, bool) or not isinstance(version, int) or version != VERSION:
        raise StatesFormatError(f"{source}: unsupported optimizer-states version "
                                f"{version!r:.40}")
    meta = header.get("checkpoint")
    if meta is not None and not (isinstance(meta, dict) and all(
            isinstance(v, str) for v in meta.values())):
        raise StatesFormatError(f"{source}: header 'checkpoint' is not a dict of strings")


class _Archive:
    """The ``.npz`` part: stored members ``a<i>.npy`` within the file, each read on demand."""

    def __init__(self, data: bytes, source: str):
        self.source = source
        try:
            self.zip = zipfile.ZipFile(io.BytesIO(data))
            infos = self.zip.infolist()
        except _ZIP_ERRORS as err:
            raise self.error(f"the array archive is not a readable zip ({err!s:.200})") from None
        self.members: dict[str, zipfile.ZipInfo] = {}
        for info in infos:
            self._check_member(info, len(data))
            self.members[info.filename] = info

    def error(self, message: str) -> StatesFormatError:
        return StatesFormatError(f"{self.source}: {message}")

    def _check_member(self, info: zipfile.ZipInfo, size: int) -> None:
        name = info.filename
        if not _MEMBER.fullmatch(name) or name in self.members:
            raise self.error(f"unexpected or repeated archive member {name!r:.60}")
        if info.compress_type != zipfile.ZIP_STORED:
            raise self.error(f"archive member {name} is compressed (method "
                             f"{info.compress_type}); only stored members are read, so that "
                             "a small file cannot expand in memory")
        if info.flag_bits & 0x1:
            raise self.error(f"archive member {name} is encrypted")
        if info.file_size != info.compress_size or info.header_offset < 0 \
                or info.header_offset + info.compress_size > size:
            raise self.error(f"archive member {name} declares {info.file_size} bytes, more "
                             f"than the {size} bytes of the archive")

    def array(self, index: int, where: str) -> np.ndarray:
        """Array ``index`` (member ``a<index>.npy``), its CRC and ``.npy`` header checked."""
        info = self.members.get(f"a{index}.npy")
        if info is None:
            raise self.error(f"{where}: array {index} is not in the archive")
        try:
            raw = self.zip.read(info)
        except _ZIP_ERRORS as err:
            raise self.error(f"{where}: archive member {info.filename} is corrupt "
                             f"({err!s:.200})") from None
        return _parse_npy(raw, f"{where} ({info.filename})", self.error)

    def check_all_used(self, used: set) -> None:
        extra = sorted(set(self.members) - {f"a{i}.npy" for i in used})
        if extra:
            raise self.error(f"archive member {extra[0]} is not referred to by the header")


def _parse_npy(raw: bytes, where: str, error) -> np.ndarray:
    """The array of an ``.npy`` file as ``np.save`` writes it (numeric dtypes only)."""
    start = 10 if raw[6:7] == b"\x01" else 12  # format 1.0: 2-byte header length, else 4
    if len(raw) < start or raw[:6] != _NPY_MAGIC or raw[6] not in (1, 2, 3) or raw[7] != 0:
        raise error(f"{where}: not an .npy array")
    (hlen,) = struct.unpack_from("<H" if start == 10 else "<I", raw, 8)
    text = raw[start:start + min(hlen, _NPY_MAX_HEADER)].decode("latin-1")
    match = _NPY_HEADER.fullmatch(text) if hlen <= _NPY_MAX_HEADER else None
    if match is None:
        raise error(f"{where}: unreadable .npy header {text[:80]!r}")
    descr, fortran, dims_text = match.groups()
    dtype = _NPY_DTYPES.get(descr)
    if dtype is None:
        raise error(f"{where}: dtype {descr!r} is not a numeric dtype symgraph loads")
    dims = tuple(int(d) for d in dims_text.replace(",", " ").split())
    data = raw[start + hlen:]
    nbytes = math.prod(dims) * np.dtype(dtype).itemsize
    if len(dims) > _MAX_NDIM or nbytes != len(data):
        raise error(f"{where}: {len(data)} bytes of data for a {dtype} array of shape "
                    f"{dims if len(dims) <= _MAX_NDIM else f'of {len(dims)} dims'}")
    flat = np.frombuffer(data, dtype=dtype) if data else np.empty(0, dtype=dtype)
    return flat.reshape(dims, order="F" if fortran == "True" else "C")


def _kind(value) -> str:
    if isinstance(value, dict):
        return f"object with keys {sorted(map(str, value))[:4]}"
    return "JSON list" if isinstance(value, list) else type(value).__name__


class _Decoder:
    """Values from the header's tree: its grammar, depth and array references checked."""

    def __init__(self, archive: _Archive, source: str):
        self.archive, self.source, self.used = archive, source, set()

    def error(self, where: str, message: str) -> StatesFormatError:
        return StatesFormatError(f"{self.source}: {where}: {message}")

    def __call__(self, node, where: str, depth: int = 0):
        if depth > MAX_DEPTH:
            raise self.error(where, f"nested more than {MAX_DEPTH} levels deep")
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        keys = set(node) if isinstance(node, dict) else None
        if keys == {"@nd"}:
            return self._array(node["@nd"], where)
        if keys in ({"@tuple"}, {"@list"}):
            items = node.get("@tuple", node.get("@list"))
            if not isinstance(items, list):
                raise self.error(where, f"expected a list of items, got {_kind(items)}")
            out = [self(x, f"{where}[{i}]", depth + 1) for i, x in enumerate(items)]
            return tuple(out) if "@tuple" in keys else out
        if keys == {"@dict"}:
            return self._dict(node["@dict"], where, depth)
        if keys == {"@sched", "state"}:
            return fields.SavedScheduler(node["@sched"],
                                         self(node["state"], f"{where}.state", depth + 1))
        raise self.error(where, f"unexpected {_kind(node)}")

    def _array(self, ref, where: str) -> NDArray:
        if isinstance(ref, bool) or not isinstance(ref, int) or not 0 <= ref < 10 ** 9:
            raise self.error(where, f"array reference {ref!r:.40} is not an archive index")
        self.used.add(ref)
        arr = self.archive.array(ref, where)
        return _nd_array(arr, dtype=arr.dtype)

    def _dict(self, entries, where: str, depth: int) -> dict:
        if not isinstance(entries, list):
            raise self.error(where, f"expected a list of [key, value] pairs, got "
                                    f"{_kind(entries)}")
        out = {}
        for entry in entries:
            if not (isinstance(entry, list) and len(entry) == 2):
                raise self.error(where, "expected a [key, value] pair")
            key = entry[0]
            if isinstance(key, bool) or not isinstance(key, (int, str)):
                raise self.error(where, f"dict key {key!r:.40} is not an int or a string")
            out[key] = self(entry[1], f"{where}[{key!r:.40}]", depth + 1)
        return out

    def states(self, node) -> dict:
        """The ``states`` tree: index (int or string) -> nest of arrays, None, numbers."""
        states = self(node, "states")
        if not isinstance(states, dict):
            raise self.error("states", f"expected a dict of index -> state, got "
                                       f"{type(states).__name__}")
        for index, state in states.items():
            self._check_state(state, f"states[{index!r:.40}]")
        return states

    def _check_state(self, state, where: str) -> None:
        if isinstance(state, (tuple, list)):
            for i, part in enumerate(state):
                self._check_state(part, f"{where}[{i}]")
        elif isinstance(state, float) and not math.isfinite(state):
            raise self.error(where, f"{state} is not a finite number")
        elif not (state is None or isinstance(state, (NDArray, bool, int, float))):
            raise self.error(where, f"a state holds arrays, None, numbers, tuples and lists, "
                                    f"not {type(state).__name__}")


def _load_optimizer(desc, decode: _Decoder, source: str) -> Optimizer:
    """The optimizer the header describes, rebuilt from its validated fields only."""
    if not (isinstance(desc, dict) and set(desc) == {"class", "attrs", "current_context"}):
        raise StatesFormatError(f"{source}: optimizer: expected class, attrs and "
                                "current_context")
    name = desc["class"]
    klass = Optimizer.opt_registry.get(name) if isinstance(name, str) else None
    if klass is None:
        raise StatesFormatError(f"{source}: optimizer {name!r:.60} in the states is not "
                                "registered")
    attrs = decode(desc["attrs"], "optimizer.attrs")
    try:
        current = fields.count(desc["current_context"])
        values = fields.check_fields(attrs, fields.fields_of(klass), "optimizer field")
        fields.check_optimizer(values)
    except fields.FieldError as err:
        raise StatesFormatError(f"{source}: {klass.__name__} optimizer: {err}") from None
    opt = klass.__new__(klass)
    for key, value in values.items():  # validated values of declared fields only
        setattr(opt, key, value)
    opt.param_dict = {}
    opt._index_update_count = opt._all_index_update_counts.setdefault(current, {})
    return opt
