"""MXNet 1.x's ``mx.init``: weight initializers, dispatched on parameter names.

An initializer is called as ``init(InitDesc(name, attrs), arr)``. A variable created with
``Variable(init=...)`` carries the initializer's JSON (``dumps()``) in ``attrs['__init__']``
and that one wins; otherwise the name's suffix picks the rule (``weight`` → the
initializer's own rule, ``bias``/``beta`` → 0, ``gamma`` → 1, ...), exactly as MXNet 1.9.1.
Random initializers draw from :func:`symgraph.random.generator`, so ``mx.random.seed``
makes them reproducible (they cannot reproduce MXNet's random streams).

>>> import symgraph as mx
>>> w = mx.nd.zeros((2, 3))
>>> mx.init.One()(mx.init.InitDesc('fc_weight'), w)
>>> w.asnumpy()
array([[1., 1., 1.],
       [1., 1., 1.]], dtype=float32)
>>> mx.init.create('xavier', magnitude=2).dumps()
'["xavier", {"rnd_type": "uniform", "factor_type": "avg", "magnitude": 2}]'
"""
from __future__ import annotations

import json
import logging
import re
import warnings
from math import sqrt

import numpy as np
import torch

# ndarray, random, load, string_types and is_np_array: names MXNet's module exposes
from . import ndarray, random, registry  # noqa: F401
from . import random as _random
from .base import string_types  # noqa: F401
from .ndarray import NDArray, load
from .util import is_np_array  # noqa: F401

__all__ = ["InitDesc", "Initializer", "register", "alias", "create", "Load", "Mixed", "Zero",
           "One", "Constant", "Uniform", "Normal", "Orthogonal", "Xavier", "MSRAPrelu",
           "Bilinear", "LSTMBias", "FusedRNN"]


class InitDesc(str):
    """A parameter's name, with its symbol attributes and the global initializer.

    Parameters
    ----------
    name : str
        Name of the variable.
    attrs : dict of str to str
        Attributes of the variable (``Symbol.attr_dict()``), e.g. ``__init__``.
    global_init : Initializer
        The initializer to fall back to.

    Examples
    --------
    >>> d = InitDesc('fc_weight', {'__init__': '["zero", {}]'})
    >>> d, d.attrs['__init__'], d.global_init
    ('fc_weight', '["zero", {}]', None)
    """

    def __new__(cls, name: str, attrs: dict | None = None, global_init=None):
        ret = super().__new__(cls, name)
        ret.attrs = attrs or {}
        ret.global_init = global_init
        return ret


def _assign(arr: NDArray, value) -> None:
    """``arr[:] = value`` for a scalar, numpy array, NDArray or torch tensor."""
    if arr._is_sparse:
        _through_dense(lambda dense: _assign(dense, value), arr)
        return
    if isinstance(value, NDArray):
        value = value._t
    if isinstance(value, (int, float, np.number)):
        arr._t.fill_(float(value))
        return
    src = torch.as_tensor(np.asarray(value)) if not isinstance(value, torch.Tensor) else value
    arr._t.copy_(src.to(device=arr._t.device, dtype=arr._t.dtype).expand(arr._t.shape))


def _through_dense(init, arr: NDArray) -> None:
    """Initialize the sparse ``arr`` as MXNet does: ``init`` fills a dense array of its shape,
    which then becomes every row of a row_sparse ``arr`` (zeros included: all rows are
    stored, as after MXNet's ``arr[:] = value``) or the nonzero entries of a csr one."""
    from .ndarray.sparse_array import assign
    from .sparse import formats
    v = arr._value
    dense = NDArray(torch.zeros(v.shape, dtype=v.dtype, device=v.device))
    dense._ctx = arr._ctx
    init(dense)
    t = dense._t
    if arr.stype == "row_sparse":
        rows = torch.arange(t.shape[0], dtype=formats.INDEX, device=t.device)
        assign(arr, formats.row_sparse(t, rows, tuple(t.shape)))
    else:
        assign(arr, t)


def _draw(arr: NDArray, kind: str, a: float, b: float) -> None:
    """Fill ``arr`` with U(a, b) or N(a, b) drawn from symgraph's generator for its device."""
    t = arr._t
    gen = _random.generator(t.device)
    tmp = torch.empty(t.shape, dtype=torch.float32, device=t.device)
    if kind == "uniform":
        tmp.uniform_(a, b, generator=gen)
    else:
        tmp.normal_(a, b, generator=gen)
    t.copy_(tmp)


