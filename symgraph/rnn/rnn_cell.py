"""MXNet 1.x's symbolic RNN cells (``mx.rnn``): cells that build unrolled graphs step by step.

A cell's ``__call__(inputs, states)`` adds one time step to the graph; ``unroll`` adds
``length`` steps. Node and variable names are MXNet 1.9.1's (``lstm_t0_i2h``,
``lstm_i2h_weight``, ``lstm_begin_state_0``), so saved graphs and checkpoints interchange.

>>> import symgraph as mx
>>> cell = mx.rnn.LSTMCell(4, prefix='lstm_')
>>> outputs, states = cell.unroll(2, mx.sym.Variable('data'), merge_outputs=True)
>>> outputs.list_arguments()
['data', 'lstm_i2h_weight', 'lstm_i2h_bias', 'lstm_h2h_weight', 'lstm_h2h_bias']
>>> [s.name for s in states]
['lstm_t1_out', 'lstm_t1_state']
"""
from __future__ import annotations

import numpy as np

from .. import initializer as init
from .. import ndarray, symbol
from ..symbol import Symbol

__all__ = ["RNNParams", "BaseRNNCell", "RNNCell", "LSTMCell", "GRUCell", "SequentialRNNCell",
           "DropoutCell", "ModifierCell", "ZoneoutCell", "ResidualCell", "BidirectionalCell"]

_NUMERIC = (int, float, np.generic)


def _cells_state_info(cells) -> list:
    return sum([c.state_info for c in cells], [])


def _cells_begin_state(cells, **kwargs) -> list:
    return sum([c.begin_state(**kwargs) for c in cells], [])


def _cells_unpack_weights(cells, args: dict) -> dict:
    for cell in cells:
        args = cell.unpack_weights(args)
    return args


def _cells_pack_weights(cells, args: dict) -> dict:
    for cell in cells:
        args = cell.pack_weights(args)
    return args


def _normalize_sequence(length, inputs, layout: str, merge, in_layout=None):
    """Inputs as a list of per-step symbols (merge False) or one symbol (merge True)."""
    assert inputs is not None, \
        "unroll(inputs=None) has been deprecated. " \
        "Please create input variables outside unroll."
    axis = layout.find('T')
    in_axis = in_layout.find('T') if in_layout is not None else axis
    if isinstance(inputs, Symbol):
        if merge is False:
            assert len(inputs.list_outputs()) == 1, \
                "unroll doesn't allow grouped symbol as input. Please convert " \
                "to list with list(inputs) first or let unroll handle splitting."
            inputs = list(symbol.split(inputs, axis=in_axis, num_outputs=length,
                                       squeeze_axis=1))
    else:
        assert length is None or len(inputs) == length
        if merge is True:
            inputs = [symbol.expand_dims(i, axis=axis) for i in inputs]
            inputs = symbol.Concat(*inputs, dim=axis)
            in_axis = axis
    if isinstance(inputs, Symbol) and axis != in_axis:
        inputs = symbol.swapaxes(inputs, dim1=axis, dim2=in_axis)
    return inputs, axis


class RNNParams:
    """Container of a cell's variables, shared between cells to tie weights.

    Parameters
    ----------
    prefix : str
        Prefix of the names of the variables it creates.

    Examples
    --------
    >>> p = RNNParams('enc_')
    >>> p.get('i2h_weight').name, p.get('i2h_weight') is p.get('i2h_weight')
    ('enc_i2h_weight', True)
    """

    def __init__(self, prefix: str = ''):
        self._prefix = prefix
        self._params: dict = {}

    def get(self, name: str, **kwargs) -> Symbol:
        """The variable ``prefix + name``, created (with ``Variable(**kwargs)``) if missing."""
        name = self._prefix + name
        if name not in self._params:
            self._params[name] = symbol.Variable(name, **kwargs)
        return self._params[name]


