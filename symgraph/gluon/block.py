"""Gluon ``Block``, ``HybridBlock`` and ``SymbolBlock`` on symgraph's executor.

A ``HybridBlock`` is always run through its graph: the first call traces
``hybrid_forward(mx.sym, ...)`` into a Symbol (inputs ``data`` or ``data0``, ``data1``, ...,
parameters as their ``Parameter.var()``), and every call with NDArrays runs that Symbol
through a :class:`~symgraph.cached_graph.CachedGraph` (executors bound per context and
input shapes, parameters bound by reference), recorded for ``autograd`` under
``record()``. ``hybridize()`` is accepted and changes nothing. A plain ``Block`` runs its
``forward`` in Python; its HybridBlock children run their graphs. Names, prefixes, the
parameter files of ``save_parameters``/``export`` and the errors follow MXNet 1.9.1.
"""
from __future__ import annotations

import re
import threading
import warnings
from collections import OrderedDict, defaultdict

from .. import initializer
from .. import ndarray as _nd
from ..base import MXNetError
from ..deferred import Pending
from ..ndarray.ndarray import NDArray
from ..symbol import symbol as _sym
from ..symbol.naming import NameManager, Prefix
from ..symbol.symbol import Symbol
from .parameter import DeferredInitializationError, Parameter, ParameterDict, arrays_version

__all__ = ["Block", "HybridBlock", "SymbolBlock"]


class _BlockScope:
    """Scope for collecting child Blocks (names and parameter prefixes, as MXNet's)."""

    _current = threading.local()

    def __init__(self, block: Block):
        self._block = block
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


