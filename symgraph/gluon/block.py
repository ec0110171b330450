"""Gluon ``Block`` and ``HybridBlock`` on symgraph's executor (``SymbolBlock``:
``symbol_block.py``; ``save``/``load``: ``block_io.py``; ``summary``: ``summary.py``).

A ``HybridBlock`` runs through its graph: the first call traces ``hybrid_forward(mx.sym,
...)`` into a Symbol (inputs ``data`` or ``data0``, ``data1``, ..., parameters as their
``Parameter.var()``), and every call with NDArrays runs that Symbol through a
:class:`~symgraph.imperative.cached_graph.CachedGraph` (executors bound per context and
input shapes, parameters bound by reference), recorded for ``autograd`` under ``record()``
— hybridized or not, since the results are the same. Not hybridized, it runs ``hybrid_forward`` with
``F = mx.nd`` (MXNet's imperative mode) where a graph cannot stand in: arguments that are
not arrays, an argument structure unlike the traced one, forward hooks below it (they see
NDArrays, as in MXNet). ``hybridize()`` decides MXNet's hybridized-only behaviour: the
argument checks, op hooks, what ``summary`` and ``save`` accept. A plain ``Block`` runs its
``forward`` in Python. Names, prefixes, the parameter files of
``save_parameters``/``export`` and the errors follow MXNet 1.9.1.
"""
from __future__ import annotations

import re
import threading
import warnings
import weakref
from collections import OrderedDict

from .. import initializer, ndarray, symbol  # noqa: F401 - MXNet's names
from .. import ndarray as _nd
from ..base import MXNetError, mx_real_t, unsupported  # noqa: F401 - MXNet's names
from ..imperative.cached_graph import CachedGraph
from ..imperative.deferred import Pending
from ..ndarray.ndarray import NDArray
from ..symbol import load_json  # noqa: F401 - MXNet's names
from ..symbol import symbol as _sym
from ..symbol.naming import NameManager, Prefix
from ..symbol.symbol import Symbol
from ..util import is_np_array, np_array, np_shape  # noqa: F401 - MXNet's names
from .parameter import DeferredInitializationError, Parameter, ParameterDict, arrays_version
from .utils import HOOKS_VERSION, HookDict, HookHandle

__all__ = ["Block", "HybridBlock", "SymbolBlock"]  # noqa: F822 - SymbolBlock: __getattr__


class _BlockScope:
    """Scope for collecting child Blocks (names and parameter prefixes, as MXNet's)."""

    _current = threading.local()

    def __init__(self, block: Block):
        # a proxy: a block and its scope are no reference cycle, so a dropped block frees
        # its graphs' buffers at once, not at the next full garbage collection
        self._block = weakref.proxy(block)
        self._counter: dict[str, int] = {}
        self._old_scope = None
        self._name_scope = None

    @staticmethod
    def create(prefix, params, hint: str):
        """The prefix and ParameterDict of a new Block."""
        current = getattr(_BlockScope._current, "value", None)
        if current is None:
            if prefix is None:
                prefix = NameManager.current.get(None, hint) + "_"
            params = ParameterDict(prefix) if params is None else \
                ParameterDict(params.prefix, params)
            return prefix, params
        if prefix is None:
            count = current._counter.get(hint, 0)
            prefix = f"{hint}{count}_"
            current._counter[hint] = count + 1
        if params is None:
            parent = current._block.params
            params = ParameterDict(parent.prefix + prefix, parent._shared)
        else:
            params = ParameterDict(params.prefix, params)
        return current._block.prefix + prefix, params

    def __enter__(self):
        if self._block._empty_prefix:
            return self
        self._old_scope = getattr(_BlockScope._current, "value", None)
        _BlockScope._current.value = self
        self._name_scope = Prefix(self._block.prefix)
        self._name_scope.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._block._empty_prefix:
            return
        self._name_scope.__exit__(*exc)
        self._name_scope = None
        _BlockScope._current.value = self._old_scope


# ---------------------------------------------------------------- nested arguments

