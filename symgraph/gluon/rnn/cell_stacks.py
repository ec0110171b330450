"""Gluon cells built from other cells (MXNet 1.9.1's ``gluon/rnn/rnn_cell.py``): stacks
(``SequentialRNNCell``, ``HybridSequentialRNNCell``), ``DropoutCell``, the modifiers
(``ZoneoutCell``, ``ResidualCell``) and ``BidirectionalCell``.

Examples
--------
>>> import symgraph as mx
>>> stack = mx.gluon.rnn.SequentialRNNCell()
>>> stack.add(mx.gluon.rnn.GRUCell(4, prefix='l0_'))
>>> stack.add(mx.gluon.rnn.ResidualCell(mx.gluon.rnn.GRUCell(4, prefix='l1_')))
>>> len(stack), [s['shape'] for s in stack.state_info(2)]
(2, [(2, 4), (2, 4)])
>>> stack.initialize()
>>> out, states = stack.unroll(3, mx.nd.ones((2, 3, 5)), merge_outputs=True)
>>> out.shape
(2, 3, 4)
"""
from __future__ import annotations

from numbers import Number

from ... import symbol
from ...symbol.symbol import Symbol
from ..block import HybridBlock, _indent
from .cell_base import (
    _MODIFIED,
    _TENSORS,
    HybridRecurrentCell,
    RecurrentCell,
    _cells_begin_state,
    _cells_state_info,
    _format_sequence,
    _get_begin_state,
    _mask_sequence_variable_length,
    _reverse_sequences,
)

__all__ = ["SequentialRNNCell", "HybridSequentialRNNCell", "DropoutCell", "ModifierCell",
           "ZoneoutCell", "ResidualCell", "BidirectionalCell"]


class _Stack:
    """What both sequential cells share: children run one after another."""

    def __repr__(self) -> str:
        lines = '\n'.join(f"({i}): {_indent(repr(m), 2)}" for i, m in self._children.items())
        return f"{self.__class__.__name__}(\n{lines}\n)"

    def add(self, cell) -> None:
        """Append ``cell`` to the stack."""
        self.register_child(cell)

    def state_info(self, batch_size: int = 0) -> list:
        return _cells_state_info(self._children.values(), batch_size)

    def begin_state(self, **kwargs) -> list:
        assert not self._modified, _MODIFIED
        return _cells_begin_state(self._children.values(), **kwargs)

    def __call__(self, inputs, states):
        """One step through every cell; the states are the cells' states concatenated."""
        self._counter += 1
        assert all(not isinstance(cell, BidirectionalCell) for cell in self._children.values())
        next_states, p = [], 0
        for cell in self._children.values():
            n = len(cell.state_info())
            inputs, state = cell(inputs, states[p:p + n])
            p += n
            next_states.extend(state)
        return inputs, next_states

    def unroll(self, length: int, inputs, begin_state=None, layout: str = 'NTC',
               merge_outputs=None, valid_length=None):
        """Unroll each cell over the whole sequence in turn (see ``RecurrentCell.unroll``)."""
        self.reset()
        inputs, _, F, batch_size = _format_sequence(length, inputs, layout, None)
        begin_state = _get_begin_state(self, F, begin_state, inputs, batch_size)
        cells, next_states, p = list(self._children.values()), [], 0
        for i, cell in enumerate(cells):
            n = len(cell.state_info())
            inputs, states = cell.unroll(
                length, inputs=inputs, begin_state=begin_state[p:p + n], layout=layout,
                merge_outputs=merge_outputs if i == len(cells) - 1 else None,
                valid_length=valid_length)
            p += n
            next_states.extend(states)
        return inputs, next_states

    def __getitem__(self, i):
        return self._children[str(i)]

    def __len__(self) -> int:
        return len(self._children)


