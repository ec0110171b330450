"""Fused recurrent layers ``RNN``, ``LSTM`` and ``GRU``, as MXNet 1.9.1's
``gluon/rnn/rnn_layer.py``, on the ``RNN`` operator (``_unfuse()`` gives the equivalent
stack of gluon cells).

Each layer ``i`` and direction ``d`` (``l``, or ``r`` when bidirectional) owns
``{d}{i}_i2h_weight`` (gates * hidden, input width), ``{d}{i}_h2h_weight``,
``{d}{i}_i2h_bias`` and ``{d}{i}_h2h_bias`` (and ``{d}{i}_h2r_weight`` with an LSTM
projection); they are flattened and concatenated into the operator's packed vector in
MXNet's order (all weights by layer, direction, i2h/h2h, then all biases).

Called as ``layer(x)`` the layer returns the output only (zero initial states); called as
``layer(x, states)`` it returns ``(output, new_states)``.

Examples
--------
>>> import symgraph as mx
>>> lstm = mx.gluon.rnn.LSTM(4, num_layers=2, input_size=3, prefix='lstm0_')
>>> lstm
LSTM(3 -> 4, TNC, num_layers=2)
>>> sorted(lstm.collect_params().keys())[:4]
['lstm0_l0_h2h_bias', 'lstm0_l0_h2h_weight', 'lstm0_l0_i2h_bias', 'lstm0_l0_i2h_weight']
>>> lstm.initialize()
>>> x = mx.nd.ones((5, 2, 3))
>>> lstm(x).shape
(5, 2, 4)
>>> out, (h, c) = lstm(x, lstm.begin_state(batch_size=2))
>>> h.shape, c.shape
((2, 2, 4), (2, 2, 4))
>>> lstm(x, [mx.nd.zeros((2, 3, 4)), mx.nd.zeros((2, 2, 4))])
Traceback (most recent call last):
...
ValueError: Invalid recurrent state shape. Expecting (2, 2, 4), got (2, 3, 4).
"""
from __future__ import annotations

import re

from ... import ndarray, symbol
from ...ndarray.ndarray import NDArray
from ...symbol.symbol import Symbol
from ..block import HybridBlock
from . import rnn_cell

__all__ = ["RNN", "LSTM", "GRU"]

_GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}
_KEY = re.compile(r"(l|r)(\d)_(i2h|h2h|h2r)_(weight|bias)\Z")


