"""The recurrent cells of MXNet 1.9.1's ``gluon.contrib.rnn``: ``LSTMPCell`` (LSTM with a
projected recurrent state) and ``VariationalDropoutCell`` (one dropout mask per sequence).

Examples
--------
>>> import symgraph as mx
>>> from symgraph.gluon.rnn.contrib_cells import LSTMPCell, VariationalDropoutCell
>>> cell = LSTMPCell(6, 2, input_size=3, prefix='p_')
>>> cell, [s['shape'] for s in cell.state_info(4)]
(LSTMPCell(3 -> 24 -> 2), [(4, 2), (4, 6)])
>>> sorted(cell.collect_params().keys())[:3]
['p_h2h_bias', 'p_h2h_weight', 'p_h2r_weight']
>>> drop = VariationalDropoutCell(cell, drop_inputs=0.5)
>>> drop.initialize()
>>> drop.unroll(4, mx.nd.ones((5, 4, 3)), merge_outputs=True)[0].shape
(5, 4, 2)
"""
from __future__ import annotations

from ... import ndarray
from ...symbol.symbol import Symbol
from ..block import HybridBlock
from .cell_base import (
    _TENSORS,
    HybridRecurrentCell,
    _format_sequence,
    _get_begin_state,
    _mask_sequence_variable_length,
)
from .cell_stacks import BidirectionalCell, ModifierCell

__all__ = ["LSTMPCell", "VariationalDropoutCell"]


class VariationalDropoutCell(ModifierCell):
    """Dropout with one mask per sequence (Gal & Ghahramani 2016) on the inputs, the first
    state (``h``) and the outputs of ``base_cell``; the masks are drawn at the first step
    and kept until :meth:`reset` (``unroll`` resets).

    On NDArrays a step runs imperatively around the base cell's graph, so the masks are
    arrays carried from step to step as MXNet's imperative cell carries them.
    """

    def __init__(self, base_cell, drop_inputs=0., drop_states=0., drop_outputs=0.):
        assert not drop_states or not isinstance(base_cell, BidirectionalCell), \
            "BidirectionalCell doesn't support variational state dropout. " \
            "Please add VariationalDropoutCell to the cells underneath instead."
        assert not drop_states or not getattr(base_cell, '_bidirectional', False), \
            "Bidirectional SequentialRNNCell doesn't support variational state dropout. " \
            "Please add VariationalDropoutCell to the cells underneath instead."
        super().__init__(base_cell)
        self.drop_inputs = drop_inputs
        self.drop_states = drop_states
        self.drop_outputs = drop_outputs
        self.drop_inputs_mask = None
        self.drop_states_mask = None
        self.drop_outputs_mask = None

    def _alias(self) -> str:
        return 'vardrop'

    def reset(self) -> None:
        super().reset()
        self.drop_inputs_mask = None
        self.drop_states_mask = None
        self.drop_outputs_mask = None

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(p_out = {self.drop_outputs}, "
                f"p_state = {self.drop_states})")

    def forward(self, inputs, states):
        self._counter += 1
        if isinstance(inputs, Symbol):
            return HybridBlock.forward(self, inputs, states)
        return self.hybrid_forward(ndarray, inputs, states)

    def _mask(self, F, like, p: float):
        return F.Dropout(F.ones_like(like), p=p)

    def hybrid_forward(self, F, inputs, states):
        if self.drop_states and self.drop_states_mask is None:
            self.drop_states_mask = self._mask(F, states[0], self.drop_states)
        if self.drop_inputs and self.drop_inputs_mask is None:
            self.drop_inputs_mask = self._mask(F, inputs, self.drop_inputs)
        if self.drop_states:
            states = [states[0] * self.drop_states_mask] + list(states[1:])
        if self.drop_inputs:
            inputs = inputs * self.drop_inputs_mask
        next_output, next_states = self.base_cell(inputs, states)
        if self.drop_outputs and self.drop_outputs_mask is None:
            self.drop_outputs_mask = self._mask(F, next_output, self.drop_outputs)
        if self.drop_outputs:
            next_output = next_output * self.drop_outputs_mask
        return next_output, next_states

    def unroll(self, length: int, inputs, begin_state=None, layout: str = 'NTC',
               merge_outputs=None, valid_length=None):
        """Without state dropout, input and output dropout run once over the whole sequence
        (a mask shared along the time axis) around the base cell's unroll."""
        if self.drop_states:
            return super().unroll(length, inputs, begin_state, layout, merge_outputs,
                                  valid_length=valid_length)
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, True)
        states = _get_begin_state(self, F, begin_state, inputs, batch_size)
        if self.drop_inputs:
            inputs = F.Dropout(inputs, p=self.drop_inputs, axes=(axis,))
        outputs, states = self.base_cell.unroll(length, inputs, states, layout,
                                                merge_outputs=True, valid_length=valid_length)
        if self.drop_outputs:
            outputs = F.Dropout(outputs, p=self.drop_outputs, axes=(axis,))
        if merge_outputs is None:
            merge_outputs = isinstance(outputs, _TENSORS)
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
        if valid_length is not None:
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis,
                                                     merge_outputs)
        return outputs, states


