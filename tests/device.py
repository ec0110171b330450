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

if ON_GPU:
    # the Triton kernels compute fp32 products in IEEE precision; torch's cuDNN references
    # would use TF32 by default, which is ~1e-3 off: compare like with like
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False


def context():
    """The symgraph Context matching the test device."""
    import symgraph as mx
    return mx.gpu(0) if ON_GPU else mx.cpu()