class _RNNLayer(HybridBlock):
    """The fused recurrent layer: parameters per layer and direction, states in and out."""

    def __init__(self, hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                 i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                 h2h_bias_initializer, mode, projection_size, h2r_weight_initializer,
                 lstm_state_clip_min, lstm_state_clip_max, lstm_state_clip_nan, dtype,
                 use_sequence_length=False, **kwargs):
        super().__init__(**kwargs)
        assert layout in ("TNC", "NTC"), \
            f"Invalid layout {layout}; must be one of ['TNC' or 'NTC']"
        self._hidden_size = hidden_size
        self._projection_size = projection_size if projection_size else None
        self._num_layers = num_layers
        self._mode = mode
        self._layout = layout
        self._dropout = dropout
        self._dir = 2 if bidirectional else 1
        self._input_size = input_size
        self._i2h_weight_initializer = i2h_weight_initializer
        self._h2h_weight_initializer = h2h_weight_initializer
        self._i2h_bias_initializer = i2h_bias_initializer
        self._h2h_bias_initializer = h2h_bias_initializer
        self._h2r_weight_initializer = h2r_weight_initializer
        self._lstm_state_clip_min = lstm_state_clip_min
        self._lstm_state_clip_max = lstm_state_clip_max
        self._lstm_state_clip_nan = lstm_state_clip_nan
        self._dtype = dtype
        self._use_sequence_length = use_sequence_length
        self.skip_states = None
        self._gates = _GATES[mode]
        self._register_params(dtype)

    def _register_params(self, dtype) -> None:
        """Create every layer's and direction's weights and biases, in MXNet's order."""
        ng, ni, nh = self._gates, self._input_size, self._hidden_size
        proj = self._projection_size
        for i in range(self._num_layers):
            for j in ["l", "r"][:self._dir]:
                self._register_param(f"{j}{i}_i2h_weight", (ng * nh, ni),
                                     self._i2h_weight_initializer, dtype)
                self._register_param(f"{j}{i}_h2h_weight", (ng * nh, proj or nh),
                                     self._h2h_weight_initializer, dtype)
                self._register_param(f"{j}{i}_i2h_bias", (ng * nh,),
                                     self._i2h_bias_initializer, dtype)
                self._register_param(f"{j}{i}_h2h_bias", (ng * nh,),
                                     self._h2h_bias_initializer, dtype)
                if proj:
                    self._register_param(f"{j}{i}_h2r_weight", (proj, nh),
                                         self._h2r_weight_initializer, dtype)
            ni = (proj or nh) * self._dir

    def _register_param(self, name: str, shape: tuple, init, dtype):
        p = self.params.get(name, shape=shape, init=init, allow_deferred_init=True,
                            dtype=dtype)
        setattr(self, name, p)
        return p

    def __repr__(self) -> str:
        s = f"{self._layout}"
        if self._num_layers != 1:
            s += f", num_layers={self._num_layers}"
        if self._dropout != 0:
            s += f", dropout={self._dropout}"
        if self._dir == 2:
            s += ", bidirectional"
        shape = self.l0_i2h_weight.shape
        mapping = f"{shape[1] if shape[1] else None} -> {shape[0] // self._gates}"
        return f"{self.__class__.__name__}({mapping}, {s})"

    def _collect_params_with_prefix(self, prefix: str = "") -> dict:
        """Structural names of MXNet's unfused cells (``_unfused.0.i2h_weight``;
        ``_unfused.0.l_cell.i2h_weight`` when bidirectional), as ``save_parameters``
        writes them."""
        if prefix:
            prefix += "."
        bidirectional = any(_KEY.match(k).group(1) == "r" for k in self._reg_params)
        ret = {prefix + _unfused_key(_KEY.match(key), bidirectional): val
               for key, val in self._reg_params.items()}
        for name, child in self._children.items():
            ret.update(child._collect_params_with_prefix(prefix + name))
        return ret

    def state_info(self, batch_size: int = 0) -> list[dict]:
        """Shape, layout and dtype of each state."""
        raise NotImplementedError

    def _unfuse(self):
        """The layer as a ``HybridSequentialRNNCell`` of cells sharing its parameters
        (``BidirectionalCell`` pairs when bidirectional, ``DropoutCell`` between layers)."""
        assert not self._projection_size, "_unfuse does not support projection layer yet!"
        assert not self._lstm_state_clip_min and not self._lstm_state_clip_max, \
            "_unfuse does not support state clipping yet!"
        stack = rnn_cell.HybridSequentialRNNCell(prefix=self.prefix, params=self.params)
        with stack.name_scope():
            ni = self._input_size
            for i in range(self._num_layers):
                kwargs = {'input_size': ni,
                          'i2h_weight_initializer': self._i2h_weight_initializer,
                          'h2h_weight_initializer': self._h2h_weight_initializer,
                          'i2h_bias_initializer': self._i2h_bias_initializer,
                          'h2h_bias_initializer': self._h2h_bias_initializer}
                if self._dir == 2:
                    stack.add(rnn_cell.BidirectionalCell(self._cell(f"l{i}_", kwargs),
                                                         self._cell(f"r{i}_", kwargs)))
                else:
                    stack.add(self._cell(f"l{i}_", kwargs))
                if self._dropout > 0 and i != self._num_layers - 1:
                    stack.add(rnn_cell.DropoutCell(self._dropout))
                ni = self._hidden_size * self._dir
        return stack

    def _cell(self, prefix: str, kwargs: dict):
        """One unfused cell of this layer's mode."""
        hidden = self._hidden_size
        if self._mode in ("rnn_relu", "rnn_tanh"):
            return rnn_cell.RNNCell(hidden, activation=self._mode[4:], prefix=prefix, **kwargs)
        cls = rnn_cell.LSTMCell if self._mode == "lstm" else rnn_cell.GRUCell
        return cls(hidden, prefix=prefix, **kwargs)

    def cast(self, dtype) -> None:
        super().cast(dtype)
        self._dtype = dtype

    def begin_state(self, batch_size: int = 0, func=ndarray.zeros, **kwargs) -> list:
        """Initial states (zeros by default), one per entry of :meth:`state_info`."""
        states = []
        for i, info in enumerate(self.state_info(batch_size)):
            if info is not None:
                info.update(kwargs)
            else:
                info = kwargs
            states.append(func(name=f"{self.prefix}h0_{i}", **info))
        return states

    def __call__(self, inputs, states=None, sequence_length=None, **kwargs):
        skip_states = states is None
        if self.skip_states is not None and skip_states != self.skip_states:
            self._clear_cached_op()  # the traced graph returns states or not
        self.skip_states = skip_states
        if states is None:
            if isinstance(inputs, NDArray):
                batch_size = inputs.shape[self._layout.find("N")]
                states = self.begin_state(batch_size, ctx=inputs.context, dtype=inputs.dtype)
            else:
                states = self.begin_state(0, func=symbol.zeros)
        if isinstance(states, (NDArray, Symbol)):
            states = [states]
        if isinstance(inputs, NDArray):
            self._check_states(inputs, states)
        if self._use_sequence_length:
            return super().__call__(inputs, states, sequence_length, **kwargs)
        return super().__call__(inputs, states, **kwargs)

    def _check_states(self, inputs: NDArray, states: list) -> None:
        batch_size = inputs.shape[self._layout.find("N")]
        for state, info in zip(states, self.state_info(batch_size)):
            if state.shape != info["shape"]:
                raise ValueError(f"Invalid recurrent state shape. Expecting "
                                 f"{info['shape']}, got {state.shape}.")

    def hybrid_forward(self, F, inputs, states, sequence_length=None, **kwargs):
        out = self._forward_kernel(F, inputs, states, sequence_length, **kwargs)
        return out[0] if self.skip_states else out

    def _packed_params(self, F, kwargs: dict):
        """Every parameter flattened and concatenated in the RNN operator's order."""
        gates = ["i2h", "h2h", "h2r"] if self._projection_size else ["i2h", "h2h"]
        names = [f"{d}{layer}_{g}_{t}"
                 for t in ["weight", "bias"]
                 for layer in range(self._num_layers)
                 for d in ["l", "r"][:self._dir]
                 for g in gates if g != "h2r" or t != "bias"]
        flat = [F.reshape(kwargs[name], shape=(-1,)) for name in names]
        return F._internal._rnn_param_concat(*flat, dim=0)

    def _forward_kernel(self, F, inputs, states, sequence_length, **kwargs):
        """Run the RNN operator; returns ``(outputs, [states...])``."""
        if self._layout == "NTC":
            inputs = F.swapaxes(inputs, dim1=0, dim2=1)
        rnn_args = states + [sequence_length] if self._use_sequence_length else states
        rnn = F.RNN(inputs, self._packed_params(F, kwargs), *rnn_args,
                    use_sequence_length=self._use_sequence_length,
                    state_size=self._hidden_size, projection_size=self._projection_size,
                    num_layers=self._num_layers, bidirectional=self._dir == 2,
                    p=self._dropout, state_outputs=True, mode=self._mode,
                    lstm_state_clip_min=self._lstm_state_clip_min,
                    lstm_state_clip_max=self._lstm_state_clip_max,
                    lstm_state_clip_nan=self._lstm_state_clip_nan)
        if self._mode == "lstm":
            outputs, states = rnn[0], [rnn[1], rnn[2]]
        else:
            outputs, states = rnn[0], [rnn[1]]
        if self._layout == "NTC":
            outputs = F.swapaxes(outputs, dim1=0, dim2=1)
        return outputs, states


