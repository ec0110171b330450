"""A Symbol called like a function on NDArrays, through bound executors (MXNet's CachedOp).

:class:`CachedGraph` binds its symbol once per (context, input shapes and dtypes, which
inputs need gradients) and keeps the executors; a call copies the inputs in, runs the
forward (training mode when autograd says so) and returns the outputs. Under
``autograd.record()`` it leaves a tape node whose backward is the executor's backward.
Parameters (``params(ctx)``: name -> (data, grad or None, grad_req)) are bound by
reference, so the first executor of a signature writes parameter gradients straight into
their grad arrays. An executor stays reserved while a recorded call still waits for its
backward; a second call meanwhile (a block used twice in one step) takes another executor
of the same signature, which writes parameter gradients into its own buffers, added to
the parameters' after the backward pass. Parameter gradients that several graphs write in
one backward pass (a block inside two composed chains) are summed, not overwritten.
Under ``record()`` the recorder (:mod:`symgraph.imperative.recorded`) takes the call: it is
deferred and composed by :mod:`symgraph.imperative.deferred`, which runs the composed graph
through :meth:`CachedGraph.run`. :class:`CachedOp` is MXNet's ``mx.nd.CachedOp`` over it.

>>> import symgraph as mx
>>> g = CachedGraph(mx.sym.var('a') + 1, ['a'], lambda ctx: {}, 'example')
>>> g([mx.nd.ones((2,))], mx.cpu())[0].asnumpy()
array([2., 2.], dtype=float32)
"""
from __future__ import annotations

import warnings
import weakref
from collections.abc import Callable

import torch

from ..base import MXNetError
from ..executor_storage import store
from ..ndarray import hooks
from ..ndarray.ndarray import NDArray
from ..ndarray.register import write_out
from ..ndarray.sparse_array import value_of, wrap
from ..ops.mxnet_names import monitor_input_names
from ..sparse import formats
from ..symbol import Group
from ..symbol.op_api import invoke
from . import tape

ParamArrays = dict  # name -> (data NDArray, grad NDArray | None, grad_req)

_WRITTEN: list = [-1, set()]  # (backward pass, ids of parameter gradients written in it)


def _written() -> set[int]:
    """Parameter gradient tensors already written in the running backward pass: an executor
    writing one of them again adds to it instead (a block used by two graphs in one step)."""
    now = tape.pass_id()
    if _WRITTEN[0] != now:
        _WRITTEN[0], _WRITTEN[1] = now, set()
    return _WRITTEN[1]



def _meta(x: NDArray) -> tuple:
    """A call signature's entry for ``x``: (shape, dtype), and the storage type if sparse
    (read without making a dense copy of a sparse array)."""
    if x._is_sparse:
        v = x._value
        return tuple(v.shape), v.dtype, v.stype
    return tuple(x._t.shape), x._t.dtype


def _need(x: NDArray):
    """Whether a recorded call differentiates with respect to input ``x``: False, or the
    storage type to compute its gradient in (a marked variable's gradient array's, so a
    sparse gradient stays sparse on its way there; 'default' for the rest)."""
    if not tape.is_tracked(x):
        return False
    grad = x._ag_grad if x._ag_node is None else None
    return grad.stype if grad is not None else "default"


def _zeros(like: NDArray, stype) -> NDArray:
    """Zeros shaped as ``like``, of storage ``stype`` (True: dense), on its device."""
    v = value_of(like)
    if stype in (True, "default"):
        return NDArray(torch.zeros(tuple(v.shape), dtype=v.dtype, device=v.device))
    return wrap(formats.empty_like_stype(stype, tuple(v.shape), v.dtype, v.device))


class _Slot:
    """One bound executor of a signature, and whether a recorded call holds it."""

    __slots__ = ("exe", "node", "private", "param_ids", "index", "uses", "recorded")

    def __init__(self, exe, private: dict, param_ids: tuple, index: int):
        self.exe, self.private, self.param_ids, self.index = exe, private, param_ids, index
        self.node = None  # weak reference to the recorded call awaiting its backward
        self.uses = 0  # a recorded call checks it still owns the executor's values
        # what a recorded call derives from the parameter mapping (CachedGraph._recorded)
        self.recorded: tuple = (None,)

    @property
    def busy(self) -> bool:
        """Whether a recorded call that may still run its backward holds the executor."""
        node = self.node() if self.node is not None else None
        return node is not None and not node.freed


def _release(pools: dict) -> None:
    """A dropped graph's executors let go of their step runners, which refer back to them
    (a cycle): their buffers are freed now, not at the next full garbage collection."""
    for pool in pools.values():
        for slot in pool:
            slot.exe._calls.calls.clear()


