"""``mx.onnx``: MXNet models to ONNX and back, without MXNet.

``export_model`` writes an ONNX file from a symbol and its parameters (MXNet 1.9.1's
signature and file layout); ``import_model`` reads one into a symbol with its parameters.
The ``onnx`` package (and ``onnxruntime`` to run the result) comes with
``pip install symgraph[onnx]``; it is imported only when these functions are called.
"""
from __future__ import annotations

from .export import export_model
from .importer import OnnxImportError, get_model_metadata, import_model, import_to_gluon

__all__ = ["OnnxImportError", "export_model", "get_model_metadata", "get_operator_support",
           "import_model", "import_to_gluon"]


def get_operator_support(opset_version=None) -> list[str]:
    """The MXNet operators the export translates (sorted)."""
    from .export import _onnx
    _onnx()
    from .emitter import CONVERTERS
    return sorted(CONVERTERS)
