"""The one data-parallel executor group behind ``Module``, ``model`` and ``executor_manager``.

A batch is split along its batch axis over several contexts (by ``work_load_list``); each
context gets an executor bound to its slice, parameters are separate arrays per context,
and callers (KVStore or a local updater) aggregate gradients and broadcast weights. MXNet
had two drifting copies of this class; here ``executor_manager.DataParallelExecutorGroup``
and ``Module``'s ``_exec_group`` are the same :class:`DataParallelExecutorGroup`.
It lives where MXNet keeps it, ``mxnet.module.executor_group``.

>>> import symgraph as mx
>>> net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=2, name='fc')
>>> group = DataParallelExecutorGroup(net, [mx.cpu(0), mx.cpu(1)], [1, 1], [('data', (4, 3))],
...                                   None, ['fc_weight', 'fc_bias'], for_training=True,
...                                   inputs_need_grad=False)
>>> group.slices, [e.arg_dict['data'].shape for e in group.execs]
([slice(0, 2, None), slice(2, 4, None)], [(2, 3), (2, 3)])
"""
from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import torch

from ..base import BindError, MXNetError, ShapeError
from ..context import Context, cpu
from ..executor import checked_source
from ..executor_storage import store
from ..ndarray import NDArray
from ..ndarray import array as nd_array
from ..ndarray import concat as nd_concat
from ..ndarray.sparse_array import value_of
from ..sparse import formats


def _split_input_slice(batch_size: int, work_load_list: Sequence[float]) -> list[slice]:
    """Split ``batch_size`` samples over devices in proportion to ``work_load_list``.

    >>> _split_input_slice(10, [1, 1, 2])
    [slice(0, 2, None), slice(2, 4, None), slice(4, 10, None)]
    """
    total = float(sum(work_load_list))
    sizes = [int(round(w * batch_size / total)) for w in work_load_list]
    sizes[-1] = batch_size - sum(sizes[:-1])
    slices, start = [], 0
    for size in sizes:
        end = min(start + size, batch_size)
        if start >= end:
            raise ValueError("Too many slices such that some splits are empty")
        slices.append(slice(start, end))
        start = end
    return slices


def _batch_axis_of(layout: str | None) -> int:
    """Where 'N' is in ``layout``: 0 without a layout, -1 when it has no batch axis."""
    return 0 if layout is None else layout.find("N")


def _batch_axis(desc) -> int:
    return _batch_axis_of(getattr(desc, "layout", None))


def _prepare_group2ctxs(group2ctxs, n_ctx: int) -> list:
    """One ``group2ctx`` dict (or None) per context, from MXNet's accepted forms: None, a
    list of dicts (one per context), or a dict of group -> context or list of contexts.

    >>> from symgraph.context import cpu
    >>> _prepare_group2ctxs({'a': cpu(1), 'b': [cpu(2), cpu(3)]}, 2)
    [{'a': cpu(1), 'b': cpu(2)}, {'a': cpu(1), 'b': cpu(3)}]
    """
    if group2ctxs is None:
        return [None] * n_ctx
    if isinstance(group2ctxs, list):
        if len(group2ctxs) != n_ctx:
            raise ValueError(f"length of group2ctxs should be {n_ctx}, got {len(group2ctxs)}")
        return group2ctxs
    if not isinstance(group2ctxs, dict):
        raise TypeError("group2ctxs should be a list of dicts of str to Context, or a dict of "
                        "str to a Context or a list of Contexts")
    out = [{} for _ in range(n_ctx)]
    for group, ctxs in group2ctxs.items():
        ctxs = [ctxs] * n_ctx if isinstance(ctxs, Context) else list(ctxs)
        ctxs = ctxs * n_ctx if len(ctxs) == 1 else ctxs
        if len(ctxs) != n_ctx:
            raise ValueError(f"length of group2ctxs[{group!r}] should be {n_ctx} or 1")
        for i, ctx in enumerate(ctxs):
            out[i][group] = ctx
    return out


def _as_pairs(descs) -> list[tuple]:
    """(name, shape, batch axis, dtype) from DataDesc objects or (name, shape) pairs."""
    out = []
    for d in descs or []:
        name, shape = (d.name, d.shape) if hasattr(d, "name") else (d[0], d[1])
        out.append((name, tuple(shape), _batch_axis(d), getattr(d, "dtype", np.float32)))
    return out


