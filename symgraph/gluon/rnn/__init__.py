"""``mx.gluon.rnn``: the recurrent cells (``rnn_cell``) and the fused recurrent layers
``RNN``, ``LSTM`` and ``GRU`` (``rnn_layer``) of MXNet 1.9.1."""
from __future__ import annotations

from . import rnn_cell, rnn_layer
from .rnn_cell import (
    BidirectionalCell,
    DropoutCell,
    GRUCell,
    HybridRecurrentCell,
    HybridSequentialRNNCell,
    LSTMCell,
    ModifierCell,
    RecurrentCell,
    ResidualCell,
    RNNCell,
    SequentialRNNCell,
    ZoneoutCell,
)
from .rnn_layer import GRU, LSTM, RNN

__all__ = ["RecurrentCell", "HybridRecurrentCell", "RNNCell", "LSTMCell", "GRUCell",
           "SequentialRNNCell", "HybridSequentialRNNCell", "DropoutCell", "ModifierCell",
           "ZoneoutCell", "ResidualCell", "BidirectionalCell", "RNN", "LSTM", "GRU",
           "rnn_cell", "rnn_layer"]