def _op_hook_adapter(symbol, callback):
    """An executor monitor callback ``(name, array)`` calling the op hook
    ``callback(name, op_name, array)`` with the operator of the named entry. MXNet's op
    hooks see operators' inputs and outputs only: variables' own names are not passed on."""
    ops = {}
    for node in symbol._graph().nodes:
        if node.op is None:
            continue
        p = node.params
        for name in monitor_input_names(node.op.name,
                                        node.op.input_names(p) + node.op.aux_names(p)):
            ops[f"{node.name}_{name}"] = node.op.name
        for k in range(node.num_outputs):
            ops[node.output_name(k)] = node.op.name

    def monitor(name: str, array) -> None:
        op = ops.get(name)
        if op is not None:
            callback(name.encode(), op.encode(), array)
    return monitor


def _distinct_outputs(symbol):
    """A graph listing one entry as several outputs (an RNN cell's output and its new state)
    reads the repeats through ``identity``, as MXNet's CachedOp copies them: each output then
    gets its own head gradient, and they add up."""
    outs = symbol._outputs
    keys = [(id(node), k) for node, k in outs]
    if len(set(keys)) == len(keys):
        return symbol
    seen: set = set()
    parts = []
    for k, key in enumerate(keys):
        part = symbol[k]
        parts.append(invoke("identity", [part], {}) if key in seen else part)
        seen.add(key)
    return Group(parts)


