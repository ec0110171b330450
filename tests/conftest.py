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
