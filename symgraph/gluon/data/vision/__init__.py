"""``mx.gluon.data.vision``: image datasets and ``transforms`` (MXNet 1.9.1).

>>> from symgraph.gluon.data import vision
>>> vision.transforms.ToTensor().__class__.__name__
'ToTensor'
"""
from . import transforms  # noqa: F401
from .datasets import *  # noqa: F403
