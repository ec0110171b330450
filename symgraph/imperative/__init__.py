"""The imperative layer: autodiff over NDArray calls, above the executor.

Modules, each importing only those before it (and ``ndarray``, ``symbol``, ``compiler``):

- :mod:`~symgraph.imperative.tape`: recorded calls (``Node``) and the backward pass over them;
- :mod:`~symgraph.imperative.cached_graph`: a Symbol called on NDArrays through bound
  executors (``CachedGraph``; MXNet's ``CachedOp``);
- :mod:`~symgraph.imperative.deferred`: recorded graph calls composed into one graph;
- :mod:`~symgraph.imperative.recorded`: NDArray arithmetic under ``record()`` (the recorder);
- :mod:`~symgraph.imperative.autograd`: ``mx.autograd``, which installs the recorder in
  ``symgraph.ndarray.hooks`` and the backward pass of ``NDArray.backward``.

``NDArray`` imports none of these: it consults ``symgraph.ndarray.hooks``.

>>> import symgraph as mx
>>> from symgraph import imperative
>>> imperative.autograd is mx.autograd
True
"""
from . import autograd

__all__ = ["autograd"]
