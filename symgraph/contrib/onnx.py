"""``mx.contrib.onnx``: MXNet 1.9.1's older path of the ONNX functions (``mx.onnx``), with
the notices MXNet prints when they are called through it."""
from __future__ import annotations

_MOVED = ("Please be advised that the ONNX module has been moved to mxnet.onnx and "
          "mxnet.onnx.export_model is the preferred path. The current path will be deprecated "
          "in the upcoming MXNet v1.10 release.")
_IMPORT = ("Please be advised that importing ONNX models into MXNet is going to be deprecated "
           "in the upcoming MXNet v1.10 release. The following apis will be deleted: "
           "mxnet.contrib.onnx.import_model/get_model_metadata/import_to_gluon.")


def export_model(*args, **kwargs):
    """:func:`symgraph.onnx.export_model`."""
    from ..onnx import export_model as export
    print("Calling mxnet.contrib.onnx.export_model...")
    print(_MOVED)
    return export(*args, **kwargs)


def import_model(*args, **kwargs):
    """:func:`symgraph.onnx.import_model`."""
    from ..onnx import import_model as load
    print("Calling mxnet.contrib.onnx.import_model...")
    print(_IMPORT)
    return load(*args, **kwargs)


def get_model_metadata(*args, **kwargs):
    """:func:`symgraph.onnx.get_model_metadata`."""
    from ..onnx import get_model_metadata as metadata
    print("Calling mxnet.contrib.onnx.get_model_metadata...")
    print(_IMPORT)
    return metadata(*args, **kwargs)


def import_to_gluon(*args, **kwargs):
    """:func:`symgraph.onnx.import_to_gluon`."""
    from ..onnx import import_to_gluon as to_gluon
    print("Calling mxnet.contrib.onnx.import_to_gluon...")
    print(_IMPORT)
    return to_gluon(*args, **kwargs)
