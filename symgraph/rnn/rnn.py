"""Checkpoints of networks built from RNN cells: weights saved unpacked (one array per gate,
readable by any cell layout) and packed again on load.

>>> import os, tempfile, symgraph as mx
>>> cell = mx.rnn.LSTMCell(1, prefix='l_')
>>> args = {'l_i2h_weight': mx.nd.ones((4, 3)), 'l_i2h_bias': mx.nd.zeros((4,)),
...         'l_h2h_weight': mx.nd.ones((4, 1)), 'l_h2h_bias': mx.nd.zeros((4,))}
>>> out, _ = cell.unroll(1, [mx.sym.Variable('x')])
>>> prefix = os.path.join(tempfile.mkdtemp(), 'lm')
>>> save_rnn_checkpoint(cell, prefix, 1, out[0], args, {})
>>> sorted(mx.nd.load(prefix + '-0001.params'))[:3]
['arg:l_h2h_c_bias', 'arg:l_h2h_c_weight', 'arg:l_h2h_f_bias']
>>> sym, arg, aux = load_rnn_checkpoint(cell, prefix, 1)
>>> sorted(arg) == sorted(args), arg['l_i2h_weight'].shape
(True, (4, 3))
"""
from __future__ import annotations

import warnings

from ..model import LoadedParams, MissingParamError, load_checkpoint, save_checkpoint
from .rnn_cell import BaseRNNCell

__all__ = ["rnn_unroll", "save_rnn_checkpoint", "load_rnn_checkpoint", "do_rnn_checkpoint"]


def rnn_unroll(cell: BaseRNNCell, length: int, inputs=None, begin_state=None,
               input_prefix: str = '', layout: str = 'NTC'):
    """Deprecated: call ``cell.unroll`` (``input_prefix`` is ignored)."""
    warnings.warn('rnn_unroll is deprecated. Please call cell.unroll directly.', stacklevel=2)
    return cell.unroll(length=length, inputs=inputs, begin_state=begin_state, layout=layout)


def _as_list(cells) -> list:
    return [cells] if isinstance(cells, BaseRNNCell) else list(cells)


def save_rnn_checkpoint(cells, prefix: str, epoch: int, symbol, arg_params: dict,
                        aux_params: dict) -> None:
    """:func:`symgraph.model.save_checkpoint` with the cells' weights unpacked first.

    ``cells`` is one cell or a list of them.
    """
    for cell in _as_list(cells):
        arg_params = cell.unpack_weights(arg_params)
    save_checkpoint(prefix, epoch, symbol, arg_params, aux_params)


def load_rnn_checkpoint(cells, prefix: str, epoch: int):
    """:func:`symgraph.model.load_checkpoint` with the cells' weights packed after loading;
    returns ``(symbol, arg_params, aux_params)``."""
    sym, loaded, aux = load_checkpoint(prefix, epoch)
    arg = loaded
    for cell in _as_list(cells):
        try:
            arg = cell.pack_weights(arg)
        except KeyError as err:
            raise MissingParamError(f"{err.args[0]} is not presented (in {loaded.source}): "
                                    f"cannot pack the weights of cell {cell._prefix!r}") from None
    packed = LoadedParams(loaded.source)  # errors about its entries still name the file
    packed.update(arg)
    return sym, packed, aux


def do_rnn_checkpoint(cells, prefix: str, period: int = 1):
    """An epoch-end callback saving :func:`save_rnn_checkpoint` every ``period`` epochs.

    >>> callback = do_rnn_checkpoint([], '/nonexistent/x', period=2)
    >>> callback(0)  # epoch 1 of every 2: nothing written
    """
    period = int(max(1, period))

    def _callback(iter_no, sym=None, arg=None, aux=None):
        if (iter_no + 1) % period == 0:
            save_rnn_checkpoint(cells, prefix, iter_no + 1, sym, arg, aux)
    return _callback
