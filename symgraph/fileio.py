"""Crash-safe file writing: the one implementation every saver uses.

:func:`atomic_write` writes to a temporary sibling named after the target and this process
(``.<name>.tmp-<pid>-<random>``), fsyncs it, renames it over the target and fsyncs the
directory, so after a crash or a SIGKILL the target holds either the old or the new
contents, durably. The file's mode follows the umask (``0o666 & ~umask``), as ``open``
would give it, whether or not the target existed. Temporary files left by killed writers
(their pid is gone) are removed by the next write to the same target.
"""
from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterable

_TMP_TAG = ".tmp-"


def atomic_write(fname: str | os.PathLike, data: bytes | Iterable[bytes | memoryview]) -> None:
    """Write ``data`` (bytes or an iterable of chunks) to ``fname`` atomically and durably.

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp(); path = os.path.join(d, 'a.json')
    >>> atomic_write(path, b'{}'); atomic_write(path, [b'{"a":', b' 1}'])
    >>> open(path).read(), os.listdir(d)
    ('{"a": 1}', ['a.json'])
    """
    path = os.fspath(fname)
    directory, base = os.path.split(os.path.abspath(path))
    remove_stale_temps(path)
    tmp = os.path.join(directory, f".{base}{_TMP_TAG}{os.getpid()}-{secrets.token_hex(4)}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    fd = os.open(tmp, flags, 0o666)  # the umask applies, as for open(path, "wb")
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in [data] if isinstance(data, (bytes, bytearray, memoryview)) else data:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(directory)


def replace(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """``os.replace(src, dst)`` made durable (the directory is fsynced)."""
    os.replace(src, dst)
    fsync_dir(os.path.dirname(os.path.abspath(dst)))


def fsync_dir(directory: str) -> None:
    """Flush a directory's entries (renames, creations) to disk; a no-op where unsupported."""
    with contextlib.suppress(OSError, AttributeError):
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def remove_stale_temps(fname: str | os.PathLike) -> list[str]:
    """Delete the temporary files of writes to ``fname`` whose writer process is gone;
    returns their paths. Temps of live processes (other writers) are left alone."""
    directory, base = os.path.split(os.path.abspath(os.fspath(fname)))
    prefix = f".{base}{_TMP_TAG}"
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    removed = []
    for name in names:
        if not name.startswith(prefix):
            continue
        pid = name[len(prefix):].partition("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(directory, name))
                removed.append(os.path.join(directory, name))
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists (another user's) or cannot tell: keep its file
    return True