class LSTMPCell(HybridRecurrentCell):
    """LSTM whose recurrent state is projected (Sak et al. 2014): ``r_t = W_hr h_t`` is the
    output and the first state; the states are ``[r, c]``.

    Parameters
    ----------
    hidden_size : int
        Width of the cell state.
    projection_size : int
        Width of the output (and of the recurrent state fed back).
    i2h_weight_initializer, h2h_weight_initializer, h2r_weight_initializer,
    i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params
        As :class:`~symgraph.gluon.rnn.LSTMCell`, plus the projection's weight.
    """

    def __init__(self, hidden_size, projection_size, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, h2r_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros', input_size=0,
                 prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size = hidden_size
        self._input_size = input_size
        self._projection_size = projection_size
        rows = 4 * hidden_size
        for name, shape, init in [
                ('i2h_weight', (rows, input_size), i2h_weight_initializer),
                ('h2h_weight', (rows, projection_size), h2h_weight_initializer),
                ('h2r_weight', (projection_size, hidden_size), h2r_weight_initializer),
                ('i2h_bias', (rows,), i2h_bias_initializer),
                ('h2h_bias', (rows,), h2h_bias_initializer)]:
            setattr(self, name, self.params.get(name, shape=shape, init=init,
                                                allow_deferred_init=True))

    def state_info(self, batch_size: int = 0) -> list:
        return [{'shape': (batch_size, self._projection_size), '__layout__': 'NC'},
                {'shape': (batch_size, self._hidden_size), '__layout__': 'NC'}]

    def _alias(self) -> str:
        return 'lstmp'

    def __repr__(self) -> str:
        shape, proj = self.i2h_weight.shape, self.h2r_weight.shape
        return (f"{self.__class__.__name__}({shape[1] if shape[1] else None} -> "
                f"{shape[0]} -> {proj[0]})")

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, h2r_weight,
                       i2h_bias, h2h_bias):
        prefix, rows = f"t{self._counter}_", 4 * self._hidden_size
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias, num_hidden=rows,
                               name=prefix + 'i2h')
        h2h = F.FullyConnected(data=states[0], weight=h2h_weight, bias=h2h_bias,
                               num_hidden=rows, name=prefix + 'h2h')
        gates = F.SliceChannel(i2h + h2h, num_outputs=4, name=prefix + 'slice')
        in_gate = F.Activation(gates[0], act_type='sigmoid', name=prefix + 'i')
        forget_gate = F.Activation(gates[1], act_type='sigmoid', name=prefix + 'f')
        in_transform = F.Activation(gates[2], act_type='tanh', name=prefix + 'c')
        out_gate = F.Activation(gates[3], act_type='sigmoid', name=prefix + 'o')
        next_c = F.elemwise_add(forget_gate * states[1], in_gate * in_transform,
                                name=prefix + 'state')
        hidden = F.elemwise_mul(out_gate, F.Activation(next_c, act_type='tanh'),
                                name=prefix + 'hidden')
        next_r = F.FullyConnected(data=hidden, num_hidden=self._projection_size,
                                  weight=h2r_weight, no_bias=True, name=prefix + 'out')
        return next_r, [next_r, next_c]
