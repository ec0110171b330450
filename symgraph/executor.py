"""Executors: ``simple_bind``/``bind`` build a plan once; ``forward``/``backward`` walk it.

The hot loop (:func:`_run`) unpacks prepared step tuples: no graph walking, no
inference, no op-name branching at step time.
"""
from __future__ import annotations

from array import array as py_array  # noqa: F401 - MXNet's executor module exports it
from collections.abc import Callable, Mapping

import numpy as np
import torch

from . import ndarray  # noqa: F401 - ndarray: MXNet's module attribute
from . import profiler as _profiler
from . import random as _random
from .base import (  # noqa: F401 - the C-API helpers are names MXNet's module exports
    BindError,
    DeferredError,
    DTypeError,
    MXNetError,
    ShapeError,
    c_array_buf,
    c_handle_array,
    c_str_array,
    check_call,
    dtype_name,
    py_str,
    unsupported,
)
from .compiler import cuda_graph
from .compiler.plan import Plan, bind_outputs, build_plan, gc_paused
from .context import Context, current_context
from .executor_storage import SparseIO, store
from .monitored_run import MonitoredRun
from .ndarray.ndarray import NDArray
from .ndarray.sparse_array import value_of
from .ops.base import Runtime, known
from .symbol.graph import IndexedGraph
from .symbol.infer import DTYPE, SHAPE, infer
from .symbol.symbol import Symbol, _as_dtype, _as_shape, check_unique_names

_GRAD_REQS = ("null", "write", "add")


def _run(steps, v: list, rt: Runtime) -> None:
    for fn, p, ins, aux, outs, frees, _node in steps:
        r = fn(p, [v[i] for i in ins], [v[i] for i in aux], rt)
        for o, t in zip(outs, r):
            v[o] = t
        for f in frees:
            v[f] = None


def _frozen(node) -> bool:
    """MXNet.jl's convention: an attribute ending in ``grad`` set to ``freeze``."""
    return any(k.strip("_").endswith("grad") and v == "freeze" for k, v in node.attrs.items())


def normalize_grad_req(grad_req, arg_names: list[str], frozen: set[str]) -> dict[str, str]:
    """``grad_req`` as str, list or dict to ``{arg: req}``; frozen variables get ``null``."""
    if isinstance(grad_req, str):
        reqs = dict.fromkeys(arg_names, grad_req)
    elif isinstance(grad_req, (list, tuple)):
        if len(grad_req) != len(arg_names):
            raise BindError(f"grad_req list has {len(grad_req)} entries for {len(arg_names)} "
                            f"arguments {arg_names}")
        reqs = dict(zip(arg_names, grad_req))
    elif isinstance(grad_req, Mapping):
        # MXNet reads the arguments' entries and ignores other names (Module passes its
        # whole dict, e.g. ``{'data': 'add', 'parameters': 'null'}`` to an unfused net).
        reqs = {n: grad_req.get(n, "null") for n in arg_names}
    else:
        raise BindError(f"grad_req must be str, list or dict, got {type(grad_req).__name__}")
    for name, req in reqs.items():
        if req == "inplace":
            reqs[name] = "write"
        elif req not in _GRAD_REQS:
            raise BindError(f"invalid grad_req {req!r} for argument {name}: expected one of "
                            f"{list(_GRAD_REQS)}")
    for name in frozen:
        reqs[name] = "null"
    return reqs


class UnknownArgumentError(BindError, TypeError):
    """A keyword argument names no argument of the symbol (MXNet raises TypeError)."""


def source_tensor(value, dst: torch.Tensor, name: str, what: str) -> torch.Tensor:
    """``value`` (NDArray, numpy array, nested list, scalar) as a tensor that ``dst`` can
    take with ``copy_``: a DTypeError naming ``what`` and ``name`` unless it is numeric data
    that casts to ``dst``'s dtype (complex into real loses data: rejected)."""
    if isinstance(value, NDArray):
        src = value._t
    else:
        try:
            src = torch.as_tensor(np.asarray(value))
        except (TypeError, ValueError, RuntimeError) as err:
            raise DTypeError(f"{what} {name}: cannot use a value of type "
                             f"{type(value).__name__} ({err})") from None
    if src.is_complex() and not dst.is_complex():
        raise DTypeError(f"{what} {name}: cannot cast {src.dtype} into "
                         f"{dtype_name(dst.dtype)}")
    return src


