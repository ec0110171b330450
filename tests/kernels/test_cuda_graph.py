"""CUDA-graph capture and replay of bound plans (GPU only; skipped without CUDA)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import symgraph as mx
from symgraph import config
from symgraph.compiler import cuda_graph
from tests import device  # noqa: F401 - TF32 off on GPU runs

gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def test_cpu_plans_are_never_captured():
    net = mx.sym.relu(mx.sym.Variable("x"))
    exe = net.simple_bind(mx.cpu(), x=(2, 3))
    assert not cuda_graph.wanted(torch.device("cpu"), exe._plan.forward_train)


@pytest.mark.gpu
@gpu
def test_mlp_step_replayed_as_a_cuda_graph_matches_eager():
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=64, name="fc1")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.relu(net), num_hidden=10,
                                                     name="fc2"), name="softmax")
    execs = []
    for graphs in (True, False):
        with config.override(cuda_graphs=graphs):
            exe = net.simple_bind(mx.gpu(), data=(32, 100))
        rng = np.random.RandomState(0)
        for name, arr in exe.arg_dict.items():
            arr[:] = rng.randint(0, 10, arr.shape) if name == "softmax_label" else \
                rng.uniform(-0.1, 0.1, arr.shape)
        execs.append(exe)
    for _ in range(cuda_graph.WARMUP_CALLS + 2):
        for exe in execs:
            exe.forward(is_train=True)
            exe.backward()
    assert execs[0]._graphs[("backward", True)].graph is not None
    for name, grad in execs[0].grad_dict.items():
        if grad is not None:
            np.testing.assert_allclose(grad.asnumpy(), execs[1].grad_dict[name].asnumpy(),
                                       rtol=1e-5, atol=1e-6)