class CachedGraph:
    """``symbol`` run on NDArrays for the inputs ``input_names`` (the other arguments and
    aux states are parameters from ``params(ctx)``)."""

    def __init__(self, symbol, input_names: list[str],
                 params: Callable[[object], ParamArrays], where: str):
        symbol = _distinct_outputs(symbol)
        self._arg_names = symbol.list_arguments()
        self._aux_names = symbol.list_auxiliary_states()
        self.aux_set = frozenset(self._aux_names)
        # inputs the graph does not read are dropped from its calls (MXNet warns, as here);
        # an input may also be an auxiliary state (BatchNorm's moving mean as a block input)
        self._used = tuple(n in self._arg_names or n in self.aux_set for n in input_names)
        unused = [n for n, used in zip(input_names, self._used) if not used]
        if unused:
            warnings.warn(f"{where}: inputs {unused} are not used by the graph", stacklevel=3)
        self.symbol, self.params, self.where = symbol, params, where
        self.input_names = [n for n, used in zip(input_names, self._used) if used]
        self._n_inputs = len(input_names)
        self._pools: dict[tuple, list[_Slot]] = {}
        weakref.finalize(self, _release, self._pools)
        self._uses = 0  # recorded calls so far (the oldest pending executor is reused)
        # input (shape, dtype)s that ran -> the outputs' (shape, dtype)s
        self.signatures: dict[tuple, list[tuple]] = {}
        # (params mapping, ids of its data arrays, whether any has a gradient)
        self._param_ids: tuple = (None, (), False)
        self._op_hook: tuple | None = None  # (executor monitor callback, monitor_all)

    @property
    def num_outputs(self) -> int:
        return len(self.symbol._outputs)

    @property
    def hooked(self) -> bool:
        """Whether an op hook watches the runs (such a call is never deferred)."""
        return self._op_hook is not None

    # ------------------------------------------------------------ calling
    def __call__(self, inputs: list[NDArray], ctx) -> list[NDArray]:
        """Run on ``inputs``; under ``autograd.record()`` the call is deferred (see
        :mod:`symgraph.imperative.deferred`) and its outputs computed when first read."""
        if len(inputs) != self._n_inputs:
            raise MXNetError(f"{self.where}: {len(inputs)} inputs given for "
                             f"{self._n_inputs}")
        if len(self.input_names) != self._n_inputs:
            inputs = [x for x, used in zip(inputs, self._used) if used]
        recorder = hooks.STATE.recorder
        if recorder is not None:
            return recorder.call_graph(self, inputs, ctx)
        return self.run(inputs, ctx, hooks.STATE.training, self.params(ctx), False)

    def run(self, inputs: list[NDArray], ctx, training: bool, params: ParamArrays,
            record: bool) -> list[NDArray]:
        """Run now (training mode ``training``), leaving a tape node when ``record``."""
        needs = tuple(record and _need(x) for x in inputs)
        slot, outs = self._forward(inputs, ctx, training, params, needs)
        if record and (any(needs) or self._param_ids[2]):  # [2]: any parameter gradient
            self._record(slot, inputs, outs, params)
        return outs

    def run_with_backward(self, inputs: list[NDArray], ctx, training: bool,
                          params: ParamArrays, head_grads: dict) -> list[NDArray]:
        """Run forward, then backward at once: a whole backward pass through this one call,
        whose inputs take no part in differentiation, so no tape node is left.
        ``head_grads``: output index -> gradient tensor (None: ones); other outputs get
        none. Parameter gradients land as a recorded call's backward writes them."""
        slot, outs = self._forward(inputs, ctx, training, params, (False,) * len(inputs))
        if self._param_ids[2]:
            fresh = self._recorded(slot, params)[1]
            grads = [None] * len(outs)
            for k, g in head_grads.items():
                grads[k] = tape.shared_filled(outs[k]._t, 1.0) if g is None else g
            tape.next_pass()
            slot.exe.backward(grads)
            self._merge(slot, params, fresh)
        return outs

    def _forward(self, inputs: list[NDArray], ctx, training: bool, params: ParamArrays,
                 needs: tuple) -> tuple:
        """Feed and run the forward of the executor for these inputs: (slot, outputs)."""
        sig = tuple(_meta(x) for x in inputs)
        slot = self._slot(inputs, needs, ctx, params, sig)
        exe = slot.exe
        for name, x in zip(self.input_names, inputs):
            if name in self.aux_set:
                exe.aux_dict[name]._t.copy_(x._t)
            elif x._is_sparse:  # a sparse value is replaced, never written: shared as is
                exe.arg_dict[name]._assign(x._value)
            else:
                exe._feed(name, x._t)
        exe.forward(is_train=training)  # a given aux state is read, never written back
        clone = exe._ctx.device_type != "cpu"  # CUDA-graph replays rewrite their outputs
        outs = [wrap(o._value, ctx) if o._is_sparse else
                NDArray(o._t.clone() if clone else o._t) for o in exe.outputs]
        for o in outs:
            o._ctx = ctx
        if sig not in self.signatures:
            self.signatures[sig] = [_meta(o) for o in outs]
        return slot, outs

    def _slot(self, inputs, needs, ctx, params: ParamArrays, sig: tuple) -> _Slot:
        pool = self._pools.setdefault((ctx, needs) + sig, [])
        if self._param_ids[0] is not params:  # blocks hand the same mapping every step
            self._param_ids = (params, tuple(id(d) for d, _, _ in params.values()),
                               any(g is not None for _, g, _ in params.values()))
        ids = self._param_ids[1]
        if len(pool) == 1 and pool[0].param_ids == ids and not pool[0].busy:
            return pool[0]  # the usual step: one executor, free again
        pool[:] = [s for s in pool if s.param_ids == ids or s.busy]  # parameters replaced
        for s in pool:
            if not s.busy and s.param_ids == ids:
                return s
        # every call still awaiting its backward keeps its executor's values, as MXNet keeps
        # a recorded graph's until its backward (or until its outputs are dropped)
        s = _Slot(*self._bind(inputs, needs, ctx, params, first=not pool), ids, len(pool))
        pool.append(s)
        return s

    def _bind(self, inputs, needs, ctx, params: ParamArrays, first: bool):
        args, grads, reqs, private = {}, {}, {}, {}
        given_aux = {name: NDArray(torch.empty_like(x._t))
                     for name, x in zip(self.input_names, inputs) if name in self.aux_set}
        for name, x, need in zip(self.input_names, inputs, needs):
            if name in given_aux:
                continue
            args[name] = _zeros(x, x.stype) if x._is_sparse else NDArray(torch.empty_like(x._t))
            grads[name] = _zeros(x, need) if need else None
            reqs[name] = "write" if need else "null"
        for name in self._arg_names:
            if name in args:
                continue
            if name not in params:
                raise MXNetError(f"{self.where}: no parameter or input named {name!r}")
            data, grad, req = params[name]
            args[name] = data
            if grad is None or req == "null":
                grads[name], reqs[name] = None, "null"
            elif first:
                grads[name], reqs[name] = grad, req
            else:  # a second executor: own buffers, added after the backward pass
                grads[name] = private[name] = _zeros(grad, grad.stype)
                reqs[name] = "write"
        aux = dict(given_aux)
        for name in self._aux_names:
            if name in aux:
                continue
            if name not in params:
                raise MXNetError(f"{self.where}: no auxiliary state named {name!r}")
            aux[name] = params[name][0]
        exe = self.symbol.bind(ctx, args, args_grad=grads, grad_req=reqs, aux_states=aux)
        if self._op_hook is not None:
            exe.set_monitor_callback(*self._op_hook)
        return exe, private

    def set_op_hook(self, callback, monitor_all: bool = False) -> None:
        """Call ``callback(node_name, op_name, array)`` (names as bytes, as MXNet's op hooks
        get them) on every operator output — and input, with ``monitor_all`` — of the runs
        that follow (None: stop). A hooked graph is not deferred under ``record()``."""
        self._op_hook = None if callback is None else \
            (_op_hook_adapter(self.symbol, callback), monitor_all)
        for pool in self._pools.values():
            for slot in pool:
                slot.exe.set_monitor_callback(*(self._op_hook or (None,)))

    def _merge(self, slot: _Slot, params: ParamArrays, fresh: list) -> None:
        """A second executor's parameter gradients into the parameters' (after the pass);
        every parameter that got a gradient is fresh (``Trainer`` checks)."""
        if slot.private:
            written = _written()
            for pname, buf in slot.private.items():
                target = params[pname][1]
                store(target, value_of(buf), params[pname][2] == "add" or id(target) in written)
                written.add(id(target))
        for data in fresh:
            data._fresh_grad = True

    def _recorded(self, slot: _Slot, params: ParamArrays) -> tuple:
        """What a recorded call of ``slot`` derives from the parameter mapping, kept while
        the mapping is the same object (blocks hand the same one every step): the data
        arrays whose gradient it produces, the gradient tensors it writes directly (not
        adds), their ids, and the gradient arrays of the graph's inputs."""
        if slot.recorded[0] is not params:
            exe = slot.exe
            with_grad = [n for n, (_, g, req) in params.items() if g is not None
                         and req != "null" and exe.grad_dict.get(n) is not None]
            direct = [params[n][1] for n in with_grad
                      if n not in slot.private and params[n][2] == "write"]
            slot.recorded = (params, [params[n][0] for n in with_grad], direct,
                             [id(t) for t in direct],
                             [exe.grad_dict.get(n) for n in self.input_names])
        return slot.recorded

    # ------------------------------------------------------------ recording
    def _record(self, slot: _Slot, inputs, outs, params: ParamArrays) -> None:
        exe = slot.exe
        # (shape, dtype, device), not the arrays: they refer to the node (a cycle)
        out_meta = [(*_meta(o)[:2], value_of(o).device) for o in outs]
        self._uses += 1
        slot.uses = use = self._uses
        _, fresh, targets, target_ids, input_grads = self._recorded(slot, params)

        def run_backward(ograds: list) -> list:
            assert slot.uses == use, "a busy executor was reused"
            heads = [NDArray(tape.filled(*m, 0.0)) if g is None else wrap(g)
                     for m, g in zip(out_meta, ograds)]
            written = _written()
            kept = [(a, formats.clone(value_of(a))) for a in targets if id(a) in written] \
                if written else ()
            exe.backward(heads)  # writes the direct gradients: add back what others wrote
            for a, before in kept:
                store(a, before, add=True)
            written.update(target_ids)
            return [None if g is None else value_of(g) for g in input_grads]

        def finish(ran: bool, retained: bool) -> None:
            if ran:
                self._merge(slot, params, fresh)

        node = tape.Node(inputs, len(outs), run_backward, self.where, finish,
                             (self.symbol, self.input_names, params))
        slot.node = weakref.ref(node)  # the executor is free again once the node is gone
        tape.attach(outs, node)