class BaseRNNCell:
    """Abstract base class of RNN cells.

    Parameters
    ----------
    prefix : str, optional
        Prefix of layer names (and of weight names when ``params`` is None).
    params : RNNParams, optional
        Container for weight sharing; a new one (with ``prefix``) when None.

    Examples
    --------
    >>> import symgraph as mx
    >>> cell = mx.rnn.RNNCell(3, prefix='r_')
    >>> [s.name for s in cell.begin_state()], cell.state_info
    (['r_begin_state_0'], [{'shape': (0, 3), '__layout__': 'NC'}])
    >>> BaseRNNCell()(mx.sym.Variable('x'), [])
    Traceback (most recent call last):
    ...
    NotImplementedError
    """

    def __init__(self, prefix: str = '', params: RNNParams | None = None):
        if params is None:
            params = RNNParams(prefix)
            self._own_params = True
        else:
            self._own_params = False
        self._prefix = prefix
        self._params = params
        self._modified = False
        self.reset()

    def reset(self) -> None:
        """Reset the step counters before re-using the cell for another graph."""
        self._init_counter = -1
        self._counter = -1
        for cell in getattr(self, '_cells', ()):
            cell.reset()

    def __call__(self, inputs, states):
        """One time step: ``(output, new states)`` from the step's input and states."""
        raise NotImplementedError()

    @property
    def params(self) -> RNNParams:
        """The cell's parameter container (the cell no longer owns it once read)."""
        self._own_params = False
        return self._params

    @property
    def state_info(self) -> list:
        """Shape and layout of each state (``{'shape': ..., '__layout__': ...}``)."""
        raise NotImplementedError()

    @property
    def state_shape(self) -> list:
        """Shape of each state."""
        return [ele['shape'] for ele in self.state_info]

    @property
    def _gate_names(self):
        return ()

    def begin_state(self, func=symbol.zeros, **kwargs) -> list:
        """Initial states, made by ``func(name='{prefix}begin_state_{i}', shape=..., ...)``.

        ``func`` may be ``symbol.zeros``, ``symbol.uniform``, ``symbol.Variable``...; the
        counter ``i`` runs on across calls until :meth:`reset`.
        """
        assert not self._modified, \
            "After applying modifier cells (e.g. DropoutCell) the base " \
            "cell cannot be called directly. Call the modifier cell instead."
        states = []
        for info in self.state_info:
            self._init_counter += 1
            if info is not None:
                kwargs.update(info)  # as MXNet: later states reuse the merged kwargs
            states.append(func(name=f'{self._prefix}begin_state_{self._init_counter}',
                               **kwargs))
        return states

    def unpack_weights(self, args: dict) -> dict:
        """Split each gate-stacked ``i2h``/``h2h`` weight and bias into one array per gate.

        ``{prefix}i2h_weight`` becomes ``{prefix}i2h_i_weight``, ``..._f_...`` (LSTM), etc.
        """
        args = args.copy()
        if not self._gate_names:
            return args
        h = self._num_hidden
        for group in ['i2h', 'h2h']:
            weight = args.pop(f'{self._prefix}{group}_weight')
            bias = args.pop(f'{self._prefix}{group}_bias')
            for j, gate in enumerate(self._gate_names):
                args[f'{self._prefix}{group}{gate}_weight'] = \
                    weight[j * h:(j + 1) * h].copy()
                args[f'{self._prefix}{group}{gate}_bias'] = \
                    bias[j * h:(j + 1) * h].copy()
        return args

    def pack_weights(self, args: dict) -> dict:
        """The inverse of :meth:`unpack_weights`."""
        args = args.copy()
        if not self._gate_names:
            return args
        for group in ['i2h', 'h2h']:
            weight, bias = [], []
            for gate in self._gate_names:
                weight.append(args.pop(f'{self._prefix}{group}{gate}_weight'))
                bias.append(args.pop(f'{self._prefix}{group}{gate}_bias'))
            args[f'{self._prefix}{group}_weight'] = ndarray.concat(*weight, dim=0)
            args[f'{self._prefix}{group}_bias'] = ndarray.concat(*bias, dim=0)
        return args

    def unroll(self, length: int, inputs, begin_state=None, layout: str = 'NTC',
               merge_outputs: bool | None = None):
        """Unroll ``length`` steps; return ``(outputs, states)``.

        ``inputs`` is one symbol of layout ``layout`` ('NTC' or 'TNC') or a list of
        per-step symbols; ``merge_outputs`` True gives one symbol in ``layout``, False a
        list, None whichever is cheaper.
        """
        self.reset()
        inputs, _ = _normalize_sequence(length, inputs, layout, False)
        if begin_state is None:
            begin_state = self.begin_state()
        states = begin_state
        outputs = []
        for i in range(length):
            output, states = self(inputs[i], states)
            outputs.append(output)
        outputs, _ = _normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _get_activation(self, inputs, activation, **kwargs):
        if isinstance(activation, str):
            return symbol.Activation(inputs, act_type=activation, **kwargs)
        return activation(inputs, **kwargs)


