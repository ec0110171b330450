"""AlexNet (Krizhevsky, 2014, arXiv:1404.5997), as MXNet 1.9.1's
``gluon.model_zoo.vision.alexnet``.

>>> net = alexnet(classes=10, prefix='a_')
>>> list(net.collect_params().keys())[-4:]
['a_dense1_weight', 'a_dense1_bias', 'a_dense2_weight', 'a_dense2_bias']
"""
from __future__ import annotations

from ... import nn
from ...block import HybridBlock
from ..model_store import _CPU, _ROOT, _load_pretrained

__all__ = ["AlexNet", "alexnet"]

# (channels, kernel, padding, stride, max pooling after it)
_CONVS = [(64, 11, 2, 4, True), (192, 5, 2, 1, True), (384, 3, 1, 1, False),
          (256, 3, 1, 1, False), (256, 3, 1, 1, True)]


class AlexNet(HybridBlock):
    """AlexNet: five convolutions, three max poolings and two 4096-unit Dense layers with
    dropout in ``features``, then the Dense ``output``.

    Parameters
    ----------
    classes : int, default 1000
        Number of classes of the output layer.
    """

    def __init__(self, classes: int = 1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            with self.features.name_scope():
                for channels, kernel, padding, stride, pool in _CONVS:
                    self.features.add(nn.Conv2D(channels, kernel_size=kernel, strides=stride,
                                                padding=padding, activation="relu"))
                    if pool:
                        self.features.add(nn.MaxPool2D(pool_size=3, strides=2))
                self.features.add(nn.Flatten())
                for _ in range(2):
                    self.features.add(nn.Dense(4096, activation="relu"), nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def alexnet(pretrained: bool = False, ctx=_CPU,
            root: str = _ROOT, **kwargs) -> AlexNet:
    """AlexNet; ``pretrained`` loads ``alexnet``'s weights from ``root`` (see
    :func:`~symgraph.gluon.model_zoo.vision.get_resnet` for the arguments)."""
    net = AlexNet(**kwargs)
    if pretrained:
        _load_pretrained(net, "alexnet", ctx, root)
    return net
