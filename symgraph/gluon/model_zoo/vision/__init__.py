"""``mx.gluon.model_zoo.vision``: MXNet 1.9.1's predefined image classification models,
with the same classes, factory functions, parameter names and structure.

AlexNet, DenseNet-BC, Inception v3, ResNet V1/V2, SqueezeNet, VGG, MobileNet and
MobileNetV2. A factory builds a model with freshly initialized-on-demand parameters;
``pretrained=True`` loads MXNet's published weights from ``root`` when that file is
already there (symgraph never downloads: see :mod:`.model_store`). Pretrained models
expect (N, 3, H, W) RGB images in [0, 1] normalized with mean (0.485, 0.456, 0.406) and
standard deviation (0.229, 0.224, 0.225), H and W at least 224 (299 for Inception v3).

>>> import symgraph as mx
>>> net = get_model('mobilenet0.25', classes=5)
>>> net.initialize()
>>> net(mx.nd.ones((2, 3, 32, 32))).shape
(2, 5)
>>> get_model('resnet9_v1')
Traceback (most recent call last):
...
ValueError: Model resnet9_v1 is not supported. Available options are
...
"""
from __future__ import annotations

from .alexnet import AlexNet, alexnet
from .densenet import DenseNet, densenet121, densenet161, densenet169, densenet201
from .inception import Inception3, inception_v3
from .mobilenet import (
    MobileNet,
    MobileNetV2,
    get_mobilenet,
    get_mobilenet_v2,
    mobilenet0_5,
    mobilenet0_25,
    mobilenet0_75,
    mobilenet1_0,
    mobilenet_v2_0_5,
    mobilenet_v2_0_25,
    mobilenet_v2_0_75,
    mobilenet_v2_1_0,
)
from .resnet import (
    BasicBlockV1,
    BasicBlockV2,
    BottleneckV1,
    BottleneckV2,
    ResNetV1,
    ResNetV2,
    get_resnet,
    resnet18_v1,
    resnet18_v2,
    resnet34_v1,
    resnet34_v2,
    resnet50_v1,
    resnet50_v2,
    resnet101_v1,
    resnet101_v2,
    resnet152_v1,
    resnet152_v2,
)
from .squeezenet import SqueezeNet, squeezenet1_0, squeezenet1_1
from .vgg import (
    VGG,
    get_vgg,
    vgg11,
    vgg11_bn,
    vgg13,
    vgg13_bn,
    vgg16,
    vgg16_bn,
    vgg19,
    vgg19_bn,
)

__all__ = ["AlexNet", "alexnet", "DenseNet", "densenet121", "densenet161", "densenet169",
           "densenet201", "Inception3", "inception_v3", "ResNetV1", "ResNetV2",
           "BasicBlockV1", "BasicBlockV2", "BottleneckV1", "BottleneckV2", "resnet18_v1",
           "resnet34_v1", "resnet50_v1", "resnet101_v1", "resnet152_v1", "resnet18_v2",
           "resnet34_v2", "resnet50_v2", "resnet101_v2", "resnet152_v2", "get_resnet",
           "SqueezeNet", "squeezenet1_0", "squeezenet1_1", "VGG", "vgg11", "vgg13", "vgg16",
           "vgg19", "vgg11_bn", "vgg13_bn", "vgg16_bn", "vgg19_bn", "get_vgg", "MobileNet",
           "MobileNetV2", "mobilenet1_0", "mobilenet_v2_1_0", "mobilenet0_75",
           "mobilenet_v2_0_75", "mobilenet0_5", "mobilenet_v2_0_5", "mobilenet0_25",
           "mobilenet_v2_0_25", "get_mobilenet", "get_mobilenet_v2", "get_model"]

# the names get_model accepts (MXNet's pretrained file names) -> factory
_MODELS = {
    "resnet18_v1": resnet18_v1, "resnet34_v1": resnet34_v1, "resnet50_v1": resnet50_v1,
    "resnet101_v1": resnet101_v1, "resnet152_v1": resnet152_v1,
    "resnet18_v2": resnet18_v2, "resnet34_v2": resnet34_v2, "resnet50_v2": resnet50_v2,
    "resnet101_v2": resnet101_v2, "resnet152_v2": resnet152_v2,
    "vgg11": vgg11, "vgg13": vgg13, "vgg16": vgg16, "vgg19": vgg19,
    "vgg11_bn": vgg11_bn, "vgg13_bn": vgg13_bn, "vgg16_bn": vgg16_bn, "vgg19_bn": vgg19_bn,
    "alexnet": alexnet,
    "densenet121": densenet121, "densenet161": densenet161, "densenet169": densenet169,
    "densenet201": densenet201,
    "squeezenet1.0": squeezenet1_0, "squeezenet1.1": squeezenet1_1,
    "inceptionv3": inception_v3,
    "mobilenet1.0": mobilenet1_0, "mobilenet0.75": mobilenet0_75,
    "mobilenet0.5": mobilenet0_5, "mobilenet0.25": mobilenet0_25,
    "mobilenetv2_1.0": mobilenet_v2_1_0, "mobilenetv2_0.75": mobilenet_v2_0_75,
    "mobilenetv2_0.5": mobilenet_v2_0_5, "mobilenetv2_0.25": mobilenet_v2_0_25,
}


def get_model(name: str, **kwargs):
    """The predefined model ``name`` (case-insensitive, e.g. ``'resnet50_v1'``,
    ``'mobilenet0.25'``, ``'squeezenet1.1'``, ``'inceptionv3'``).

    Parameters
    ----------
    name : str
        Name of the model.
    **kwargs
        ``pretrained``, ``classes``, ``ctx``, ``root`` and the model's own arguments.

    Returns
    -------
    HybridBlock
        The model.
    """
    name = name.lower()
    if name not in _MODELS:
        raise ValueError(f"Model {name} is not supported. Available options are\n\t"
                         + "\n\t".join(sorted(_MODELS)))
    return _MODELS[name](**kwargs)