class Initializer:
    """Base class of initializers: name-based dispatch, ``dumps`` and the ``__init__`` attr.

    Subclasses implement ``_init_weight(name, arr)``.

    Examples
    --------
    >>> import symgraph as mx
    >>> b = mx.nd.ones((3,))
    >>> mx.init.Uniform()(InitDesc('fc_bias'), b)
    >>> b.asnumpy()
    array([0., 0., 0.], dtype=float32)
    >>> mx.init.Uniform()(InitDesc('fc_table'), b)
    Traceback (most recent call last):
    ...
    ValueError: Unknown initialization pattern for fc_table. Default initialization is now \
limited to "weight", "bias", "gamma" (1.0), and "beta" (0.0).Please use \
mx.sym.Variable(init=mx.init.*) to set initialization pattern
    """

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        self._verbose = False
        self._print_func = None

    def set_verbosity(self, verbose: bool = False, print_func=None) -> Initializer:
        """Switch logging of each initialized array (with ``print_func(arr)``) on or off."""
        self._verbose = verbose
        if print_func is None:
            def asum_stat(x):
                return str(float(x._t.float().norm()) / sqrt(x.size))
            print_func = asum_stat
        self._print_func = print_func
        return self

    def _verbose_print(self, desc, init, arr) -> None:
        if self._verbose and self._print_func:
            logging.info('Initialized %s as %s: %s', desc, init, self._print_func(arr))

    def dumps(self) -> str:
        """The initializer as JSON, ``'["name", {kwargs}]'`` (what ``create`` reads back)."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __call__(self, desc, arr: NDArray) -> None:
        """Initialize ``arr`` according to ``desc`` (an :class:`InitDesc`)."""
        if arr._is_sparse:
            _through_dense(lambda dense: self(desc, dense), arr)
            return
        if not isinstance(desc, InitDesc):
            self._legacy_init(desc, arr)
            return
        if desc.global_init is None:
            desc.global_init = self
        init = desc.attrs.get('__init__', "")
        if init:
            create(init)._init_weight(desc, arr)
            self._verbose_print(desc, init, arr)
            return
        for suffix, method in _DESC_RULES:
            if desc.endswith(suffix):
                getattr(self, method)(desc, arr)
                self._verbose_print(desc, suffix, arr)
                return
        self._init_default(desc, arr)

    def _legacy_init(self, name, arr) -> None:
        """MXNet's deprecated ``init(str, NDArray)`` dispatch."""
        warnings.warn("Calling initializer with init(str, NDArray) has been deprecated."
                      "please use init(mx.init.InitDesc(...), NDArray) instead.",
                      DeprecationWarning, stacklevel=3)
        if not isinstance(name, str):
            raise TypeError('name must be string')
        if not isinstance(arr, NDArray):
            raise TypeError('arr must be NDArray')
        if name.startswith('upsampling'):
            self._init_bilinear(name, arr)
        elif name.startswith('stn_loc') and name.endswith('weight'):
            self._init_zero(name, arr)
        elif name.startswith('stn_loc') and name.endswith('bias'):
            self._init_loc_bias(name, arr)
        else:
            for suffix, method in _LEGACY_RULES:
                if name.endswith(suffix):
                    getattr(self, method)(name, arr)
                    return
            self._init_default(name, arr)

    def _init_bilinear(self, _, arr) -> None:
        _assign(arr, _bilinear(arr.shape))

    def _init_loc_bias(self, _, arr) -> None:
        assert arr.shape[0] == 6
        _assign(arr, np.array([1.0, 0, 0, 0, 1.0, 0]))

    def _init_zero(self, _, arr) -> None:
        _assign(arr, 0.0)

    def _init_one(self, _, arr) -> None:
        _assign(arr, 1.0)

    def _init_bias(self, _, arr) -> None:
        _assign(arr, 0.0)

    def _init_quantized_bias(self, _, arr) -> None:
        _assign(arr, 0)

    def _init_gamma(self, _, arr) -> None:
        _assign(arr, 1.0)

    def _init_beta(self, _, arr) -> None:
        _assign(arr, 0.0)

    def _init_weight(self, name, arr) -> None:
        """Initialize a weight (abstract)."""
        raise NotImplementedError("Must override it")

    def _init_quantized_weight(self, _, arr) -> None:
        gen = _random.generator(arr._t.device)
        vals = torch.randint(-127, 127, arr.shape, generator=gen, device=arr._t.device)
        arr._t.copy_(vals.to(arr._t.dtype))

    def _init_default(self, name, _) -> None:
        raise ValueError(
            f'Unknown initialization pattern for {name}. '
            'Default initialization is now limited to '
            '"weight", "bias", "gamma" (1.0), and "beta" (0.0).'
            'Please use mx.sym.Variable(init=mx.init.*) to set initialization pattern')

    def __eq__(self, other):
        if not isinstance(other, Initializer):
            return NotImplemented
        return type(self) is type(other) and self._kwargs == other._kwargs

    __hash__ = object.__hash__