def checked_source(value, dst: torch.Tensor, name: str, what: str,
                   shape: tuple | None = None) -> torch.Tensor:
    """:func:`source_tensor` of exactly ``dst``'s shape (or ``shape``; no broadcasting, as
    MXNet's ``copyto``): a ShapeError naming ``what``, ``name`` and both shapes otherwise.

    >>> import torch
    >>> checked_source(np.ones((1, 3)), torch.zeros(2, 3), 'fc_weight', 'parameter')
    Traceback (most recent call last):
    ...
    symgraph.base.ShapeError: parameter fc_weight: Shape inconsistent, Provided=(1, 3), \
expected shape=(2, 3)
    """
    src = source_tensor(value, dst, name, what)
    shape = dst.shape if shape is None else shape
    if src.shape != shape:
        raise ShapeError(f"{what} {name}: Shape inconsistent, Provided={tuple(src.shape)}, "
                         f"expected shape={tuple(shape)}")
    return src


class Executor:
    """A bound symbol: arrays for arguments, gradients and aux states, and a prepared plan."""

    def __init__(self, symbol: Symbol, ctx: Context, plan: Plan, args: list[NDArray],
                 grads: list[NDArray | None], aux: list[NDArray], grad_req: dict[str, str],
                 names: tuple[list[str], list[str]] | None = None):
        self._symbol = symbol
        self._ctx = ctx
        self._plan = plan
        self.arg_arrays, self.grad_arrays, self.aux_arrays = args, grads, aux
        self._arg_names, self._aux_names = names if names is not None else \
            (symbol.list_arguments(), symbol.list_auxiliary_states())
        self._grad_req = grad_req
        self._arg_dict = dict(zip(self._arg_names, args))
        self._grad_dict = dict(zip(self._arg_names, grads))  # None where grad_req is null
        self._aux_dict = dict(zip(self._aux_names, aux))
        self._output_names = symbol.list_outputs()
        # replaced by the computed values at each forward; before the first one they hold
        # uninitialised memory, as MXNet's do (no page is touched: binding a bucket with a
        # large softmax output costs nothing here)
        self.outputs = [_alloc(plan.shapes[s], plan.dtypes[s], ctx, fill=False)
                        for s in plan.head_slots]
        self._values: list = [None] * plan.graph.num_entries
        bound = {**self.arg_dict, **self.aux_dict}
        # sparse values (row_sparse, csr): None when nothing is sparse, so dense plans pay
        # nothing for them
        self._sparse = SparseIO(plan, bound) if SparseIO.wanted(plan, bound, self._grad_dict) \
            else None
        for name, arr in bound.items():
            self._values[plan.var_slot[name]] = value_of(arr)
        if self._sparse is not None:
            self.outputs = [self._sparse.make_output(plan, s, ctx, out)
                            for s, out in zip(plan.head_slots, self.outputs)]
        self._grad_out = self._grad_writers()
        self._rt = Runtime(False, _random.generator(ctx), ctx.torch_device)
        self._monitor: tuple[Callable, bool] | None = None
        # step-list runners (CUDA-graphed on GPU) and what pairs their graphs
        self._calls = cuda_graph.StepCalls(
            self._values, frozenset(plan.var_slot.values()) |
            frozenset(s for s in plan.head_grad_slots if s is not None),
            self._make_call, self._rerun_forward)
        # per step list, the deferred data checks of the last run that ran its Python (a
        # replayed CUDA graph runs none and rewrites the same flags)
        self._checks: dict[tuple, list] = {}
        self._forwarded = False
        # True once reshape shares output memory: forward then copies into the outputs
        self._fixed_outputs = False

    def _grad_writers(self) -> list:
        """(slot, grad tensor, add?) for gradients copied after backward.

        A 'write' gradient whose producing step can write into a given tensor
        (its op's ``prepare`` accepts ``out``) is computed straight into its grad array instead.
        """
        writers = []
        direct = {}
        for name, grad in self.grad_dict.items():
            slot = self._plan.grad_slot.get(name)
            if grad is not None and self._sparse is not None and \
                    self._sparse.takes_grad(self._plan, slot, grad):
                if slot is not None or self._grad_req[name] == "write":
                    self._sparse.add_grad(slot, grad, self._grad_req[name] == "add")
                continue
            if slot is None and grad is not None and self._grad_req[name] == "write":
                # no gradient reaches it (softmax's length, take's indices): MXNet writes 0
                writers.append((None, grad._t, False))
            if slot is None or grad is None:
                continue
            cast = grad.dtype != self.arg_dict[name].dtype  # copied with a cast, never aliased
            if self._grad_req[name] == "write" and slot not in direct and not cast:
                direct[slot] = grad._t
            else:
                writers.append((slot, grad._t, self._grad_req[name] == "add"))
        placed = bind_outputs(self._plan, direct)
        writers += [(slot, t, False) for slot, t in direct.items() if slot not in placed]
        return writers

    @property
    def output_dict(self) -> dict[str, NDArray]:
        return dict(zip(self._output_names, self.outputs))

    # ------------------------------------------------------------ running
    def forward(self, is_train: bool = False, **kwargs) -> list[NDArray]:
        """Run the forward pass; keyword arrays are copied into the named arguments first."""
        staged = [self._check_in(name, value) for name, value in kwargs.items()]
        for dst, src in staged:  # validated all first: a bad array changes nothing
            store(dst, src) if isinstance(dst, NDArray) else dst.copy_(src)
        self._rt.is_train = bool(is_train)
        if self._sparse is not None:
            self._sparse.feed(self._values)
        # an executor with gradients keeps what backward needs even after an inference
        # forward (MXNet allows backward then); an inference-only one frees values early
        steps = self._plan.forward_train if is_train or self._plan.backward else \
            self._plan.forward_infer
        try:
            checks = self._run_steps(
                ("forward", bool(is_train), steps is self._plan.forward_train), steps)
        except DeferredError as err:  # raised where the outputs are read, as MXNet does
            for arr in self.outputs:
                arr._pending_error, arr._pending_checks = err, None
            self._forwarded = True
            return self.outputs
        if self._sparse is not None:
            self._sparse.deliver(self._values)
        for arr, slot in zip(self.outputs, self._plan.head_slots):
            arr._pending_error, arr._pending_checks = None, checks or None
            if arr._is_sparse:
                continue
            if self._fixed_outputs:
                arr._t.copy_(self._values[slot])
            else:
                arr._t = self._values[slot]
        self._forwarded = True
        return self.outputs

    def _feed(self, name: str, tensor: torch.Tensor) -> None:
        """Argument ``name`` reads ``tensor`` in the next forward: on the CPU referenced, not
        copied, as MXNet's CachedOp references its inputs; on a GPU copied (CUDA graphs keep
        the argument's address, as they do wherever a graph was captured). Shapes and dtypes
        must match."""
        arr = self.arg_dict[name]
        if self._ctx.device_type != "cpu" or self._calls.graphs:
            arr._t.copy_(tensor)
        else:
            arr._t = tensor
            self._values[self._plan.var_slot[name]] = tensor

    def _check_in(self, name: str, value) -> tuple:
        if name not in self.arg_dict:
            raise UnknownArgumentError(f"forward: unknown argument {name!r}; arguments are "
                                       f"{self._arg_names}")
        dst = self.arg_dict[name]
        if dst._is_sparse or (isinstance(value, NDArray) and value._is_sparse):
            if tuple(value.shape) != dst.shape:
                raise ShapeError(f"Shape not match! Argument {name}, need: {dst.shape}, "
                                 f"received: {tuple(value.shape)}")
            return dst, value_of(value) if isinstance(value, NDArray) else value
        src = source_tensor(value, dst._t, name, "forward: argument")
        if tuple(src.shape) != dst.shape:
            raise ShapeError(f"Shape not match! Argument {name}, need: {dst.shape}, received: "
                             f"{tuple(src.shape)} (use Executor.reshape to change shapes)")
        return dst._t, src

    def backward(self, out_grads=None, is_train: bool = True) -> None:
        """Run the backward pass and write (or add) gradients into ``grad_arrays``."""
        if not self._forwarded:  # MXNet runs backward on whatever the arrays hold
            self.forward(is_train=True)
        self._feed_head_grads(out_grads)
        self._run_steps(self._calls.backward_key(bool(is_train)), self._plan.backward)

    def _write_grads(self) -> None:
        v = self._values
        if self._sparse is not None:
            self._sparse.write_grads(v)
        for slot, grad, add in self._grad_out:
            if slot is None:
                grad.zero_()
            elif add:
                grad.add_(v[slot])
            else:
                grad.copy_(v[slot])

    def _run_steps(self, key: tuple, steps: list) -> list:
        """Run a step list: eagerly, monitored, or as a replayed CUDA graph on GPU. Returns
        the deferred data checks (``ops.base.check``) its outputs must pass when read."""
        rt = self._rt
        if rt.checks:
            rt.checks = []
        self._run_list(key, steps)
        if rt.checks:  # this run ran its ops' Python: its flags replace the last ones
            self._checks[key] = rt.checks
            return rt.checks
        return self._checks.get(key, ())

    def _run_list(self, key: tuple, steps: list) -> None:
        forward = key[0] == "forward"
        if self._monitor is None and not _profiler.ACTIVE.symbolic:
            self._calls.forward(key) if forward else self._calls.backward(key)
            return
        if forward:
            self._calls.ran_eagerly()
        else:
            self._calls.need_values(key[2])
        if self._monitor is not None:
            with torch.no_grad():
                MonitoredRun(self._plan, *self._monitor).run(
                    steps, self._values, self._rt, forward=forward)
        else:  # a timed twin of the loop, only while profiling
            with torch.no_grad():
                _profiler.run_steps(steps, self._values, self._rt, self._plan.impl, key[0])
        if not forward:
            self._write_grads()

    def _make_call(self, key: tuple) -> Callable:
        v, rt = self._values, self._rt
        plan = self._plan
        steps = plan.backward if key[0] == "backward" else \
            plan.forward_train if key[2] else plan.forward_infer
        after = self._write_grads if key[0] == "backward" else None

        def body() -> None:
            # steps never need torch's autograd (ops that use it enable it themselves), and
            # without it every dispatch is cheaper: a third less for small tensors
            with torch.no_grad():
                _run(steps, v, rt)
                if after is not None:
                    after()
        if cuda_graph.wanted(self._ctx.torch_device, steps):
            return cuda_graph.GraphedCall(body, f"{key[0]} of {self._output_names}",
                                          pool=self._calls.pool, backend=self._calls.backend)
        return body

    def _rerun_forward(self, key: tuple) -> None:
        """Forward ``key``'s steps eagerly to recompute intermediates a release dropped;
        the aux states (running statistics) are put back, so they move once per forward
        the user ran."""
        aux = [a._t.clone() for a in self.aux_arrays]
        self._rt.is_train = key[1]
        with torch.no_grad():
            _run(self._plan.forward_train if key[2] else self._plan.forward_infer,
                 self._values, self._rt)
            for arr, old in zip(self.aux_arrays, aux):
                arr._t.copy_(old)

    def release_values(self) -> bool:
        """Drop the intermediate values kept since the last run (outputs stay), so their
        memory goes back to the allocator (on CUDA with captured graphs: to the graph
        memory pool, for the captures of executors sharing it; see
        ``cuda_graph.StepCalls``); the next ``backward`` runs ``forward`` first.

        Returns False (and keeps everything) for a plan with sparse values once a graph was
        captured.
        """
        if self._sparse is not None and self._calls.captured:
            return False
        self._calls.release(frozenset(self._plan.head_slots))
        self._forwarded = False
        return True

    def _feed_head_grads(self, out_grads) -> None:
        if isinstance(out_grads, NDArray):
            out_grads = [out_grads]
        slots = self._plan.head_grad_slots
        if not slots:  # nothing is differentiated (every grad_req is null)
            return
        if out_grads is not None and len(out_grads) < len(slots):
            raise BindError(f"backward: {len(out_grads)} out_grads for {len(slots)} outputs")
        # MXNet 1.9.1 reads one out_grad per output and ignores any further ones
        for i, slot in enumerate(slots):
            if slot is None:
                continue
            head = self._values[self._plan.head_slots[i]]
            if out_grads is None or out_grads[i] is None:
                raise MXNetError(
                    f"Because the last operator is not Loss function, head_gradient is required "
                    f"when calling backward (output {self._output_names[i]} has no out_grad)")
            g = out_grads[i]
            if not isinstance(g, torch.Tensor):
                g = g._t if isinstance(g, NDArray) else torch.as_tensor(np.asarray(g))
            if tuple(g.shape) != tuple(head.shape):
                raise ShapeError(f"backward: out_grad {i} has shape {tuple(g.shape)}, output "
                                 f"{self._output_names[i]} has shape {tuple(head.shape)}")
            buf = self._values[slot]
            if buf is None:  # our own buffer: a captured graph reads it at a fixed address
                buf = self._values[slot] = torch.empty(tuple(head.shape), dtype=head.dtype,
                                                       device=head.device)
            buf.copy_(g)

    # ------------------------------------------------------------ parameters
    def copy_params_from(self, arg_params: Mapping, aux_params: Mapping | None = None,
                         allow_extra_params: bool = False) -> None:
        """Copy values into the bound arguments and aux states by name; every entry is
        checked (name, exact shape, castable dtype) before any is copied."""
        for dst, src in self._stage_params(arg_params, aux_params, allow_extra_params):
            store(dst, src) if isinstance(dst, NDArray) else dst.copy_(src)

    def _stage_params(self, arg_params: Mapping, aux_params: Mapping | None,
                      allow_extra: bool) -> list[tuple]:
        """``(target tensor, source tensor)`` of every entry, all checked; nothing copied."""
        staged = []
        for params, target, kind in ((arg_params, self.arg_dict, "arguments"),
                                     (aux_params or {}, self.aux_dict, "aux states")):
            for name, value in params.items():
                if name not in target:
                    if allow_extra:
                        continue
                    raise BindError(f'Find name "{name}" that is not in the {kind}')
                if target[name]._is_sparse or getattr(value, "_is_sparse", False):
                    if tuple(value.shape) != target[name].shape:
                        raise ShapeError(f"copy_params_from: {name}: Shape inconsistent, "
                                         f"Provided={tuple(value.shape)}, expected shape="
                                         f"{target[name].shape}")
                    staged.append((target[name], value_of(value)))
                    continue
                dst = target[name]._t
                staged.append((dst, checked_source(value, dst, name, "copy_params_from:")))
        return staged

    def set_monitor_callback(self, callback: Callable, monitor_all: bool = False) -> None:
        """Call ``callback(name, array)`` on every op output (and input with ``monitor_all``)."""
        self._monitor = (callback, monitor_all) if callback is not None else None

    def reshape(self, partial_shaping: bool = False, allow_up_sizing: bool = False,
                **kwargs) -> Executor:
        """A new executor for new input shapes sharing the arrays whose shapes are unchanged."""
        return _reshape(self, partial_shaping, allow_up_sizing, kwargs)

    @property
    def arg_dict(self) -> dict[str, NDArray]:
        """Argument arrays by name."""
        return self._arg_dict

    @property
    def grad_dict(self) -> dict[str, NDArray | None]:
        """Gradient arrays by argument name (None where grad_req is 'null')."""
        return self._grad_dict

    @property
    def aux_dict(self) -> dict[str, NDArray]:
        """Auxiliary state arrays by name."""
        return self._aux_dict

    def get_optimized_symbol(self):
        """The forward graph the plan runs, after graph rewrites and common subexpression
        elimination (fusion happens later, at the level of launches)."""
        return Symbol(self._plan.graph.heads[:len(self._plan.head_slots)])

    def debug_str(self, show_source: bool = False, show_passes: bool = False) -> str:
        """The plan: each launch with its implementation, then planned vs naive memory.

        ``show_source`` also prints each generated (fused) kernel's expression and source;
        ``show_passes`` first prints what every compiler pass made of this bind
        (``compiler.plan.PASSES``, run again on the same inputs).
        """
        from .executor_debug import debug_str, pass_trace
        text = debug_str(self, show_source)
        return pass_trace(self) + "\n" + text if show_passes else text


