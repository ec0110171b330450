"""The ONNX translations, one module per family; importing this package fills
:data:`symgraph.onnx.emitter.CONVERTERS`."""
from __future__ import annotations

from . import (  # noqa: F401
    control_flow,
    elemwise,
    index,
    nn,
    random,
    reduce,
    regression,
    rnn,
    sequence,
    tensor,
    vision,
)
