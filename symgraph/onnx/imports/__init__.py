"""ONNX op translations of the import: ``IMPORTERS[op_type](g, n) -> outputs``, one module
per family.

A translation reads its node ``n`` (:class:`~symgraph.onnx.importer.Node`: ``n.ins``,
``n.a`` attributes, ``n.name``, ``n.fail``) and the import state ``g``
(:class:`~symgraph.onnx.importer.Graph`: ``g.sym(name)``, ``g.const(name)``,
``g.shape(name)``, ``g.opset``) and returns one symbol (or numpy constant) per ONNX output
it produces; optional outputs it leaves off may not be read by later nodes. What a
translation cannot import exactly raises ``n.fail(reason)``: an import never builds a
symbol that computes something else.
"""
from __future__ import annotations

from . import elementwise, layers, tensor  # noqa: F401 - fill IMPORTERS
from .common import IMPORTERS

__all__ = ["IMPORTERS"]