# ---------------------------------------------------------------- binding

def _known_inputs(symbol: Symbol, ig: IndexedGraph, given: dict, attr: str, convert) -> dict:
    out = {}
    for i in ig.variable_ids:
        node = ig.nodes[i]
        if attr in node.attrs:
            out[node.name] = convert(node.attrs[attr])
    names = {ig.nodes[i].name for i in ig.variable_ids}
    for name, value in given.items():
        if name in names:  # MXNet ignores shapes of names the symbol does not have
            out[name] = convert(value)
    return out


def _resolve(ig: IndexedGraph, shapes: dict, types: dict):
    """Shapes and dtypes of all arguments and aux states, or a BindError naming what is missing;
    also every entry's inferred shape and dtype (``build_plan`` starts from them)."""
    by_name = {ig.nodes[i].name: i for i in ig.variable_ids}
    shape_values = infer(SHAPE, ig, {by_name[n]: s for n, s in shapes.items()})
    typed = dict(types)
    type_values = infer(DTYPE, ig, {by_name[n]: t for n, t in typed.items()})
    var_ids = ig.argument_ids + ig.aux_state_ids
    names = [ig.nodes[i].name for i in var_ids]
    if any(type_values[ig.row_ptr[i]] is None for i in var_ids):
        # MXNet's default dtype for undetermined inputs
        typed.update({n: "float32" for n, i in zip(names, var_ids)
                      if type_values[ig.row_ptr[i]] is None})
        type_values = infer(DTYPE, ig, {by_name[n]: t for n, t in typed.items()})
    var_shapes = [shape_values[ig.row_ptr[i]] for i in var_ids]
    missing = [f"{n}: {s}" for n, s in zip(names, var_shapes) if not known(s)]
    if missing:
        raise ShapeError("simple_bind: cannot infer the shapes of these inputs; give their "
                         "shapes as keyword arguments:\n\t" + "\n\t".join(missing))
    return (dict(zip(names, var_shapes)),
            {n: type_values[ig.row_ptr[i]] for n, i in zip(names, var_ids)},
            (ig, shape_values, type_values))


