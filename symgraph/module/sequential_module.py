"""``SequentialModule``: modules chained so that each one's outputs are the next one's data.

>>> import symgraph as mx
>>> fc = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=3, name='fc')
>>> act = mx.sym.Activation(mx.sym.var('data'), act_type='relu', name='relu')
>>> seq = SequentialModule()
>>> seq = seq.add(mx.mod.Module(fc, label_names=None))
>>> seq = seq.add(mx.mod.Module(act, label_names=None), auto_wiring=True)
>>> seq.bind(data_shapes=[('data', (2, 4))])
>>> seq.output_shapes
[('relu_output', (2, 3))]
"""
from __future__ import annotations

import copy
import logging

from .base_module import BaseModule

__all__ = ["SequentialModule"]


def _check_unique(known: dict, names, layer: int, modules) -> None:
    """Parameter names must not repeat across the chained modules."""
    for name in names:
        if name in known:
            raise AssertionError(
                f'Duplicated parameter names: name "{name}" in layer {layer} '
                f"({type(modules[layer])}) is already used in layer {known[name]} "
                f"({type(modules[known[name]])}).")
        known[name] = layer


class SequentialModule(BaseModule):
    """A chain of modules: module ``i + 1`` takes module ``i``'s outputs as its data.

    Meta options given to :meth:`add`: ``take_labels=True`` hands the batch's labels to that
    module (any number of modules may take them); ``auto_wiring=True`` renames the incoming
    data to the module's own ``data_names``.
    """

    META_TAKE_LABELS = "take_labels"
    META_AUTO_WIRING = "auto_wiring"

    def __init__(self, logger=logging):
        super().__init__(logger=logger)
        self._modules: list[BaseModule] = []
        self._metas: list[dict] = []
        self._label_shapes = None
        self._data_shapes = None
        self._meta_keys = {self.META_TAKE_LABELS, self.META_AUTO_WIRING}

    def add(self, module, **kwargs) -> SequentialModule:
        """Append ``module`` (with meta options); returns self. The chain must be bound and
        initialised again afterwards."""
        for key in kwargs:
            assert key in self._meta_keys, f'Unknown meta "{key}", a typo?'
        self._modules.append(module)
        self._metas.append(kwargs)
        self.binded = self.params_initialized = self.optimizer_initialized = False
        return self

    def _takes_labels(self, i: int) -> bool:
        return bool(self._metas[i].get(self.META_TAKE_LABELS, False))

    # ------------------------------------------------------------ names and shapes
    @property
    def data_names(self):
        return self._modules[0].data_names if self._modules else []

    @property
    def output_names(self):
        return self._modules[-1].output_names if self._modules else []

    @property
    def data_shapes(self):
        assert self.binded
        return self._modules[0].data_shapes

    @property
    def label_shapes(self):
        assert self.binded
        return self._label_shapes

    @property
    def output_shapes(self):
        assert self.binded
        return self._modules[-1].output_shapes

    # ------------------------------------------------------------ parameters
    def get_params(self):
        """All modules' parameters in one pair of dicts."""
        assert self.binded and self.params_initialized
        arg_params, aux_params = {}, {}
        for module in self._modules:
            arg, aux = module.get_params()
            arg_params.update(arg)
            aux_params.update(aux)
        return arg_params, aux_params

    def init_params(self, initializer=None, arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False) -> None:
        """Initialise every module; parameter names must be unique over the chain."""
        if self.params_initialized and not force_init:
            return
        assert self.binded, "call bind before initializing the parameters"
        for module in self._modules:  # all or nothing: every module checks the values first
            if force_init or not module.params_initialized:
                module._check_init_params(arg_params, aux_params, allow_missing)
        for module in self._modules:
            module.init_params(initializer=initializer, arg_params=arg_params,
                               aux_params=aux_params, allow_missing=allow_missing,
                               force_init=force_init, allow_extra=allow_extra)
        arg_names, aux_names = {}, {}
        for i, module in enumerate(self._modules):
            args, auxs = module.get_params()
            _check_unique(arg_names, args, i, self._modules)
            _check_unique(aux_names, auxs, i, self._modules)
        self.params_initialized = True

    # ------------------------------------------------------------ binding
    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write") -> None:
        """Bind each module on the previous one's output shapes (every module but the first
        computes input gradients when training, for the backward chain)."""
        if self.binded and not force_rebind:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if inputs_need_grad:
            assert for_training is True
        assert shared_module is None, "Shared module is not supported"
        assert self._modules, "Attempting to bind an empty SequentialModule"
        self.binded = True
        self._label_shapes = label_shapes
        my_data_shapes = data_shapes
        for i, module in enumerate(self._modules):
            if self._metas[i].get(self.META_AUTO_WIRING, False):
                assert len(module.data_names) == len(my_data_shapes)
                my_data_shapes = [(name, shape) for name, (_, shape)
                                  in zip(module.data_names, my_data_shapes)]
            module.bind(data_shapes=my_data_shapes,
                        label_shapes=label_shapes if self._takes_labels(i) else None,
                        for_training=for_training,
                        inputs_need_grad=bool(inputs_need_grad or (for_training and i > 0)),
                        force_rebind=force_rebind, shared_module=None, grad_req=grad_req)
            my_data_shapes = module.output_shapes
        if not any(self._takes_labels(i) for i in range(len(self._modules))):
            self._label_shapes = None

    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False) -> None:
        """Give every module the optimizer."""
        assert self.binded and self.params_initialized
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        for module in self._modules:
            module.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                                  optimizer_params=optimizer_params, force_init=force_init)
        self.optimizer_initialized = True

    # ------------------------------------------------------------ computation
    def forward(self, data_batch, is_train=None) -> None:
        """Forward through the chain (a shallow copy of the batch carries the outputs on)."""
        assert self.binded and self.params_initialized
        data_batch = copy.copy(data_batch)
        for i, module in enumerate(self._modules):
            module.forward(data_batch, is_train=is_train)
            if i + 1 == len(self._modules):
                break
            data_batch.data = module.get_outputs()
            if hasattr(data_batch, "provide_data"):
                names = [x[0] for x in module.output_shapes]
                assert len(names) == len(data_batch.data)
                data_batch.provide_data = [(name, x.shape)
                                           for name, x in zip(names, data_batch.data)]

    def backward(self, out_grads=None) -> None:
        """Backward from the last module to the first, passing input gradients down."""
        assert self.binded and self.params_initialized
        for i in reversed(range(len(self._modules))):
            module = self._modules[i]
            module.backward(out_grads=out_grads)
            if i > 0:
                out_grads = module.get_input_grads()

    def update(self) -> None:
        """Update every module's parameters."""
        assert self.binded and self.params_initialized and self.optimizer_initialized
        for module in self._modules:
            module.update()

    def get_outputs(self, merge_multi_context=True):
        """The last module's outputs."""
        assert self.binded and self.params_initialized
        return self._modules[-1].get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        """The first module's input gradients."""
        assert self.binded and self.params_initialized and self.inputs_need_grad
        return self._modules[0].get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False) -> None:
        """Update ``eval_metric`` from every module that takes labels."""
        assert self.binded and self.params_initialized
        for i, module in enumerate(self._modules):
            if self._takes_labels(i):
                module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon) -> None:
        """Install ``mon`` on every module."""
        assert self.binded
        for module in self._modules:
            module.install_monitor(mon)