def _slice_shape(shape: tuple, axis: int, length: int) -> tuple:
    if axis < 0:
        return shape
    return shape[:axis] + (length,) + shape[axis + 1:]


def _whole_shape(dsts: Sequence[NDArray], axis: int, slices) -> tuple:
    """The shape of the batch whose slices fill the per-device arrays ``dsts``."""
    shape = dsts[0].shape
    return shape if axis < 0 else _slice_shape(shape, axis, slices[len(dsts) - 1].stop)


def _load_general(arrays: Sequence, targets: Sequence, axes: Sequence[int], slices,
                  names: Sequence[str] = ()) -> None:
    """Copy each source array's slices into the per-device targets (a source given as a
    list holds one array per device already). Every source must have exactly the shape of
    the batch (MXNet's ``copyto``; no broadcasting): a ShapeError naming the input and both
    shapes otherwise, raised before anything is copied."""
    sources = []
    for i, (src, dsts, axis) in enumerate(zip(arrays, targets, axes)):
        name = names[i] if i < len(names) else f"input {i}"
        if _is_sparse(src) or any(d._is_sparse for d in _as_list(dsts)):
            sources.append(_sparse_pieces(src, _as_list(dsts), slices, name))
        elif isinstance(dsts, NDArray):  # one device: the whole array
            sources.append(checked_source(src, dsts._t, name, "data batch:"))
        elif isinstance(src, (list, tuple)):  # already one array per device
            sources.append([checked_source(p, d._t, f"{name} (device {k})", "data batch:")
                            for k, (p, d) in enumerate(zip(src, dsts))])
        elif len(dsts) == 1 and isinstance(src, NDArray) and src._t.shape == dsts[0]._t.shape:
            sources.append(src._t)  # the whole batch into one device: a plain copy
        else:
            sources.append(checked_source(src, dsts[0]._t, name, "data batch:",
                                          _whole_shape(dsts, axis, slices)))
    for src, dsts, axis in zip(sources, targets, axes):
        if isinstance(src, _SparsePieces):
            for dst, value in src:
                store(dst, formats.to_device(value, value_of(dst).device))
        elif isinstance(dsts, NDArray):
            dsts._t.copy_(src)
        elif isinstance(src, list):
            for piece, dst in zip(src, dsts):
                dst._t.copy_(piece)
        else:
            for sl, dst in zip(slices, dsts):
                dst._t.copy_(_narrow(src, axis, sl) if len(dsts) > 1 else src)


class _SparsePieces(list):
    """``(target array, value)`` pairs of an input whose source or targets are sparse."""


def _is_sparse(src) -> bool:
    return isinstance(src, NDArray) and src._is_sparse


def _as_list(dsts) -> list:
    return [dsts] if isinstance(dsts, NDArray) else list(dsts)


def _sparse_pieces(src, dsts: list, slices, name: str) -> _SparsePieces:
    """The pieces of a batch input for its per-device arrays when either side is sparse (a
    csr batch): rows ``slices`` of ``src`` (sliced as a csr array, never densified), checked
    for shape before anything is copied."""
    if isinstance(src, (list, tuple)):
        pieces = list(src)
    elif len(dsts) == 1:
        pieces = [src]
    else:
        pieces = [src[sl.start:sl.stop] for sl in slices]
    staged = _SparsePieces()
    for piece, dst in zip(pieces, dsts):
        piece = piece if isinstance(piece, NDArray) else nd_array(piece, dtype=dst.dtype)
        if tuple(piece.shape) != tuple(dst.shape):
            raise ShapeError(f"data batch: {name} has shape {tuple(piece.shape)}, the bound "
                             f"array has shape {tuple(dst.shape)}")
        staged.append((dst, value_of(piece)))
    return staged


def _narrow(t, axis: int, sl: slice):
    """``t``'s slice ``sl`` along ``axis`` (a view); all of ``t`` when axis is -1."""
    return t if axis < 0 else t.narrow(axis, sl.start, sl.stop - sl.start)


def _rows(label, sl: slice, axis: int = 0):
    """``label``'s slice ``sl`` along its batch ``axis`` (a view for an NDArray); the label
    itself when ``sl`` spans all of it or it has no batch axis."""
    if axis < 0:
        return label
    if isinstance(label, NDArray):
        if sl.start == 0 and label._t.shape[axis] == sl.stop:
            return label
        if axis == 0:
            return label[sl.start:sl.stop]
        return NDArray(label._t.narrow(axis, sl.start, sl.stop - sl.start))
    return np.take(np.asarray(label), range(sl.start, sl.stop), axis=axis)


