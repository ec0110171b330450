"""Gluon recurrent cells, as MXNet 1.9.1's ``gluon/rnn/rnn_cell.py``.

A cell computes one time step, ``output, new_states = cell(x_t, states)``, on NDArrays or
Symbols; :meth:`RecurrentCell.unroll` runs it over a sequence (layouts ``NTC``/``TNC``,
outputs merged into one array or kept as a list, ``valid_length`` masking). The hybrid cells
(``RNNCell``, ``LSTMCell``, ``GRUCell`` and the modifiers) are HybridBlocks: a step on
NDArrays runs the traced step graph; on Symbols it adds the step's nodes, named
``{prefix}t{step}_...`` as MXNet names them. Parameters are MXNet's ``{prefix}i2h_weight``,
``{prefix}i2h_bias``, ``{prefix}h2h_weight`` and ``{prefix}h2h_bias`` (gates stacked in
MXNet's order: LSTM i, f, c, o; GRU r, z, n).

Examples
--------
>>> import symgraph as mx
>>> cell = mx.gluon.rnn.LSTMCell(4, input_size=3, prefix='lstm_')
>>> sorted(cell.collect_params().keys())
['lstm_h2h_bias', 'lstm_h2h_weight', 'lstm_i2h_bias', 'lstm_i2h_weight']
>>> cell.initialize()
>>> outputs, states = cell.unroll(5, mx.nd.ones((2, 5, 3)), merge_outputs=True)
>>> outputs.shape, [s.shape for s in states]
((2, 5, 4), [(2, 4), (2, 4)])
>>> outs, _ = cell.unroll(2, [mx.sym.var('x0'), mx.sym.var('x1')])
>>> [o.name for o in outs]
['lstm_t0_out', 'lstm_t1_out']
>>> mx.gluon.rnn.BidirectionalCell(cell, mx.gluon.rnn.LSTMCell(4))(mx.nd.ones((2, 3)), [])
Traceback (most recent call last):
...
NotImplementedError: Bidirectional cannot be stepped. Please use unroll
"""
from __future__ import annotations

from .cell_base import HybridRecurrentCell, RecurrentCell
from .cell_stacks import (
    BidirectionalCell,
    DropoutCell,
    HybridSequentialRNNCell,
    ModifierCell,
    ResidualCell,
    SequentialRNNCell,
    ZoneoutCell,
)

__all__ = ["RecurrentCell", "HybridRecurrentCell", "RNNCell", "LSTMCell", "GRUCell",
           "SequentialRNNCell", "HybridSequentialRNNCell", "DropoutCell", "ModifierCell",
           "ZoneoutCell", "ResidualCell", "BidirectionalCell"]


def _mapping(cell) -> str:
    shape = cell.i2h_weight.shape
    return f"{shape[1] if shape[1] else None} -> {shape[0]}"


class _GatedCell(HybridRecurrentCell):
    """The i2h/h2h weights and biases of a cell with ``gates`` stacked gates."""

    _gates = 1

    def __init__(self, hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                 i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size = hidden_size
        self._input_size = input_size
        rows = self._gates * hidden_size
        for name, shape, init in [
                ('i2h_weight', (rows, input_size), i2h_weight_initializer),
                ('h2h_weight', (rows, hidden_size), h2h_weight_initializer),
                ('i2h_bias', (rows,), i2h_bias_initializer),
                ('h2h_bias', (rows,), h2h_bias_initializer)]:
            setattr(self, name, self.params.get(name, shape=shape, init=init,
                                                allow_deferred_init=True))

    def state_info(self, batch_size: int = 0) -> list:
        return [{'shape': (batch_size, self._hidden_size), '__layout__': 'NC'}]

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({_mapping(self)})"

    def _projections(self, F, inputs, h, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        """The step's ``i2h`` and ``h2h`` fully connected outputs."""
        prefix, rows = f"t{self._counter}_", self._gates * self._hidden_size
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias, num_hidden=rows,
                               name=prefix + 'i2h')
        h2h = F.FullyConnected(data=h, weight=h2h_weight, bias=h2h_bias, num_hidden=rows,
                               name=prefix + 'h2h')
        return i2h, h2h


class RNNCell(_GatedCell):
    """Elman cell: ``h_t = activation(W_ih x_t + b_ih + W_hh h_(t-1) + b_hh)``.

    Parameters
    ----------
    hidden_size : int
        Width of the output and state.
    activation : str, LeakyReLU or callable
        ``'tanh'`` (default), ``'relu'``, ``'sigmoid'``, ``'softsign'``, another
        ``Activation`` type, a ``gluon.nn.LeakyReLU`` or a function of a tensor.
    i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer
        Initializers of the parameters (biases ``'zeros'``).
    input_size : int
        Input width (0: inferred at the first call).
    prefix, params
        As for every Block.

    Examples
    --------
    >>> import symgraph as mx
    >>> mx.gluon.rnn.RNNCell(5, input_size=3)
    RNNCell(3 -> 5, tanh)
    """

    def __init__(self, hidden_size, activation='tanh', i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer='zeros',
                 h2h_bias_initializer='zeros', input_size=0, prefix=None, params=None):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params)
        self._activation = activation

    def _alias(self) -> str:
        return 'rnn'

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({_mapping(self)}, {self._activation})"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = f"t{self._counter}_"
        i2h, h2h = self._projections(F, inputs, states[0], i2h_weight, h2h_weight, i2h_bias,
                                     h2h_bias)
        total = F.elemwise_add(i2h, h2h, name=prefix + 'plus0')
        output = self._get_activation(F, total, self._activation, name=prefix + 'out')
        return output, [output]


