"""The shared data-parallel executor group (Module's _exec_group and executor_manager)."""
from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import symgraph as mx
from symgraph.executor_manager import DataParallelExecutorManager
from symgraph.module.executor_group import DataParallelExecutorGroup, _split_input_slice

Batch = namedtuple("Batch", "data label")


def _net():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def _group(contexts, workload=None):
    return DataParallelExecutorGroup(_net(), contexts, workload or [1] * len(contexts),
                                     [("data", (6, 4))], [("softmax_label", (6,))],
                                     ["fc_weight", "fc_bias"], for_training=True,
                                     inputs_need_grad=False)


def test_split_input_slice_matches_mxnet():
    # values from mxnet 1.9.1's executor_manager._split_input_slice
    assert _split_input_slice(10, [1, 1, 2]) == [slice(0, 2), slice(2, 4), slice(4, 10)]
    assert _split_input_slice(7, [1, 1]) == [slice(0, 4), slice(4, 7)]
    with pytest.raises(ValueError, match="empty"):
        _split_input_slice(2, [1, 1, 1])


def test_two_contexts_sum_to_the_one_context_gradient():
    rng = np.random.RandomState(0)
    w, b = rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (3,))
    batch = Batch([mx.nd.array(rng.uniform(-1, 1, (6, 4)))],
                  [mx.nd.array(rng.randint(0, 3, (6,)))])
    results = []
    for contexts in ([mx.cpu(0)], [mx.cpu(0), mx.cpu(1)]):
        group = _group(contexts)
        group.set_params({"fc_weight": mx.nd.array(w), "fc_bias": mx.nd.array(b)}, {})
        group.forward(batch, is_train=True)
        group.backward()
        grads = [sum(g.asnumpy() for g in block) for block in group.grad_arrays]
        results.append((group.get_outputs()[0].asnumpy(), grads))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6)
    for one, two in zip(results[0][1], results[1][1]):
        np.testing.assert_allclose(one, two, rtol=1e-5, atol=1e-6)


def test_get_params_averages_and_update_metric_sees_every_slice():
    group = _group([mx.cpu(0), mx.cpu(1)])
    group.param_arrays[0][0][:] = 1.0
    group.param_arrays[0][1][:] = 3.0
    args = {}
    group.get_params(args, {})
    assert float(args["fc_weight"].asnumpy().mean()) == 2.0

    class Count:
        def __init__(self):
            self.seen = 0

        def update(self, labels, preds):
            self.seen += labels[0].shape[0]
    batch = Batch([mx.nd.ones((6, 4))], [mx.nd.zeros((6,))])
    group.forward(batch, is_train=False)
    metric = Count()
    group.update_metric(metric, batch.label)
    assert metric.seen == 6


def test_executor_manager_is_the_same_group():
    class Iter:
        batch_size = 6
        provide_data = [("data", (6, 4))]
        provide_label = [("softmax_label", (6,))]
    net = _net()
    manager = DataParallelExecutorManager(net, [mx.cpu(0), mx.cpu(1)], Iter(),
                                          net.list_arguments(), ["fc_weight", "fc_bias"], [])
    assert isinstance(manager.execgrp, DataParallelExecutorGroup)
    manager.load_data_batch(Batch([mx.nd.ones((6, 4))], [mx.nd.zeros((6,))]))
    manager.forward(is_train=True)
    manager.backward()
    assert len(manager.grad_arrays) == 2 and len(manager.grad_arrays[0]) == 2
    args = {"fc_weight": mx.nd.zeros((3, 4)), "fc_bias": mx.nd.zeros((3,))}
    manager.copy_to(args, {})
