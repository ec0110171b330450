"""RecordIO files (MXNet 1.9.1's ``mx.recordio``), byte-compatible with MXNet's.

A ``.rec`` file is a sequence of records. Each record is one or more parts; a part is the
little-endian magic ``0xced7230a``, a 32-bit ``lrecord`` (continuation flag in the top 3
bits, part length in the low 29) and the part's bytes, zero-padded to a multiple of 4.
A payload holding the magic at a 4-byte-aligned offset is cut there into parts (flag 1:
first, 2: middle, 3: last; 0: whole record) and the magic is put back when reading. An
``.idx`` file lists ``key<TAB>byte offset`` per line. Image records start with an
``IRHeader`` (``struct 'IfQQ'``: flag, label, id, id2); with ``flag > 0`` the header's
label is 0 and ``flag`` float32 labels follow it.

Writers write to a temporary sibling renamed over the target on ``close`` (or when the
object is deleted), so a crash never leaves a half-written file under the target's name.
A truncated or corrupt file raises :class:`RecordIOError` naming the file and offset.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), 'a.rec')
>>> w = MXRecordIO(path, 'w'); w.write(b'record_0'); w.write(b'rec1'); w.close()
>>> r = MXRecordIO(path, 'r'); r.read(), r.read(), r.read()
(b'record_0', b'rec1', None)
"""
from __future__ import annotations

import numbers
import os
import secrets
import struct
from collections import namedtuple
from multiprocessing import current_process

import numpy as np

from .base import FileFormatError, MXNetError
from .fileio import fsync_dir, remove_stale_temps

__all__ = ["IRHeader", "MXIndexedRecordIO", "MXRecordIO", "RecordIOError", "pack",
           "pack_img", "unpack", "unpack_img"]

MAGIC = 0xCED7230A
_MAGIC_BYTES = struct.pack("<I", MAGIC)
_HEAD = struct.Struct("<II")
_MAX_LEN = 1 << 29


class RecordIOError(FileFormatError):
    """A ``.rec``/``.idx`` file is truncated or corrupt (the message names file and offset)."""


def encode_parts(buf: bytes) -> bytes:
    """The bytes MXNet's ``RecordIOWriter`` writes for one record holding ``buf``.

    >>> encode_parts(b'abcde').hex()
    '0a23d7ce050000006162636465000000'
    """
    size = len(buf)
    if size >= _MAX_LEN:
        raise MXNetError(f"RecordIO only accepts records under 2^29 bytes, got {size}")
    out, start = [], 0
    pos = buf.find(_MAGIC_BYTES)
    while pos != -1:
        if pos % 4 == 0:
            flag = 1 if start == 0 else 2
            out += [_MAGIC_BYTES, struct.pack("<I", (flag << 29) | (pos - start)),
                    buf[start:pos]]
            start = pos + 4
            pos = buf.find(_MAGIC_BYTES, start)
        else:
            pos = buf.find(_MAGIC_BYTES, pos + 1)
    flag = 3 if start else 0
    out += [_MAGIC_BYTES, struct.pack("<I", (flag << 29) | (size - start)), buf[start:],
            b"\0" * (-size % 4)]
    return b"".join(out)


def decode_record(f, path: str) -> bytes | None:
    """The next record of the open binary file ``f`` (``None`` at its end)."""
    parts = []
    while True:
        offset = f.tell()
        head = f.read(8)
        if not head and not parts:
            return None
        if len(head) != 8:
            raise RecordIOError(f"{path}: truncated record header at byte offset {offset}")
        magic, lrec = _HEAD.unpack(head)
        if magic != MAGIC:
            raise RecordIOError(f"{path}: invalid RecordIO magic 0x{magic:08x} at byte offset "
                                f"{offset} (expected 0x{MAGIC:08x})")
        flag, length = lrec >> 29, lrec & (_MAX_LEN - 1)
        if flag > 3 or (parts and flag in (0, 1)) or (not parts and flag in (2, 3)):
            raise RecordIOError(f"{path}: invalid part flag {flag} at byte offset {offset}")
        data = f.read(length + (-length % 4))
        if len(data) < length + (-length % 4):
            raise RecordIOError(f"{path}: record at byte offset {offset} is truncated: its "
                                f"header says {length} bytes, {len(data)} remain")
        parts.append(data[:length])
        if flag in (0, 3):
            return _MAGIC_BYTES.join(parts)


