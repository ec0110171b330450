"""``mx.gluon.rnn``: the fused recurrent layers ``RNN``, ``LSTM`` and ``GRU`` of MXNet
1.9.1 (the gluon recurrent cells are not ported yet)."""
from __future__ import annotations

from .rnn_layer import GRU, LSTM, RNN

__all__ = ["RNN", "LSTM", "GRU"]