class SequentialRNNCell(_Stack, RecurrentCell):
    """A stack of cells, each one's output the next one's input (any cells but
    ``BidirectionalCell`` can be stepped; ``unroll`` takes those too)."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, *args, **kwargs):
        raise NotImplementedError


class HybridSequentialRNNCell(_Stack, HybridRecurrentCell):
    """:class:`SequentialRNNCell` of hybrid cells; usable inside a HybridBlock.

    >>> import symgraph as mx
    >>> stack = mx.gluon.rnn.HybridSequentialRNNCell()
    >>> stack.add(mx.gluon.rnn.LSTMCell(3, input_size=2))
    >>> stack
    HybridSequentialRNNCell(
    (0): LSTMCell(2 -> 12)
    )
    """

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F, inputs, states):
        return self.__call__(inputs, states)


class DropoutCell(HybridRecurrentCell):
    """Dropout on the input of each step; no state of its own.

    Parameters
    ----------
    rate : float
        Fraction of elements dropped.
    axes : tuple of int
        Axes along which one mask is shared (empty: plain dropout).

    >>> import symgraph as mx
    >>> mx.gluon.rnn.DropoutCell(0.5)
    DropoutCell(rate=0.5, axes=())
    """

    def __init__(self, rate, axes=(), prefix=None, params=None):
        super().__init__(prefix, params)
        assert isinstance(rate, Number), "rate must be a number"
        self._rate = rate
        self._axes = axes

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(rate={self._rate}, axes={self._axes})"

    def state_info(self, batch_size: int = 0) -> list:
        return []

    def _alias(self) -> str:
        return 'dropout'

    def hybrid_forward(self, F, inputs, states):
        if self._rate > 0:
            inputs = F.Dropout(data=inputs, p=self._rate, axes=self._axes,
                               name=f"t{self._counter}_fwd")
        return inputs, states

    def unroll(self, length: int, inputs, begin_state=None, layout: str = 'NTC',
               merge_outputs=None, valid_length=None):
        """A whole-sequence tensor gets one dropout; a list is stepped."""
        self.reset()
        inputs, _, F, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, _TENSORS):
            return self.hybrid_forward(F, inputs, begin_state if begin_state else [])
        return super().unroll(length, inputs, begin_state=begin_state, layout=layout,
                              merge_outputs=merge_outputs, valid_length=None)


class ModifierCell(HybridRecurrentCell):
    """Base class of cells wrapping a ``base_cell`` (which must then not be called
    directly); the parameters are the base cell's."""

    def __init__(self, base_cell):
        assert not base_cell._modified, \
            f"Cell {base_cell.name} is already modified. One cell cannot be modified twice"
        base_cell._modified = True
        super().__init__(prefix=base_cell.prefix + self._alias(), params=None)
        self.base_cell = base_cell

    @property
    def params(self):
        return self.base_cell.params

    def state_info(self, batch_size: int = 0) -> list:
        return self.base_cell.state_info(batch_size)

    def begin_state(self, func=symbol.zeros, **kwargs) -> list:
        assert not self._modified, _MODIFIED
        self.base_cell._modified = False
        begin = self.base_cell.begin_state(func=func, **kwargs)
        self.base_cell._modified = True
        return begin

    def hybrid_forward(self, F, inputs, states):
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.base_cell})"


class ZoneoutCell(ModifierCell):
    """Zoneout (Krueger et al. 2016): in training, each output and state element keeps its
    previous value with probability ``zoneout_outputs`` / ``zoneout_states``.

    The previous output carries from step to step within an unroll (zeros at the first
    step), on NDArrays as on Symbols (MXNet's hybridized cell reuses its first step's
    zeros instead).

    >>> import symgraph as mx
    >>> mx.gluon.rnn.ZoneoutCell(mx.gluon.rnn.RNNCell(2, input_size=2), 0.5, 0.25)
    ZoneoutCell(p_out=0.5, p_state=0.25, RNNCell(2 -> 2, tanh))
    """

    def __init__(self, base_cell, zoneout_outputs=0., zoneout_states=0.):
        assert not isinstance(base_cell, BidirectionalCell), \
            "BidirectionalCell doesn't support zoneout since it doesn't support step. " \
            "Please add ZoneoutCell to the cells underneath instead."
        assert not getattr(base_cell, '_bidirectional', False), \
            "Bidirectional SequentialRNNCell doesn't support zoneout. " \
            "Please add ZoneoutCell to the cells underneath instead."
        super().__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self._prev_output = None
        self._traced_first_step = None  # whether the traced step graph is a first step's

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(p_out={self.zoneout_outputs}, "
                f"p_state={self.zoneout_states}, {self.base_cell})")

    def _alias(self) -> str:
        return 'zoneout'

    def reset(self) -> None:
        super().reset()
        self._prev_output = None

    def forward(self, inputs, states):
        """One step; on NDArrays the previous output is an input of the step graph (a first
        step, without one, is traced apart: an unroll traces twice)."""
        self._counter += 1
        prev = self._prev_output if self.zoneout_outputs != 0. else None  # else unused
        if not isinstance(inputs, Symbol):
            first = prev is None
            if self._traced_first_step is not None and first != self._traced_first_step:
                self._clear_cached_op()
            self._traced_first_step = first
        output, states = HybridBlock.forward(self, inputs, states, prev)
        self._prev_output = output
        return output, states

    def hybrid_forward(self, F, inputs, states, prev_output=None):
        next_output, next_states = self.base_cell(inputs, states)
        p_outputs, p_states = self.zoneout_outputs, self.zoneout_states

        def mask(p, like):
            return F.Dropout(F.ones_like(like), p=p)

        if prev_output is None:
            prev_output = F.zeros_like(next_output)
        output = F.where(mask(p_outputs, next_output), next_output, prev_output) \
            if p_outputs != 0. else next_output
        if p_states != 0.:
            next_states = [F.where(mask(p_states, new), new, old)
                           for new, old in zip(next_states, states)]
        return output, next_states


