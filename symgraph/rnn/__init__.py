"""MXNet 1.x's ``mx.rnn``: symbolic RNN cells, bucketing sentence iterators, RNN checkpoints.

>>> import symgraph as mx
>>> cell = mx.rnn.GRUCell(4, prefix='gru_')
>>> out, states = cell.unroll(3, mx.sym.Variable('data'), layout='TNC', merge_outputs=True)
>>> out.infer_shape(data=(3, 2, 5))[1]
[(3, 2, 4)]
"""
from .. import initializer as init
from .. import ndarray, symbol
from ..base import numeric_types, string_types
from ..io import DataBatch, DataDesc, DataIter
from ..model import load_checkpoint, save_checkpoint
from . import conv_cell, io, rnn, rnn_cell
from .conv_cell import BaseConvRNNCell, ConvGRUCell, ConvLSTMCell, ConvRNNCell
from .fused_cell import FusedRNNCell
from .io import BucketSentenceIter, encode_sentences
from .rnn import do_rnn_checkpoint, load_rnn_checkpoint, rnn_unroll, save_rnn_checkpoint
from .rnn_cell import (
    BaseRNNCell,
    BidirectionalCell,
    DropoutCell,
    GRUCell,
    LSTMCell,
    ModifierCell,
    ResidualCell,
    RNNCell,
    RNNParams,
    SequentialRNNCell,
    ZoneoutCell,
)

__all__ = ["BaseConvRNNCell", "BaseRNNCell", "BidirectionalCell", "BucketSentenceIter",
           "DataBatch", "DataDesc", "DataIter", "init", "load_checkpoint", "ndarray",
           "numeric_types", "save_checkpoint", "string_types", "symbol",
           "ConvGRUCell", "ConvLSTMCell", "ConvRNNCell", "DropoutCell", "FusedRNNCell", "GRUCell",
           "LSTMCell", "ModifierCell", "RNNCell", "RNNParams", "ResidualCell",
           "SequentialRNNCell", "ZoneoutCell", "conv_cell", "do_rnn_checkpoint",
           "encode_sentences", "io", "load_rnn_checkpoint", "rnn", "rnn_cell", "rnn_unroll",
           "save_rnn_checkpoint"]
