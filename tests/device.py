"""The device the kernel and op tests run on.

CPU by default (Triton kernels under the interpreter). ``SYMGRAPH_TEST_DEVICE=cuda`` runs the
same tests on the GPU, with compiled kernels: that is how the suite is run on a lent GPU
machine (see docs/gpu.md). Read once, at import; nothing else in the tests names a device.
"""
from __future__ import annotations

import os

import torch

NAME = os.environ.get("SYMGRAPH_TEST_DEVICE", "cpu")
TORCH = torch.device(NAME)
ON_GPU = TORCH.type == "cuda"


def context():
    """The symgraph Context matching the test device."""
    import symgraph as mx
    return mx.gpu(0) if ON_GPU else mx.cpu()