class CachedOp:
    """A symbol run as a function on NDArrays, inputs in ``sym.list_inputs()`` order
    (MXNet's CachedOp), through a cached bound graph.

    >>> import symgraph as mx
    >>> op = mx.nd.CachedOp(mx.sym.var('a') * 2 + mx.sym.var('b'))
    >>> op(mx.nd.ones((2,)), mx.nd.ones((2,))).asnumpy()
    array([3., 3.], dtype=float32)
    """

    def __init__(self, sym, flags=(), thread_safe: bool = False):
        self._inputs = sym.list_inputs()
        aux = set(sym.list_auxiliary_states())
        self._args = [n for n in self._inputs if n not in aux]
        self._current: dict = {}
        self._graph = CachedGraph(sym, self._args, lambda ctx: self._current, "CachedOp")

    def __call__(self, *args, out=None, **kwargs):
        if len(args) != len(self._inputs):
            raise MXNetError(f"CachedOp expects {len(self._inputs)} inputs "
                             f"({self._inputs}), got {len(args)}")
        given = dict(zip(self._inputs, args))
        self._current = {n: (a, None, "null") for n, a in given.items() if n not in self._args}
        outs = self._graph([given[n] for n in self._args], args[0].context)
        result = outs[0] if len(outs) == 1 else outs
        return result if out is None else write_out(result, out)
