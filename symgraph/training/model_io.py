"""Checkpoints of ``mx.model``: MXNet 1.x's ``prefix-symbol.json`` and ``prefix-%04d.params``.

``save_checkpoint``/``load_checkpoint`` write and read the ``arg:``/``aux:`` keyed layout
byte for byte as MXNet does, each file atomically (through :mod:`symgraph.checkpoint`).
:mod:`symgraph.model` re-exports everything here; this module sits below the training loop,
``FeedForward``, ``Module`` and ``mx.callback``, which all save or load checkpoints.

>>> import tempfile, os, symgraph as mx
>>> prefix = os.path.join(tempfile.mkdtemp(), 'net')
>>> save_checkpoint(prefix, 1, mx.sym.Variable('x') * 2, {'w': mx.nd.ones((2,))}, {})
>>> sym, args, auxs = load_checkpoint(prefix, 1)
>>> sym.list_arguments(), sorted(args), args.source.endswith('net-0001.params')
(['x'], ['w'], True)
"""
from __future__ import annotations

import logging

from .. import checkpoint
from ..base import MXNetError
from ..context import cpu
from ..distributed import one_writer
from ..ndarray import load as nd_load
from ..symbol import load as sym_load

__all__ = ["LoadedParams", "MissingParamError", "load_checkpoint", "load_params",
           "save_checkpoint"]


@one_writer
def save_checkpoint(prefix: str, epoch: int, symbol, arg_params: dict, aux_params: dict,
                    remove_amp_cast: bool = True) -> None:
    """Write ``prefix-symbol.json`` and ``prefix-%04d.params`` (each atomically; in a
    distributed job only rank 0 writes).

    >>> import tempfile, os, symgraph as mx
    >>> d = tempfile.mkdtemp(); net = mx.sym.Variable('x') * 2
    >>> save_checkpoint(os.path.join(d, 'net'), 3, net, {'w': mx.nd.ones((2,))}, {})
    >>> sorted(os.listdir(d))
    ['net-0003.params', 'net-symbol.json']
    """
    checkpoint.save(prefix, epoch, symbol, _checkpoint_dict(arg_params, aux_params),
                    remove_amp_cast=remove_amp_cast)
    logging.info('Saved checkpoint to "%s"', checkpoint.params_path(prefix, epoch))


def _checkpoint_dict(arg_params: dict, aux_params: dict) -> dict:
    """The ``arg:``/``aux:`` keyed CPU copies a ``.params`` checkpoint holds."""
    save_dict = {f"arg:{k}": v.as_in_context(cpu()) for k, v in arg_params.items()}
    save_dict.update({f"aux:{k}": v.as_in_context(cpu()) for k, v in aux_params.items()})
    return save_dict


class MissingParamError(MXNetError):
    """Values for some parameters are missing (a checkpoint without them, an ``arg_params``
    dict without ``allow_missing``); MXNet raises RuntimeError here."""


class LoadedParams(dict):
    """A dict of parameter values read from a file; ``source`` names the file, so errors
    about its entries (a missing parameter, a wrong shape) can say where they came from."""

    def __init__(self, source: str):
        super().__init__()
        self.source = source


def load_params(prefix: str, epoch: int) -> tuple[dict, dict]:
    """``(arg_params, aux_params)`` from ``prefix-%04d.params`` (:class:`LoadedParams`)."""
    fname = f"{prefix}-{epoch:04d}.params"
    save_dict = nd_load(fname)
    if not isinstance(save_dict, dict):
        raise MXNetError(f"Invalid param file {fname}: it holds an unnamed list of arrays")
    arg_params, aux_params = LoadedParams(fname), LoadedParams(fname)
    for key, value in save_dict.items():
        kind, _, name = key.partition(":")
        if kind == "arg":
            arg_params[name] = value
        elif kind == "aux":
            aux_params[name] = value
        else:
            raise MXNetError(f"Invalid param file {fname}: key {key!r} is not arg:/aux:")
    return arg_params, aux_params


def load_checkpoint(prefix: str, epoch: int):
    """``(symbol, arg_params, aux_params)`` saved by :func:`save_checkpoint` (or MXNet)."""
    symbol = sym_load(f"{prefix}-symbol.json")
    arg_params, aux_params = load_params(prefix, epoch)
    return symbol, arg_params, aux_params