def _average_sparse(target: NDArray, block: list) -> None:
    """The mean of the device copies ``block`` into ``target``, either side sparse, with no
    dense copy of a sparse one (a row_sparse weight stays row_sparse)."""
    total = formats.to_device(value_of(block[0]), value_of(target).device)
    for w in block[1:]:
        total = formats.add(total, formats.to_device(value_of(w), value_of(target).device))
    if len(block) > 1:
        total = total / len(block) if isinstance(total, torch.Tensor) else \
            total._replace(data=total.data / len(block))
    store(target, formats.clone(total))


def _merge_multi_context(outputs: list[list[NDArray]], axes: Sequence[int]) -> list[NDArray]:
    """Concatenate per-device outputs along their batch axes (on the first device); an
    output without a batch axis (-1) is the first device's."""
    merged = []
    for parts, axis in zip(outputs, axes):
        if len(parts) == 1 or axis < 0:
            merged.append(parts[0])
        else:
            first = parts[0].context
            merged.append(nd_concat(*[p.as_in_context(first) for p in parts], dim=axis))
    return merged


def _grad_req(arg_names, param_names, data_names, fixed, for_training, inputs_need_grad,
              grad_req) -> dict[str, str]:
    """MXNet's module rules: params get ``grad_req`` unless fixed, inputs only on request;
    a list gives one per argument; a dict overrides the defaults ('write') by name."""
    if not for_training:
        grad_req = "null"
    if isinstance(grad_req, (list, tuple)):
        if len(grad_req) != len(arg_names):
            raise ValueError(f"grad_req has {len(grad_req)} entries for {len(arg_names)} "
                             "arguments")
        return dict(zip(arg_names, grad_req))
    if not isinstance(grad_req, (str, dict)):
        raise ValueError("grad_req must be one of str, list, tuple, or dict.")
    default = grad_req if isinstance(grad_req, str) else "write"
    reqs = {}
    for k in arg_names:
        if k in param_names:
            reqs[k] = "null" if k in fixed else default
        elif k in data_names:
            reqs[k] = default if inputs_need_grad else "null"
        else:
            reqs[k] = "null"
    if isinstance(grad_req, dict):
        reqs.update(grad_req)
    return reqs


