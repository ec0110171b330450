"""``mx.image`` (``mx.img``): image decoding, augmentation and iterators, as MXNet 1.9.1.

>>> import symgraph as mx
>>> mx.image.scale_down((640, 480), (720, 120))
(640, 106)
"""
from . import detection, image  # noqa: F401 - MXNet's submodule names (mx.image.image)
from . import detection as det  # noqa: F401 - MXNet's short name
from .detection import *  # noqa: F403 - MXNet exports every name at package level
from .image import *  # noqa: F403
from .image import _get_interp_method  # noqa: F401 - mx.image._get_interp_method