class MXRecordIO:
    """Reads or writes a RecordIO file sequentially (MXNet's ``mx.recordio.MXRecordIO``).

    Parameters
    ----------
    uri : str
        Path to the record file.
    flag : str
        'w' for write or 'r' for read.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), 'tmp.rec')
    >>> record = MXRecordIO(path, 'w')
    >>> for i in range(3):
    ...     record.write(b'record_%d' % i)
    >>> record.close()
    >>> record = MXRecordIO(path, 'r')
    >>> [record.read() for _ in range(2)]
    [b'record_0', b'record_1']
    >>> record.reset(); record.read()
    b'record_0'
    """

    def __init__(self, uri, flag: str):
        self.uri = os.fspath(uri)
        self.flag = flag
        self.pid = None
        self.is_open = False
        self._file = None
        self._tmp = None
        self.open()

    def open(self) -> None:
        """Opens the record file (a writer starts an empty temporary sibling)."""
        if self.flag == "w":
            remove_stale_temps(self.uri)
            directory, base = os.path.split(os.path.abspath(self.uri))
            self._tmp = os.path.join(directory,
                                     f".{base}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
            self._file = self._open_file(self._tmp, "wb")
            self.writable = True
        elif self.flag == "r":
            self._file = self._open_file(self.uri, "rb")
            self.writable = False
        else:
            raise ValueError(f"Invalid flag {self.flag}")
        self.pid = current_process().pid
        self.is_open = True

    @staticmethod
    def _open_file(path: str, mode: str):
        try:
            return open(path, mode)  # held open until close()
        except OSError as err:
            raise MXNetError(f'RecordIO: cannot open "{path}" ({mode}): {err.strerror}') from err

    def __del__(self):
        if getattr(self, "_file", None) is not None:
            try:  # a writer dropped without close() still lands its file, as MXNet's does
                self.close()
            except (OSError, AttributeError, TypeError):
                pass  # interpreter shutdown: modules may already be gone

    def __getstate__(self) -> dict:
        """Pickled state: the path and flag, no file handle (reopened on unpickling)."""
        is_open = self.is_open
        self.close()
        state = {k: v for k, v in self.__dict__.items() if k not in ("_file", "_tmp")}
        state["is_open"] = is_open
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._file = self._tmp = None
        self.is_open = False
        if state["is_open"]:
            self.open()

    def _check_pid(self, allow_reset: bool = False) -> None:
        """Reopen in a forked process (when allowed), else refuse."""
        if self.pid != current_process().pid:
            if allow_reset:
                self.reset()
            else:
                raise RuntimeError("Forbidden operation in multiple processes")

    def close(self) -> None:
        """Closes the record file; a writer's file then appears under its name."""
        if not self.is_open:
            return
        f, self._file = self._file, None
        self.is_open = False
        self.pid = None
        if self.writable:
            f.flush()
            os.fsync(f.fileno())
            f.close()
            os.replace(self._tmp, self.uri)
            fsync_dir(os.path.dirname(os.path.abspath(self.uri)))
            self._tmp = None
        else:
            f.close()

    def reset(self) -> None:
        """Back to the first record (a writer starts the file again, empty)."""
        if self.is_open and self.writable:
            self._file.close()
            os.unlink(self._tmp)
            self.is_open = False
        self.close()
        self.open()

    def write(self, buf: bytes) -> None:
        """Appends ``buf`` as one record."""
        assert self.writable
        self._check_pid(allow_reset=False)
        self._file.write(encode_parts(bytes(buf)))

    def read(self) -> bytes | None:
        """The next record, or ``None`` after the last."""
        assert not self.writable
        self._check_pid(allow_reset=False)
        return decode_record(self._file, self.uri)


class MXIndexedRecordIO(MXRecordIO):
    """A RecordIO file with an index for random access (``mx.recordio.MXIndexedRecordIO``).

    Parameters
    ----------
    idx_path : str
        Path to the index file (``key<TAB>offset`` lines).
    uri : str
        Path to the record file.
    flag : str
        'w' for write or 'r' for read.
    key_type : type
        Type of the keys.

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> record = MXIndexedRecordIO(os.path.join(d, 'a.idx'), os.path.join(d, 'a.rec'), 'w')
    >>> for i in range(3):
    ...     record.write_idx(i, b'record_%d' % i)
    >>> record.tell()
    48
    >>> record.close()
    >>> record = MXIndexedRecordIO(os.path.join(d, 'a.idx'), os.path.join(d, 'a.rec'), 'r')
    >>> record.keys, record.read_idx(2)
    ([0, 1, 2], b'record_2')
    """

    def __init__(self, idx_path, uri, flag: str, key_type=int):
        self.idx_path = os.fspath(idx_path)
        self.idx: dict = {}
        self.keys: list = []
        self.key_type = key_type
        self._idx_lines: list[str] = []
        super().__init__(uri, flag)

    def open(self) -> None:
        super().open()
        self.idx, self.keys, self._idx_lines = {}, [], []
        if not self.writable:
            self._read_index()

    def _read_index(self) -> None:
        try:
            with open(self.idx_path) as f:
                lines = f.read().splitlines()
        except OSError as err:
            raise MXNetError(f'RecordIO: cannot open index "{self.idx_path}": '
                             f"{err.strerror}") from err
        size = os.path.getsize(self.uri)
        for number, line in enumerate(lines, 1):
            fields = line.strip().split("\t")
            if fields == [""]:
                continue
            try:
                key, pos = self.key_type(fields[0]), int(fields[1])
            except (ValueError, IndexError) as err:
                raise RecordIOError(f"{self.idx_path}: line {number} is not 'key<TAB>offset': "
                                    f"{line!r}") from err
            if not 0 <= pos < size:
                raise RecordIOError(f"{self.idx_path}: line {number}: offset {pos} is outside "
                                    f"{self.uri} ({size} bytes)")
            self.idx[key] = pos
            self.keys.append(key)

    def close(self) -> None:
        """Closes the record file and writes the index (atomically)."""
        if not self.is_open:
            return
        writable = self.writable
        super().close()
        if writable:
            from .fileio import atomic_write
            atomic_write(self.idx_path, "".join(self._idx_lines).encode())

    def seek(self, idx) -> None:
        """Moves the read position to the record of key ``idx``."""
        assert not self.writable
        self._check_pid(allow_reset=True)
        if idx not in self.idx:
            raise KeyError(idx)
        self._file.seek(self.idx[idx])

    def tell(self) -> int:
        """The byte offset the next record will be written at."""
        assert self.writable
        return self._file.tell()

    def read_idx(self, idx) -> bytes:
        """The record of key ``idx``."""
        self.seek(idx)
        return self.read()

    def write_idx(self, idx, buf: bytes) -> None:
        """Appends ``buf`` as the record of key ``idx``."""
        key = self.key_type(idx)
        pos = self.tell()
        self.write(buf)
        self._idx_lines.append(f"{key}\t{pos}\n")
        self.idx[key] = pos
        self.keys.append(key)


IRHeader = namedtuple("HEADER", ["flag", "label", "id", "id2"])
IRHeader.__doc__ = """The header of an image record: ``flag`` (the number of float32 labels
that follow when > 0), ``label`` (a number, or an array when ``flag > 0``), ``id``, ``id2``."""

_IR_FORMAT = "IfQQ"
_IR_SIZE = struct.calcsize(_IR_FORMAT)


def pack(header, s: bytes) -> bytes:
    """Packs ``s`` behind an image-record header (MXNet's ``mx.recordio.pack``).

    An array label is written after the header, whose ``flag`` becomes its length.

    >>> packed = pack(IRHeader(0, [1, 2], 7, 0), b'img')
    >>> len(packed), unpack(packed)[0].flag, unpack(packed)[1]
    (35, 2, b'img')
    """
    header = IRHeader(*header)
    if isinstance(header.label, numbers.Number):
        header = header._replace(flag=0)
    else:
        label = np.asarray(header.label, dtype=np.float32)
        header = header._replace(flag=label.size, label=0)
        s = label.tobytes() + bytes(s)
    return struct.pack(_IR_FORMAT, *header) + bytes(s)


def unpack(s: bytes):
    """The header and payload of an image record (MXNet's ``mx.recordio.unpack``).

    >>> unpack(pack(IRHeader(0, 3.5, 12, 0), b'x'))
    (HEADER(flag=0, label=3.5, id=12, id2=0), b'x')
    """
    if len(s) < _IR_SIZE:
        raise RecordIOError(f"image record of {len(s)} bytes is shorter than its "
                            f"{_IR_SIZE}-byte header")
    header = IRHeader(*struct.unpack(_IR_FORMAT, s[:_IR_SIZE]))
    s = s[_IR_SIZE:]
    if header.flag > 0:
        if len(s) < 4 * header.flag:
            raise RecordIOError(f"image record header says {header.flag} labels, but only "
                                f"{len(s)} bytes follow it")
        header = header._replace(label=np.frombuffer(s, np.float32, header.flag))
        s = s[header.flag * 4:]
    return header, s


def unpack_img(s: bytes, iscolor: int = -1):
    """The header and the image (``cv2.imdecode``, BGR) of an image record.

    >>> img = np.zeros((4, 6, 3), np.uint8)
    >>> header, out = unpack_img(pack_img(IRHeader(0, 1.0, 0, 0), img, img_fmt='.png'))
    >>> out.shape, header.label
    ((4, 6, 3), 1.0)
    """
    import cv2
    header, s = unpack(s)
    img = cv2.imdecode(np.frombuffer(s, dtype=np.uint8), iscolor)
    if img is None:
        raise RecordIOError(f"image record id={header.id}: payload of {len(s)} bytes is not "
                            "an image OpenCV can decode")
    return header, img


def pack_img(header, img: np.ndarray, quality: int = 95, img_fmt: str = ".jpg") -> bytes:
    """Encodes ``img`` (BGR, ``cv2.imencode``) and packs it (``mx.recordio.pack_img``).

    ``quality`` is the JPEG quality (1-100) or the PNG compression level (0-9).

    >>> len(unpack(pack_img(IRHeader(0, 0.0, 0, 0), np.zeros((8, 8), np.uint8)))[1]) > 0
    True
    """
    import cv2
    params = None
    if img_fmt.upper() in (".JPG", ".JPEG"):
        params = [cv2.IMWRITE_JPEG_QUALITY, quality]
    elif img_fmt.upper() == ".PNG":
        params = [cv2.IMWRITE_PNG_COMPRESSION, quality]
    ok, buf = cv2.imencode(img_fmt, img, params)
    if not ok:
        raise MXNetError(f"pack_img: failed to encode image of shape {img.shape} as {img_fmt}")
    return pack(header, buf.tobytes())
