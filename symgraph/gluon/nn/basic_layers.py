"""Basic layers, as MXNet 1.9.1's ``gluon/nn/basic_layers.py``: containers, ``Dense``,
``Dropout``, ``BatchNorm``, ``LayerNorm``, ``Embedding``, ``Flatten`` and lambdas.

Every HybridBlock here runs through its traced graph, so ``hybrid_forward`` uses ``F`` =
``mx.sym`` only. Parameter names, shapes, initializers, reprs and node names (``fwd``)
follow MXNet.

Examples
--------
>>> import symgraph as mx
>>> net = mx.gluon.nn.HybridSequential(prefix='net_')
>>> with net.name_scope():
...     net.add(mx.gluon.nn.Dense(3, activation='relu'), mx.gluon.nn.Dense(2))
>>> list(net.collect_params().keys())
['net_dense0_weight', 'net_dense0_bias', 'net_dense1_weight', 'net_dense1_bias']
>>> net.initialize()
>>> net(mx.nd.ones((4, 5))).shape
(4, 2)
>>> net
HybridSequential(
  (0): Dense(5 -> 3, Activation(relu))
  (1): Dense(3 -> 2, linear)
)
"""
from __future__ import annotations

import warnings

import numpy as np

from ... import ndarray as nd
from ... import symbol as sym
from ..block import Block, HybridBlock
from ..utils import _indent, _require
from .activations import Activation

__all__ = ["Sequential", "HybridSequential", "Dense", "Dropout", "Embedding", "BatchNorm",
           "BatchNormReLU", "InstanceNorm", "LayerNorm", "GroupNorm", "Flatten", "Lambda",
           "HybridLambda"]


def _children_repr(block: Block) -> str:
    modstr = "\n".join(f"  ({key}): {_indent(repr(child), 2)}"
                       for key, child in block._children.items())
    return f"{block.__class__.__name__}(\n{modstr}\n)"


def _kwargs_repr(block: Block, in_channels) -> str:
    content = ", ".join(f"{k}={v!r}" for k, v in block._kwargs.items())
    return f"{block.__class__.__name__}({content}, in_channels={in_channels})"


class _SequentialMixin:
    """``add``, indexing (a slice gives a new container), ``len`` and the repr."""

    def add(self, *blocks) -> None:
        """Add blocks on top of the stack."""
        for block in blocks:
            self.register_child(block)

    def __repr__(self) -> str:
        return _children_repr(self)

    def __getitem__(self, key):
        layers = list(self._children.values())[key]
        if not isinstance(layers, list):
            return layers
        net = type(self)(prefix=self._prefix)
        with net.name_scope():
            net.add(*layers)
        return net

    def __len__(self) -> int:
        return len(self._children)


class Sequential(_SequentialMixin, Block):
    """Stacks Blocks sequentially, run one after the other in Python."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def forward(self, x):
        for block in self._children.values():
            x = block(x)
        return x

    def hybridize(self, active: bool = True, **kwargs) -> None:
        """Hybridize the children (warns when they are all HybridBlocks, as MXNet)."""
        if self._children and all(isinstance(c, HybridBlock) for c in self._children.values()):
            warnings.warn(f"All children of this Sequential layer '{self.prefix}' are "
                          "HybridBlocks. Consider using HybridSequential for the best "
                          "performance.", stacklevel=2)
        super().hybridize(active, **kwargs)


class HybridSequential(_SequentialMixin, HybridBlock):
    """Stacks HybridBlocks sequentially into one graph."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F, x):
        for block in self._children.values():
            x = block(x)
        return x


