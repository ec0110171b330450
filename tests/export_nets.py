"""The networks the export tests convert (ONNX, PyTorch): small versions of what MXNet
users train, each with its input shapes and how its inputs are drawn."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import symgraph as mx


@dataclass
class Net:
    name: str
    sym: object
    shapes: dict  # data input -> shape (labels included)
    ints: dict = field(default_factory=dict)  # input -> exclusive upper bound (indices)

    def inputs(self, seed: int = 0, batch: int | None = None) -> dict:
        """Input values (batch size replaced by ``batch`` when given)."""
        rng = np.random.RandomState(seed)
        out = {}
        for name, shape in self.shapes.items():
            shape = (batch,) + tuple(shape[1:]) if batch else tuple(shape)
            if name in self.ints:
                out[name] = rng.randint(0, self.ints[name], size=shape).astype(np.float32)
            else:
                out[name] = rng.uniform(-1, 1, size=shape).astype(np.float32)
        return out

    def params(self, seed: int = 1) -> tuple[dict, dict]:
        """Parameter values drawn for the input shapes (positive variances)."""
        arg_shapes, _, aux_shapes = self.sym.infer_shape(**self.shapes)
        rng = np.random.RandomState(seed)
        args = {n: mx.nd.array(rng.uniform(-0.5, 0.5, size=s))
                for n, s in zip(self.sym.list_arguments(), arg_shapes) if n not in self.shapes}
        aux = {n: mx.nd.array(rng.uniform(0.5, 1.5, size=s) if "var" in n else
                              rng.uniform(-0.2, 0.2, size=s))
               for n, s in zip(self.sym.list_auxiliary_states(), aux_shapes)}
        return args, aux


def mlp() -> Net:
    x = mx.sym.var("data")
    x = mx.sym.FullyConnected(x, num_hidden=16, name="fc1")
    x = mx.sym.Activation(x, act_type="relu", name="relu1")
    x = mx.sym.FullyConnected(x, num_hidden=5, name="fc2")
    return Net("mlp", mx.sym.SoftmaxOutput(x, name="softmax"),
               {"data": (3, 10), "softmax_label": (3,)}, {"softmax_label": 5})


def lenet() -> Net:
    x = mx.sym.var("data")
    for i, filters in enumerate((4, 6)):
        x = mx.sym.Convolution(x, kernel=(3, 3), num_filter=filters, name=f"conv{i}")
        x = mx.sym.Activation(x, act_type="tanh")
        x = mx.sym.Pooling(x, pool_type="max", kernel=(2, 2), stride=(2, 2))
    x = mx.sym.Flatten(x)
    x = mx.sym.FullyConnected(x, num_hidden=12, name="fc1")
    x = mx.sym.Activation(x, act_type="tanh")
    x = mx.sym.FullyConnected(x, num_hidden=4, name="fc2")
    return Net("lenet", mx.sym.SoftmaxOutput(x, name="softmax"),
               {"data": (2, 1, 14, 14), "softmax_label": (2,)}, {"softmax_label": 4})


def resnet_block() -> Net:
    data = mx.sym.var("data")
    x = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=4, no_bias=True,
                           name="conv1")
    x = mx.sym.BatchNorm(x, fix_gamma=False, name="bn1")
    x = mx.sym.Activation(x, act_type="relu")
    x = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=4, no_bias=True,
                           name="conv2")
    x = mx.sym.BatchNorm(x, fix_gamma=False, name="bn2")
    short = mx.sym.Convolution(data, kernel=(1, 1), num_filter=4, name="short")
    x = mx.sym.Activation(x + short, act_type="relu")
    x = mx.sym.Pooling(x, global_pool=True, pool_type="avg", kernel=(1, 1))
    x = mx.sym.FullyConnected(mx.sym.Flatten(x), num_hidden=3, name="fc")
    return Net("resnet_block", mx.sym.SoftmaxOutput(x, name="softmax"),
               {"data": (2, 3, 6, 7), "softmax_label": (2,)}, {"softmax_label": 3})


def lstm_unrolled(steps: int = 4) -> Net:
    data = mx.sym.var("data")
    embed = mx.sym.Embedding(data, input_dim=20, output_dim=6, name="embed")
    cell = mx.rnn.LSTMCell(num_hidden=8, prefix="lstm_")
    outputs, _ = cell.unroll(steps, inputs=embed, merge_outputs=True, layout="NTC")
    x = mx.sym.Reshape(outputs, shape=(-1, 8))
    x = mx.sym.FullyConnected(x, num_hidden=20, name="pred")
    label = mx.sym.Reshape(mx.sym.var("softmax_label"), shape=(-1,))
    return Net("lstm_unrolled", mx.sym.SoftmaxOutput(x, label, name="softmax"),
               {"data": (2, steps), "softmax_label": (2, steps)},
               {"data": 20, "softmax_label": 20})


def lstm_fused(steps: int = 5) -> Net:
    data = mx.sym.var("data")  # (T, N) token ids
    embed = mx.sym.Embedding(data, input_dim=20, output_dim=6, name="embed")
    rnn = mx.sym.RNN(embed, mx.sym.var("lstm_parameters"), mx.sym.var("lstm_state"),
                     mx.sym.var("lstm_state_cell"), mode="lstm", num_layers=2,
                     state_size=8, name="lstm")
    x = mx.sym.Reshape(rnn, shape=(-1, 8))
    x = mx.sym.FullyConnected(x, num_hidden=20, name="pred")
    return Net("lstm_fused", mx.sym.softmax(x, name="prob"),
               {"data": (steps, 2), "lstm_state": (2, 2, 8), "lstm_state_cell": (2, 2, 8)},
               {"data": 20})


def text_classifier() -> Net:
    data = mx.sym.var("data")
    x = mx.sym.Embedding(data, input_dim=30, output_dim=8, name="embed")
    x = mx.sym.mean(x, axis=1)
    x = mx.sym.FullyConnected(x, num_hidden=6, name="hidden")
    x = mx.sym.Activation(x, act_type="sigmoid")
    x = mx.sym.FullyConnected(x, num_hidden=2, name="out")
    return Net("text_classifier", mx.sym.SoftmaxOutput(x, name="softmax"),
               {"data": (4, 7), "softmax_label": (4,)}, {"data": 30, "softmax_label": 2})


def deconv_net() -> Net:
    x = mx.sym.var("data")
    x = mx.sym.Convolution(x, kernel=(3, 3), stride=(2, 2), num_filter=4, name="conv")
    x = mx.sym.LeakyReLU(x, act_type="leaky", slope=0.1)
    x = mx.sym.Deconvolution(x, kernel=(4, 4), stride=(2, 2), pad=(1, 1), num_filter=2,
                             name="deconv")
    x = mx.sym.Activation(x, act_type="sigmoid", name="out")
    return Net("deconv_net", x, {"data": (2, 3, 9, 9)})


NETS = {f.__name__: f for f in (mlp, lenet, resnet_block, lstm_unrolled, lstm_fused,
                                text_classifier, deconv_net)}
