"""shape_array / size_array: an input's shape, or its number of elements, as an int64 array.

Both read only the input's shape (inference knows the values at bind), so they are
primitives whose Triton kernel writes constants; their gradient is zero, as in MXNet.

>>> import symgraph as mx
>>> x = mx.nd.zeros((2, 3, 4))
>>> mx.nd.shape_array(x).asnumpy(), mx.nd.size_array(x).asnumpy()
(array([2, 3, 4]), array([24]))
"""
from __future__ import annotations

import math

import torch

from .base import Case, OpDef, register


def _values(name: str, shape) -> list[int]:
    return list(shape) if name == "shape_array" else [math.prod(shape)]


def _forward(name: str):
    def forward(p, ins, aux, rt):
        return (torch.tensor(_values(name, ins[0].shape), dtype=torch.int64,
                             device=ins[0].device),)
    return forward


def _kernel(name: str):
    def triton_shape(p, ins, aux, rt):
        from ..kernels.elementwise import Program, run
        values = _values(name, ins[0].shape)
        expr = f"(offs * 0 + {values[-1]})"
        for i in range(len(values) - 2, -1, -1):  # a where-chain over the flat index
            expr = f"tl.where(offs == {i}, {values[i]}, {expr})"
        return run(Program(0, ((expr, ()),), ("t0",)), [], (len(values),), torch.int64,
                   device=ins[0].device)
    triton_shape.__name__ = f"triton_{name}"
    return triton_shape


def _shape(name: str):
    def rule(p, shapes):
        x = shapes[0]
        if not x:
            return None
        return shapes, [(len(x),) if name == "shape_array" else (1,)]
    return rule


for _name, _doc in (("shape_array", "The shape of ``data`` as a 1-D int64 array."),
                    ("size_array", "The number of elements of ``data`` as a (1,) int64 "
                                   "array.")):
    register(OpDef(
        name=_name, infer_shape=_shape(_name), forward=_forward(_name), kernel=_kernel(_name),
        infer_type=lambda p, t: (list(t), ["int64"]),
        gradient=lambda g, p, ins, outs, og: [g.zeros(ins[0])],
        cases=(Case(((2, 3, 4),), grad=False), Case(((5,),), grad=False)),
        doc=_doc))