class Dense(HybridBlock):
    """``activation(dot(x, weight.T) + bias)``; ``weight`` is (units, in_units), deferred
    while ``in_units`` is 0. ``flatten=False`` applies to the last axis only."""

    def __init__(self, units: int, activation: str | None = None, use_bias: bool = True,
                 flatten: bool = True, dtype="float32", weight_initializer=None,
                 bias_initializer="zeros", in_units: int = 0, **kwargs):
        super().__init__(**kwargs)
        self._flatten = flatten
        with self.name_scope():
            self._units = units
            self._in_units = in_units
            self.weight = self.params.get("weight", shape=(units, in_units),
                                          init=weight_initializer, dtype=dtype,
                                          allow_deferred_init=True)
            self.bias = self.params.get("bias", shape=(units,), init=bias_initializer,
                                        dtype=dtype, allow_deferred_init=True) \
                if use_bias else None
            self.act = Activation(activation, prefix=activation + "_") \
                if activation is not None else None

    def hybrid_forward(self, F, x, weight, bias=None):
        out = F.FullyConnected(x, weight, bias, no_bias=bias is None, num_hidden=self._units,
                               flatten=self._flatten, name="fwd")
        return self.act(out) if self.act is not None else out

    def __repr__(self) -> str:
        shape = self.weight.shape
        layout = f"{shape[1] if shape[1] else None} -> {shape[0]}"
        return f"{self.__class__.__name__}({layout}, {self.act if self.act else 'linear'})"


class Dropout(HybridBlock):
    """Zeroes a fraction ``rate`` of the inputs while training (``autograd.record()``),
    scaling the rest by ``1 / (1 - rate)``; ``axes`` share one mask along those axes."""

    def __init__(self, rate: float, axes=(), **kwargs):
        super().__init__(**kwargs)
        self._rate = rate
        self._axes = axes

    def hybrid_forward(self, F, x):
        if self._rate > 0:
            return F.Dropout(x, p=self._rate, axes=self._axes, name="fwd", cudnn_off=False)
        return F.identity(x)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(p = {self._rate}, axes={self._axes})"


class _BatchNorm(HybridBlock):
    """Batch normalization (Ioffe and Szegedy, 2014) over ``axis``, optionally fused with
    a ReLU.

    Training (``autograd.record()``) normalizes with the batch statistics and updates
    ``running_mean``/``running_var`` (``grad_req='null'``) with ``momentum``; otherwise,
    or with ``use_global_stats``, the running statistics are used.
    """

    def __init__(self, axis: int = 1, momentum: float = 0.9, epsilon: float = 1e-5,
                 center: bool = True, scale: bool = True, use_global_stats: bool = False,
                 fuse_relu: bool = False, beta_initializer="zeros", gamma_initializer="ones",
                 running_mean_initializer="zeros", running_variance_initializer="ones",
                 in_channels: int = 0, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"axis": axis, "eps": epsilon, "momentum": momentum,
                        "fix_gamma": not scale, "use_global_stats": use_global_stats}
        self.fuse_relu = fuse_relu
        if in_channels != 0:
            self.in_channels = in_channels
        self.gamma = self._channel_param("gamma", "write" if scale else "null",
                                         in_channels, gamma_initializer, scale)
        self.beta = self._channel_param("beta", "write" if center else "null",
                                        in_channels, beta_initializer, center)
        self.running_mean = self._channel_param("running_mean", "null", in_channels,
                                                running_mean_initializer, False)
        self.running_var = self._channel_param("running_var", "null", in_channels,
                                               running_variance_initializer, False)

    def _channel_param(self, name: str, grad_req: str, in_channels: int, init,
                       differentiable: bool):
        return self.params.get(name, grad_req=grad_req, shape=(in_channels,), init=init,
                               allow_deferred_init=True, differentiable=differentiable)

    def cast(self, dtype) -> None:
        """Cast the parameters; float16 stays float32, as MXNet's BatchNorm needs."""
        if np.dtype(dtype).name == "float16":
            dtype = "float32"
        super().cast(dtype)

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        out = F.BatchNorm(x, gamma, beta, running_mean, running_var, name="fwd",
                          **self._kwargs)
        # MXNet fuses the ReLU into one operator (BatchNormWithReLU); same values
        return F.relu(out) if self.fuse_relu else out

    def __repr__(self) -> str:
        in_channels = self.gamma.shape[0]
        return _kwargs_repr(self, in_channels if in_channels else None)


