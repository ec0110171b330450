"""Model-zoo architectures through both exports (``tools/export_zoo/sweep.py`` runs all of
them and writes ``docs/export_zoo.md``; CI runs two small ones without inductor)."""
from __future__ import annotations

import pathlib

import pytest

import symgraph as mx
from tests import fixture_scripts

pytest.importorskip("onnxruntime")
sweep = fixture_scripts.load("export_zoo/sweep.py",
                             root=pathlib.Path(__file__).resolve().parents[1] / "tools")


@pytest.mark.parametrize("name", ["mobilenet0.25", "resnet18_v1"])
def test_zoo_architecture_exports_match(name):
    rec = sweep.check_model(mx, name, compile_=None)
    assert rec["status"] == "match", rec
