"""``mx.image.image``: MXNet's module of that name holds the functions, the augmenters and
``ImageIter``; symgraph keeps them in :mod:`.functions`, :mod:`.augment` and
:mod:`.iterator` and gathers them here.

>>> import symgraph as mx
>>> mx.image.image.ImageIter is mx.image.ImageIter
True
"""
from .augment import *  # noqa: F403 - MXNet's module exports these names
from .augment import __all__ as _augment_names
from .functions import *  # noqa: F403
from .functions import __all__ as _function_names
from .functions import _get_interp_method  # noqa: F401 - MXNet's private helper
from .iterator import *  # noqa: F403
from .iterator import __all__ as _iterator_names

__all__ = [*_function_names, *_augment_names, *_iterator_names]
