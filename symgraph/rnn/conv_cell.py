"""Convolutional RNN cells of MXNet 1.x's ``mx.rnn`` (ConvRNN, ConvLSTM, ConvGRU): the
``i2h``/``h2h`` transforms are convolutions, states are feature maps.

>>> import symgraph as mx
>>> cell = mx.rnn.ConvLSTMCell(input_shape=(2, 3, 5, 5), num_hidden=4)
>>> cell.state_info[0]
{'shape': (0, 4, 5, 5), '__layout__': 'NCHW'}
>>> out, _ = cell.unroll(2, mx.sym.Variable('data'), merge_outputs=True)
>>> out.infer_shape(data=(2, 2, 3, 5, 5))[1]
[(2, 2, 4, 5, 5)]
"""
from __future__ import annotations

import functools

from .. import symbol
from .rnn_cell import BaseRNNCell, RNNParams

__all__ = ["BaseConvRNNCell", "ConvRNNCell", "ConvLSTMCell", "ConvGRUCell"]


def _leaky_relu(inputs, **kwargs):
    return symbol.LeakyReLU(inputs, **kwargs)


# MXNet's default activation: functools.partial(symbol.LeakyReLU, act_type='leaky', slope=0.2)
_DEFAULT_ACTIVATION = functools.partial(_leaky_relu, act_type='leaky', slope=0.2)


def _conv_output_shape(input_shape, num_hidden, kernel, stride, pad, dilate, layout):
    # an auto-named Convolution, as MXNet builds (it takes a name from the NameManager)
    data = symbol.Variable('data')
    conv = symbol.Convolution(data=data, num_filter=num_hidden, kernel=kernel, stride=stride,
                              pad=pad, dilate=dilate, layout=layout)
    return tuple(conv.infer_shape(data=input_shape)[1][0])