def _flatten(args, what: str):
    """Nested lists of NDArrays/Symbols -> (flat list, format), as MXNet's ``_flatten``."""
    if isinstance(args, NDArray):
        return [args], 0
    if isinstance(args, Symbol):
        n = len(args.list_outputs())
        return [args], n if n > 1 else 0
    if args is None:
        return [None], -1
    if not isinstance(args, (list, tuple)):
        raise ValueError(f"When hybridized, the input of HybridBlock {what} must be (nested) "
                         f"list of Symbol or NDArray, but got {args} of type {type(args)}")
    flat, fmts = [], []
    for a in args:
        f, fmt = _flatten(a, what)
        flat.extend(f)
        fmts.append(fmt)
    return flat, fmts


# plain arrays: a recorded call's output (Pending) is one too
_ARRAYS = frozenset({NDArray, Pending})


def _flatten_inputs(args: tuple):
    """:func:`_flatten` of call arguments, without the walk when all are NDArrays."""
    for a in args:
        if type(a) not in _ARRAYS:
            return _flatten(args, "input")
    return list(args), [0] * len(args)


def _regroup(args: list, fmt):
    """Inverse of :func:`_flatten`."""
    if fmt == 0:  # one array (a module-level walk: a nested recursive closure is a cycle)
        return args[0]
    return _walk(args, fmt)[0]


def _walk(args, fmt):
    if isinstance(fmt, int):
        if fmt == 0:
            return args[0], args[1:]
        if fmt == -1:
            if args[0] is not None:
                raise ValueError("We do not support passing types that are not None when "
                                 "the initial HybridBlock has received NoneType and has "
                                 f"been hybridized. Received arg = {args[0]}, "
                                 f"fmt = {fmt}.")
            return None, args[1:]
        return args[:fmt], args[fmt:]
    ret = []
    for f in fmt:
        res, args = _walk(args, f)
        ret.append(res)
    return ret, args


def _indent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    return lines[0] + "".join("\n" + " " * spaces + line for line in lines[1:])


def _brief(names) -> str:
    names = list(names)
    return repr(names) if len(names) <= 6 else \
        f"[{', '.join(repr(n) for n in names[:3])}, ..., " \
        f"{', '.join(repr(n) for n in names[-3:])}]"


def _attach(hooks: HookDict, hook) -> HookHandle:
    handle = HookHandle()
    handle.attach(hooks, hook)
    return handle


# ---------------------------------------------------------------- Block