class RNNCell(BaseRNNCell):
    """Elman RNN cell: ``h' = act(i2h(x) + h2h(h))``.

    Parameters
    ----------
    num_hidden : int
        Number of units of the output.
    activation : str or callable, default 'tanh'
    prefix : str, default 'rnn_'
    params : RNNParams, optional

    Examples
    --------
    >>> import symgraph as mx
    >>> out, states = RNNCell(2)(mx.sym.Variable('x'), [mx.sym.Variable('h')])
    >>> out.name, out.list_arguments()
    ('rnn_t0_out', ['x', 'rnn_i2h_weight', 'rnn_i2h_bias', 'h', 'rnn_h2h_weight', 'rnn_h2h_bias'])
    """

    def __init__(self, num_hidden: int, activation='tanh', prefix: str = 'rnn_',
                 params: RNNParams | None = None):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._activation = activation
        self._iW = self.params.get('i2h_weight')
        self._iB = self.params.get('i2h_bias')
        self._hW = self.params.get('h2h_weight')
        self._hB = self.params.get('h2h_bias')

    @property
    def state_info(self) -> list:
        return [{'shape': (0, self._num_hidden), '__layout__': 'NC'}]

    @property
    def _gate_names(self):
        return ('',)

    def __call__(self, inputs, states):
        self._counter += 1
        name = f'{self._prefix}t{self._counter}_'
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB,
                                    num_hidden=self._num_hidden, name=f'{name}i2h')
        h2h = symbol.FullyConnected(data=states[0], weight=self._hW, bias=self._hB,
                                    num_hidden=self._num_hidden, name=f'{name}h2h')
        output = self._get_activation(i2h + h2h, self._activation, name=f'{name}out')
        return output, [output]


class LSTMCell(BaseRNNCell):
    """LSTM cell; gates stacked in the order i, f, c, o in ``i2h``/``h2h``.

    Parameters
    ----------
    num_hidden : int
    prefix : str, default 'lstm_'
    params : RNNParams, optional
    forget_bias : float, default 1.0
        Added to the forget gate through ``i2h_bias``'s initializer (``mx.init.LSTMBias``).

    Examples
    --------
    >>> cell = LSTMCell(3)
    >>> cell.params.get('i2h_bias').attr('__init__')
    '["lstmbias", {"forget_bias": 1.0}]'
    >>> len(cell.state_info)
    2
    """

    def __init__(self, num_hidden: int, prefix: str = 'lstm_', params: RNNParams | None = None,
                 forget_bias: float = 1.0):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._iW = self.params.get('i2h_weight')
        self._hW = self.params.get('h2h_weight')
        self._iB = self.params.get('i2h_bias', init=init.LSTMBias(forget_bias=forget_bias))
        self._hB = self.params.get('h2h_bias')

    @property
    def state_info(self) -> list:
        return [{'shape': (0, self._num_hidden), '__layout__': 'NC'},
                {'shape': (0, self._num_hidden), '__layout__': 'NC'}]

    @property
    def _gate_names(self):
        return ['_i', '_f', '_c', '_o']

    def __call__(self, inputs, states):
        self._counter += 1
        name = f'{self._prefix}t{self._counter}_'
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB,
                                    num_hidden=self._num_hidden * 4, name=f'{name}i2h')
        h2h = symbol.FullyConnected(data=states[0], weight=self._hW, bias=self._hB,
                                    num_hidden=self._num_hidden * 4, name=f'{name}h2h')
        gates = symbol.SliceChannel(i2h + h2h, num_outputs=4, name=f'{name}slice')
        in_gate = symbol.Activation(gates[0], act_type='sigmoid', name=f'{name}i')
        forget_gate = symbol.Activation(gates[1], act_type='sigmoid', name=f'{name}f')
        in_transform = symbol.Activation(gates[2], act_type='tanh', name=f'{name}c')
        out_gate = symbol.Activation(gates[3], act_type='sigmoid', name=f'{name}o')
        next_c = symbol._internal._plus(forget_gate * states[1], in_gate * in_transform,
                              name=f'{name}state')
        next_h = symbol._internal._mul(out_gate, symbol.Activation(next_c, act_type='tanh'),
                             name=f'{name}out')
        return next_h, [next_h, next_c]