class BaseConvRNNCell(BaseRNNCell):
    """Abstract base class of convolutional RNN cells.

    The state shape is the ``i2h`` convolution's output for ``input_shape`` with the batch
    dimension left unknown (0). ``h2h_kernel`` must be odd (same padding).

    Examples
    --------
    >>> ConvRNNCell((1, 2, 4, 4), 3, h2h_kernel=(2, 2))
    Traceback (most recent call last):
    ...
    AssertionError: Only support odd number, get h2h_kernel= (2, 2)
    """

    def __init__(self, input_shape, num_hidden: int, h2h_kernel, h2h_dilate, i2h_kernel,
                 i2h_stride, i2h_pad, i2h_dilate, i2h_weight_initializer,
                 h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer,
                 activation, prefix: str = '', params: RNNParams | None = None,
                 conv_layout: str = 'NCHW'):
        super().__init__(prefix=prefix, params=params)
        self._h2h_kernel = h2h_kernel
        assert (h2h_kernel[0] % 2 == 1) and (h2h_kernel[1] % 2 == 1), \
            f"Only support odd number, get h2h_kernel= {h2h_kernel!s}"
        self._h2h_pad = (h2h_dilate[0] * (h2h_kernel[0] - 1) // 2,
                         h2h_dilate[1] * (h2h_kernel[1] - 1) // 2)
        self._h2h_dilate = h2h_dilate
        self._i2h_kernel = i2h_kernel
        self._i2h_stride = i2h_stride
        self._i2h_pad = i2h_pad
        self._i2h_dilate = i2h_dilate
        self._num_hidden = num_hidden
        self._input_shape = input_shape
        self._conv_layout = conv_layout
        self._activation = activation
        shape = _conv_output_shape(tuple(input_shape), num_hidden, tuple(i2h_kernel),
                                   tuple(i2h_stride), tuple(i2h_pad), tuple(i2h_dilate),
                                   conv_layout)
        self._state_shape = (0,) + shape[1:]
        self._iW = self.params.get('i2h_weight', init=i2h_weight_initializer)
        self._hW = self.params.get('h2h_weight', init=h2h_weight_initializer)
        self._iB = self.params.get('i2h_bias', init=i2h_bias_initializer)
        self._hB = self.params.get('h2h_bias', init=h2h_bias_initializer)

    @property
    def _num_gates(self) -> int:
        return len(self._gate_names)

    @property
    def state_info(self) -> list:
        return [{'shape': self._state_shape, '__layout__': self._conv_layout},
                {'shape': self._state_shape, '__layout__': self._conv_layout}]

    def _conv_forward(self, inputs, states, name: str):
        i2h = symbol.Convolution(name=f'{name}i2h', data=inputs,
                                 num_filter=self._num_hidden * self._num_gates,
                                 kernel=self._i2h_kernel, stride=self._i2h_stride,
                                 pad=self._i2h_pad, dilate=self._i2h_dilate, weight=self._iW,
                                 bias=self._iB, layout=self._conv_layout)
        h2h = symbol.Convolution(name=f'{name}h2h', data=states[0],
                                 num_filter=self._num_hidden * self._num_gates,
                                 kernel=self._h2h_kernel, dilate=self._h2h_dilate,
                                 pad=self._h2h_pad, stride=(1, 1), weight=self._hW,
                                 bias=self._hB, layout=self._conv_layout)
        return i2h, h2h

    def __call__(self, inputs, states):
        raise NotImplementedError("BaseConvRNNCell is abstract class for convolutional RNN")


_DOC_PARAMS = """
    Parameters
    ----------
    input_shape : tuple of int
        Shape of one step's input (with a batch dimension).
    num_hidden : int
        Number of output channels.
    h2h_kernel, h2h_dilate : tuple of int, default (3, 3), (1, 1)
    i2h_kernel, i2h_stride, i2h_pad, i2h_dilate : tuple of int
        Default (3, 3), (1, 1), (1, 1), (1, 1).
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer, optional
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
    activation : str or callable, default LeakyReLU(act_type='leaky', slope=0.2)
    prefix : str
    params : RNNParams, optional
    conv_layout : str, default 'NCHW'
"""


class ConvRNNCell(BaseConvRNNCell):
    __doc__ = """Convolutional RNN cell: ``h' = act(conv(x) + conv(h))``.
""" + _DOC_PARAMS + """
    Examples
    --------
    >>> import symgraph as mx
    >>> cell = ConvRNNCell((1, 2, 4, 4), 3)
    >>> out, _ = cell.unroll(1, [mx.sym.Variable('x')])
    >>> out[0].name, cell.state_info[0]['shape']
    ('ConvRNN_t0_out', (0, 3, 4, 4))
    """

    def __init__(self, input_shape, num_hidden: int, h2h_kernel=(3, 3), h2h_dilate=(1, 1),
                 i2h_kernel=(3, 3), i2h_stride=(1, 1), i2h_pad=(1, 1), i2h_dilate=(1, 1),
                 i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros',
                 activation=_DEFAULT_ACTIVATION, prefix: str = 'ConvRNN_',
                 params: RNNParams | None = None, conv_layout: str = 'NCHW'):
        super().__init__(input_shape, num_hidden, h2h_kernel, h2h_dilate, i2h_kernel,
                         i2h_stride, i2h_pad, i2h_dilate, i2h_weight_initializer,
                         h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer,
                         activation, prefix, params, conv_layout)

    @property
    def _gate_names(self):
        return ('',)

    @property
    def state_info(self) -> list:
        return [{'shape': self._state_shape, '__layout__': self._conv_layout}]

    def __call__(self, inputs, states):
        self._counter += 1
        name = f'{self._prefix}t{self._counter}_'
        i2h, h2h = self._conv_forward(inputs, states, name)
        output = self._get_activation(i2h + h2h, self._activation, name=f'{name}out')
        return output, [output]


class ConvLSTMCell(BaseConvRNNCell):
    __doc__ = """Convolutional LSTM cell (Xingjian et al., NIPS 2015); gates i, f, c, o.
""" + _DOC_PARAMS + """
    Examples
    --------
    >>> cell = ConvLSTMCell((1, 2, 4, 4), 3, prefix='cl_')
    >>> sorted(cell.params._params)
    ['cl_h2h_bias', 'cl_h2h_weight', 'cl_i2h_bias', 'cl_i2h_weight']
    """

    def __init__(self, input_shape, num_hidden: int, h2h_kernel=(3, 3), h2h_dilate=(1, 1),
                 i2h_kernel=(3, 3), i2h_stride=(1, 1), i2h_pad=(1, 1), i2h_dilate=(1, 1),
                 i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros',
                 activation=_DEFAULT_ACTIVATION, prefix: str = 'ConvLSTM_',
                 params: RNNParams | None = None, conv_layout: str = 'NCHW'):
        super().__init__(input_shape, num_hidden, h2h_kernel, h2h_dilate, i2h_kernel,
                         i2h_stride, i2h_pad, i2h_dilate, i2h_weight_initializer,
                         h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer,
                         activation, prefix, params, conv_layout)

    @property
    def _gate_names(self):
        return ['_i', '_f', '_c', '_o']

    def __call__(self, inputs, states):
        self._counter += 1
        name = f'{self._prefix}t{self._counter}_'
        i2h, h2h = self._conv_forward(inputs, states, name)
        gates = symbol.SliceChannel(i2h + h2h, num_outputs=4,
                                    axis=self._conv_layout.find('C'), name=f'{name}slice')
        in_gate = symbol.Activation(gates[0], act_type='sigmoid', name=f'{name}i')
        forget_gate = symbol.Activation(gates[1], act_type='sigmoid', name=f'{name}f')
        in_transform = self._get_activation(gates[2], self._activation, name=f'{name}c')
        out_gate = symbol.Activation(gates[3], act_type='sigmoid', name=f'{name}o')
        next_c = symbol._internal._plus(forget_gate * states[1], in_gate * in_transform,
                              name=f'{name}state')
        next_h = symbol._internal._mul(out_gate, self._get_activation(next_c, self._activation),
                             name=f'{name}out')
        return next_h, [next_h, next_c]


class ConvGRUCell(BaseConvRNNCell):
    __doc__ = """Convolutional GRU cell; gates r, z, o.
""" + _DOC_PARAMS + """
    Examples
    --------
    >>> ConvGRUCell((1, 2, 4, 4), 3).state_info
    [{'shape': (0, 3, 4, 4), '__layout__': 'NCHW'}]
    """

    def __init__(self, input_shape, num_hidden: int, h2h_kernel=(3, 3), h2h_dilate=(1, 1),
                 i2h_kernel=(3, 3), i2h_stride=(1, 1), i2h_pad=(1, 1), i2h_dilate=(1, 1),
                 i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros',
                 activation=_DEFAULT_ACTIVATION, prefix: str = 'ConvGRU_',
                 params: RNNParams | None = None, conv_layout: str = 'NCHW'):
        super().__init__(input_shape, num_hidden, h2h_kernel, h2h_dilate, i2h_kernel,
                         i2h_stride, i2h_pad, i2h_dilate, i2h_weight_initializer,
                         h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer,
                         activation, prefix, params, conv_layout)

    @property
    def _gate_names(self):
        return ['_r', '_z', '_o']

    @property
    def state_info(self) -> list:
        return [{'shape': self._state_shape, '__layout__': self._conv_layout}]

    def __call__(self, inputs, states):
        self._counter += 1
        name = f'{self._prefix}t{self._counter}_'
        i2h, h2h = self._conv_forward(inputs, states, name)
        i2h_r, i2h_z, i2h = symbol.SliceChannel(i2h, num_outputs=3, name=f'{name}_i2h_slice')
        h2h_r, h2h_z, h2h = symbol.SliceChannel(h2h, num_outputs=3, name=f'{name}_h2h_slice')
        reset_gate = symbol.Activation(i2h_r + h2h_r, act_type='sigmoid', name=f'{name}_r_act')
        update_gate = symbol.Activation(i2h_z + h2h_z, act_type='sigmoid',
                                        name=f'{name}_z_act')
        next_h_tmp = self._get_activation(i2h + reset_gate * h2h, self._activation,
                                          name=f'{name}_h_act')
        next_h = symbol._internal._plus((1. - update_gate) * next_h_tmp, update_gate * states[0],
                              name=f'{name}out')
        return next_h, [next_h]
