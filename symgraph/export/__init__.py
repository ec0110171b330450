"""Models out of MXNet's format: to PyTorch modules (:func:`to_torch`) and, through
:mod:`symgraph.onnx`, to ONNX; ``python -m symgraph.export`` converts a checkpoint."""
from __future__ import annotations

from .graph import ExportError, load_model
from .torch_module import block_to_torch, to_torch

__all__ = ["ExportError", "block_to_torch", "load_model", "to_torch"]
