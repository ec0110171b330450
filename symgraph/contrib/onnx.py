"""``mx.contrib.onnx``: MXNet 1.9.1's older path of the ONNX functions (``mx.onnx``), with
the notices MXNet prints when they are called through it."""
from __future__ import annotations

_MOVED = ("Please be advised that the ONNX module has been moved to mxnet.onnx and "
          "mxnet.onnx.export_model is the preferred path. The current path will be deprecated "
          "in the upcoming MXNet v1.10 release.")
_IMPORT = ("Please be advised that importing ONNX models into MXNet is going to be deprecated "
           "in the upcoming MXNet v1.10 release. The following apis will be deleted: "
           "mxnet.contrib.onnx.import_model/get_model_metadata/import_to_gluon.")


def _forward(name: str, notice: str, args, kwargs):
    """Call ``symgraph.onnx.<name>`` after MXNet's notices for the old path."""
    from .. import onnx
    print(f"Calling mxnet.contrib.onnx.{name}...")
    print(notice)
    return getattr(onnx, name)(*args, **kwargs)


def export_model(*args, **kwargs):
    """:func:`symgraph.onnx.export_model`."""
    return _forward("export_model", _MOVED, args, kwargs)


def import_model(*args, **kwargs):
    """:func:`symgraph.onnx.import_model`."""
    return _forward("import_model", _IMPORT, args, kwargs)


def get_model_metadata(*args, **kwargs):
    """:func:`symgraph.onnx.get_model_metadata`."""
    return _forward("get_model_metadata", _IMPORT, args, kwargs)


def import_to_gluon(*args, **kwargs):
    """:func:`symgraph.onnx.import_to_gluon`."""
    return _forward("import_to_gluon", _IMPORT, args, kwargs)