class GRUCell(BaseRNNCell):
    """GRU cell in cuDNN's form (reset gate applied after ``h2h``); gates r, z, o.

    Parameters
    ----------
    num_hidden : int
    prefix : str, default 'gru_'
    params : RNNParams, optional

    Examples
    --------
    >>> import symgraph as mx
    >>> out, _ = GRUCell(2).unroll(1, [mx.sym.Variable('x')])
    >>> out[0].name
    'gru_t0_out'
    """

    def __init__(self, num_hidden: int, prefix: str = 'gru_', params: RNNParams | None = None):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._iW = self.params.get('i2h_weight')
        self._iB = self.params.get('i2h_bias')
        self._hW = self.params.get('h2h_weight')
        self._hB = self.params.get('h2h_bias')

    @property
    def state_info(self) -> list:
        return [{'shape': (0, self._num_hidden), '__layout__': 'NC'}]

    @property
    def _gate_names(self):
        return ['_r', '_z', '_o']

    def __call__(self, inputs, states):
        self._counter += 1
        name = f'{self._prefix}t{self._counter}_'
        prev_h = states[0]
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB,
                                    num_hidden=self._num_hidden * 3, name=f'{name}_i2h')
        h2h = symbol.FullyConnected(data=prev_h, weight=self._hW, bias=self._hB,
                                    num_hidden=self._num_hidden * 3, name=f'{name}_h2h')
        i2h_r, i2h_z, i2h = symbol.SliceChannel(i2h, num_outputs=3, name=f'{name}_i2h_slice')
        h2h_r, h2h_z, h2h = symbol.SliceChannel(h2h, num_outputs=3, name=f'{name}_h2h_slice')
        reset_gate = symbol.Activation(i2h_r + h2h_r, act_type='sigmoid', name=f'{name}_r_act')
        update_gate = symbol.Activation(i2h_z + h2h_z, act_type='sigmoid',
                                        name=f'{name}_z_act')
        next_h_tmp = symbol.Activation(i2h + reset_gate * h2h, act_type='tanh',
                                       name=f'{name}_h_act')
        next_h = symbol._internal._plus((1. - update_gate) * next_h_tmp, update_gate * prev_h,
                              name=f'{name}out')
        return next_h, [next_h]


class SequentialRNNCell(BaseRNNCell):
    """A stack of cells; each cell's output is the next one's input.

    Parameters
    ----------
    params : RNNParams, optional
        Container shared with the added cells (then they must own theirs).

    Examples
    --------
    >>> import symgraph as mx
    >>> stack = SequentialRNNCell()
    >>> stack.add(LSTMCell(3, prefix='l0_')); stack.add(GRUCell(3, prefix='l1_'))
    >>> [s.name for s in stack.begin_state()]
    ['l0_begin_state_0', 'l0_begin_state_1', 'l1_begin_state_0']
    """

    def __init__(self, params: RNNParams | None = None):
        super().__init__(prefix='', params=params)
        self._override_cell_params = params is not None
        self._cells: list = []

    def add(self, cell: BaseRNNCell) -> None:
        """Append ``cell`` to the stack."""
        self._cells.append(cell)
        if self._override_cell_params:
            assert cell._own_params, \
                "Either specify params for SequentialRNNCell " \
                "or child cells, not both."
            cell.params._params.update(self.params._params)
        self.params._params.update(cell.params._params)

    @property
    def state_info(self) -> list:
        return _cells_state_info(self._cells)

    def begin_state(self, **kwargs) -> list:  # MXNet's signature (no func)
        assert not self._modified, \
            "After applying modifier cells (e.g. ZoneoutCell) the base " \
            "cell cannot be called directly. Call the modifier cell instead."
        return _cells_begin_state(self._cells, **kwargs)

    def unpack_weights(self, args: dict) -> dict:
        return _cells_unpack_weights(self._cells, args)

    def pack_weights(self, args: dict) -> dict:
        return _cells_pack_weights(self._cells, args)

    def __call__(self, inputs, states):
        self._counter += 1
        next_states = []
        p = 0
        for cell in self._cells:
            assert not isinstance(cell, BidirectionalCell)
            n = len(cell.state_info)
            inputs, state = cell(inputs, states[p:p + n])
            p += n
            next_states.append(state)
        return inputs, sum(next_states, [])

    def unroll(self, length: int, inputs, begin_state=None, layout: str = 'NTC',
               merge_outputs: bool | None = None):
        self.reset()
        num_cells = len(self._cells)
        if begin_state is None:
            begin_state = self.begin_state()
        p = 0
        next_states = []
        for i, cell in enumerate(self._cells):
            n = len(cell.state_info)
            states = begin_state[p:p + n]
            p += n
            inputs, states = cell.unroll(length, inputs=inputs, begin_state=states, layout=layout,
                                         merge_outputs=None if i < num_cells - 1
                                         else merge_outputs)
            next_states.extend(states)
        return inputs, next_states


