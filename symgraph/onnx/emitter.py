"""What an ONNX translation of one MXNet op works with: the node it translates
(:class:`NodeCtx`: parsed attributes, ONNX names, shapes and dtypes of its inputs and
outputs) and the :class:`Emitter` it adds ONNX nodes and constants to.

A translation is a function ``(e, n) -> output names`` registered for one or more MXNet
ops with :func:`converts`; it emits nodes in the opset ``e.opset`` (12 to the newest
``onnx`` knows) and gives one ONNX value name per visible output of the op.

Shapes: a translation may read ranks and the dims of parameters freely. Data dims come
from ``e.dims(...)``, which is a constant for a fixed-shape export and a ``Shape`` node
when the export keeps dims dynamic, so a dynamic model never computes with a baked-in
batch size.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..export.graph import ExportError

# MXNet dtype name -> ONNX TensorProto enum value (onnx.TensorProto.FLOAT, ...)
ONNX_TYPES = {"float32": 1, "uint8": 2, "int8": 3, "int32": 6, "int64": 7, "bool": 9,
              "float16": 10, "float64": 11, "bfloat16": 16}


def onnx_type(dtype) -> int:
    """The ONNX element type of a dtype (name, numpy dtype or type)."""
    name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
    if name not in ONNX_TYPES:
        raise ExportError(f"dtype {name} has no ONNX element type symgraph exports")
    return ONNX_TYPES[name]


@dataclass
class NodeCtx:
    """One MXNet node as a translation sees it."""

    name: str  # the MXNet node name
    op: str  # the MXNet op name
    p: dict  # parsed attributes (``p.kernel``, ``p.num_filter``, ...)
    ins: list[str]  # ONNX names of the inputs (regular inputs, then aux states)
    in_shapes: list[tuple]
    in_dtypes: list[str]
    out_shapes: list[tuple]
    out_dtypes: list[str]
    outs: list[str]  # ONNX names the visible outputs should take
    consts: dict[int, np.ndarray] = field(default_factory=dict)  # input slot -> value
    # per output, per dim: None (fixed) or (data input, axis) the dim follows (dynamic export)
    out_dim_sources: list = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"operator {self.name} ({self.op})"

    def fail(self, reason: str) -> ExportError:
        """The error for what this translation cannot export."""
        return ExportError(f"Error in {self.where}: cannot export to ONNX: {reason}")

    def const(self, slot: int) -> np.ndarray | None:
        """The value of input ``slot`` when it is a parameter (an initializer), else None."""
        return self.consts.get(slot)


Converter = Callable[["Emitter", NodeCtx], Sequence[str]]
# MXNet op name -> its translation; filled by the ``symgraph.onnx.ops_*`` modules
CONVERTERS: dict[str, Converter] = {}


def converts(*ops: str) -> Callable[[Converter], Converter]:
    """Register a translation for the MXNet ops ``ops``."""
    def register(fn: Converter) -> Converter:
        for op in ops:
            if op in CONVERTERS:
                raise ValueError(f"ONNX translation of {op} registered twice")
            CONVERTERS[op] = fn
        return fn
    return register


class Emitter:
    """Collects the ONNX nodes and initializers of one export."""

    def __init__(self, opset: int, dynamic: bool):
        from onnx import helper, numpy_helper
        self.helper, self.numpy_helper = helper, numpy_helper
        self.opset, self.dynamic = opset, dynamic
        self.nodes: list = []
        self.initializers: list = []
        self.names: set[str] = set()
        self.current = ""  # the MXNet node being translated (names its ONNX nodes)

    def fresh(self, hint: str) -> str:
        """A value name not used yet, made from ``hint``."""
        base = name = f"{self.current}_{hint}" if self.current else hint
        count = 1
        while name in self.names:
            name, count = f"{base}{count}", count + 1
        self.names.add(name)
        return name

    def claim(self, name: str) -> str:
        if name in self.names:
            raise ExportError(f"ONNX value name {name!r} is given twice")
        self.names.add(name)
        return name

    def node(self, op_type: str, inputs: Sequence[str], outputs: int | Sequence[str] = 1,
             **attrs) -> list[str]:
        """Add a node; its output names (``outputs``: a count of fresh names, or names)."""
        if isinstance(outputs, int):
            outputs = [self.fresh(op_type.lower()) for _ in range(outputs)]
        else:
            outputs = [o if o == "" or o in self.names else self.claim(o) for o in outputs]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(self.helper.make_node(
            op_type, list(inputs), list(outputs), name=self.fresh(f"{op_type}"), **attrs))
        return list(outputs)

    def one(self, op_type: str, inputs: Sequence[str], out: str | None = None,
            **attrs) -> str:
        """Add a single-output node; its output name (``out`` when given)."""
        return self.node(op_type, inputs, [out] if out else 1, **attrs)[0]

    def const(self, value, dtype=None, hint: str = "const") -> str:
        """An initializer holding ``value``; its name."""
        array = np.asarray(value, dtype=dtype)
        name = self.fresh(hint)
        self.initializers.append(self.numpy_helper.from_array(array, name))
        return name

    def initializer(self, name: str, value: np.ndarray) -> str:
        """An initializer under its own (MXNet parameter) name."""
        self.initializers.append(self.numpy_helper.from_array(np.asarray(value),
                                                              self.claim(name)))
        return name

    def ints(self, values: Sequence[int], hint: str = "ints") -> str:
        """A 1-D int64 constant."""
        return self.const(np.asarray(list(values), dtype=np.int64), hint=hint)

    def scalar(self, value, dtype, hint: str = "scalar") -> str:
        """A 0-d constant of ``dtype`` (an MXNet dtype name)."""
        return self.const(np.asarray(value, dtype=np.dtype(dtype if dtype != "bfloat16"
                                                           else "float32")), hint=hint)

    # ------------------------------------------------------------ shapes
    def dims(self, value: str, shape: tuple, hint: str = "shape") -> str:
        """The shape of ``value`` as a 1-D int64 value: a constant unless dims are dynamic."""
        if not self.dynamic:
            return self.ints(shape, hint)
        return self.one("Shape", [value])

    def out_dims(self, n: NodeCtx, k: int = 0) -> str:
        """Output ``k``'s shape as a 1-D int64 value: a constant, or in a dynamic export
        the fixed dims with the data-input dims they follow read at run time."""
        shape = n.out_shapes[k]
        sources = n.out_dim_sources[k] if k < len(n.out_dim_sources) else None
        if not self.dynamic or not sources or all(s is None for s in sources):
            return self.ints(shape)
        if any(s is not None and s[1] < 0 for s in sources):
            raise n.fail("an output shape that depends on the dynamic input dims other than "
                         "by equality")
        pieces = [self.ints([d]) if s is None else self.dim_slice(s[0], (), s[1], s[1] + 1)
                  for d, s in zip(shape, sources)]
        return pieces[0] if len(pieces) == 1 else self.one("Concat", pieces, axis=0)

    def dim_slice(self, value: str, shape: tuple, start: int, end: int | None = None) -> str:
        """Dims ``start:end`` of ``value``'s shape (1-D int64)."""
        end = len(shape) if end is None else end
        if not self.dynamic:
            return self.ints(shape[start:end])
        if self.opset >= 15:
            return self.one("Shape", [value], start=start, end=end)
        return self.one("Slice", [self.one("Shape", [value]), self.ints([start]),
                                  self.ints([end])])

    # ------------------------------------------------------------ opset-dependent forms
    def unsqueeze(self, value: str, axes: Sequence[int], out: str | None = None) -> str:
        if self.opset >= 13:
            return self.one("Unsqueeze", [value, self.ints(axes)], out)
        return self.one("Unsqueeze", [value], out, axes=list(axes))

    def squeeze(self, value: str, axes: Sequence[int], out: str | None = None) -> str:
        if self.opset >= 13:
            return self.one("Squeeze", [value, self.ints(axes)], out)
        return self.one("Squeeze", [value], out, axes=list(axes))

    def reduce(self, op_type: str, value: str, axes: Sequence[int] | None, keepdims: bool,
               out: str | None = None) -> str:
        """``Reduce*`` over ``axes`` (None: all), in the opset's form (axes as an input
        from opset 13 for ReduceSum, 18 for the others)."""
        as_input = self.opset >= (13 if op_type == "ReduceSum" else 18)
        if axes is None:
            return self.one(op_type, [value], out, keepdims=int(keepdims))
        if as_input:
            return self.one(op_type, [value, self.ints(axes)], out, keepdims=int(keepdims))
        return self.one(op_type, [value], out, axes=list(axes), keepdims=int(keepdims))

    def split(self, value: str, sizes: Sequence[int], axis: int,
              outs: Sequence[str] | int) -> list[str]:
        """``Split`` into pieces of ``sizes`` along ``axis``."""
        n = outs if isinstance(outs, int) else len(outs)
        if self.opset >= 13:
            return self.node("Split", [value, self.ints(sizes)], outs, axis=axis)
        return self.node("Split", [value], outs if not isinstance(outs, int) else n,
                         axis=axis, split=list(sizes))

    def cast(self, value: str, dtype, out: str | None = None) -> str:
        return self.one("Cast", [value], out, to=onnx_type(dtype))