class Block:
    """Base class of all layers and models: children, parameters and ``forward``."""

    def __init__(self, prefix=None, params=None):
        self._empty_prefix = prefix == ""
        self._prefix, self._params = _BlockScope.create(prefix, params, self._alias())
        self._name = self._prefix[:-1] if self._prefix.endswith("_") else self._prefix
        self._scope = _BlockScope(self)
        self._children: OrderedDict = OrderedDict()
        self._reg_params: dict[str, Parameter] = {}
        self._forward_hooks = HookDict()
        self._forward_pre_hooks = HookDict()

    def __repr__(self) -> str:
        modstr = "\n".join(f"  ({key}): {_indent(repr(block), 2)}"
                           for key, block in self.__dict__.items() if isinstance(block, Block))
        return f"{self.__class__.__name__}(\n{modstr}\n)"

    def __setattr__(self, name: str, value) -> None:
        if hasattr(self, name):
            existing = getattr(self, name)
            if isinstance(existing, (Parameter, Block)) and not isinstance(value, type(existing)):
                raise TypeError(f"Changing attribute type for {name} from {type(existing)} to "
                                f"{type(value)}is not allowed.")
        if isinstance(value, Block):
            self.register_child(value, name)
        elif isinstance(value, Parameter):
            if name in self._reg_params:
                raise AssertionError(
                    f"Overriding Parameter attribute {name} is not allowed. If you want to share "
                    "parameters between blocks, please set 'params' at Block construction "
                    "instead.")
            self._reg_params[name] = value
        super().__setattr__(name, value)

    def _alias(self) -> str:
        return self.__class__.__name__.lower()

    @property
    def prefix(self) -> str:
        return self._prefix

    @property
    def name(self) -> str:
        return self._name

    def name_scope(self) -> _BlockScope:
        """``with self.name_scope():`` — children created inside get this block's prefix."""
        return self._scope

    @property
    def params(self) -> ParameterDict:
        """This block's own parameters (not its children's)."""
        return self._params

    def collect_params(self, select: str | None = None) -> ParameterDict:
        """This block's and its children's parameters (names matching ``select``, a regex)."""
        self._check_container_with_block()
        ret = ParameterDict(self._params.prefix)
        if not select:
            ret.update(self.params)
        else:
            pattern = re.compile(select)
            ret.update({n: v for n, v in self.params.items() if pattern.match(n)})
        for child in self._children.values():
            ret.update(child.collect_params(select=select))
        return ret

    def _check_container_with_block(self) -> None:
        children = set(map(id, self._children.values()))

        def unregistered(data) -> bool:
            if isinstance(data, (list, tuple)):
                return any(unregistered(e) for e in data)
            if isinstance(data, dict):
                return any(unregistered(v) for v in data.values())
            return isinstance(data, Block) and id(data) not in children
        for k, v in self.__dict__.items():
            if isinstance(v, (list, tuple, dict)) and not (k.startswith("__") or
                                                           k == "_children") \
                    and unregistered(v):
                warnings.warn(f'"{self.__class__.__name__}.{k}" is an unregistered container '
                              "with Blocks. Note that Blocks inside the list, tuple or dict "
                              "will not be registered automatically. Make sure to register them "
                              "using register_child() or switching to "
                              "nn.Sequential/nn.HybridSequential instead. ", stacklevel=3)

    def _collect_params_with_prefix(self, prefix: str = "") -> dict[str, Parameter]:
        if prefix:
            prefix += "."
        ret = {prefix + key: val for key, val in self._reg_params.items()}
        for name, child in self._children.items():
            ret.update(child._collect_params_with_prefix(prefix + name))
        return ret

    def save_parameters(self, filename: str, deduplicate: bool = False) -> None:
        """Save parameters under their structural names (``0.weight``), MXNet's format."""
        params = self._collect_params_with_prefix()
        if deduplicate:
            reverse = {id(v): k for k, v in params.items()}
            params = {k: v for k, v in params.items() if reverse[id(v)] == k}
        _nd.save(filename, {key: val._reduce() for key, val in params.items()})

    def save_params(self, filename: str) -> None:
        """[Deprecated] ``collect_params().save(filename, strip_prefix=self.prefix)``."""
        warnings.warn("save_params is deprecated. Please use save_parameters. Note that if you "
                      "want load from SymbolBlock later, please use export instead. For "
                      "details, see https://mxnet.apache.org/tutorials/gluon/save_load_params"
                      ".html", stacklevel=2)
        self.collect_params().save(filename, strip_prefix=self.prefix)

    def load_parameters(self, filename: str, ctx=None, allow_missing: bool = False,
                        ignore_extra: bool = False, cast_dtype: bool = False,
                        dtype_source: str = "current") -> None:
        """Load parameters written by :meth:`save_parameters` (or, with names without dots,
        by ``collect_params().save``)."""
        from .block_io import load_parameters
        load_parameters(self, filename, ctx, allow_missing, ignore_extra,
                        (cast_dtype, dtype_source))

    def load_params(self, filename: str, ctx=None, allow_missing: bool = False,
                    ignore_extra: bool = False) -> None:
        """[Deprecated] :meth:`load_parameters`."""
        warnings.warn("load_params is deprecated. Please use load_parameters.", stacklevel=2)
        self.load_parameters(filename, ctx, allow_missing, ignore_extra)

    def register_child(self, block: Block, name: str | None = None) -> None:
        """Register ``block`` as a child (attributes that are Blocks register themselves)."""
        if name is None:
            name = str(len(self._children))
        self._children[name] = block

    def register_forward_pre_hook(self, hook) -> HookHandle:
        """``hook(block, inputs)`` before every ``forward``."""
        return _attach(self._forward_pre_hooks, hook)

    def register_forward_hook(self, hook) -> HookHandle:
        """``hook(block, inputs, outputs)`` after every ``forward``."""
        return _attach(self._forward_hooks, hook)

    def register_op_hook(self, callback, monitor_all: bool = False) -> None:
        """``callback(node_name, op_name, array)`` on every operator output (and input, with
        ``monitor_all``) of the hybridized blocks below: names are ``bytes``, as MXNet
        passes them; ``array`` is the NDArray itself (MXNet passes a raw handle)."""
        for child in self._children.values():
            child.register_op_hook(callback, monitor_all)

    def save(self, prefix: str) -> None:
        """Write the model structure to ``prefix-model.json`` (block names, and the graphs
        of hybridized blocks) and the parameters to ``prefix-model.params``."""
        from .block_io import save_model
        save_model(self, prefix)

    def load(self, prefix: str) -> None:
        """Restore what :meth:`save` wrote into this block, created as the saved one was
        (same classes, same order): names, hybridized graphs, parameters."""
        from .block_io import load_model
        load_model(self, prefix)

    def summary(self, *inputs) -> None:
        """Print each layer's output shape and parameter count for a forward on ``inputs``
        (the block must be initialized, and not hybridized)."""
        from .summary import summary
        summary(self, *inputs)

    def apply(self, fn):
        """Apply ``fn(block)`` to every child, recursively, then to this block."""
        for child in self._children.values():
            child.apply(fn)
        fn(self)
        return self

    def initialize(self, init=None, ctx=None, verbose: bool = False,
                   force_reinit: bool = False) -> None:
        """``collect_params().initialize(...)`` (default: ``mx.init.Uniform()``)."""
        self.collect_params().initialize(init if init is not None else initializer.Uniform(),
                                         ctx, verbose, force_reinit)

    def hybridize(self, active: bool = True, **kwargs) -> None:
        """Accepted for compatibility: HybridBlocks always run through their graph."""
        for child in self._children.values():
            child.hybridize(active, **kwargs)

    def cast(self, dtype) -> None:
        """Cast every parameter (children included) to ``dtype``."""
        for child in self._children.values():
            child.cast(dtype)
        for _, param in self.params.items():
            param.cast(dtype)

    def zero_grad(self) -> None:
        """Zero every parameter's gradient."""
        self.collect_params().zero_grad()

    def reset_ctx(self, ctx) -> None:
        """Move every parameter to ``ctx``."""
        self.collect_params().reset_ctx(ctx)

    def __call__(self, *args):
        if self._forward_pre_hooks:
            for hook in list(self._forward_pre_hooks.values()):
                hook(self, args)
        out = self.forward(*args)
        if self._forward_hooks:
            for hook in list(self._forward_hooks.values()):
                hook(self, args, out)
        return out

    def forward(self, *args):
        """Override with the computation on NDArrays."""
        raise NotImplementedError