class LSTMCell(_GatedCell):
    """Long short-term memory cell; states ``[h, c]``, gates i, f, c, o (MXNet's order).

    ``c_t = f * c_(t-1) + i * g``, ``h_t = o * activation(c_t)`` with the gates i, f, o
    through ``recurrent_activation`` (sigmoid) and g through ``activation`` (tanh).
    Other parameters as :class:`RNNCell`.

    Examples
    --------
    >>> import symgraph as mx
    >>> cell = mx.gluon.rnn.LSTMCell(2, input_size=3)
    >>> cell, [s['shape'] for s in cell.state_info(4)]
    (LSTMCell(3 -> 8), [(4, 2), (4, 2)])
    """

    _gates = 4

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros', input_size=0,
                 prefix=None, params=None, activation='tanh', recurrent_activation='sigmoid'):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params)
        self._activation = activation
        self._recurrent_activation = recurrent_activation

    def state_info(self, batch_size: int = 0) -> list:
        return [{'shape': (batch_size, self._hidden_size), '__layout__': 'NC'},
                {'shape': (batch_size, self._hidden_size), '__layout__': 'NC'}]

    def _alias(self) -> str:
        return 'lstm'

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = f"t{self._counter}_"
        i2h, h2h = self._projections(F, inputs, states[0], i2h_weight, h2h_weight, i2h_bias,
                                     h2h_bias)
        gates = F.elemwise_add(i2h, h2h, name=prefix + 'plus0')
        sliced = F.SliceChannel(gates, num_outputs=4, name=prefix + 'slice')
        act, rec = self._activation, self._recurrent_activation
        in_gate = self._get_activation(F, sliced[0], rec, name=prefix + 'i')
        forget_gate = self._get_activation(F, sliced[1], rec, name=prefix + 'f')
        in_transform = self._get_activation(F, sliced[2], act, name=prefix + 'c')
        out_gate = self._get_activation(F, sliced[3], rec, name=prefix + 'o')
        next_c = F.elemwise_add(F.elemwise_mul(forget_gate, states[1], name=prefix + 'mul0'),
                                F.elemwise_mul(in_gate, in_transform, name=prefix + 'mul1'),
                                name=prefix + 'state')
        next_h = F.elemwise_mul(out_gate, F.Activation(next_c, act_type=act,
                                                       name=prefix + 'activation0'),
                                name=prefix + 'out')
        return next_h, [next_h, next_c]


class GRUCell(_GatedCell):
    """Gated recurrent unit (cuDNN's variant: the reset gate applies after the h2h product);
    gates r, z, n (MXNet's order); one state. Parameters as :class:`RNNCell`.

    ``h_t = (1 - z) * tanh(W_in x + b_in + r * (W_hn h + b_hn)) + z * h_(t-1)``.

    Examples
    --------
    >>> import symgraph as mx
    >>> mx.gluon.rnn.GRUCell(2)
    GRUCell(None -> 6)
    """

    _gates = 3

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros', input_size=0,
                 prefix=None, params=None):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params)

    def _alias(self) -> str:
        return 'gru'

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix, prev_h = f"t{self._counter}_", states[0]
        i2h, h2h = self._projections(F, inputs, prev_h, i2h_weight, h2h_weight, i2h_bias,
                                     h2h_bias)
        i2h_r, i2h_z, i2h = F.SliceChannel(i2h, num_outputs=3, name=prefix + 'i2h_slice')
        h2h_r, h2h_z, h2h = F.SliceChannel(h2h, num_outputs=3, name=prefix + 'h2h_slice')
        reset = F.Activation(F.elemwise_add(i2h_r, h2h_r, name=prefix + 'plus0'),
                             act_type='sigmoid', name=prefix + 'r_act')
        update = F.Activation(F.elemwise_add(i2h_z, h2h_z, name=prefix + 'plus1'),
                              act_type='sigmoid', name=prefix + 'z_act')
        candidate = F.Activation(
            F.elemwise_add(i2h, F.elemwise_mul(reset, h2h, name=prefix + 'mul0'),
                           name=prefix + 'plus2'), act_type='tanh', name=prefix + 'h_act')
        ones = F.ones_like(update, name=prefix + 'ones_like0')
        keep = F.elemwise_sub(ones, update, name=prefix + 'minus0')
        next_h = F.elemwise_add(F.elemwise_mul(keep, candidate, name=prefix + 'mul1'),
                                F.elemwise_mul(update, prev_h, name=prefix + 'mul20'),
                                name=prefix + 'out')
        return next_h, [next_h]