# suffix -> method, in MXNet 1.9.1's order (InitDesc path, then the legacy str path)
_DESC_RULES = [('weight', '_init_weight'), ('bias', '_init_bias'), ('gamma', '_init_gamma'),
               ('beta', '_init_beta'), ('min', '_init_zero'), ('max', '_init_one'),
               ('weight_quantize', '_init_quantized_weight'),
               ('bias_quantize', '_init_quantized_bias')]
_LEGACY_RULES = [('bias', '_init_bias'), ('gamma', '_init_gamma'), ('beta', '_init_beta'),
                 ('weight', '_init_weight'), ('moving_mean', '_init_zero'),
                 ('moving_var', '_init_one'), ('moving_inv_var', '_init_zero'),
                 ('moving_avg', '_init_zero'), ('min', '_init_zero'), ('max', '_init_one')]


_shared_register = registry.get_register_func(Initializer, "initializer")


def register(klass: type) -> type:
    """Register an initializer class under its lowercase name (``mx.init.register``).

    >>> @register
    ... class MyInit(Initializer):
    ...     def _init_weight(self, _, arr):
    ...         _assign(arr, 0.5)
    >>> create('myinit').dumps()
    '["myinit", {}]'
    """
    assert issubclass(klass, Initializer), "Can only register subclass of Initializer"
    name = klass.__name__.lower()
    old = registry.get_registry(Initializer).get(name)
    if old is not None:
        warnings.warn(f"New initializer {klass.__module__}.{klass.__name__} is overriding "
                      f"existing initializer {old.__module__}.{old.__name__}", UserWarning,
                      stacklevel=2)
    _store(klass, name)
    return klass