def _alloc(shape, dtype: str, ctx: Context, fill: bool = True) -> NDArray:
    from .base import to_torch_dtype
    make = torch.zeros if fill else torch.empty
    return NDArray(make(shape, dtype=to_torch_dtype(dtype), device=ctx.torch_device))


def _frozen_names(ig: IndexedGraph) -> set[str]:
    return {ig.nodes[i].name for i in ig.argument_ids if _frozen(ig.nodes[i])}


def _shared_array(name, shape, dtype, shared: dict | None, ctx) -> NDArray:
    """Reuse ``shared[name]`` when it matches (MXNet's shared_buffer), else allocate."""
    if shared is not None and name in shared:
        arr = shared[name]
        if arr.shape == tuple(shape) and dtype_name(arr.dtype) == dtype:
            return arr
    arr = _alloc(shape, dtype, ctx)
    if shared is not None:
        shared[name] = arr
    return arr


@gc_paused
def simple_bind(symbol: Symbol, ctx: Context | None, grad_req="write", type_dict=None,
                shared_arg_names=None, shared_exec=None, shared_buffer=None,
                shapes: dict | None = None, group2ctx: dict | None = None,
                stype_dict: dict | None = None) -> Executor:
    """Infer shapes/dtypes, allocate every array, and bind (see :meth:`Symbol.simple_bind`)."""
    ctx = ctx or current_context()
    ig = symbol._graph()
    check_unique_names(ig)
    shapes = _known_inputs(symbol, ig, shapes or {}, "__shape__", _as_shape)
    types = _known_inputs(symbol, ig, {k: dtype_name(v) for k, v in (type_dict or {}).items()},
                          "__dtype__", _as_dtype)
    all_shapes, all_types, inferred = _resolve(ig, shapes, types)
    arg_names = [ig.nodes[i].name for i in ig.argument_ids]
    aux_names = [ig.nodes[i].name for i in ig.aux_state_ids]
    reqs = normalize_grad_req(grad_req, arg_names, _frozen_names(ig))
    shared_names = set(shared_arg_names or ())
    donor = shared_exec.arg_dict if shared_exec is not None else {}
    stypes = _var_stypes(ig, stype_dict)
    args = []
    for n in arg_names:
        if n in shared_names and n in donor and donor[n].shape == all_shapes[n] and \
                donor[n].stype == stypes.get(n, "default"):
            args.append(donor[n])
        elif n in stypes:
            args.append(_alloc_stype(stypes[n], all_shapes[n], all_types[n], ctx))
        elif n in shared_names and n in donor and donor[n].shape == all_shapes[n]:
            args.append(donor[n])
        else:
            args.append(_shared_array(n, all_shapes[n], all_types[n], shared_buffer, ctx))
    gdonor = shared_exec.grad_dict if shared_exec is not None else {}
    grads = [None if reqs[n] == "null" else
             (gdonor[n] if n in shared_names and gdonor.get(n) is not None
              and gdonor[n].shape == all_shapes[n]
              else _alloc(all_shapes[n], all_types[n], ctx)) for n in arg_names]
    adonor = shared_exec.aux_dict if shared_exec is not None else {}
    aux = [adonor[n] if n in adonor and adonor[n].shape == all_shapes[n]
           else _alloc(all_shapes[n], all_types[n], ctx) for n in aux_names]
    if group2ctx:
        _place_groups(ig, group2ctx, ctx, dict(zip(arg_names, zip(args, grads))) |
                      {n: (a, None) for n, a in zip(aux_names, aux)})
    return _make(symbol, ctx, args, grads, aux, reqs, (arg_names, aux_names, inferred),
                 fresh_grads=True)


