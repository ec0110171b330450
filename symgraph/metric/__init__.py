"""Evaluation metrics (MXNet 1.9.1's ``mx.metric``).

One module per family, all registered on import of this package: :mod:`.base` (``EvalMetric``,
``CompositeEvalMetric``, ``CustomMetric``, ``create``, ``register``), :mod:`.classification`,
:mod:`.regression`, :mod:`.probability` and :mod:`.loss`.

>>> import symgraph as mx
>>> acc = mx.metric.create('acc')
>>> acc.update([mx.nd.array([0, 1, 1])], [mx.nd.array([[0.7, 0.3], [0.2, 0.8], [0.9, 0.1]])])
>>> acc.get()
('accuracy', 0.6666666666666666)
"""
from __future__ import annotations

# MXNet's metric module carries these names too
import math
from collections import OrderedDict

import numpy

from .. import ndarray, registry
from ..base import numeric_types, string_types
from .base import (
    CompositeEvalMetric,
    CustomMetric,
    EvalMetric,
    alias,
    check_label_shapes,
    create,
    np,
    register,
)
from .classification import F1, MCC, PCC, Accuracy, TopKAccuracy
from .loss import Caffe, Loss, Torch
from .probability import CrossEntropy, NegativeLogLikelihood, Perplexity
from .regression import MAE, MSE, RMSE, PearsonCorrelation

__all__ = [
    "MAE", "MCC", "MSE", "PCC", "RMSE", "F1", "Accuracy", "Caffe", "CompositeEvalMetric",
    "CrossEntropy", "CustomMetric", "EvalMetric", "Loss", "NegativeLogLikelihood",
    "PearsonCorrelation", "Perplexity", "TopKAccuracy", "Torch", "alias", "check_label_shapes",
    "create", "math", "ndarray", "np", "numeric_types", "numpy", "OrderedDict", "register",
    "registry", "string_types",
]