class DropoutCell(BaseRNNCell):
    """Dropout on the input (no states).

    Parameters
    ----------
    dropout : float
        Fraction of elements dropped; 0 adds no node.
    prefix : str, default 'dropout_'
    params : RNNParams, optional

    Examples
    --------
    >>> import symgraph as mx
    >>> x = mx.sym.Variable('x')
    >>> with mx.name.NameManager():  # fresh automatic names
    ...     DropoutCell(0.)(x, [])[0] is x, DropoutCell(0.5)(x, [])[0].list_outputs()
    (True, ['dropout0_output'])
    >>> DropoutCell('0.5')
    Traceback (most recent call last):
    ...
    AssertionError: dropout probability must be a number
    """

    def __init__(self, dropout: float, prefix: str = 'dropout_', params: RNNParams | None = None):
        super().__init__(prefix, params)
        assert isinstance(dropout, _NUMERIC), "dropout probability must be a number"
        self.dropout = dropout

    @property
    def state_info(self) -> list:
        return []

    def __call__(self, inputs, states):
        if self.dropout > 0:
            inputs = symbol.Dropout(data=inputs, p=self.dropout)
        return inputs, states

    def unroll(self, length: int, inputs, begin_state=None, layout: str = 'NTC',
               merge_outputs: bool | None = None):
        self.reset()
        inputs, _ = _normalize_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, Symbol):
            return self(inputs, [])
        return super().unroll(length, inputs, begin_state=begin_state, layout=layout,
                              merge_outputs=merge_outputs)


class ModifierCell(BaseRNNCell):
    """Base class of cells wrapping a base cell (Zoneout, Residual); the base cell is
    then used only through the modifier.

    Examples
    --------
    >>> base = GRUCell(2)
    >>> mod = ResidualCell(base)
    >>> mod.params is base.params, [s.name for s in mod.begin_state()]
    (True, ['gru_begin_state_0'])
    >>> base.begin_state()
    Traceback (most recent call last):
    ...
    AssertionError: After applying modifier cells (e.g. DropoutCell) the base cell cannot \
be called directly. Call the modifier cell instead.
    """

    def __init__(self, base_cell: BaseRNNCell):
        super().__init__()
        base_cell._modified = True
        self.base_cell = base_cell

    @property
    def params(self) -> RNNParams:
        self._own_params = False
        return self.base_cell.params

    @property
    def state_info(self) -> list:
        return self.base_cell.state_info

    def begin_state(self, init_sym=symbol.zeros, **kwargs) -> list:
        assert not self._modified, \
            "After applying modifier cells (e.g. DropoutCell) the base " \
            "cell cannot be called directly. Call the modifier cell instead."
        self.base_cell._modified = False
        begin = self.base_cell.begin_state(init_sym, **kwargs)
        self.base_cell._modified = True
        return begin

    def unpack_weights(self, args: dict) -> dict:
        return self.base_cell.unpack_weights(args)

    def pack_weights(self, args: dict) -> dict:
        return self.base_cell.pack_weights(args)

    def __call__(self, inputs, states):
        raise NotImplementedError