_STYPE_IDS = {"0": "default", "1": "row_sparse", "2": "csr"}


def _var_stypes(ig: IndexedGraph, stype_dict: dict | None) -> dict[str, str]:
    """Sparse storage types of variables: ``stype_dict``, else the variable's ``stype``."""
    out = {}
    for i in ig.variable_ids:
        node = ig.nodes[i]
        attr = node.attrs.get("__storage_type__")
        if attr is not None:
            out[node.name] = _STYPE_IDS.get(str(attr), str(attr))
    out.update({k: v for k, v in (stype_dict or {}).items()})
    for name, stype in out.items():
        if stype not in ("default", "row_sparse", "csr"):
            raise BindError(f"simple_bind: unknown storage type {stype!r} for {name}")
    return {k: v for k, v in out.items() if v != "default"}


def _alloc_stype(stype: str, shape, dtype: str, ctx: Context) -> NDArray:
    from .ndarray.sparse import zeros as sparse_zeros
    return sparse_zeros(stype, shape, ctx=ctx, dtype=dtype)


def _place_groups(ig: IndexedGraph, group2ctx: dict, ctx: Context, arrays: dict) -> None:
    """MXNet's ``group2ctx``: the arrays of a variable in ``ctx_group`` g belong to
    ``group2ctx[g]``. Groups on the executor's own device are labelled with their context;
    a group on another device would need the plan to move values between devices."""
    for i in ig.variable_ids:
        node = ig.nodes[i]
        group = node.attrs.get("__ctx_group__")
        if group not in group2ctx:
            continue
        target = group2ctx[group]
        if target.torch_device != ctx.torch_device:
            raise unsupported(f"group2ctx placing {node.name!r} on {target}", "model "
                              f"parallelism across devices is not implemented (the executor "
                              f"runs on {ctx})")
        for arr in arrays.get(node.name, ()):
            if arr is not None:
                arr._ctx = target