class DataParallelExecutorGroup:
    """Executors on several contexts sharing one symbol, each bound to a slice of the batch.

    Parameters follow MXNet's ``module.executor_group.DataParallelExecutorGroup``:
    ``symbol, contexts, workload, data_shapes, label_shapes, param_names, for_training,
    inputs_need_grad, shared_group=None, logger=logging, fixed_param_names=None,
    grad_req='write', state_names=None``.

    >>> import symgraph as mx
    >>> net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=2, name='fc')
    >>> group = DataParallelExecutorGroup(net, [mx.cpu(0), mx.cpu(1)], [1, 1],
    ...                                   [('data', (4, 3))], [], ['fc_weight', 'fc_bias'],
    ...                                   for_training=True, inputs_need_grad=False)
    >>> [e.arg_dict['data'].shape for e in group.execs], group.slices
    ([(2, 3), (2, 3)], [slice(0, 2, None), slice(2, 4, None)])
    """

    def __init__(self, symbol, contexts, workload, data_shapes, label_shapes, param_names,
                 for_training, inputs_need_grad, shared_group=None, logger=logging,
                 fixed_param_names=None, grad_req="write", state_names=None, group2ctxs=None):
        self.symbol = symbol
        self.contexts = list(contexts)
        self.workload = list(workload or [1] * len(self.contexts))
        self.param_names = list(param_names)
        ig = symbol._graph()  # one walk for both name lists (bind speed)
        self.arg_names = [ig.nodes[i].name for i in ig.argument_ids]
        self.output_names = symbol.list_outputs()
        self.aux_names = [ig.nodes[i].name for i in ig.aux_state_ids]
        self.output_layouts = [_batch_axis_of(symbol[i].attr("__layout__"))
                               for i in range(len(self.output_names))]
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.logger = logger
        self.fixed_param_names = set(fixed_param_names or ())
        self.state_names = list(state_names or ())
        self.group2ctxs = _prepare_group2ctxs(group2ctxs, len(self.contexts))
        self._grad_req_arg = grad_req
        self.execs: list = []
        self.shared_group = shared_group
        # per context, the non-parameter arrays (inputs, extra arguments) groups share
        self.shared_data_arrays = shared_group.shared_data_arrays if shared_group is not None \
            else [{} for _ in self.contexts]
        # runs of forward/backward/update over the parameters this group shares with others
        self._writes = shared_group._writes if shared_group is not None else [0]
        self.bind_exec(data_shapes, label_shapes, shared_group)

    # ------------------------------------------------------------ binding
    def decide_slices(self, data_shapes) -> list[slice]:
        """Batch slices per context; every input with a batch axis must have one batch size."""
        sizes = {shape[axis] for _, shape, axis, _ in data_shapes if axis >= 0}
        if len(sizes) > 1:
            raise MXNetError(f"all data must have the same batch size: got {sorted(sizes)}")
        if sizes:
            self.batch_size = sizes.pop()
            self.slices = _split_input_slice(self.batch_size, self.workload)
        else:  # no input has a batch axis: each context takes all of it
            self.batch_size = None
            self.slices = [slice(i, i + 1) for i in range(len(self.contexts))]
        return self.slices

    def bind_exec(self, data_shapes, label_shapes, shared_group=None, reshape=False) -> None:
        """Bind (or rebind, sharing parameters) one executor per context."""
        self.data_shapes = _as_pairs(data_shapes)
        self.label_shapes = _as_pairs(label_shapes)
        self.data_names = [d[0] for d in self.data_shapes]
        self.label_names = [d[0] for d in self.label_shapes]
        self.data_layouts = [d[2] for d in self.data_shapes]
        self.label_layouts = [d[2] for d in self.label_shapes]
        self.decide_slices(self.data_shapes)
        self.grad_req = _grad_req(self.arg_names, self.param_names, self.data_names,
                                  self.fixed_param_names, self.for_training,
                                  self.inputs_need_grad, self._grad_req_arg)
        old = self.execs
        execs = []
        for i in range(len(self.contexts)):
            shared = shared_group.execs[i] if shared_group is not None else \
                (old[i] if old and reshape else None)
            execs.append(self._bind_one(i, shared))
        if reshape and old:  # as MXNet's reshaped executors, keep the monitor callback
            for new, prev in zip(execs, old):
                new._monitor = prev._monitor
        self.execs = execs
        self._collect_arrays()

    def _bind_one(self, i: int, shared):
        sl = self.slices[i]
        length = sl.stop - sl.start
        shapes, types = {}, {}
        for name, shape, axis, dtype in self.data_shapes + self.label_shapes:
            shapes[name] = _slice_shape(shape, axis, length)
            types[name] = dtype
        buffer = self.shared_data_arrays[i]
        before = set(buffer)
        exe = self.symbol.simple_bind(self.contexts[i], grad_req=self.grad_req, type_dict=types,
                                      group2ctx=self.group2ctxs[i],
                                      shared_arg_names=self.param_names, shared_exec=shared,
                                      shared_buffer=buffer, **shapes)
        for name in self.param_names:  # parameters are shared through shared_exec only
            if name not in before:
                buffer.pop(name, None)
        return exe

    def _collect_arrays(self) -> None:
        ex = self.execs
        self.data_arrays = [[e.arg_dict[n] for e in ex] for n in self.data_names]
        self.label_arrays = [[e.arg_dict[n] for e in ex] for n in self.label_names]
        self.state_arrays = [[e.arg_dict[n] for e in ex] for n in self.state_names]
        self.param_arrays = [[e.arg_dict[n] for e in ex] for n in self.arg_names
                             if n in self.param_names]
        self.grad_arrays = [[e.grad_dict[n] for e in ex] for n in self.arg_names
                            if n in self.param_names] if self.for_training else None
        self.aux_arrays = [[e.aux_dict[n] for e in ex] for n in self.aux_names]
        self.input_grad_arrays = [[e.grad_dict[n] for e in ex] for n in self.data_names] \
            if self.inputs_need_grad else None

    def reshape(self, data_shapes, label_shapes) -> None:
        """Rebind for new input shapes, keeping (sharing) the parameter arrays."""
        if _as_pairs(data_shapes) == self.data_shapes and \
                _as_pairs(label_shapes) == self.label_shapes:
            return
        self.bind_exec(data_shapes, label_shapes, reshape=True)

    # ------------------------------------------------------------ parameters
    def set_params(self, arg_params, aux_params, allow_extra: bool = False) -> None:
        """Copy parameters into every executor: all entries on all contexts are checked
        (names, exact shapes, castable dtypes) before any is copied."""
        staged = [exe._stage_params(arg_params, aux_params, allow_extra) for exe in self.execs]
        for pairs in staged:
            for dst, src in pairs:
                store(dst, src) if isinstance(dst, NDArray) else dst.copy_(src)

    def _param_blocks(self, arg_params, aux_params) -> list[tuple]:
        """``(target dict, name, per-context arrays)`` of every parameter and aux state."""
        names = [n for n in self.arg_names if n in self.param_names]
        return [(arg_params, n, b) for n, b in zip(names, self.param_arrays)] + \
            [(aux_params, n, b) for n, b in zip(self.aux_names, self.aux_arrays)]

    def get_params(self, arg_params, aux_params) -> None:
        """Average parameters over the contexts into ``arg_params``/``aux_params`` (in place)."""
        for targets, name, block in self._param_blocks(arg_params, aux_params):
            target = targets.get(name)
            if target is not None and (target._is_sparse or block[0]._is_sparse):
                _average_sparse(target, block)
                continue
            if len(block) == 1 and target is not None and target._t.shape == block[0]._t.shape:
                target._t.copy_(block[0]._t)  # one context: straight into the target
                continue
            total = block[0].copyto(cpu())
            for w in block[1:]:
                total += w.copyto(cpu())
            value = total / len(block) if len(block) > 1 else total
            if name in targets:
                targets[name][:] = value.astype(targets[name].dtype)
            else:
                targets[name] = value

    def note_params_written(self) -> None:
        """Record that a step may have written the parameter arrays (see ``params_token``)."""
        self._writes[0] += 1

    def params_token(self, arg_params, aux_params):
        """What must stay the same for ``set_params(arg_params, aux_params)`` to change nothing.

        Right after ``get_params`` copied a one-context group's arrays into host arrays of the
        same dtypes, copying them back is a no-op. The token names every host and device
        array with its torch version counter (bumped by any in-place write through torch) and
        the count of steps run by this group or groups sharing its parameters (kernels may
        write without bumping counters); ``None`` when a copy back could change something.
        """
        if len(self.execs) != 1:
            return None
        ids, keep = [self._writes[0], len(arg_params), len(aux_params)], []
        for targets, name, block in self._param_blocks(arg_params, aux_params):
            host, dev = targets.get(name), block[0]
            if host is None or host._is_sparse or dev._is_sparse or \
                    host._t.dtype != dev._t.dtype or host._t.shape != dev._t.shape:
                return None
            keep += (host, host._t, dev, dev._t)  # alive while the token is: ids stay unique
            ids += (id(host), id(host._t), host._t._version, id(dev), id(dev._t),
                    dev._t._version)
        return tuple(ids), keep

    # ------------------------------------------------------------ running
    def _load(self, data_batch) -> None:
        data, labels = data_batch.data, getattr(data_batch, "label", None)
        if len(data) != len(self.data_arrays):
            raise BindError(f"data batch has {len(data)} data arrays for "
                            f"{len(self.data_names)} data names {self.data_names}")
        if self.label_arrays and labels and len(labels) != len(self.label_arrays):
            raise BindError(f"data batch has {len(labels)} label arrays for "
                            f"{len(self.label_names)} label names {self.label_names}")
        _load_general(data, self.data_arrays, self.data_layouts, self.slices, self.data_names)
        if self.label_arrays and labels:
            _load_general(labels, self.label_arrays, self.label_layouts, self.slices,
                          self.label_names)

    def forward(self, data_batch=None, is_train: bool | None = None) -> None:
        """Load ``data_batch`` (if given) into every executor's slice and run forward."""
        if data_batch is not None:
            self._load(data_batch)
        self._writes[0] += 1  # aux states (BatchNorm's moving statistics) may change
        train = self.for_training if is_train is None else is_train
        for exe in self.execs:
            exe.forward(is_train=train)

    def backward(self, out_grads=None) -> None:
        """Backward on every executor; ``out_grads`` (for non-loss heads) are sliced."""
        if not self.for_training:
            raise MXNetError("re-bind with for_training=True to run backward")
        if isinstance(out_grads, NDArray):
            out_grads = [out_grads]
        if out_grads is not None:
            out_grads = self._check_out_grads(out_grads)
        self._writes[0] += 1
        for exe, sl in zip(self.execs, self.slices):
            grads = None
            if out_grads is not None:
                grads = [None if g is None else NDArray(_narrow(g, axis, sl).to(out._t.device))
                         for g, axis, out in zip(out_grads, self.output_layouts, exe.outputs)]
            exe.backward(out_grads=grads)

    def _check_out_grads(self, out_grads) -> list:
        """The head gradients as tensors, each of exactly its output's whole-batch shape
        (a BindError for too few, a ShapeError naming the output and both shapes), checked
        before any executor runs; further ones are ignored, as MXNet 1.9.1 ignores them."""
        if len(out_grads) < len(self.output_names):
            raise BindError(f"backward: {len(out_grads)} out_grads for "
                            f"{len(self.output_names)} outputs {self.output_names}")
        tensors = []
        for g, (name, shape), out in zip(out_grads, self.get_output_shapes(),
                                         self.execs[0].outputs):
            if self.batch_size is None:  # no input has a batch axis: per-device shapes
                shape = tuple(out.shape)
            tensors.append(None if g is None else checked_source(
                g, out._t, name, "backward: out_grad of output", shape))
        return tensors

    def get_output_shapes(self) -> list[tuple]:
        """(name, shape) of each output for the whole batch."""
        outs = self.execs[0].outputs
        return [(name, _slice_shape(tuple(o.shape), axis, self.batch_size))
                for name, o, axis in zip(self.output_names, outs, self.output_layouts)]

    def get_outputs(self, merge_multi_context: bool = True, begin: int = 0, end=None):
        """Outputs per head: merged over contexts, or a list per context."""
        end = len(self.execs[0].outputs) if end is None else end
        outputs = [[exe.outputs[i] for exe in self.execs] for i in range(begin, end)]
        return _merge_multi_context(outputs, self.output_layouts[begin:end]) \
            if merge_multi_context else outputs

    def get_states(self, merge_multi_context: bool = True):
        """The state arrays, one list per state name of the contexts' arrays (MXNet has no
        merged form: ``merge_multi_context`` must be False)."""
        if merge_multi_context:
            raise MXNetError("merge_multi_context=True is not supported for get_states yet.")
        return self.state_arrays

    def set_states(self, states=None, value=None) -> None:
        """Copy ``states`` (``[[state1_dev1, state1_dev2], ...]``) into the state arrays, or
        fill them all with the scalar ``value``; exactly one of them is given."""
        if (states is None) == (value is None):
            raise ValueError("exactly one of states and value must be given")
        if states is not None:
            _load_general(states, self.state_arrays, [0] * len(states), self.slices)
            return
        for arrays in self.state_arrays:
            for arr in arrays:
                arr[:] = value

    def get_input_grads(self, merge_multi_context: bool = True):
        """Gradients of the data inputs (bind with inputs_need_grad=True)."""
        if not self.inputs_need_grad:
            raise MXNetError("bind with inputs_need_grad=True to get input gradients")
        grads = self.input_grad_arrays
        return _merge_multi_context(grads, [d[2] for d in self.data_shapes]) \
            if merge_multi_context else grads

    def update_metric(self, eval_metric, labels, pre_sliced: bool = False) -> None:
        """Update ``eval_metric`` with each context's outputs and its slice of ``labels``."""
        for i, (exe, sl) in enumerate(zip(self.execs, self.slices)):
            if pre_sliced:
                labels_slice = labels[i]
            else:
                axes = self.label_layouts + [0] * len(labels)
                labels_slice = [_rows(lab, sl, axis) for lab, axis in zip(labels, axes)]
            if hasattr(eval_metric, "update_dict") and self.label_names:
                eval_metric.update_dict(dict(zip(self.label_names, labels_slice)),
                                        dict(zip(self.output_names, exe.outputs)))
            else:
                eval_metric.update(labels_slice, exe.outputs)

    def install_monitor(self, mon) -> None:
        """Let ``mon`` watch every executor."""
        for exe in self.execs:
            mon.install(exe)
