"""CPU max pooling runs torch's channels-last kernel from 8 channels up: the same values, the
same first-maximum argmax and gradients as the channel-first path, returned contiguous.
Prepared 2-D convolutions equal the op's forward."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import symgraph as mx
from symgraph.attrs import parse_params
from symgraph.ops import pooling
from symgraph.ops.base import Runtime, get_op


@pytest.mark.parametrize("shape,kernel,stride", [((3, 8, 9, 10), 2, 2), ((2, 16, 7, 7), 3, 1),
                                                 ((2, 12, 6, 6), 3, 2)])
def test_channels_last_max_pool_equals_channel_first(shape, kernel, stride):
    x = torch.randn(shape)
    x[:, :, 0, :2] = 1.5  # ties: both must pick the first maximum of a window
    x[0, 0, 2, 3] = float("nan")
    y, idx = pooling._max_pool(x, kernel, stride, return_indices=True)
    want_y, want_idx = F.max_pool2d(x, kernel, stride, return_indices=True)
    assert y.is_contiguous() and idx.is_contiguous()
    torch.testing.assert_close(y, want_y, equal_nan=True, rtol=0, atol=0)
    assert torch.equal(idx, want_idx)
    torch.testing.assert_close(pooling._max_pool(x, kernel, stride), want_y, equal_nan=True,
                               rtol=0, atol=0)


def test_max_pooling_gradient_with_many_channels_matches_few():
    """The same data as 1 channel at a time (channel-first path) and as 10 channels."""
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (2, 10, 6, 6)).astype(np.float32)
    x[:, :, 0, 0] = x[:, :, 0, 1]  # a tie in the first window
    data = mx.sym.Variable("data")
    net = mx.sym.Pooling(data, kernel=(2, 2), stride=(2, 2), pool_type="max")
    dy = rng.uniform(-1, 1, (2, 10, 3, 3)).astype(np.float32)

    def run(xs, dys):
        exe = net.simple_bind(mx.cpu(), data=xs.shape)
        exe.forward(is_train=True, data=mx.nd.array(xs))
        exe.backward(mx.nd.array(dys))
        return exe.outputs[0].asnumpy(), exe.grad_dict["data"].asnumpy()
    y, dx = run(x, dy)
    for c in range(10):
        yc, dxc = run(x[:, c:c + 1], dy[:, c:c + 1])
        np.testing.assert_array_equal(y[:, c:c + 1], yc)
        np.testing.assert_array_equal(dx[:, c:c + 1], dxc)


@pytest.mark.parametrize("channels,attrs", [(8, {}), (12, {"stride": "(2, 1)", "pad": "(1, 2)"}),
                                            (4, {}), (16, {"num_group": "2"})])
def test_prepared_convolution_matches_channel_first(channels, attrs):
    op = get_op("Convolution")
    p = parse_params(op.params, {"kernel": "(3, 3)", "num_filter": "6", **attrs}, op.name)
    x = torch.randn(2, channels, 9, 8)
    w = torch.randn(6, channels // p.num_group, 3, 3)
    b = torch.randn(6)
    want = op.forward(p, [x, w, b], [], Runtime())[0]
    fn = op.prepare(p, [tuple(x.shape), tuple(w.shape), (6,)], [tuple(want.shape)])
    (got,) = fn(p, [x, w, b], [], Runtime())
    assert got.is_contiguous() and got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
