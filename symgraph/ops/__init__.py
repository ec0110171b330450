"""The operator registry: importing this package registers every operator in :data:`OPS`."""
from __future__ import annotations

from . import (  # noqa: F401 - imported to register their ops
    activation,
    batch_norm,
    broadcast,
    cast_clip,
    convolution,
    creation,
    deconvolution,
    dropout,
    elementwise,
    fully_connected,
    indexing,
    join_split,
    l2_normalization,
    layer_norm,
    leaky_relu,
    log_softmax_pick,
    make_loss,
    matmul,
    pooling,
    random,
    reduce,
    regression_output,
    rnn,
    sequence,
    shape,
    slicing,
    smooth_l1,
    softmax,
    softmax_cross_entropy,
    softmax_output,
    upsampling,
)
from .base import OPS, REWRITES, Case, OpDef, Rewrite, canonical_ops, get_op, register

__all__ = ["OPS", "REWRITES", "Case", "OpDef", "Rewrite", "canonical_ops", "get_op",
           "register"]