class ZoneoutCell(ModifierCell):
    """Zoneout on a base cell: each output/state element keeps its previous value with
    probability ``zoneout_outputs``/``zoneout_states`` in training.

    Parameters
    ----------
    base_cell : BaseRNNCell
    zoneout_outputs : float, default 0.
    zoneout_states : float, default 0.

    Examples
    --------
    >>> import symgraph as mx
    >>> cell = ZoneoutCell(RNNCell(2), zoneout_states=0.5)
    >>> with mx.name.NameManager():  # fresh automatic names
    ...     out, states = cell.unroll(2, mx.sym.Variable('x'))
    >>> states[0].name
    'where1'
    """

    def __init__(self, base_cell: BaseRNNCell, zoneout_outputs: float = 0.,
                 zoneout_states: float = 0.):
        from .fused_cell import FusedRNNCell
        assert not isinstance(base_cell, FusedRNNCell), \
            "FusedRNNCell doesn't support zoneout. " \
            "Please unfuse first."
        assert not isinstance(base_cell, BidirectionalCell), \
            "BidirectionalCell doesn't support zoneout since it doesn't support step. " \
            "Please add ZoneoutCell to the cells underneath instead."
        assert not isinstance(base_cell, SequentialRNNCell) or \
            not getattr(base_cell, '_bidirectional', False), \
            "Bidirectional SequentialRNNCell doesn't support zoneout. " \
            "Please add ZoneoutCell to the cells underneath instead."
        super().__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self.prev_output = None

    def reset(self) -> None:
        super().reset()
        self.prev_output = None

    def __call__(self, inputs, states):
        cell, p_outputs, p_states = self.base_cell, self.zoneout_outputs, self.zoneout_states
        next_output, next_states = cell(inputs, states)

        def mask(p, like):
            return symbol.Dropout(symbol.ones_like(like), p=p)

        prev_output = self.prev_output if self.prev_output is not None \
            else symbol.zeros((0, 0))
        output = (symbol.where(mask(p_outputs, next_output), next_output, prev_output)
                  if p_outputs != 0. else next_output)
        states = ([symbol.where(mask(p_states, new_s), new_s, old_s)
                   for new_s, old_s in zip(next_states, states)]
                  if p_states != 0. else next_states)
        self.prev_output = output
        return output, states


class ResidualCell(ModifierCell):
    """Adds the input to the base cell's output (Wu et al., 2016).

    Examples
    --------
    >>> import symgraph as mx
    >>> out, _ = ResidualCell(GRUCell(3)).unroll(2, mx.sym.Variable('x'), merge_outputs=False)
    >>> [o.name for o in out]
    ['gru_t0_out_plus_residual', 'gru_t1_out_plus_residual']
    """

    def __call__(self, inputs, states):
        output, states = self.base_cell(inputs, states)
        output = symbol.elemwise_add(output, inputs, name=f'{output.name}_plus_residual')
        return output, states

    def unroll(self, length: int, inputs, begin_state=None, layout: str = 'NTC',
               merge_outputs: bool | None = None):
        self.reset()
        self.base_cell._modified = False
        outputs, states = self.base_cell.unroll(length, inputs=inputs, begin_state=begin_state,
                                                layout=layout, merge_outputs=merge_outputs)
        self.base_cell._modified = True
        if merge_outputs is None:
            merge_outputs = isinstance(outputs, Symbol)
        inputs, _ = _normalize_sequence(length, inputs, layout, merge_outputs)
        if merge_outputs:
            outputs = symbol.elemwise_add(outputs, inputs,
                                          name=f'{outputs.name}_plus_residual')
        else:
            outputs = [symbol.elemwise_add(o, i, name=f'{o.name}_plus_residual')
                       for o, i in zip(outputs, inputs)]
        return outputs, states


