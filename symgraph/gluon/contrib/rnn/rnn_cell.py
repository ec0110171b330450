"""MXNet 1.9.1's ``gluon.contrib.rnn.rnn_cell``: ``LSTMPCell`` and
``VariationalDropoutCell`` (symgraph's, from :mod:`symgraph.gluon.rnn.contrib_cells`) and a
stand-in for ``dynamic_unroll``.

>>> dynamic_unroll(None, None, None)
Traceback (most recent call last):
...
symgraph.base.UnsupportedError: mx.gluon.contrib.rnn.rnn_cell.dynamic_unroll is not \
supported by symgraph: it runs the cell through the control-flow operator \
contrib.foreach, which is not implemented; use cell.unroll
"""
from __future__ import annotations

from ....base import unsupported
from ...rnn.contrib_cells import LSTMPCell, VariationalDropoutCell

__all__ = ["VariationalDropoutCell", "LSTMPCell"]


def dynamic_unroll(cell, inputs, begin_state, drop_inputs=0, drop_outputs=0,
                   layout="TNC", valid_length=None):
    """Unroll a cell with ``contrib.foreach`` (not supported: use ``cell.unroll``)."""
    raise unsupported("mx.gluon.contrib.rnn.rnn_cell.dynamic_unroll",
                      "it runs the cell through the control-flow operator contrib.foreach, "
                      "which is not implemented; use cell.unroll")