def _make(symbol, ctx, args, grads, aux, reqs, known_graph=None,
          fresh_grads: bool = False) -> Executor:
    """Plan and executor; ``known_graph`` = (arg names, aux names, (forward graph, its
    inferred shapes, dtypes)) saves ``simple_bind``'s work from being done again."""
    if known_graph is None:
        arg_names, aux_names = symbol.list_arguments(), symbol.list_auxiliary_states()
        inferred = None
    else:
        arg_names, aux_names, inferred = known_graph
    shapes = {n: a.shape for n, a in zip(arg_names + aux_names, args + aux)}
    dtypes = {n: dtype_name(a.dtype) for n, a in zip(arg_names + aux_names, args + aux)}
    if inferred is not None:  # arrays shared from another executor may disagree
        ig, inferred_shapes, inferred_types = inferred
        row = ig.row_ptr
        if any(inferred_shapes[row[i]] != shapes[ig.nodes[i].name] or
               inferred_types[row[i]] != dtypes[ig.nodes[i].name] for i in ig.variable_ids):
            inferred = None
    wrt = [n for n, g in zip(arg_names, grads) if g is not None]
    stypes = {n: a.stype for n, a in zip(arg_names + aux_names, args + aux) if a._is_sparse}
    plan = build_plan(symbol._outputs, shapes, dtypes, wrt, ctx.torch_device, fwd=inferred,
                      stypes=stypes)
    if fresh_grads:  # simple_bind: a gradient the plan computes sparse gets a sparse array
        grads = [_sparse_grad(plan, n, g, ctx) for n, g in zip(arg_names, grads)]
    return Executor(symbol, ctx, plan, args, grads, aux, reqs, names=(arg_names, aux_names))


