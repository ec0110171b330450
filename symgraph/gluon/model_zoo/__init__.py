"""``mx.gluon.model_zoo``: MXNet 1.9.1's predefined vision models (``vision``) and the
local store of their pretrained weights (``model_store``; symgraph never downloads).

>>> from symgraph.gluon.model_zoo import vision
>>> net = vision.get_model('resnet18_v1', classes=10)
>>> type(net).__name__, net.output
('ResNetV1', Dense(512 -> 10, linear))
"""
from __future__ import annotations

from . import model_store, vision

__all__ = ["model_store", "vision"]
