"""``mx.model``: checkpoints, the classic training loop and ``FeedForward``.

The names MXNet 1.9.1's ``mxnet.model`` offers, gathered from the modules that implement
them (each below this one, none importing it): :mod:`symgraph.training.model_io`
(``save_checkpoint``, ``load_checkpoint``, ``load_params``),
:mod:`symgraph.training.model_kvstore` (``_create_kvstore``, ``_update_params``, ...),
:mod:`symgraph.training.fit_loop` (``_train_multi_device``), :mod:`symgraph.callback`
(``BatchEndParam``) and :mod:`symgraph.training.feedforward` (``FeedForward``).

>>> import symgraph as mx
>>> mx.model.FeedForward.__module__, mx.model.save_checkpoint.__module__
('symgraph.training.feedforward', 'symgraph.training.model_io')
"""
from __future__ import annotations

from . import io, metric
from . import kvstore as kvs
from . import ndarray as nd
from . import optimizer as opt
from . import symbol as sym
from .base import mx_real_t
from .callback import BatchEndParam, LogValidationMetricsCallback
from .context import Context, cpu
from .executor_manager import DataParallelExecutorManager
from .initializer import Uniform
from .io import DataDesc
from .optimizer import get_updater
from .training.feedforward import FeedForward
from .training.fit_loop import _multiple_callbacks as _multiple_callbacks
from .training.fit_loop import _train_multi_device as _train_multi_device
from .training.model_io import (
    LoadedParams,
    MissingParamError,
    load_checkpoint,
    load_params,
    save_checkpoint,
)
from .training.model_io import _checkpoint_dict as _checkpoint_dict
from .training.model_kvstore import _create_kvstore as _create_kvstore
from .training.model_kvstore import _create_sparse_kvstore as _create_sparse_kvstore
from .training.model_kvstore import _initialize_kvstore as _initialize_kvstore
from .training.model_kvstore import _update_params as _update_params
from .training.model_kvstore import _update_params_on_kvstore as _update_params_on_kvstore

# MXNet's names in this module (scripts import them from here)
BASE_ESTIMATOR = object  # the base class of FeedForward, as in MXNet

__all__ = ["BatchEndParam", "Context", "DataDesc", "DataParallelExecutorManager", "FeedForward",
           "LoadedParams", "LogValidationMetricsCallback", "MissingParamError",
           "SKLEARN_INSTALLED", "Uniform", "cpu", "get_updater", "io", "kvs", "load_checkpoint",
           "load_params", "metric", "mx_real_t", "nd", "opt", "save_checkpoint", "sym"]
# MXNet's FeedForward subclasses sklearn's BaseEstimator when sklearn is installed;
# symgraph's never does
SKLEARN_INSTALLED = False
