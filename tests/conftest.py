"""Shared pytest setup: fixed seeds for every test."""
from __future__ import annotations

import numpy as np
import pytest
import torch


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(0)
    torch.manual_seed(0)
    import symgraph as mx
    mx.random.seed(0)
    yield


def pytest_runtest_logreport(report):
    """With SYMGRAPH_FAILURE_LOG set, append each failure's traceback to that file as it
    happens (GPU sessions run under a time limit: a killed run keeps what failed and why)."""
    import os
    path = os.environ.get("SYMGRAPH_FAILURE_LOG")
    if path and report.failed:
        with open(path, "a") as f:
            f.write(f"## {report.nodeid} ({report.when})\n{report.longreprtext[-4000:]}\n\n")