def _sparse_grad(plan: Plan, name: str, grad: NDArray | None, ctx: Context):
    slot = plan.grad_slot.get(name)
    stype = plan.storage.stype(slot) if grad is not None and slot is not None else "default"
    if stype == "default" or grad.stype == stype:  # dense, or shared with another executor
        return grad
    from .ndarray.sparse import zeros as sparse_zeros
    return sparse_zeros(stype, grad.shape, ctx=ctx, dtype=grad.dtype)


def _as_list(arrays, names: list[str], what: str, allow_missing: bool = False) -> list:
    if isinstance(arrays, Mapping):
        missing = [n for n in names if n not in arrays]
        if missing and not allow_missing:
            raise BindError(f"bind: {what} is missing {missing}")
        return [arrays.get(n) for n in names]
    arrays = list(arrays or [])
    if len(arrays) != len(names):
        raise BindError(f"bind: {len(arrays)} {what} given for {len(names)} names {names}")
    return arrays


def _check_array(arr, name: str, what: str) -> NDArray:
    if not isinstance(arr, NDArray):
        raise BindError(f"bind: {what} {name} must be an NDArray, got {type(arr).__name__}")
    return arr


@gc_paused
def bind(symbol: Symbol, ctx: Context | None, args, args_grad=None, grad_req="write",
         aux_states=None, shared_exec=None) -> Executor:
    """Bind given arrays (see :meth:`Symbol.bind`); shapes are checked against inference."""
    ctx = ctx or current_context()
    ig = symbol._graph()
    check_unique_names(ig)
    arg_names, aux_names = symbol.list_arguments(), symbol.list_auxiliary_states()
    args = [_check_array(a, n, "argument") for a, n in zip(_as_list(args, arg_names,
                                                                      "args"), arg_names)]
    aux = [_check_array(a, n, "aux state") for a, n in
           zip(_as_list(aux_states, aux_names, "aux_states"), aux_names)]
    if args_grad is None:
        grads = [None] * len(arg_names)
        reqs = dict.fromkeys(arg_names, "null")
    else:
        grads = _as_list(args_grad, arg_names, "args_grad", allow_missing=True)
        reqs = normalize_grad_req(grad_req, arg_names, _frozen_names(ig))
        grads = [g if reqs[n] != "null" else None for g, n in zip(grads, arg_names)]
        for n, g in zip(arg_names, grads):
            if g is None and reqs[n] != "null":
                reqs[n] = "null"
    _check_bound_shapes(symbol, arg_names, aux_names, args, aux, grads)
    return _make(symbol, ctx, args, grads, aux, reqs)


