"""``mx.image.detection``: the detection augmenters (:mod:`.det_augment`) and
``ImageDetIter`` (:mod:`.det_iterator`), gathered under MXNet's module name.

>>> import symgraph as mx
>>> mx.image.detection.ImageDetIter is mx.image.ImageDetIter
True
"""
from .det_augment import *  # noqa: F403 - MXNet's module exports these names
from .det_augment import __all__ as _augment_names
from .det_iterator import ImageDetIter

__all__ = [*_augment_names, "ImageDetIter"]