class BatchNorm(_BatchNorm):
    """Batch normalization (Ioffe and Szegedy, 2014); see :class:`_BatchNorm`."""

    _fuse_relu = False

    def __init__(self, axis: int = 1, momentum: float = 0.9, epsilon: float = 1e-5,
                 center: bool = True, scale: bool = True, use_global_stats: bool = False,
                 beta_initializer="zeros", gamma_initializer="ones",
                 running_mean_initializer="zeros", running_variance_initializer="ones",
                 in_channels: int = 0, **kwargs):
        _BatchNorm.__init__(self, axis, momentum, epsilon, center, scale, use_global_stats,
                            self._fuse_relu, beta_initializer, gamma_initializer,
                            running_mean_initializer, running_variance_initializer,
                            in_channels, **kwargs)


class BatchNormReLU(_BatchNorm):
    """Batch normalization followed by a ReLU (MXNet's fused ``BatchNormWithReLU``)."""

    _fuse_relu = True
    __init__ = BatchNorm.__init__  # the same arguments; a sibling of BatchNorm, as in MXNet


def _scale_shift(block, size: int, scale: bool, center: bool, gamma_init, beta_init):
    """A normalisation layer's ``gamma`` and ``beta`` (size ``size``; 0 = deferred), trained
    only where ``scale`` / ``center`` ask for them."""
    gamma = block.params.get("gamma", grad_req="write" if scale else "null", shape=(size,),
                             init=gamma_init, allow_deferred_init=True)
    beta = block.params.get("beta", grad_req="write" if center else "null", shape=(size,),
                            init=beta_init, allow_deferred_init=True)
    return gamma, beta


