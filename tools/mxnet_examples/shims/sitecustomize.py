"""Names the example scripts use that Python 3.8 and NumPy 1.24/2.0 removed, restored for both
runs (MXNet's and symgraph's) only where missing. On the PYTHONPATH the runner sets; it touches
nothing of MXNet or symgraph."""
import time

import numpy as np

if not hasattr(time, "clock"):  # removed in Python 3.8; profiler_*.py time with it
    time.clock = time.perf_counter
for _name, _type in (("int", int), ("float", float), ("bool", bool), ("object", object)):
    if _name not in np.__dict__:  # np.int etc.: removed in NumPy 1.24 (custom_softmax.py)
        setattr(np, _name, _type)
_fromstring = np.fromstring


def _fromstring_binary(string, dtype=float, count=-1, *, sep="", **kwargs):
    """NumPy 2 removed fromstring's binary mode (train_mnist.py reads MNIST with it)."""
    if sep == "" and isinstance(string, (bytes, bytearray, memoryview)):
        return np.frombuffer(string, dtype=dtype, count=count).copy()
    return _fromstring(string, dtype=dtype, count=count, sep=sep, **kwargs)


np.fromstring = _fromstring_binary

if __import__("os").environ.get("SYNTH_ACCEPT_SHA1") == "1":
    # MXNet's run of gluon/mnist/mnist.py only: gluon.utils.download re-downloads any file whose
    # SHA-1 is not the real MNIST's; accept the synthetic files placed where it looks
    import mxnet.gluon.utils as _gluon_utils

    _gluon_utils.check_sha1 = lambda filename, sha1_hash: True
