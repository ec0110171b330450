"""``mx.gluon.contrib.nn``: the contributed layers of MXNet 1.9.1's ``gluon.contrib.nn``."""
from __future__ import annotations

from . import basic_layers  # noqa: F401 - MXNet's submodule name
from .basic_layers import (
    Concurrent,
    HybridConcurrent,
    Identity,
    PixelShuffle1D,
    PixelShuffle2D,
    PixelShuffle3D,
    SparseEmbedding,
    SyncBatchNorm,
)

__all__ = ["Concurrent", "HybridConcurrent", "Identity", "SparseEmbedding", "SyncBatchNorm",
           "PixelShuffle1D", "PixelShuffle2D", "PixelShuffle3D"]
