"""The base of gluon's recurrent cells (MXNet 1.9.1's ``gluon/rnn/rnn_cell.py``):
``RecurrentCell`` (states, ``begin_state``, ``unroll``), ``HybridRecurrentCell`` and the
sequence helpers unrolling shares (splitting, merging, masking and reversing steps).
"""
from __future__ import annotations

from ... import ndarray, symbol
from ...ndarray import NDArray
from ...symbol.symbol import Symbol
from ..block import Block, HybridBlock
from ..nn import LeakyReLU

_TENSORS = (Symbol, NDArray)
_MODIFIED = ("After applying modifier cells (e.g. ZoneoutCell) the base cell cannot be called "
             "directly. Call the modifier cell instead.")


# ------------------------------------------------------------------ sequences

def _cells_state_info(cells, batch_size: int) -> list:
    return [info for c in cells for info in c.state_info(batch_size)]


def _cells_begin_state(cells, **kwargs) -> list:
    return [s for c in cells for s in c.begin_state(**kwargs)]


def _get_begin_state(cell, F, begin_state, inputs, batch_size: int) -> list:
    """``begin_state``, or zeros from ``cell.begin_state`` on the inputs' context."""
    if begin_state is not None:
        return begin_state
    if F is ndarray:
        ctx = inputs.context if isinstance(inputs, _TENSORS) else inputs[0].context
        with ctx:
            return cell.begin_state(func=F.zeros, batch_size=batch_size)
    return cell.begin_state(func=F.zeros, batch_size=batch_size)


def _split_steps(F, inputs, length, axis: int) -> list:
    """One array per step along ``axis`` (that axis dropped)."""
    if F is symbol:
        assert len(inputs.list_outputs()) == 1, \
            "unroll doesn't allow grouped symbol as input. Please convert to list with " \
            "list(inputs) first or let unroll handle splitting."
        return list(symbol.split(inputs, axis=axis, num_outputs=length, squeeze_axis=1))
    assert length is None or length == inputs.shape[axis]
    steps = ndarray.split(inputs, axis=axis, num_outputs=inputs.shape[axis], squeeze_axis=1)
    return steps if isinstance(steps, list) else [steps]


def _format_sequence(length, inputs, layout: str, merge, in_layout: str | None = None):
    """``(inputs, time axis, F, batch size)``: a list of steps when ``merge`` is False, one
    array in ``layout`` when True, unchanged when None."""
    assert inputs is not None, \
        "unroll(inputs=None) has been deprecated. Please create input variables outside unroll."
    axis, batch_axis = layout.find('T'), layout.find('N')
    in_axis = in_layout.find('T') if in_layout is not None else axis
    batch_size = 0
    if isinstance(inputs, _TENSORS):
        F = symbol if isinstance(inputs, Symbol) else ndarray
        if F is ndarray:
            batch_size = inputs.shape[batch_axis]
        if merge is False:
            inputs = _split_steps(F, inputs, length, in_axis)
    else:
        assert length is None or len(inputs) == length
        F = symbol if isinstance(inputs[0], Symbol) else ndarray
        if F is ndarray:
            batch_size = inputs[0].shape[0]
        if merge is True:
            inputs, in_axis = F.stack(*inputs, axis=axis), axis
    if isinstance(inputs, _TENSORS) and axis != in_axis:
        inputs = F.swapaxes(inputs, dim1=axis, dim2=in_axis)
    return inputs, axis, F, batch_size


def _mask_sequence_variable_length(F, data, length, valid_length, time_axis, merge):
    """Zero the steps past each sequence's ``valid_length``."""
    assert valid_length is not None
    if not isinstance(data, _TENSORS):
        data = F.stack(*data, axis=time_axis)
    outputs = F.SequenceMask(data, sequence_length=valid_length, use_sequence_length=True,
                             axis=time_axis)
    if merge:
        return outputs
    steps = F.split(outputs, num_outputs=length, axis=time_axis, squeeze_axis=True)
    return list(steps) if isinstance(steps, (list, Symbol)) else [steps]


