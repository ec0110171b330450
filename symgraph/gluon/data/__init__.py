"""``mx.gluon.data``: datasets, samplers, the DataLoader and ``vision`` (MXNet 1.9.1).

>>> from symgraph.gluon import data
>>> len(data.DataLoader(data.SimpleDataset(list(range(5))), batch_size=2))
3
"""
from . import vision  # noqa: F401  (as ``mxnet.gluon.data`` does)
from .dataloader import *  # noqa: F403
from .dataset import *  # noqa: F403
from .sampler import *  # noqa: F403