def _store(klass: type, name: str) -> None:
    """Put ``klass`` under ``name`` in ``mx.registry``'s initializer registry (its own
    override warning is replaced by MXNet's message above)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _shared_register(klass, name)


def alias(*aliases: str):
    """Decorator registering a class under extra names."""
    def reg(klass):
        for name in aliases:
            _store(klass, name.lower())
        return klass
    return reg


def create(*args, **kwargs) -> Initializer:
    """An initializer from an instance, a name, a JSON string (``dumps()``) or a dict.

    >>> create('[\"normal\", {\"sigma\": 0.5}]').sigma
    0.5
    >>> create('nosuchinit')
    Traceback (most recent call last):
    ...
    AssertionError: nosuchinit is not registered. Please register with initializer.register first
    """
    if args:
        name, args = args[0], args[1:]
    else:
        name = kwargs.pop('initializer')
    if isinstance(name, Initializer):
        assert not args and not kwargs, \
            "initializer is already an instance. Additional arguments are invalid"
        return name
    if isinstance(name, dict):
        return create(**name)
    assert isinstance(name, str), "initializer must be of string type"
    if name.startswith('['):
        assert not args and not kwargs
        name, kwargs = json.loads(name)
        return create(name, **kwargs)
    if name.startswith('{'):
        assert not args and not kwargs
        return create(**json.loads(name))
    name = name.lower()
    known = registry.get_registry(Initializer)
    if name not in known:  # MXNet's registry asserts
        raise AssertionError(f"{name} is not registered. "
                             "Please register with initializer.register first")
    return known[name](*args, **kwargs)


def _bilinear(shape) -> np.ndarray:
    """MXNet's bilinear upsampling kernel for a (N, C, H, W) weight."""
    f = np.ceil(shape[3] / 2.)
    c = (2 * f - 1 - f % 2) / (2. * f)
    idx = np.arange(int(np.prod(shape)))
    x, y = idx % shape[3], (idx // shape[3]) % shape[2]
    weight = (1 - np.abs(x / f - c)) * (1 - np.abs(y / f - c))
    return weight.astype(np.float32).reshape(shape)


class Load:
    """Initialize from saved parameters (a file or a name→NDArray dict), dropping ``arg:``/``aux:``.

    Parameters
    ----------
    param : str or dict of str to NDArray
        A ``.params`` file or a dict.
    default_init : Initializer
        Used for names not in ``param``.
    verbose : bool
        Log where each parameter came from.

    Examples
    --------
    >>> import symgraph as mx
    >>> init = Load({'arg:fc_weight': mx.nd.ones((2,))}, default_init=Zero())
    >>> w, b = mx.nd.zeros((2,)), mx.nd.ones((2,))
    >>> init('fc_weight', w); init(InitDesc('fc_bias'), b)
    >>> w.asnumpy(), b.asnumpy()
    (array([1., 1.], dtype=float32), array([0., 0.], dtype=float32))
    """

    def __init__(self, param, default_init=None, verbose: bool = False):
        if isinstance(param, str):
            param = load(param)
        assert isinstance(param, dict)
        self.param = {}
        for name, arr in param.items():
            if name.startswith('arg:') or name.startswith('aux:'):
                self.param[name[4:]] = arr
            else:
                self.param[name] = arr
        self.default_init = default_init
        self.verbose = verbose

    def __call__(self, name, arr: NDArray) -> None:
        if name in self.param:
            assert arr.shape == self.param[name].shape, \
                f'Parameter {name} cannot be initialized from loading. ' + \
                f'Shape mismatch, target {str(arr.shape)} vs loaded {self.param[name].shape}'
            _assign(arr, self.param[name])
            if self.verbose:
                logging.info('Initialized %s by loading', name)
        else:
            assert self.default_init is not None, \
                f"Cannot Initialize {name}. Not found in loaded param " + \
                "and no default Initializer is provided."
            self.default_init(name, arr)
            if self.verbose:
                logging.info('Initialized %s by default', name)


class Mixed:
    """Initialize each parameter with the first initializer whose regex matches its name.

    Examples
    --------
    >>> import symgraph as mx
    >>> init = Mixed(['bias', '.*'], [Zero(), One()])
    >>> w = mx.nd.zeros((2,)); init(InitDesc('fc_weight'), w); w.asnumpy()
    array([1., 1.], dtype=float32)
    >>> Mixed(['bias'], [Zero()])(InitDesc('fc_weight'), w)
    Traceback (most recent call last):
    ...
    ValueError: Parameter name %s did not match any pattern. Consideradd a ".*" pattern at \
the and with default Initializer.
    """

    def __init__(self, patterns: list, initializers: list):
        assert len(patterns) == len(initializers)
        self.map = list(zip([re.compile(p) for p in patterns], initializers))

    def __call__(self, name, arr: NDArray) -> None:
        for prog, init in self.map:
            if prog.match(name):
                init(name, arr)
                return
        # MXNet's message, unformatted '%s' included
        raise ValueError('Parameter name %s did not match any pattern. Consider' +
                         'add a ".*" pattern at the and with default Initializer.')


@register
@alias("zeros")
class Zero(Initializer):
    """Initialize weights to zero (also ``'zeros'``).

    >>> Zero().dumps()
    '["zero", {}]'
    """

    def __init__(self):
        super().__init__()

    def _init_weight(self, _, arr):
        _assign(arr, 0)


@register
@alias("ones")
class One(Initializer):
    """Initialize weights to one (also ``'ones'``).

    >>> create('ones').dumps()
    '["one", {}]'
    """

    def __init__(self):
        super().__init__()

    def _init_weight(self, _, arr):
        _assign(arr, 1)


@register
class Constant(Initializer):
    """Initialize weights to ``value`` (a scalar or an array broadcastable to the weight).

    >>> import symgraph as mx
    >>> w = mx.nd.zeros((2,)); Constant(0.5)(InitDesc('w', {'__init__': Constant(2).dumps()}), w)
    >>> w.asnumpy()
    array([2., 2.], dtype=float32)
    """

    def __init__(self, value):
        super().__init__(value=value)
        self.value = value

    def _init_weight(self, _, arr):
        _assign(arr, self.value)

    def dumps(self) -> str:
        val = self._kwargs['value']
        if not np.isscalar(val):
            self._kwargs['value'] = val.tolist() if isinstance(val, np.ndarray) \
                else val.asnumpy().tolist()
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])