class ResidualCell(ModifierCell):
    """Adds each step's input to the base cell's output (Wu et al. 2016).

    >>> import symgraph as mx
    >>> cell = mx.gluon.rnn.ResidualCell(mx.gluon.rnn.GRUCell(3, prefix='gru_'))
    >>> cell.prefix
    'gru_residualcell'
    """

    def __init__(self, base_cell):
        super().__init__(base_cell)

    def hybrid_forward(self, F, inputs, states):
        output, states = self.base_cell(inputs, states)
        output = F.elemwise_add(output, inputs, name=f"t{self._counter}_fwd")
        return output, states

    def unroll(self, length: int, inputs, begin_state=None, layout: str = 'NTC',
               merge_outputs=None, valid_length=None):
        """The base cell's unroll plus the (masked) inputs."""
        self.reset()
        self.base_cell._modified = False
        outputs, states = self.base_cell.unroll(length, inputs=inputs, begin_state=begin_state,
                                                layout=layout, merge_outputs=merge_outputs,
                                                valid_length=valid_length)
        self.base_cell._modified = True
        if merge_outputs is None:
            merge_outputs = isinstance(outputs, _TENSORS)
        inputs, axis, F, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if valid_length is not None:
            inputs = _mask_sequence_variable_length(F, inputs, length, valid_length, axis,
                                                    merge_outputs)
        if merge_outputs:
            return F.elemwise_add(outputs, inputs), states
        return [F.elemwise_add(i, j) for i, j in zip(outputs, inputs)], states


class BidirectionalCell(HybridRecurrentCell):
    """Runs ``l_cell`` forward and ``r_cell`` backward over the sequence and concatenates
    their outputs (feature axis); only :meth:`unroll` works, not single steps.

    Parameters
    ----------
    l_cell, r_cell : RecurrentCell
        The forward and backward cells.
    output_prefix : str
        Prefix of the concatenated outputs' names.
    """

    def __init__(self, l_cell, r_cell, output_prefix='bi_'):
        super().__init__(prefix='', params=None)
        self.register_child(l_cell, 'l_cell')
        self.register_child(r_cell, 'r_cell')
        self._output_prefix = output_prefix

    def __call__(self, inputs, states):
        raise NotImplementedError("Bidirectional cannot be stepped. Please use unroll")

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(forward={self._children['l_cell']}, "
                f"backward={self._children['r_cell']})")

    def state_info(self, batch_size: int = 0) -> list:
        return _cells_state_info(self._children.values(), batch_size)

    def begin_state(self, **kwargs) -> list:
        assert not self._modified, _MODIFIED
        return _cells_begin_state(self._children.values(), **kwargs)

    def unroll(self, length: int, inputs, begin_state=None, layout: str = 'NTC',
               merge_outputs=None, valid_length=None):
        """``(outputs, l_states + r_states)``; outputs are ``concat(l, r)`` per step."""
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, False)
        reversed_inputs = _reverse_sequences(inputs, length, valid_length)
        states = _get_begin_state(self, F, begin_state, inputs, batch_size)
        l_cell, r_cell = self._children.values()
        n_left = len(l_cell.state_info(batch_size))
        l_outputs, l_states = l_cell.unroll(length, inputs=inputs, begin_state=states[:n_left],
                                            layout=layout, merge_outputs=merge_outputs,
                                            valid_length=valid_length)
        r_outputs, r_states = r_cell.unroll(length, inputs=reversed_inputs,
                                            begin_state=states[n_left:], layout=layout,
                                            merge_outputs=False, valid_length=valid_length)
        r_outputs = _reverse_sequences(r_outputs, length, valid_length)
        if merge_outputs is None:
            merge_outputs = isinstance(l_outputs, _TENSORS)
            l_outputs, _, _, _ = _format_sequence(None, l_outputs, layout, merge_outputs)
            r_outputs, _, _, _ = _format_sequence(None, r_outputs, layout, merge_outputs)
        outputs = self._concat(F, l_outputs, r_outputs, axis, merge_outputs)
        if valid_length is not None:
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis,
                                                     merge_outputs)
        return outputs, l_states + r_states

    def _concat(self, F, l_outputs, r_outputs, axis: int, merge: bool):
        prefix = self._output_prefix
        if merge:
            r_outputs = F.stack(*r_outputs, axis=axis)
            return F.concat(l_outputs, r_outputs, dim=2, name=f"{prefix}out")
        return [F.concat(l_o, r_o, dim=1, name=f"{prefix}t{i}")
                for i, (l_o, r_o) in enumerate(zip(l_outputs, r_outputs))]