def _unfused_key(m: re.Match, bidirectional: bool) -> str:
    d, layer, g, t = (m.group(i) for i in range(1, 5))
    if bidirectional:
        return f"_unfused.{layer}.{d}_cell.{g}_{t}"
    return f"_unfused.{layer}.{g}_{t}"


def _state(rnn: _RNNLayer, batch_size: int, width: int) -> dict:
    return {"shape": (rnn._num_layers * rnn._dir, batch_size, width), "__layout__": "LNC",
            "dtype": rnn._dtype}


class RNN(_RNNLayer):
    """Elman RNN, ``h_t = activation(W_ih x_t + b_ih + W_hh h_(t-1) + b_hh)`` with
    ``activation`` ``'relu'`` or ``'tanh'``; one state (layers * directions, N, hidden)."""

    def __init__(self, hidden_size, num_layers=1, activation="relu", layout="TNC", dropout=0,
                 bidirectional=False, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0,
                 dtype="float32", **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "rnn_" + activation, None, None, None, None,
                         False, dtype, **kwargs)

    def state_info(self, batch_size: int = 0) -> list[dict]:
        return [_state(self, batch_size, self._hidden_size)]


class LSTM(_RNNLayer):
    """Long short-term memory (gates i, f, g, o, MXNet's order); states ``[h, c]``."""

    def __init__(self, hidden_size, num_layers=1, layout="TNC", dropout=0, bidirectional=False,
                 input_size=0, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros",
                 projection_size=None, h2r_weight_initializer=None, state_clip_min=None,
                 state_clip_max=None, state_clip_nan=False, dtype="float32", **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "lstm", projection_size, h2r_weight_initializer,
                         state_clip_min, state_clip_max, state_clip_nan, dtype, **kwargs)

    def state_info(self, batch_size: int = 0) -> list[dict]:
        hidden = self._hidden_size
        return [_state(self, batch_size, self._projection_size or hidden),
                _state(self, batch_size, hidden)]


class GRU(_RNNLayer):
    """Gated recurrent unit (gates r, z, n, MXNet's order); one state."""

    def __init__(self, hidden_size, num_layers=1, layout="TNC", dropout=0, bidirectional=False,
                 input_size=0, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", dtype="float32",
                 **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "gru", None, None, None, None, False, dtype,
                         **kwargs)

    def state_info(self, batch_size: int = 0) -> list[dict]:
        return [_state(self, batch_size, self._hidden_size)]