class LayerNorm(HybridBlock):
    """Layer normalization (Ba et al., 2016) over ``axis`` (default the last)."""

    def __init__(self, axis: int = -1, epsilon: float = 1e-5, center: bool = True,
                 scale: bool = True, beta_initializer="zeros", gamma_initializer="ones",
                 in_channels: int = 0, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._kwargs = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self._axis = axis
        self._epsilon = epsilon
        self._center = center
        self._scale = scale
        self.gamma, self.beta = _scale_shift(self, in_channels, scale, center,
                                             gamma_initializer, beta_initializer)

    def hybrid_forward(self, F, data, gamma, beta):
        return F.LayerNorm(data, gamma=gamma, beta=beta, axis=self._axis, eps=self._epsilon)

    def __repr__(self) -> str:
        return _kwargs_repr(self, self.gamma.shape[0])


class InstanceNorm(HybridBlock):
    """Instance normalization (Ulyanov et al., 2016): parameters and repr as MXNet's; it
    runs the ``InstanceNorm`` operator."""

    def __init__(self, axis: int = 1, epsilon: float = 1e-5, center: bool = True,
                 scale: bool = False, beta_initializer="zeros", gamma_initializer="ones",
                 in_channels: int = 0, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self._axis = axis
        self._epsilon = epsilon
        self.gamma, self.beta = _scale_shift(self, in_channels, scale, center,
                                             gamma_initializer, beta_initializer)

    def hybrid_forward(self, F, x, gamma, beta):
        if self._axis == 1:
            return F.InstanceNorm(x, gamma, beta, name="fwd", eps=self._epsilon)
        x = x.swapaxes(1, self._axis)
        return F.InstanceNorm(x, gamma, beta, name="fwd",
                              eps=self._epsilon).swapaxes(1, self._axis)

    def __repr__(self) -> str:
        return _kwargs_repr(self, self.gamma.shape[0])


class GroupNorm(HybridBlock):
    """Group normalization (Wu and He, 2018): parameters and repr as MXNet's; it runs the
    ``GroupNorm`` operator."""

    def __init__(self, num_groups: int = 1, epsilon: float = 1e-5, center: bool = True,
                 scale: bool = True, beta_initializer="zeros", gamma_initializer="ones",
                 prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._kwargs = {"eps": epsilon, "num_groups": num_groups, "center": center,
                        "scale": scale}
        self._num_groups = num_groups
        self._epsilon = epsilon
        self._center = center
        self._scale = scale
        self.gamma, self.beta = _scale_shift(self, num_groups, scale, center,
                                             gamma_initializer, beta_initializer)

    def hybrid_forward(self, F, data, gamma, beta):
        return F.GroupNorm(data, gamma, beta, num_groups=self._num_groups, eps=self._epsilon)

    def __repr__(self) -> str:
        content = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        return f"{self.__class__.__name__}({content})"


class Embedding(HybridBlock):
    """Maps indices in ``[0, input_dim)`` to rows of a (input_dim, output_dim) weight.
    With ``sparse_grad=True`` the weight's gradient is row_sparse, holding only the rows
    the batch looked up.

    >>> import symgraph as mx
    >>> layer = mx.gluon.nn.Embedding(10, 2, sparse_grad=True)
    >>> layer.initialize()
    >>> with mx.autograd.record():
    ...     y = layer(mx.nd.array([3, 1, 3]))
    >>> y.backward()
    >>> grad = layer.weight.grad()
    >>> grad.stype, grad.indices.asnumpy().tolist(), grad.data.asnumpy().tolist()
    ('row_sparse', [1, 3], [[1.0, 1.0], [2.0, 2.0]])
    """

    def __init__(self, input_dim: int, output_dim: int, dtype="float32",
                 weight_initializer=None, sparse_grad: bool = False, **kwargs):
        super().__init__(**kwargs)
        grad_stype = "row_sparse" if sparse_grad else "default"
        self._kwargs = {"input_dim": input_dim, "output_dim": output_dim, "dtype": dtype,
                        "sparse_grad": sparse_grad}
        self.weight = self.params.get("weight", shape=(input_dim, output_dim),
                                      init=weight_initializer, dtype=dtype,
                                      allow_deferred_init=True, grad_stype=grad_stype)

    def hybrid_forward(self, F, x, weight):
        return F.Embedding(x, weight, name="fwd", **self._kwargs)

    def __repr__(self) -> str:
        k = self._kwargs
        return f"{self.__class__.__name__}({k['input_dim']} -> {k['output_dim']}, {k['dtype']})"


class Flatten(HybridBlock):
    """Flattens (N, x1, ..., xn) to (N, x1 * ... * xn)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)

    def hybrid_forward(self, F, x):
        return F.flatten(x)

    def __repr__(self) -> str:
        return self.__class__.__name__


class Lambda(Block):
    """Wraps an ``mx.nd`` operator name or a function ``f(*args)`` as a Block."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            _require(hasattr(nd, function), f"Function name {function} is not found in ndarray.")
            self._func_impl = getattr(nd, function)
        elif callable(function):
            self._func_impl = function
        else:
            raise ValueError(f"Unrecognized function in lambda: {function} of type "
                             f"{type(function)}")

    def forward(self, *args):
        return self._func_impl(*args)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._func_impl.__name__})"


class HybridLambda(HybridBlock):
    """Wraps an operator name (in both ``mx.nd`` and ``mx.sym``) or a function
    ``f(F, x, *args)`` as a HybridBlock."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            _require(hasattr(nd, function) and hasattr(sym, function),
                    f"Function name {function} is not found in symbol/ndarray.")
            func_dict = {sym: getattr(sym, function), nd: getattr(nd, function)}
            self._func = lambda F, *args: func_dict[F](*args)
            self._func_name = function
        elif callable(function):
            self._func = function
            self._func_name = function.__name__
        else:
            raise ValueError(f"Unrecognized function in lambda: {function} of type "
                             f"{type(function)}")

    def hybrid_forward(self, F, x, *args):
        return self._func(F, x, *args)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._func_name})"
