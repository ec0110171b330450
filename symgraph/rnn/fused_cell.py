"""``FusedRNNCell``: all layers and time steps in one ``RNN`` operator (MXNet 1.9.1's layout).

The operator's single ``parameters`` vector holds, for each layer and direction, every gate's
``i2h`` weight then every gate's ``h2h`` weight; after all weights come the biases in the same
order (``i2h`` gates, then ``h2h`` gates). :meth:`FusedRNNCell.unpack_weights` names the pieces
as the cells of :meth:`FusedRNNCell.unfuse` do (``lstm_l0_i2h_i_weight``...).
"""
from __future__ import annotations

import warnings

from .. import initializer as init
from .. import ndarray, symbol
from .rnn_cell import (
    BaseRNNCell,
    BidirectionalCell,
    DropoutCell,
    GRUCell,
    LSTMCell,
    RNNCell,
    RNNParams,
    SequentialRNNCell,
    _normalize_sequence,
)

_GATES = {'rnn_relu': [''], 'rnn_tanh': [''], 'lstm': ['_i', '_f', '_c', '_o'],
          'gru': ['_r', '_z', '_o']}


class FusedRNNCell(BaseRNNCell):
    """Multi-layer (bidirectional) RNN/LSTM/GRU over the whole sequence in one ``RNN`` op.

    Parameters
    ----------
    num_hidden : int
    num_layers : int, default 1
    mode : str, default 'lstm'
        'rnn_relu', 'rnn_tanh', 'lstm' or 'gru'.
    bidirectional : bool, default False
    dropout : float, default 0.
        Dropout between layers in training.
    get_next_state : bool, default False
        Whether ``unroll`` returns the final states.
    forget_bias : float, default 1.0
    prefix : str, default ``mode + '_'``
    params : RNNParams, optional

    Examples
    --------
    >>> import symgraph as mx
    >>> cell = FusedRNNCell(4, num_layers=2, mode='gru', bidirectional=True)
    >>> cell.state_info
    [{'shape': (4, 0, 4), '__layout__': 'LNC'}]
    >>> args = cell.unpack_weights({'gru_parameters': mx.nd.zeros((1224,))})
    >>> args['gru_r1_h2h_z_weight'].shape, len(args)
    ((4, 4), 48)
    >>> out, _ = FusedRNNCell(4, mode='gru').unroll(3, mx.sym.Variable('data'), layout='TNC',
    ...                                             merge_outputs=True)
    >>> out.name, out.infer_shape(data=(3, 2, 5))[1]
    ('gru_rnn', [(3, 2, 4)])
    >>> cell(mx.sym.Variable('x'), [])
    Traceback (most recent call last):
    ...
    NotImplementedError: FusedRNNCell cannot be stepped. Please use unroll
    """

    def __init__(self, num_hidden: int, num_layers: int = 1, mode: str = 'lstm',
                 bidirectional: bool = False, dropout: float = 0., get_next_state: bool = False,
                 forget_bias: float = 1.0, prefix: str | None = None,
                 params: RNNParams | None = None):
        if prefix is None:
            prefix = f'{mode}_'
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._dropout = dropout
        self._get_next_state = get_next_state
        self._directions = ['l', 'r'] if bidirectional else ['l']
        initializer = init.FusedRNN(None, num_hidden, num_layers, mode, bidirectional,
                                    forget_bias)
        self._parameter = self.params.get('parameters', init=initializer)

    @property
    def state_info(self) -> list:
        b = self._bidirectional + 1
        n = (self._mode == 'lstm') + 1
        return [{'shape': (b * self._num_layers, 0, self._num_hidden), '__layout__': 'LNC'}
                for _ in range(n)]

    @property
    def _gate_names(self):
        return _GATES[self._mode]

    @property
    def _num_gates(self) -> int:
        return len(self._gate_names)

    def _slice_weights(self, arr, li: int, lh: int) -> dict:
        """Views of ``arr`` named per layer, direction and gate (input size li, hidden lh)."""
        args = {}
        b = len(self._directions)
        p = 0
        for layer in range(self._num_layers):
            for direction in self._directions:
                for gate in self._gate_names:
                    name = f'{self._prefix}{direction}{layer}_i2h{gate}_weight'
                    cols = b * lh if layer > 0 else li
                    args[name] = arr[p:p + lh * cols].reshape((lh, cols))
                    p += lh * cols
                for gate in self._gate_names:
                    name = f'{self._prefix}{direction}{layer}_h2h{gate}_weight'
                    args[name] = arr[p:p + lh * lh].reshape((lh, lh))
                    p += lh * lh
        for layer in range(self._num_layers):
            for direction in self._directions:
                for group in ('i2h', 'h2h'):
                    for gate in self._gate_names:
                        name = f'{self._prefix}{direction}{layer}_{group}{gate}_bias'
                        args[name] = arr[p:p + lh]
                        p += lh
        assert p == arr.size, "Invalid parameters size for FusedRNNCell"
        return args

    def unpack_weights(self, args: dict) -> dict:
        args = args.copy()
        arr = args.pop(self._parameter.name)
        b = len(self._directions)
        m = self._num_gates
        h = self._num_hidden
        num_input = arr.size // b // h // m - (self._num_layers - 1) * (h + b * h + 2) - h - 2
        nargs = self._slice_weights(arr, num_input, self._num_hidden)
        args.update({name: nd.copy() for name, nd in nargs.items()})
        return args

    def pack_weights(self, args: dict) -> dict:
        args = args.copy()
        b = self._bidirectional + 1
        m = self._num_gates
        h = self._num_hidden
        w0 = args[f'{self._prefix}l0_i2h{self._gate_names[0]}_weight']
        num_input = w0.shape[1]
        total = (num_input + h + 2) * h * m * b + \
            (self._num_layers - 1) * m * h * (h + b * h + 2) * b
        arr = ndarray.zeros((total,), ctx=w0.context, dtype=w0.dtype)
        for name, nd in self._slice_weights(arr, num_input, h).items():
            nd[:] = args.pop(name)
        args[self._parameter.name] = arr
        return args

    def __call__(self, inputs, states):
        raise NotImplementedError("FusedRNNCell cannot be stepped. Please use unroll")

    def unroll(self, length: int, inputs, begin_state=None, layout: str = 'NTC',
               merge_outputs: bool | None = None):
        self.reset()
        inputs, axis = _normalize_sequence(length, inputs, layout, True)
        if axis == 1:
            warnings.warn("NTC layout detected. Consider using "
                          "TNC for FusedRNNCell for faster speed", stacklevel=2)
            inputs = symbol.swapaxes(inputs, dim1=0, dim2=1)
        else:
            assert axis == 0, f"Unsupported layout {layout}"
        if begin_state is None:
            begin_state = self.begin_state()
        states = {'state': begin_state[0]}
        if self._mode == 'lstm':
            states['state_cell'] = begin_state[1]
        rnn = symbol.RNN(data=inputs, parameters=self._parameter,
                         state_size=self._num_hidden, num_layers=self._num_layers,
                         bidirectional=self._bidirectional, p=self._dropout,
                         state_outputs=self._get_next_state,
                         mode=self._mode, name=self._prefix + 'rnn', **states)
        if not self._get_next_state:
            outputs, states = rnn, []
        else:
            n_states = 2 if self._mode == 'lstm' else 1
            for k in range(1, n_states + 1):
                rnn[k]._set_attr(__layout__='LNC')
            outputs, states = rnn[0], [rnn[k] for k in range(1, n_states + 1)]
        if axis == 1:
            outputs = symbol.swapaxes(outputs, dim1=0, dim2=1)
        outputs, _ = _normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def unfuse(self) -> SequentialRNNCell:
        """The same network as a stack of stepping cells (names match :meth:`unpack_weights`).

        >>> cell = FusedRNNCell(3, num_layers=2, mode='rnn_relu', dropout=0.5).unfuse()
        >>> [type(c).__name__ for c in cell._cells], cell._cells[0]._prefix
        (['RNNCell', 'DropoutCell', 'RNNCell'], 'rnn_relu_l0_')
        """
        h = self._num_hidden

        def get_cell(cell_prefix):
            if self._mode in ('rnn_relu', 'rnn_tanh'):
                return RNNCell(h, activation=self._mode[4:], prefix=cell_prefix)
            return {'lstm': LSTMCell, 'gru': GRUCell}[self._mode](h, prefix=cell_prefix)

        stack = SequentialRNNCell()
        for i in range(self._num_layers):
            if self._bidirectional:
                stack.add(BidirectionalCell(get_cell(f'{self._prefix}l{i}_'),
                                            get_cell(f'{self._prefix}r{i}_'),
                                            output_prefix=f'{self._prefix}bi_l{i}_'))
            else:
                stack.add(get_cell(f'{self._prefix}l{i}_'))
            if self._dropout > 0 and i != self._num_layers - 1:
                stack.add(DropoutCell(self._dropout, prefix=f'{self._prefix}_dropout{i}_'))
        return stack