def _reverse_sequences(sequences: list, unroll_step: int, valid_length=None) -> list:
    """The steps in reverse order (each sequence reversed within its valid length)."""
    F = symbol if isinstance(sequences[0], Symbol) else ndarray
    if valid_length is None:
        return list(reversed(sequences))
    flipped = F.SequenceReverse(F.stack(*sequences, axis=0), sequence_length=valid_length,
                                use_sequence_length=True)
    if unroll_step > 1 or F is symbol:
        steps = F.split(flipped, axis=0, num_outputs=unroll_step, squeeze_axis=True)
        return list(steps)
    return [flipped[0]]


# ------------------------------------------------------------------ base classes

class RecurrentCell(Block):
    """Base class of recurrent cells: states, ``begin_state``, ``unroll``.

    Parameters
    ----------
    prefix : str or None
        Prefix of the cell's blocks and parameters.
    params : ParameterDict or None
        Parameters to share (a new dict when None).
    """

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._modified = False
        self.reset()

    def reset(self) -> None:
        """Reset the step counters before building another graph (children too)."""
        self._init_counter = -1
        self._counter = -1
        for cell in self._children.values():
            cell.reset()

    def state_info(self, batch_size: int = 0) -> list:
        """Shape and layout of each state (``{'shape': ..., '__layout__': ...}``)."""
        raise NotImplementedError()

    def begin_state(self, batch_size: int = 0, func=ndarray.zeros, **kwargs) -> list:
        """Initial states made by ``func`` (``nd.zeros``, ``sym.zeros``, ``sym.var``...),
        named ``{prefix}begin_state_{n}``; ``kwargs`` go to ``func``."""
        assert not self._modified, _MODIFIED
        states = []
        for info in self.state_info(batch_size):
            self._init_counter += 1
            info = dict(info, **kwargs) if info is not None else kwargs
            states.append(func(name=f"{self._prefix}begin_state_{self._init_counter}", **info))
        return states

    def unroll(self, length: int, inputs, begin_state=None, layout: str = 'NTC',
               merge_outputs=None, valid_length=None):
        """Run the cell over ``length`` steps: ``(outputs, states)``.

        ``inputs`` is one array in ``layout`` or a list of per-step arrays; ``outputs`` is
        one array (``merge_outputs=True``), a list (False) or whichever the inputs were
        (None). With ``valid_length`` (shape (batch,)) the states are each sequence's last
        valid ones and outputs past the valid length are zero.
        """
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, False)
        states = _get_begin_state(self, F, begin_state, inputs, batch_size)
        outputs, all_states = [], []
        for i in range(length):
            output, states = self(inputs[i], states)
            outputs.append(output)
            if valid_length is not None:
                all_states.append(states)
        if valid_length is not None:
            states = [F.SequenceLast(F.stack(*steps, axis=0), sequence_length=valid_length,
                                     use_sequence_length=True, axis=0)
                      for steps in zip(*all_states)]
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis,
                                                     True)
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _get_activation(self, F, inputs, activation, **kwargs):
        """Apply ``activation``: a name, a ``LeakyReLU`` block or a callable."""
        named = {'tanh': F.tanh, 'relu': F.relu, 'sigmoid': F.sigmoid,
                 'softsign': F.softsign}.get(activation) if isinstance(activation, str) else None
        if named is not None:
            return named(inputs, **kwargs)
        if isinstance(activation, str):
            return F.Activation(inputs, act_type=activation, **kwargs)
        if isinstance(activation, LeakyReLU):
            return F.LeakyReLU(inputs, act_type='leaky', slope=activation._alpha, **kwargs)
        return activation(inputs, **kwargs)

    def forward(self, inputs, states):
        """One step: ``(output, new_states)``."""
        self._counter += 1
        return super().forward(inputs, states)


class HybridRecurrentCell(RecurrentCell, HybridBlock):
    """A recurrent cell whose step is a ``hybrid_forward(F, inputs, states, ...)``."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError
