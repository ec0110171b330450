"""mx.metric's module names and Perplexity's clipping of out-of-range labels (MXNet 1.9.1's
values in tests/fixtures/module_io_more)."""
from __future__ import annotations

import json
from pathlib import Path

import symgraph as mx
from tests import fixture_scripts

HERE = Path(__file__).parent / "fixtures" / "module_io_more"
GOLD = json.loads((HERE / "module_io_more.json").read_text())
SCENARIOS = fixture_scripts.load("module_io_more/scenarios.py")


def test_perplexity_clips_labels_like_mxnet(tmp_path):
    SCENARIOS.assert_close(SCENARIOS.run_perplexity(mx, str(tmp_path)), GOLD["perplexity"],
                           abs_tol=1e-8)


def test_metric_module_names():
    assert mx.metric.ndarray is mx.nd
    assert int in mx.metric.numeric_types and mx.metric.string_types == (str,)
