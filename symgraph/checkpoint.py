"""Checkpoints as one consistent save: MXNet's ``prefix-symbol.json`` and
``prefix-%04d.params``, plus symgraph's ``prefix-%04d.states``.

Each file is written atomically (:mod:`symgraph.fileio`), but no rename replaces two files
at once, so params and states are paired: the states header records the sha256 of the
params file they were saved with (``params_sha256``), and a save runs

1. states -> ``prefix-%04d.states.pending`` (complete and fsynced),
2. params -> ``prefix-%04d.params``,
3. ``.states.pending`` -> ``prefix-%04d.states``.

A kill between 2 and 3 leaves new params, old states and a complete pending file; loading
finds that the states' digest does not match the params, that the pending file's does, and
finishes the rename (roll forward). A loader never pairs params and states of different
saves: when no file matches it raises :class:`CheckpointError`. States files without a
pairing record (saved by ``save_optimizer_states`` alone) load as they are.
"""
from __future__ import annotations

import contextlib
import hashlib
import os

from . import fileio
from .base import FileFormatError
from .ndarray import io as nd_io
from .optimizer import states_file as _states


class CheckpointError(FileFormatError):
    """A checkpoint's files do not belong to the same save."""


def params_path(prefix: str, epoch: int) -> str:
    """``prefix-%04d.params``."""
    return f"{prefix}-{epoch:04d}.params"


def states_path(prefix: str, epoch: int) -> str:
    """``prefix-%04d.states``."""
    return f"{prefix}-{epoch:04d}.states"


def save(prefix: str, epoch: int, symbol, params: dict, states: bytes | None = None,
         remove_amp_cast: bool = True) -> None:
    """Write the symbol (if given), the ``arg:``/``aux:`` keyed ``params`` and, if given,
    the optimizer ``states`` blob paired with them (see the module docstring)."""
    if symbol is not None:
        symbol.save(f"{prefix}-symbol.json", remove_amp_cast=remove_amp_cast)
    chunks = nd_io.encode(params)
    ppath, spath = params_path(prefix, epoch), states_path(prefix, epoch)
    pending = spath + ".pending"
    if states is None:
        fileio.atomic_write(ppath, chunks)
        with contextlib.suppress(FileNotFoundError):  # a killed save's, now stale
            os.unlink(pending)
        return
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(chunk)
    meta = {"params_sha256": digest.hexdigest(), "params_file": os.path.basename(ppath)}
    fileio.atomic_write(pending, _states.with_checkpoint_meta(states, meta))
    fileio.atomic_write(ppath, chunks)
    fileio.replace(pending, spath)


def load_states(prefix: str, epoch: int) -> bytes:
    """The states blob saved with ``prefix-%04d.params``, finishing an interrupted save
    when its pending states match the params; :class:`CheckpointError` otherwise."""
    ppath, spath = params_path(prefix, epoch), states_path(prefix, epoch)
    pending = spath + ".pending"
    current = _read(spath)
    if current is not None:
        meta = _states.checkpoint_meta(current, spath)
        if meta is None:
            return current  # no pairing record: a bare save_optimizer_states file
        params_digest = _sha256(ppath)
        if meta["params_sha256"] == params_digest:
            return current
    else:
        params_digest = _sha256(ppath)
    staged = _read(pending)
    if staged is not None:
        meta = _states.checkpoint_meta(staged, pending)
        if meta is not None and meta["params_sha256"] == params_digest:
            try:
                fileio.replace(pending, spath)
            except OSError as err:
                raise CheckpointError(f"checkpoint {prefix!r} epoch {epoch}: cannot finish the "
                                      f"interrupted save ({pending!r} -> {spath!r}: {err})"
                                      ) from None
            return staged
    if current is None:
        raise CheckpointError(f"checkpoint {prefix!r} epoch {epoch}: no optimizer states "
                              f"file {spath!r}")
    raise CheckpointError(f"checkpoint {prefix!r} epoch {epoch}: {spath!r} was saved with "
                          f"another {os.path.basename(ppath)!r} than the one on disk (the "
                          "files come from different saves); refusing to pair them")


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
