"""The LSTM language-model trainer: perplexity falls on the bundled corpus in a CI-sized run,
every epoch leaves a checkpoint, and a run resumed from a checkpoint equals the run that was
never interrupted."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from symgraph.examples import lstm_bucketing


def _args(out, *extra):
    return lstm_bucketing.parse_args(
        ["--out", str(out), "--max-sentences", "240", "--hidden", "24", "--embed", "16",
         "--buckets", "8,16,32,60", "--batch-size", "16", "--lr", "0.2", "--no-progress",
         *extra])


@pytest.mark.parametrize("cell", ["fused", "unfused"])
def test_perplexity_falls_and_checkpoints_each_epoch(tmp_path, caplog, cell):
    with caplog.at_level(logging.INFO):
        result = lstm_bucketing.train(_args(tmp_path, "--epochs", "3", "--cell", cell))
    ppl = [float(r.getMessage().rsplit("=", 1)[1]) for r in caplog.records
           if "Train-perplexity" in r.getMessage()]
    assert len(ppl) == 3 and ppl[-1] < ppl[0] * 0.8, ppl
    assert result["epochs"] == [0, 1, 2]
    for epoch in (1, 2, 3):
        assert (tmp_path / f"lstm_lm-{epoch:04d}.params").exists()
        assert (tmp_path / f"lstm_lm-{epoch:04d}.states").exists()
    assert lstm_bucketing.latest_checkpoint(result["prefix"]) == 3


def test_resumed_run_equals_uninterrupted(tmp_path):
    straight = lstm_bucketing.train(_args(tmp_path / "a", "--epochs", "2"))
    lstm_bucketing.train(_args(tmp_path / "b", "--epochs", "1"))
    resumed = lstm_bucketing.train(_args(tmp_path / "b", "--epochs", "2", "--resume"))
    assert resumed["epochs"] == [1]
    assert straight["params"].keys() == resumed["params"].keys()
    for name, value in straight["params"].items():
        np.testing.assert_allclose(resumed["params"][name], value, rtol=1e-5, atol=1e-6,
                                   err_msg=name)