def _check_bound_shapes(symbol, arg_names, aux_names, args, aux, grads) -> None:
    arg_s, _, aux_s = symbol.infer_shape_partial(**{n: a.shape for n, a in zip(arg_names, args)})
    for names, arrays, inferred, kind in ((arg_names, args, arg_s, "argument"),
                                          (aux_names, aux, aux_s, "aux state")):
        for n, a, s in zip(names, arrays, inferred):
            if known(s) and a.shape != tuple(s):
                raise ShapeError(f"bind: {kind} {n} has shape {a.shape}, inferred shape {s}")
    for n, a, g in zip(arg_names, args, grads):
        if g is not None and (g.shape != a.shape):
            raise ShapeError(f"bind: gradient array for {n} has shape {g.shape}, argument has "
                             f"{a.shape}")
        # a float gradient array of another float dtype takes the gradient cast (MXNet's
        # softmax writes a float64 gradient for a float16 argument); other mixes raise
        floats = g is not None and g._t.is_floating_point() and a._t.is_floating_point()
        if g is not None and g.dtype != a.dtype and not floats:
            raise DTypeError(f"bind: gradient array for {n} has dtype {dtype_name(g.dtype)}, "
                             f"argument has {dtype_name(a.dtype)}")


# ---------------------------------------------------------------- reshape and debug_str

@gc_paused
def _reshape(exe: Executor, partial_shaping: bool, allow_up_sizing: bool,
             new_shapes: dict) -> Executor:
    symbol = exe._symbol
    arg_s, _, aux_s = symbol.infer_shape_partial(**new_shapes)
    arg_names, aux_names = exe._arg_names, exe._aux_names
    args, grads = [], []
    for name, shape, arr, grad in zip(arg_names, arg_s, exe.arg_arrays, exe.grad_arrays):
        shape = tuple(shape)
        if shape == arr.shape:
            args.append(arr)
            grads.append(grad)
            continue
        if not known(shape):
            raise ShapeError(f"reshape: cannot infer the new shape of {name}")
        if name not in new_shapes and not partial_shaping:
            raise ShapeError(f"reshape: shape of unspecified array arg:{name} changed from "
                             f"{arr.shape} to {shape}; set partial_shaping=True to allow it")
        if int(np.prod(shape)) > arr.size and not allow_up_sizing:
            raise ShapeError(f"reshape: new shape of arg:{name} {shape} is larger than the "
                             f"original {arr.shape}; set allow_up_sizing=True to allow it")
        args.append(_head_view(arr, shape, exe._ctx))
        grads.append(None if grad is None else _head_view(grad, shape, exe._ctx))
    for name, shape, arr in zip(aux_names, aux_s, exe.aux_arrays):
        if tuple(shape) != arr.shape:
            raise ShapeError(f"reshape: aux state {name} would change shape from {arr.shape} "
                             f"to {tuple(shape)}")
    new = _make(symbol, exe._ctx, args, grads, list(exe.aux_arrays), dict(exe._grad_req))
    _share_outputs(exe, new)
    new._monitor = exe._monitor  # MXNet rebinds the monitor callback to the new executor
    return new


def _head_view(arr: NDArray, shape: tuple, ctx: Context | None = None) -> NDArray | None:
    """``shape`` over the first elements of ``arr``'s memory (MXNet's ``NDArray::Reshape``
    of a shrunk array); where ``arr`` is too small or not contiguous, a new zero array on
    ``ctx`` (None without ``ctx``)."""
    t = arr._t
    n = int(np.prod(shape))
    if n <= t.numel() and t.is_contiguous():
        return NDArray(t.view(-1)[:n].view(shape))
    return None if ctx is None else _alloc(shape, dtype_name(arr.dtype), ctx)


def _share_outputs(base: Executor, new: Executor) -> None:
    """Let ``new``'s outputs view ``base``'s output memory where it is large enough, as
    MXNet's reshaped executor shares its base's memory pool; both then copy each forward's
    results into their outputs instead of handing out the computed tensors."""
    views = [None if o.dtype != b.dtype else _head_view(b, o.shape)
             for o, b in zip(new.outputs, _own_outputs(base))]
    for out, view in zip(new.outputs, views):
        if view is not None:
            out._t = view._t
    new._fixed_outputs = True


def _own_outputs(exe: Executor) -> list[NDArray]:
    """``exe``'s outputs, first given memory of their own (a computed output may view an
    argument or another output) unless they already have it."""
    if not exe._fixed_outputs:
        for out in exe.outputs:
            out._t = out._t.clone(memory_format=torch.contiguous_format)
        exe._fixed_outputs = True
    return exe.outputs