@register
class Uniform(Initializer):
    """Weights drawn uniformly from ``[-scale, scale]``.

    >>> import symgraph as mx
    >>> w = mx.nd.zeros((100,)); Uniform(0.1)(InitDesc('w_weight'), w)
    >>> bool(abs(w.asnumpy()).max() <= 0.1)
    True
    """

    def __init__(self, scale: float = 0.07):
        super().__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, _, arr):
        _draw(arr, "uniform", -self.scale, self.scale)


@register
class Normal(Initializer):
    """Weights drawn from N(0, sigma²).

    >>> Normal(0.5).dumps()
    '["normal", {"sigma": 0.5}]'
    """

    def __init__(self, sigma: float = 0.01):
        super().__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, _, arr):
        _draw(arr, "normal", 0.0, self.sigma)


@register
class Orthogonal(Initializer):
    """An orthogonal matrix (Saxe et al. 2013) times ``scale``; ``rand_type`` uniform/normal.

    >>> import numpy as np, symgraph as mx
    >>> w = mx.nd.zeros((3, 5)); Orthogonal(scale=1.0)(InitDesc('w_weight'), w)
    >>> np.allclose(w.asnumpy() @ w.asnumpy().T, np.eye(3), atol=1e-5)
    True
    """

    def __init__(self, scale: float = 1.414, rand_type: str = "uniform"):
        super().__init__(scale=scale, rand_type=rand_type)
        self.scale = scale
        self.rand_type = rand_type

    def _init_weight(self, _, arr):
        nout = arr.shape[0]
        nin = int(np.prod(arr.shape[1:]))
        gen = _random.generator(arr._t.device)
        tmp = torch.empty((nout, nin), dtype=torch.float32, device=arr._t.device)
        if self.rand_type == "uniform":
            tmp.uniform_(-1.0, 1.0, generator=gen)
        elif self.rand_type == "normal":
            tmp.normal_(0.0, 1.0, generator=gen)
        tmp = tmp.cpu().numpy()
        u, _, v = np.linalg.svd(tmp, full_matrices=False)
        res = u if u.shape == tmp.shape else v
        _assign(arr, self.scale * res.reshape(arr.shape))


@register
class Xavier(Initializer):
    """Xavier/Glorot: scale ``sqrt(magnitude / factor)``, factor from fan in/out/avg.

    ``rnd_type='uniform'`` draws from ``[-scale, scale]``, ``'gaussian'`` from N(0, scale²).

    >>> import symgraph as mx
    >>> Xavier()(InitDesc('fc_weight'), mx.nd.zeros((3,)))
    Traceback (most recent call last):
    ...
    ValueError: Xavier initializer cannot be applied to vector fc_weight. It requires at least 2D.
    """

    def __init__(self, rnd_type: str = "uniform", factor_type: str = "avg",
                 magnitude: float = 3):
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = float(magnitude)

    def _init_weight(self, name, arr):
        shape = arr.shape
        hw_scale = 1.
        if len(shape) < 2:
            raise ValueError(f'Xavier initializer cannot be applied to vector {name}. '
                             'It requires at least 2D.')
        if len(shape) > 2:
            hw_scale = np.prod(shape[2:])
        fan_in, fan_out = shape[1] * hw_scale, shape[0] * hw_scale
        if self.factor_type == "avg":
            factor = (fan_in + fan_out) / 2.0
        elif self.factor_type == "in":
            factor = fan_in
        elif self.factor_type == "out":
            factor = fan_out
        else:
            raise ValueError("Incorrect factor type")
        scale = float(np.sqrt(self.magnitude / factor))
        if self.rnd_type == "uniform":
            _draw(arr, "uniform", -scale, scale)
        elif self.rnd_type == "gaussian":
            _draw(arr, "normal", 0.0, scale)
        else:
            raise ValueError("Unknown random type")


