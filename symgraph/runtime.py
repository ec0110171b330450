"""``mx.runtime``: which of MXNet's build features this process provides.

MXNet reports the options its library was compiled with. symgraph answers the same 32
questions for itself on this machine: ``CUDA`` when PyTorch sees a GPU (``CUDNN`` and
``NCCL`` when PyTorch has them too), CPU instruction sets from PyTorch's CPU capability,
``OPENMP``/``BLAS_*``/``LAPACK`` from PyTorch's build, ``DIST_KVSTORE`` (symgraph has the
distributed stores). Features of MXNet's own engine that symgraph does not reproduce (MKLDNN
operators and subgraphs, TensorRT, runtime CUDA compilation, the profiler, TVM operators,
OpenCV image I/O, Caffe, int64 tensor sizes, jemalloc, the signal handler, debug builds) are
off. Features are computed on the first ``Features()``, never at import.

>>> from symgraph.runtime import Features
>>> features = Features()
>>> len(features), 'CUDA' in features, features is Features()
(32, True, True)
>>> features.is_enabled('TVM_OP')
False
>>> features.is_enabled('no such feature')  # doctest: +ELLIPSIS
Traceback (most recent call last):
RuntimeError: Feature 'NO SUCH FEATURE' is unknown, known features are: ['CUDA', ...]
"""
from __future__ import annotations

import collections
import platform

from .base import check_call  # noqa: F401 - MXNet's mx.runtime names it

# MXNet 1.9.1's feature names, in its order (libinfo.h)
FEATURE_NAMES = (
    "CUDA", "CUDNN", "NCCL", "CUDA_RTC", "TENSORRT", "CPU_SSE", "CPU_SSE2", "CPU_SSE3",
    "CPU_SSE4_1", "CPU_SSE4_2", "CPU_SSE4A", "CPU_AVX", "CPU_AVX2", "OPENMP", "SSE", "F16C",
    "JEMALLOC", "BLAS_OPEN", "BLAS_ATLAS", "BLAS_MKL", "BLAS_APPLE", "LAPACK", "MKLDNN",
    "OPENCV", "CAFFE", "PROFILER", "DIST_KVSTORE", "CXX14", "INT64_TENSOR_SIZE",
    "SIGNAL_HANDLER", "DEBUG", "TVM_OP",
)


class Feature:
    """One feature: ``name`` and whether it is ``enabled``.

    >>> Feature('CUDA', False)
    ✖ CUDA
    """

    __slots__ = ("_name", "_enabled")

    def __init__(self, name: str, enabled: bool):
        self._name, self._enabled = name, bool(enabled)

    @property
    def name(self) -> str:
        """The feature's name."""
        return self._name

    @property
    def enabled(self) -> bool:
        """True if this process provides the feature."""
        return self._enabled

    def __repr__(self) -> str:
        return f"{'✔' if self._enabled else '✖'} {self._name}"


def _cuda_features() -> set[str]:
    import torch
    if not torch.cuda.is_available():
        return set()
    found = {"CUDA"}
    if torch.backends.cudnn.is_available():
        found.add("CUDNN")
    import torch.distributed as dist
    if dist.is_available() and dist.is_nccl_available():
        found.add("NCCL")
    return found


def _cpu_features() -> set[str]:
    """Instruction sets the CPU kernels PyTorch picked at run time may use."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return set()
    import torch
    found = {"CPU_SSE", "CPU_SSE2", "CPU_SSE3"}  # every x86-64 CPU
    capability = torch.backends.cpu.get_cpu_capability()
    if capability.startswith(("AVX2", "AVX512")):
        found |= {"CPU_SSE4_1", "CPU_SSE4_2", "CPU_AVX", "CPU_AVX2", "F16C"}
    return found


def _library_features() -> set[str]:
    import torch
    found = {"DIST_KVSTORE"}
    if torch.backends.openmp.is_available():
        found.add("OPENMP")
    if torch.backends.mkl.is_available():
        found.add("BLAS_MKL")
    if "blas_info=open" in torch.__config__.show().lower().replace(" ", ""):
        found.add("BLAS_OPEN")
    if torch._C.has_lapack:
        found.add("LAPACK")
    return found


def feature_list() -> list[Feature]:
    """Every feature MXNet 1.9.1 names, enabled or not, in MXNet's order.

    >>> [f.name for f in feature_list()][:3]
    ['CUDA', 'CUDNN', 'NCCL']
    """
    enabled = _cuda_features() | _cpu_features() | _library_features()
    return [Feature(name, name in enabled) for name in FEATURE_NAMES]


class Features(collections.OrderedDict):
    """The features by name, one instance per process."""

    instance = None

    def __new__(cls):
        if cls.instance is None:
            cls.instance = super().__new__(cls)
            collections.OrderedDict.__init__(cls.instance,
                                             [(f.name, f) for f in feature_list()])
        return cls.instance

    def __init__(self):  # filled once in __new__; a second Features() must not reset it
        pass

    def __repr__(self) -> str:
        return str(list(self.values()))

    def is_enabled(self, feature_name: str) -> bool:
        """Whether a feature (case-insensitive name) is enabled; RuntimeError if unknown."""
        name = feature_name.upper()
        if name not in self:
            raise RuntimeError(f"Feature '{name}' is unknown, known features are: "
                               f"{list(self.keys())}")
        return self[name].enabled
