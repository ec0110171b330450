"""``mx.gluon.contrib.rnn``: MXNet 1.9.1's contributed recurrent cells.

``LSTMPCell`` and ``VariationalDropoutCell`` are those of
:mod:`symgraph.gluon.rnn.contrib_cells`; the convolutional cells (``conv_rnn_cell``) and
``rnn_cell.dynamic_unroll`` are stand-ins that raise ``UnsupportedError``.

>>> from symgraph.gluon.contrib import rnn
>>> rnn.LSTMPCell(6, 2, input_size=3)
LSTMPCell(3 -> 24 -> 2)
>>> rnn.Conv2DLSTMCell((3, 8, 8), 4, 3, 3)
Traceback (most recent call last):
...
symgraph.base.UnsupportedError: mx.gluon.contrib.rnn.Conv2DLSTMCell is not supported by \
symgraph: the convolutional recurrent cells are not implemented
"""
from __future__ import annotations

from . import conv_rnn_cell, rnn_cell  # noqa: F401 - MXNet's submodule names
from .conv_rnn_cell import (
    Conv1DGRUCell,
    Conv1DLSTMCell,
    Conv1DRNNCell,
    Conv2DGRUCell,
    Conv2DLSTMCell,
    Conv2DRNNCell,
    Conv3DGRUCell,
    Conv3DLSTMCell,
    Conv3DRNNCell,
)
from .rnn_cell import LSTMPCell, VariationalDropoutCell

__all__ = ["Conv1DRNNCell", "Conv2DRNNCell", "Conv3DRNNCell", "Conv1DLSTMCell", "Conv2DLSTMCell",
           "Conv3DLSTMCell", "Conv1DGRUCell", "Conv2DGRUCell", "Conv3DGRUCell",
           "VariationalDropoutCell", "LSTMPCell"]