class BidirectionalCell(BaseRNNCell):
    """Runs ``l_cell`` forward and ``r_cell`` backward in time; outputs concatenated.

    Parameters
    ----------
    l_cell, r_cell : BaseRNNCell
    params : RNNParams, optional
    output_prefix : str, default 'bi_'

    Examples
    --------
    >>> import symgraph as mx
    >>> bi = BidirectionalCell(GRUCell(2, prefix='l_'), GRUCell(2, prefix='r_'))
    >>> out, states = bi.unroll(3, mx.sym.Variable('x'), merge_outputs=True)
    >>> out.name, [[s.name for s in group] for group in states]
    ('bi_out', [['l_t2_out'], ['r_t2_out']])
    >>> bi(mx.sym.Variable('x'), [])
    Traceback (most recent call last):
    ...
    NotImplementedError: Bidirectional cannot be stepped. Please use unroll
    """

    def __init__(self, l_cell: BaseRNNCell, r_cell: BaseRNNCell,
                 params: RNNParams | None = None, output_prefix: str = 'bi_'):
        super().__init__('', params=params)
        self._output_prefix = output_prefix
        self._override_cell_params = params is not None
        if self._override_cell_params:
            assert l_cell._own_params and r_cell._own_params, \
                "Either specify params for BidirectionalCell " \
                "or child cells, not both."
            l_cell.params._params.update(self.params._params)
            r_cell.params._params.update(self.params._params)
        self.params._params.update(l_cell.params._params)
        self.params._params.update(r_cell.params._params)
        self._cells = [l_cell, r_cell]

    def unpack_weights(self, args: dict) -> dict:
        return _cells_unpack_weights(self._cells, args)

    def pack_weights(self, args: dict) -> dict:
        return _cells_pack_weights(self._cells, args)

    def __call__(self, inputs, states):
        raise NotImplementedError("Bidirectional cannot be stepped. Please use unroll")

    @property
    def state_info(self) -> list:
        return _cells_state_info(self._cells)

    def begin_state(self, **kwargs) -> list:
        assert not self._modified, \
            "After applying modifier cells (e.g. DropoutCell) the base " \
            "cell cannot be called directly. Call the modifier cell instead."
        return _cells_begin_state(self._cells, **kwargs)

    def unroll(self, length: int, inputs, begin_state=None, layout: str = 'NTC',
               merge_outputs: bool | None = None):
        self.reset()
        inputs, axis = _normalize_sequence(length, inputs, layout, False)
        if begin_state is None:
            begin_state = self.begin_state()
        l_cell, r_cell = self._cells
        n_l = len(l_cell.state_info)
        l_outputs, l_states = l_cell.unroll(length, inputs=inputs,
                                            begin_state=begin_state[:n_l],
                                            layout=layout, merge_outputs=merge_outputs)
        r_outputs, r_states = r_cell.unroll(length, inputs=list(reversed(inputs)),
                                            begin_state=begin_state[n_l:],
                                            layout=layout, merge_outputs=merge_outputs)
        if merge_outputs is None:
            merge_outputs = isinstance(l_outputs, Symbol) and isinstance(r_outputs, Symbol)
            if not merge_outputs:
                if isinstance(l_outputs, Symbol):
                    l_outputs = list(symbol.SliceChannel(l_outputs, axis=axis,
                                                         num_outputs=length, squeeze_axis=1))
                if isinstance(r_outputs, Symbol):
                    r_outputs = list(symbol.SliceChannel(r_outputs, axis=axis,
                                                         num_outputs=length, squeeze_axis=1))
        if merge_outputs:
            l_outputs = [l_outputs]
            r_outputs = [symbol.reverse(r_outputs, axis=axis)]
        else:
            r_outputs = list(reversed(r_outputs))
        outputs = [symbol.Concat(l_o, r_o, dim=1 + merge_outputs,
                                 name=(f'{self._output_prefix}out' if merge_outputs
                                       else f'{self._output_prefix}t{i}'))
                   for i, (l_o, r_o) in enumerate(zip(l_outputs, r_outputs))]
        if merge_outputs:
            outputs = outputs[0]
        return outputs, [l_states, r_states]


def __getattr__(name: str):
    # FusedRNNCell lives in fused_cell.py (it needs the cells above for ``unfuse``), the
    # convolutional cells in conv_cell.py; MXNet's rnn_cell.py defines them all
    if name == 'FusedRNNCell':
        from .fused_cell import FusedRNNCell
        return FusedRNNCell
    if name in ('BaseConvRNNCell', 'ConvRNNCell', 'ConvLSTMCell', 'ConvGRUCell'):
        from . import conv_cell
        return getattr(conv_cell, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