# ---------------------------------------------------------------- HybridBlock

def _context_of(args: list):
    ctxs = [a.context for a in args if isinstance(a, NDArray)]
    return ctxs[0] if ctxs else None, set(ctxs)


def _arg_kinds(args) -> tuple[bool, bool]:
    """(any Symbol, any NDArray) among nested ``args`` (other values are ignored)."""
    has_symbol = has_ndarray = False
    for a in args:
        if isinstance(a, (list, tuple)):
            sym, arr = _arg_kinds(a)
            has_symbol, has_ndarray = has_symbol or sym, has_ndarray or arr
        elif isinstance(a, NDArray):
            has_ndarray = True
        elif isinstance(a, Symbol):
            has_symbol = True
    return has_symbol, has_ndarray


def _first_context(args):
    for a in args:
        ctx = _first_context(a) if isinstance(a, (list, tuple)) else \
            (a.context if isinstance(a, NDArray) else None)
        if ctx is not None:
            return ctx
    return None


def _format_compatible(stored, fmt) -> bool:
    """Whether a call structured ``fmt`` may run a graph traced for ``stored``: equal, or
    differing only by trailing ``None`` arguments (defaults), as MXNet allows."""
    if fmt == stored:
        return True
    if not isinstance(stored, list) or not isinstance(fmt, list):
        return False
    short, long_ = (fmt, stored) if len(fmt) < len(stored) else (stored, fmt)
    return long_[:len(short)] == short and all(f == -1 for f in long_[len(short):])


