"""Stand-ins for MXNet 1.9.1's convolutional recurrent cells
(``Conv{1,2,3}D{RNN,LSTM,GRU}Cell``): importable, and raising ``UnsupportedError`` when
created. They derive from ``HybridRecurrentCell``, so ``isinstance`` checks and subclass
definitions in scripts still work.

>>> Conv1DGRUCell((3, 8), 4, 3, 3)
Traceback (most recent call last):
...
symgraph.base.UnsupportedError: mx.gluon.contrib.rnn.Conv1DGRUCell is not supported by \
symgraph: the convolutional recurrent cells are not implemented
"""
from __future__ import annotations

from ....base import unsupported
from ...rnn.cell_base import HybridRecurrentCell

__all__ = ["Conv1DRNNCell", "Conv2DRNNCell", "Conv3DRNNCell",
           "Conv1DLSTMCell", "Conv2DLSTMCell", "Conv3DLSTMCell",
           "Conv1DGRUCell", "Conv2DGRUCell", "Conv3DGRUCell"]

_WHY_CONV = "the convolutional recurrent cells are not implemented"


class _ConvRNNStandIn(HybridRecurrentCell):
    """A convolutional recurrent cell symgraph does not implement."""

    def __init__(self, *args, **kwargs):
        raise unsupported(f"mx.gluon.contrib.rnn.{type(self).__name__}", _WHY_CONV)


class Conv1DRNNCell(_ConvRNNStandIn):
    """1D convolutional RNN cell (not supported)."""


class Conv2DRNNCell(_ConvRNNStandIn):
    """2D convolutional RNN cell (not supported)."""


class Conv3DRNNCell(_ConvRNNStandIn):
    """3D convolutional RNN cell (not supported)."""


class Conv1DLSTMCell(_ConvRNNStandIn):
    """1D convolutional LSTM cell (not supported)."""


class Conv2DLSTMCell(_ConvRNNStandIn):
    """2D convolutional LSTM cell (not supported)."""


class Conv3DLSTMCell(_ConvRNNStandIn):
    """3D convolutional LSTM cell (not supported)."""


class Conv1DGRUCell(_ConvRNNStandIn):
    """1D convolutional GRU cell (not supported)."""


class Conv2DGRUCell(_ConvRNNStandIn):
    """2D convolutional GRU cell (not supported)."""


class Conv3DGRUCell(_ConvRNNStandIn):
    """3D convolutional GRU cell (not supported)."""