@register
class MSRAPrelu(Xavier):
    """He et al. 2015: gaussian Xavier with ``magnitude = 2 / (1 + slope²)``.

    >>> MSRAPrelu().dumps()
    '["msraprelu", {"factor_type": "avg", "slope": 0.25}]'
    """

    def __init__(self, factor_type: str = "avg", slope: float = 0.25):
        magnitude = 2. / (1 + slope ** 2)
        super().__init__("gaussian", factor_type, magnitude)
        self._kwargs = {'factor_type': factor_type, 'slope': slope}


@register
class Bilinear(Initializer):
    """Bilinear upsampling weights for a (N, C, H, W) deconvolution.

    >>> import symgraph as mx
    >>> w = mx.nd.zeros((1, 1, 2, 2)); Bilinear()(InitDesc('up_weight'), w)
    >>> w.asnumpy().ravel().tolist()
    [1.0, 0.0, 0.0, 0.0]
    """

    def __init__(self):
        super().__init__()

    def _init_weight(self, _, arr):
        _assign(arr, _bilinear(arr.shape))


@register
class LSTMBias(Initializer):
    """LSTM biases: 0 except the forget gate (second quarter), set to ``forget_bias``.

    >>> import symgraph as mx
    >>> b = mx.nd.ones((8,)); LSTMBias(2.0)(InitDesc('lstm_bias', {'__init__':
    ...     LSTMBias(2.0).dumps()}), b)
    >>> b.asnumpy().tolist()
    [0.0, 0.0, 2.0, 2.0, 0.0, 0.0, 0.0, 0.0]
    """

    def __init__(self, forget_bias: float = 1.0):
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, name, arr):
        _assign(arr, 0.0)
        num_hidden = int(arr.shape[0] / 4)
        arr._t[num_hidden:2 * num_hidden] = self.forget_bias


@register
class FusedRNN(Initializer):
    """The packed ``parameters`` vector of a ``FusedRNNCell``: each unpacked piece is
    initialized by ``init`` (or the global initializer when None), LSTM forget-gate biases
    set to ``forget_bias``.

    Parameters
    ----------
    init : Initializer, str (its ``dumps()``) or None
    num_hidden, num_layers, mode, bidirectional, forget_bias
        As given to the ``FusedRNNCell``.

    Examples
    --------
    >>> import symgraph as mx
    >>> f = FusedRNN(mx.init.Constant(0.5), 1, 1, 'lstm')
    >>> json.loads(f.dumps())[1]['init'], json.loads(f.dumps())[1]['mode']
    ('["constant", {"value": 0.5}]', 'lstm')
    >>> p = mx.nd.zeros((24,))
    >>> mx.init.Uniform()(InitDesc('lstm_parameters', {'__init__': f.dumps()}), p)
    >>> p.asnumpy().tolist()[-8:]
    [0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0]
    """

    def __init__(self, init, num_hidden: int, num_layers: int, mode: str,
                 bidirectional: bool = False, forget_bias: float = 1.0):
        if isinstance(init, str):
            init = create(init)
        super().__init__(init=init.dumps() if init is not None else None,
                         num_hidden=num_hidden, num_layers=num_layers, mode=mode,
                         bidirectional=bidirectional, forget_bias=forget_bias)
        self._init = init
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._forget_bias = forget_bias

    def _init_weight(self, desc, arr):
        from .rnn.fused_cell import FusedRNNCell
        cell = FusedRNNCell(self._num_hidden, self._num_layers, self._mode,
                            self._bidirectional, forget_bias=self._forget_bias, prefix='')
        args = cell.unpack_weights({'parameters': arr})
        for name in args:
            arg_desc = InitDesc(name, global_init=getattr(desc, 'global_init', None))
            if self._mode == 'lstm' and name.endswith("_f_bias"):
                _assign(args[name], self._forget_bias)
            elif self._init is None:
                desc.global_init(arg_desc, args[name])
            else:
                self._init(arg_desc, args[name])
        _assign(arr, cell.pack_weights(args)['parameters'])