def _forward_runs_graph(cls) -> bool:
    """Whether ``cls.forward``, for plain arrays structured as traced, just runs the graph:
    it is HybridBlock's, or its defining class sets ``_forward_runs_graph = True`` (an
    override whose extra work concerns other argument structures, like ``Loss``'s)."""
    owner = next(c for c in cls.__mro__ if "forward" in c.__dict__)
    return owner is HybridBlock or owner.__dict__.get("_forward_runs_graph", False)


def _hooked_below(block: Block) -> bool:
    """Whether a block below ``block`` has forward hooks."""
    for child in block._children.values():
        if child._forward_hooks or child._forward_pre_hooks or _hooked_below(child):
            return True
    return False


class HybridBlock(Block):
    """A Block whose ``hybrid_forward(F, x, ...)`` is traced once into a Symbol and run
    through bound executors.

    Not hybridized, it runs ``hybrid_forward`` with ``F = mx.nd`` (MXNet's imperative
    mode) where the graph cannot stand in for it: arguments that are not arrays (scalars),
    an argument structure unlike the traced one, or forward hooks on blocks below it
    (which then see NDArrays, as in MXNet)."""

    _op_hooks_always = False  # op hooks run only when hybridized, as in MXNet

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._cached_graph: tuple = ()
        self._cached_op = None
        self._cached_op_params: list[tuple[str, Parameter]] = []
        self._fast_call = False  # see __call__
        self._hooks_clear = -1  # HOOKS_VERSION at which no hook concerned the fast path
        self._in_format = None
        self._out_format = None
        self._active = False
        # the graph was traced for shape/type inference, where MXNet traces unhybridized
        # blocks too (``Block.save`` then stores it, as MXNet's does)
        self._inferred = False
        self._backend = None
        self._flags: list = []
        self._callback = None
        self._monitor_all = False

    def __setattr__(self, name: str, value) -> None:
        super().__setattr__(name, value)
        if isinstance(value, HybridBlock):
            self._clear_cached_op()

    def register_child(self, block: Block, name: str | None = None) -> None:
        if not isinstance(block, HybridBlock):
            raise ValueError(f"Children of HybridBlock must also be HybridBlock, but {block} has "
                             f"type {type(block)}. If you are using Sequential, please try "
                             "HybridSequential instead.")
        super().register_child(block, name)
        self._clear_cached_op()

    def hybridize(self, active: bool = True, backend=None, clear: bool = True,
                  static_alloc: bool = False, static_shape: bool = False, inline_limit: int = 2,
                  forward_bulk_size=None, backward_bulk_size=None, **kwargs) -> None:
        """Turn hybridization on or off, recursively. A hybridized block always runs its
        graph; the memory flags are recorded (symgraph's executors plan memory anyway)."""
        if backend is not None:
            raise unsupported(f"HybridBlock.hybridize(backend={backend!r})",
                              "MXNet's subgraph backends (partitioning) do not exist in symgraph")
        if kwargs:
            self._backend_opts = kwargs
        self._active = active
        self._flags = [("static_alloc", static_alloc), ("static_shape", static_shape),
                       ("inline_limit", inline_limit)]
        if clear:
            self._clear_cached_op()
        if (active and self._forward_hooks) or self._forward_pre_hooks:
            warnings.warn(f'"{self}" is being hybridized while still having forward hook/pre-hook. '
                          f'If "{self}" is a child of HybridBlock, the hooks will not take effect.',
                          stacklevel=2)
        super().hybridize(active, static_alloc=static_alloc, static_shape=static_shape,
                          inline_limit=inline_limit, forward_bulk_size=forward_bulk_size,
                          backward_bulk_size=backward_bulk_size)

    def optimize_for(self, x, *args, backend=None, clear: bool = False,
                     static_alloc: bool = False, static_shape: bool = False,
                     inline_limit: int = 2, forward_bulk_size=None, backward_bulk_size=None,
                     **kwargs) -> None:
        """Partition the graph for a subgraph ``backend``: none exists in symgraph, so a
        named backend raises ``UnsupportedError`` (no backend: ``ValueError``, as MXNet)."""
        if not backend:
            raise ValueError('Must specify "backend" to optimize_for')
        raise unsupported(f"HybridBlock.optimize_for(backend={backend!r})",
                          "MXNet's subgraph backends (partitioning) do not exist in symgraph")

    def register_op_hook(self, callback, monitor_all: bool = False) -> None:
        """Install ``callback`` on this block and its children (MXNet's reach); it runs on
        the operators of a hybridized block's graph. See :meth:`Block.register_op_hook`."""
        for block in [self, *self._children.values()]:
            block._callback, block._monitor_all = callback, monitor_all
            if isinstance(block, HybridBlock):
                block._install_op_hook()

    def _install_op_hook(self) -> None:
        if self._cached_op is not None:
            wanted = self._active or self._op_hooks_always
            self._cached_op.set_op_hook(self._callback if wanted else None, self._monitor_all)

    def _clear_cached_op(self) -> None:
        self._cached_graph = ()
        self._inferred = False
        self._cached_op = None
        self._fast_call = False
        self._hooks_clear = -1

    def __call__(self, *args):
        """A traced block called on arrays goes straight to its graph (the checks of
        ``forward`` ran on the first call); anything else takes the general path."""
        op = self._cached_op
        if op is not None and self._fast_call and self._hooks_clear == HOOKS_VERSION[0] and \
                len(args) == len(self._in_format):
            for a in args:
                if type(a) not in _ARRAYS:
                    break
            else:
                ctx = args[0].context
                if all(a.context is ctx or a.context == ctx for a in args[1:]):
                    try:
                        outs = op(list(args), ctx)
                    except DeferredInitializationError:
                        pass  # the general path finishes the initialisation
                    else:
                        fmt = self._out_format
                        return outs[0] if fmt == 0 else _regroup(outs, fmt)
        return super().__call__(*args)

    def _hooks_allow_graph(self) -> bool:
        """Whether no forward hook needs this call off the fast path: none of its own, and
        (not hybridized) none below, whose blocks must then see NDArrays."""
        version = HOOKS_VERSION[0]
        if self._hooks_clear == version:
            return True
        below = not self._active and _hooked_below(self)
        if not (below or self._forward_hooks or self._forward_pre_hooks):
            self._hooks_clear = version
        return not below

    def cast(self, dtype) -> None:
        self._clear_cached_op()
        super().cast(dtype)

    # -------------------------------------------------------- tracing
    def _get_graph(self, *args):
        if not self._cached_graph:
            flat, self._in_format = _flatten(args, "input")
            real = sum(a is not None for a in flat)
            if real == 0:
                raise ValueError("All args are None and we do not support such a case. "
                                 f"Received args={args}")
            inputs, grouped, count = [], [], 0
            for a in flat:
                if a is None:
                    grouped.append(None)
                    continue
                var = _sym.Variable(f"data{count}" if real > 1 else "data")
                count += 1
                inputs.append(var)
                grouped.append(var)
            params = {k: p.var() for k, p in self._reg_params.items()}
            with self.name_scope():
                out = self.hybrid_forward(symbol, *_regroup(grouped, self._in_format),
                                          **params)
            out, self._out_format = _flatten(out, "output")
            self._cached_graph = inputs, _sym.Group(out) if len(out) > 1 else out[0]
        return self._cached_graph

    def _infer_attrs(self, infer_fn: str, attr: str, *args) -> None:
        inputs, out = self._get_graph(*args)
        self._inferred = True
        flat = [a for a in _flatten(args, "input")[0] if a is not None]
        given = {i.name: getattr(a, attr) for i, a in zip(inputs, flat)}
        if attr == "dtype":
            given = {k: _np_dtype_name(v) for k, v in given.items()}
        arg_attrs, _, aux_attrs = getattr(out, infer_fn)(**given)
        if arg_attrs is None:
            raise ValueError(f"cannot infer the {attr} of every parameter from inputs {given}")
        values = dict(zip(out.list_arguments(), arg_attrs))
        values.update(zip(out.list_auxiliary_states(), aux_attrs))
        for name, p in self.collect_params().items():
            for key in (name, p.name):  # as ``load`` renamed it, or as named
                if key in values:
                    setattr(p, attr, values[key])
                    break

    def infer_shape(self, *args) -> None:
        """Infer the shapes of the parameters from inputs."""
        self._infer_attrs("infer_shape", "shape", *args)

    def infer_type(self, *args) -> None:
        """Infer the dtypes of the parameters from inputs."""
        self._infer_attrs("infer_type", "dtype", *args)

    def _deferred_infer_shape(self, *args) -> None:
        try:
            self.infer_shape(*args)
        except Exception as err:  # MXNet wraps every failure the same way
            raise ValueError("Deferred initialization failed because shape cannot be "
                             f"inferred. {err}") from err

    # -------------------------------------------------------- running
    def _build_cache(self, *args) -> None:
        inputs, out = self._get_graph(*args)
        names = [i.name for i in inputs]
        # a graph names parameters as they are named, or as ``load`` renamed their keys
        params = self.collect_params()
        by_name = {p.name: p for p in params.values()}
        by_name.update(params.items())
        wanted = [n for n in out.list_arguments() + out.list_auxiliary_states()
                  if n not in names]
        missing = [n for n in wanted if n not in by_name]
        if missing:
            raise MXNetError(f"{self.name}: the graph reads {missing}, which are neither "
                             "inputs nor parameters of this block")
        self._cached_op_params = [(n, by_name[n]) for n in wanted]
        # the graph reads its parameters through an object that does not refer to the block:
        # no reference cycle, so a dropped block frees its graphs' buffers at once
        self._cached_op = CachedGraph(out, names, _ParamArrays(self._cached_op_params),
                                      f"block {self.name}")
        self._install_op_hook()
        # plain array arguments, and ``forward`` only runs the graph: calls may skip to it
        self._fast_call = _forward_runs_graph(type(self)) and \
            isinstance(self._in_format, list) and all(f == 0 for f in self._in_format)

    def _call_cached_op(self, *args):
        if self._cached_op is None:
            try:
                self._build_cache(*args)
            except TypeError:  # MXNet runs an unhybridized hybrid_forward on NDArrays, which
                if self._active:  # may hand F ops NDArrays: F.take(x, nd.array([0]))
                    raise
                self._cached_graph = ()
                return self._forward_imperative(*args)
        flat, fmt = _flatten_inputs(args)
        if fmt != self._in_format and not _format_compatible(self._in_format, fmt):
            raise ValueError("The argument structure of HybridBlock does not match the cached "
                             f"version. Stored format = {self._in_format}, input format = "
                             f"{fmt}")
        flat = [a for a in flat if a is not None]
        ctx, ctxs = _context_of(flat)
        if len(ctxs) > 1:
            raise ValueError("Find multiple contexts in the input, After hybridized, the "
                             "HybridBlock only supports one input context. You can print the "
                             "ele.ctx in the input arguments to inspect their contexts. Find "
                             f"all contexts = {ctxs}")
        try:
            outs = self._cached_op(flat, ctx)
        except DeferredInitializationError:
            self._deferred_infer_shape(*args)
            for _, p in self._cached_op_params:
                p._finish_deferred_init()
            outs = self._cached_op(flat, ctx)
        return _regroup(outs, self._out_format)

    def forward(self, x, *args):
        """Run the graph on NDArrays (or, see the class, ``hybrid_forward`` with ``F`` =
        ``mx.nd``), or build the symbolic graph on Symbols."""
        if type(x) in _ARRAYS and all(type(a) in _ARRAYS for a in args) and \
                self._hooks_allow_graph() and (self._active or not self._cached_graph or
                                               _format_compatible(self._in_format,
                                                                  [0] * (1 + len(args)))):
            return self._call_cached_op(x, *args)
        has_symbol, has_ndarray = _arg_kinds((x,) + args)
        if has_symbol and has_ndarray:
            raise ValueError("In HybridBlock, we do not support mixed NDArrays and Symbols types "
                             "for the input. Please check the type of the args.\n")
        if not has_symbol and not has_ndarray:
            raise ValueError("In HybridBlock, there must be one NDArray or one Symbol in the "
                             "input. Please check the type of the args.\n")
        if has_symbol:
            params = {k: p.var() for k, p in self._reg_params.items()}
            with self.name_scope():
                return self.hybrid_forward(symbol, x, *args, **params)
        if not self._active and self._runs_imperatively((x,) + args):
            return self._forward_imperative(x, *args)
        return self._call_cached_op(x, *args)

    def _runs_imperatively(self, args: tuple) -> bool:
        """Whether a call of this (not hybridized) block on ``args`` must run
        ``hybrid_forward`` on NDArrays: see the class docstring."""
        try:
            fmt = _flatten(args, "input")[1]
        except ValueError:  # an argument the graph cannot take (a scalar)
            return True
        if self._cached_graph and not _format_compatible(self._in_format, fmt):
            return True
        return not self._hooks_allow_graph()

    def _forward_imperative(self, x, *args):
        """``hybrid_forward(mx.nd, ...)`` on the parameters' arrays (MXNet's imperative
        mode); recorded operators make it differentiable."""
        ctx = _first_context((x,) + args)
        with ctx:
            try:
                params = {k: p.data(ctx) for k, p in self._reg_params.items()}
            except DeferredInitializationError:
                self._deferred_infer_shape(x, *args)
                for p in self.params.values():
                    p._finish_deferred_init()
                params = {k: p.data(ctx) for k, p in self._reg_params.items()}
            return self.hybrid_forward(_nd, x, *args, **params)

    def hybrid_forward(self, F, x, *args, **kwargs):
        """Override: the computation with ``F`` = ``mx.sym`` (or ``mx.nd``)."""
        raise NotImplementedError

    def export(self, path: str, epoch: int = 0, remove_amp_cast: bool = True) -> None:
        """Write ``path-symbol.json`` and ``path-%04d.params`` (``arg:``/``aux:`` names),
        loadable by ``SymbolBlock.imports``, ``mx.mod.Module`` and MXNet itself."""
        if not self._cached_graph:
            raise RuntimeError("Please first call block.hybridize() and then run forward with "
                               "this block at least once before calling export.")
        sym = self._cached_graph[1]
        sym.save(f"{path}-symbol.json")
        arg_names, aux_names = set(sym.list_arguments()), set(sym.list_auxiliary_states())
        arrays = {}
        for name, p in self._cached_op_params or self.collect_params().items():
            if name in arg_names:
                arrays[f"arg:{name}"] = p._reduce()
            elif name in aux_names:
                arrays[f"aux:{name}"] = p._reduce()
            else:
                warnings.warn(f'Parameter "{name}" is not found in the graph. ', stacklevel=2)
        _nd.save(f"{path}-{epoch:04d}.params", arrays)

    def to_torch(self, *args):
        """This block as a ``torch.fx.GraphModule`` (see ``symgraph.export.to_torch``)."""
        from ..export.torch_module import block_to_torch
        return block_to_torch(self, *args)


class _ParamArrays:
    """A block graph's parameters on a context: name -> (data, grad or None, grad_req), kept
    until any parameter's arrays change (``arrays_version``), so a training step does not
    look them up."""

    __slots__ = ("params", "kept")

    def __init__(self, params: list):
        self.params = params  # (name in the graph, Parameter)
        self.kept: tuple | None = None  # ((ctx, arrays_version), arrays)

    def __call__(self, ctx) -> dict:
        key = (ctx, arrays_version())
        kept = self.kept
        if kept is not None and kept[0] == key:
            return kept[1]
        out = {}
        for name, p in self.params:
            req = p.grad_req
            out[name] = (p.data(ctx), None if req == "null" else p.grad(ctx), req)
        self.kept = (key, out)
        return out


def _np_dtype_name(dtype) -> str:
    from ..base import dtype_name
    return dtype_name(dtype)


def __getattr__(name: str):
    if name == "SymbolBlock":  # its own module (it builds on HybridBlock)
        from .symbol_block import SymbolBlock
        return SymbolBlock
    if name == "np_symbol":  # MXNet's name: a stand-in (there is no mx.np)
        from .. import unsupported
        return unsupported.module("symbol.numpy")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