class HookHandle:
    """Detaches a forward hook (``handle.detach()``, or as a context manager)."""

    def __init__(self, hooks: OrderedDict, hook):
        self._hooks, self._id = hooks, id(hook)
        hooks[self._id] = hook

    def detach(self) -> None:
        self._hooks.pop(self._id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.detach()


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
        self._forward_hooks: OrderedDict = OrderedDict()
        self._forward_pre_hooks: OrderedDict = OrderedDict()

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
        loaded = _nd.load(filename)
        params = self._collect_params_with_prefix()
        if not loaded and not params:
            return
        if not isinstance(loaded, dict):
            raise MXNetError(f"load_parameters: {filename} holds unnamed arrays")
        if not any("." in k for k in loaded):  # legacy: ParameterDict.save names
            self.collect_params().load(filename, ctx, allow_missing, ignore_extra, self.prefix,
                                       cast_dtype=cast_dtype, dtype_source=dtype_source)
            return
        if not allow_missing:
            inverse = defaultdict(list)
            for k, v in params.items():
                inverse[id(v)].append(k)
            for name, param in params.items():
                if not any(p in loaded for p in inverse[id(param)]):
                    raise AssertionError(
                        f"Parameter '{name}' is missing in file '{filename}', which contains "
                        f"parameters: {_brief(loaded.keys())}. Set allow_missing=True to "
                        "ignore missing parameters.")
        for name in loaded:
            if not ignore_extra and name not in params:
                raise ValueError(
                    f"Parameter '{name}' loaded from file '{filename}' is not present in "
                    f"ParameterDict, which contains parameters {_brief(self._params.keys())}. "
                    "Set ignore_extra=True to ignore. ")
            if name in params:
                params[name]._load_init(loaded[name], ctx, cast_dtype=cast_dtype,
                                        dtype_source=dtype_source)

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
        return HookHandle(self._forward_pre_hooks, hook)

    def register_forward_hook(self, hook) -> HookHandle:
        """``hook(block, inputs, outputs)`` after every ``forward``."""
        return HookHandle(self._forward_hooks, hook)

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


def _forward_runs_graph(cls) -> bool:
    """Whether ``cls.forward``, for plain arrays structured as traced, just runs the graph:
    it is HybridBlock's, or its defining class sets ``_forward_runs_graph = True`` (an
    override whose extra work concerns other argument structures, like ``Loss``'s)."""
    owner = next(c for c in cls.__mro__ if "forward" in c.__dict__)
    return owner is HybridBlock or owner.__dict__.get("_forward_runs_graph", False)


class HybridBlock(Block):
    """A Block whose ``hybrid_forward(F, x, ...)`` is traced once into a Symbol and run
    through bound executors."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._cached_graph: tuple = ()
        self._cached_op = None
        self._cached_op_params: list[Parameter] = []
        self._param_cache: tuple | None = None  # ((ctx, arrays_version), arrays)
        self._fast_call = False  # see __call__
        self._in_format = None
        self._out_format = None
        self._active = False

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

    def hybridize(self, active: bool = True, **kwargs) -> None:
        self._active = active
        super().hybridize(active, **kwargs)

    def _clear_cached_op(self) -> None:
        self._cached_graph = ()
        self._cached_op = None
        self._param_cache = None
        self._fast_call = False

    def __call__(self, *args):
        """A traced block called on arrays goes straight to its graph (the checks of
        ``forward`` ran on the first call); anything else takes the general path."""
        op = self._cached_op
        if op is not None and self._fast_call and len(args) == len(self._in_format) and \
                not self._forward_pre_hooks and not self._forward_hooks:
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
                out = self.hybrid_forward(_symbol_module(), *_regroup(grouped, self._in_format),
                                          **params)
            out, self._out_format = _flatten(out, "output")
            self._cached_graph = inputs, _sym.Group(out) if len(out) > 1 else out[0]
        return self._cached_graph

    def _infer_attrs(self, infer_fn: str, attr: str, *args) -> None:
        inputs, out = self._get_graph(*args)
        flat = [a for a in _flatten(args, "input")[0] if a is not None]
        given = {i.name: getattr(a, attr) for i, a in zip(inputs, flat)}
        if attr == "dtype":
            given = {k: _np_dtype_name(v) for k, v in given.items()}
        arg_attrs, _, aux_attrs = getattr(out, infer_fn)(**given)
        if arg_attrs is None:
            raise ValueError(f"cannot infer the {attr} of every parameter from inputs {given}")
        values = dict(zip(out.list_arguments(), arg_attrs))
        values.update(zip(out.list_auxiliary_states(), aux_attrs))
        for p in self.collect_params().values():
            if p.name in values:
                setattr(p, attr, values[p.name])

    def infer_shape(self, *args) -> None:
        """Infer the shapes of the parameters from inputs."""
        self._infer_attrs("infer_shape", "shape", *args)

    def infer_type(self, *args) -> None:
        """Infer the dtypes of the parameters from inputs."""
        self._infer_attrs("infer_type", "dtype", *args)

    def _deferred_infer_shape(self, *args) -> None:
        try:
            self.infer_shape(*args)
        except Exception as err:  # noqa: BLE001 - MXNet wraps every failure the same way
            raise ValueError("Deferred initialization failed because shape cannot be "
                             f"inferred. {err}") from err

    # -------------------------------------------------------- running
    def _build_cache(self, *args) -> None:
        from ..cached_graph import CachedGraph
        inputs, out = self._get_graph(*args)
        names = [i.name for i in inputs]
        by_name = {p.name: p for p in self.collect_params().values()}
        wanted = [n for n in out.list_arguments() + out.list_auxiliary_states()
                  if n not in names]
        missing = [n for n in wanted if n not in by_name]
        if missing:
            raise MXNetError(f"{self.name}: the graph reads {missing}, which are neither "
                             "inputs nor parameters of this block")
        self._cached_op_params = [by_name[n] for n in wanted]
        self._param_cache = None
        self._cached_op = CachedGraph(out, names, self._param_arrays, f"block {self.name}")
        # plain array arguments, and ``forward`` only runs the graph: calls may skip to it
        self._fast_call = _forward_runs_graph(type(self)) and \
            isinstance(self._in_format, list) and all(f == 0 for f in self._in_format)

    def _param_arrays(self, ctx) -> dict:
        """name -> (data, grad or None, grad_req) on ``ctx``; kept until any parameter's
        arrays change (``arrays_version``), so a training step does not look them up."""
        key = (ctx, arrays_version())
        kept = self._param_cache
        if kept is not None and kept[0] == key:
            return kept[1]
        out = {}
        for p in self._cached_op_params:
            req = p.grad_req
            out[p.name] = (p.data(ctx), None if req == "null" else p.grad(ctx), req)
        self._param_cache = (key, out)
        return out

    def _call_cached_op(self, *args):
        if self._cached_op is None:
            self._build_cache(*args)
        flat, fmt = _flatten_inputs(args)
        if fmt != self._in_format:
            raise ValueError("The argument structure of HybridBlock does not match the cached "
                             f"version. Stored format = {fmt}, input format = "
                             f"{self._in_format}")
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
            for p in self._cached_op_params:
                p._finish_deferred_init()
            outs = self._cached_op(flat, ctx)
        return _regroup(outs, self._out_format)

    def forward(self, x, *args):
        """Run the graph on NDArrays, or build the symbolic graph on Symbols."""
        if type(x) in _ARRAYS and all(type(a) in _ARRAYS for a in args):
            return self._call_cached_op(x, *args)
        flat = _flatten([x] + list(args), "input")[0]
        has_symbol = any(isinstance(a, Symbol) for a in flat)
        has_ndarray = any(isinstance(a, NDArray) for a in flat)
        if has_symbol and has_ndarray:
            raise ValueError("In HybridBlock, we do not support mixed NDArrays and Symbols types "
                             "for the input. Please check the type of the args.\n")
        if not has_symbol and not has_ndarray:
            raise ValueError("In HybridBlock, there must be one NDArray or one Symbol in the "
                             "input. Please check the type of the args.\n")
        if has_ndarray:
            return self._call_cached_op(x, *args)
        params = {k: p.var() for k, p in self._reg_params.items()}
        with self.name_scope():
            return self.hybrid_forward(_symbol_module(), x, *args, **params)

    def hybrid_forward(self, F, x, *args, **kwargs):
        """Override: the computation with ``F`` = ``mx.sym``."""
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
        for p in self._cached_op_params or self.collect_params().values():
            if p.name in arg_names:
                arrays[f"arg:{p.name}"] = p._reduce()
            elif p.name in aux_names:
                arrays[f"aux:{p.name}"] = p._reduce()
            else:
                warnings.warn(f'Parameter "{p.name}" is not found in the graph. ', stacklevel=2)
        _nd.save(f"{path}-{epoch:04d}.params", arrays)


def _symbol_module():
    from .. import symbol
    return symbol


def _np_dtype_name(dtype) -> str:
    from ..base import dtype_name
    return dtype_name(dtype)


# ---------------------------------------------------------------- SymbolBlock

def _common_prefix(names: list[str]) -> str:
    if not names:
        return ""
    prefix = names[0]
    for name in names:
        i = 0
        while i < len(prefix) and i < len(name) and prefix[i] == name[i]:
            i += 1
        prefix = prefix[:i]
    return prefix


class SymbolBlock(HybridBlock):
    """A Block made from a Symbol (a pretrained network, a feature extractor):
    ``SymbolBlock(outputs, inputs, params=None)``."""

    @staticmethod
    def imports(symbol_file: str, input_names, param_file: str | None = None, ctx=None,
                allow_missing: bool = False, ignore_extra: bool = False) -> SymbolBlock:
        """Load a model written by ``HybridBlock.export`` or ``Module.save_checkpoint``."""
        from ..symbol import load as load_symbol
        sym = load_symbol(symbol_file)
        if isinstance(input_names, str):
            input_names = [input_names]
        if param_file is None:
            inputs = [_sym.Variable(i, dtype="float32") for i in input_names]
        else:
            inputs = [_sym.Variable(i) for i in input_names]
        ret = SymbolBlock(sym, inputs)
        if param_file is not None:
            ret.collect_params().load(param_file, ctx, allow_missing, ignore_extra,
                                      cast_dtype=True, dtype_source="saved")
        return ret

    def __repr__(self) -> str:
        out = self._cached_graph[1]
        return (f"{self.__class__.__name__}(\n{out} : {len(self._cached_graph[0])} -> "
                f"{len(out.list_outputs())}\n)")

    def __init__(self, outputs, inputs, params=None):
        super().__init__(prefix=None, params=None)
        self._prefix = ""
        self._params = ParameterDict("", params)
        if isinstance(inputs, Symbol) and len(inputs.list_outputs()) == 1:
            inputs = [inputs]
        if isinstance(outputs, (list, tuple)) and len(outputs) == 1:
            outputs = outputs[0]
        syms, self._in_format = _flatten(inputs, "input")
        out, self._out_format = _flatten(outputs, "output")
        names = set()
        for s in syms:
            if len(s.get_internals().list_outputs()) != 1:
                raise AssertionError(f"Input symbols must be variable, but {s} is an output of "
                                     "operators")
            names.add(s.name)
        out = _sym.Group(out) if len(out) > 1 else out[0]
        arg_types, aux_types = _param_types(syms, out)
        for arg, dtype in zip(out.list_arguments(), arg_types):
            if arg not in names:
                self.params.get(arg, allow_deferred_init=True, dtype=dtype)
        for aux, dtype in zip(out.list_auxiliary_states(), aux_types):
            if aux not in names:
                self.params.get(aux, grad_req="null", allow_deferred_init=True, dtype=dtype)
        self._cached_graph = syms, out
        cut = len(_common_prefix(list(self._params.keys())))
        self._reg_params = {key[cut:]: val for key, val in self._params.items()}

    def forward(self, x, *args):
        if isinstance(x, NDArray):
            return self._call_cached_op(x, *args)
        if not isinstance(x, Symbol):
            raise AssertionError("HybridBlock requires the first argument to forward be either "
                                 f"Symbol or NDArray, but got {type(x)}")
        flat, fmt = _flatten([x] + list(args), "input")
        if fmt != self._in_format:
            raise AssertionError("Invalid input format")
        ret = self._cached_graph[1](**{k.name: v for k, v in zip(self._cached_graph[0], flat)})
        return _regroup(list(ret), self._out_format)

    def _clear_cached_op(self) -> None:
        graph = self._cached_graph
        super()._clear_cached_op()
        self._cached_graph = graph

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError


def _param_types(inputs: list, out: Symbol):
    """The dtypes of the symbol's parameters as inference gives them from the inputs'
    ``__dtype__`` attributes (float32 where nothing says)."""
    given = {}
    for s in inputs:
        dtype = s.attr("__dtype__")
        if dtype is not None:
            given[s.name] = _dtype_from_attr(dtype)
    try:
        arg_types, _, aux_types = out.infer_type(**given)
    except MXNetError:
        arg_types = aux_types = None
    if arg_types is None:
        return (["float32"] * len(out.list_arguments()),
                ["float32"] * len(out.list_auxiliary_states()))
    return ([_np_dtype_name(t) for t in arg_types], [_np_dtype_name(t) for t in aux_types])


def _dtype_from_attr(value: str) -> str:
    from ..symbol.symbol import _as_dtype
    return _as_dtype(value)
