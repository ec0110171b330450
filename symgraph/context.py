"""Devices: ``mx.cpu(i)``, ``mx.gpu(i)``, ``current_context()`` and ``with ctx:``."""
from __future__ import annotations

import threading
import warnings

import torch

from .base import (  # noqa: F401 - check_call, with_metaclass: MXNet's mx.context names
    DeviceError,
    MXNetError,
    _MXClassPropertyMetaClass,
    check_call,
    classproperty,
    with_metaclass,
)

_DEPRECATED = ("Context.default_ctx has been deprecated. Please use Context.current_context() "
               "instead. Please use test_utils.set_default_context to set a default context")


class Context(metaclass=_MXClassPropertyMetaClass):
    """A device on which arrays live and executors run.

    >>> ctx = Context('cpu', 0)
    >>> ctx, ctx.device_type, ctx.device_id
    (cpu(0), 'cpu', 0)
    >>> with gpu(1):
    ...     current_context()
    gpu(1)
    >>> current_context()
    cpu(0)

    A GPU context can be made anywhere; arrays on it need a CUDA device:

    >>> import symgraph as mx
    >>> mx.nd.zeros((2,), ctx=gpu(7))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    symgraph.base.DeviceError: gpu(7) is not available: ...
    """

    devtype2str = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}
    devstr2type = {v: k for k, v in devtype2str.items()}
    # the innermost ``with ctx:`` context of each thread (MXNet's name for it)
    _default_ctx = threading.local()

    def __init__(self, device_type, device_id: int = 0):
        if isinstance(device_type, Context):
            device_type, device_id = device_type.device_type, device_type.device_id
        if isinstance(device_type, int):
            device_type = self.devtype2str.get(device_type, device_type)
        if device_type not in self.devstr2type:
            raise MXNetError(f"Unknown device type {device_type!r}; expected one of "
                             f"{sorted(self.devstr2type)}")
        self.device_typeid = self.devstr2type[device_type]
        self.device_id = int(device_id)
        self._old_ctx: Context | None = None

    @property
    def device_type(self) -> str:
        return self.devtype2str[self.device_typeid]

    @property
    def torch_device(self) -> torch.device:
        """The torch device arrays on this context are allocated on; a GPU context whose
        device is not visible raises :class:`DeviceError` (an MXNetError)."""
        if self.device_typeid == 2:
            return _cuda_device(self)
        return torch.device("cpu")

    @classproperty
    def default_ctx(cls) -> Context:
        """Deprecated (as in MXNet): the current context; ``Context.default_ctx = ctx`` sets it.
        """
        warnings.warn(_DEPRECATED, DeprecationWarning, stacklevel=2)
        return current_context()

    @default_ctx.setter
    def default_ctx(cls, value: Context) -> None:
        warnings.warn(_DEPRECATED, DeprecationWarning, stacklevel=2)
        cls._default_ctx.value = value

    def __hash__(self) -> int:
        return hash((self.device_typeid, self.device_id))

    def __eq__(self, other) -> bool:
        return (isinstance(other, Context) and self.device_typeid == other.device_typeid
                and self.device_id == other.device_id)

    def __repr__(self) -> str:
        return f"{self.device_type}({self.device_id})"

    def __enter__(self) -> Context:
        self._old_ctx = current_context()
        Context._default_ctx.value = self
        return self

    def __exit__(self, *exc) -> None:
        Context._default_ctx.value = self._old_ctx

    def empty_cache(self) -> None:
        """Release cached device memory (no-op on CPU)."""
        if self.device_typeid == 2 and torch.cuda.is_available():
            torch.cuda.empty_cache()


def cpu(device_id: int = 0) -> Context:
    """The CPU context. ``device_id`` is kept for MXNet compatibility."""
    return Context("cpu", device_id)


def cpu_pinned(device_id: int = 0) -> Context:
    """Page-locked CPU memory (treated as CPU memory)."""
    return Context("cpu_pinned", device_id)


def gpu(device_id: int = 0) -> Context:
    """The GPU context; arrays are placed on ``cuda:device_id`` when first allocated."""
    return Context("gpu", device_id)


def num_gpus() -> int:
    """Number of visible CUDA devices (0 without CUDA, as MXNet's CPU build says).

    >>> num_gpus() >= 0
    True
    """
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _cuda_device(ctx: Context) -> torch.device:
    count = num_gpus()
    if ctx.device_id >= count:
        seen = ("no CUDA device (torch.cuda.is_available() is False)" if count == 0
                else f"{count} CUDA device(s), gpu(0)..gpu({count - 1})")
        raise DeviceError(f"{ctx} is not available: symgraph sees {seen}; "
                          "allocate on mx.cpu() or run where that GPU is visible")
    return torch.device("cuda", ctx.device_id)


def gpu_memory_info(device_id: int = 0) -> tuple[int, int]:
    """Free and total bytes of a GPU's memory; without that GPU an MXNetError, as MXNet's
    CPU build raises.

    >>> gpu_memory_info(99)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    symgraph.base.DeviceError: gpu(99) is not available: ...
    """
    device = _cuda_device(Context("gpu", device_id))
    free, total = torch.cuda.mem_get_info(device)
    return int(free), int(total)


# contexts handed out for devices (and the default), made once: arrays ask per call
_OF_DEVICE: dict = {}


def current_context() -> Context:
    """The context set by the innermost ``with ctx:`` block (``cpu(0)`` by default)."""
    return getattr(Context._default_ctx, "value", None) or _of("cpu", 0)


def _of(kind: str, index: int) -> Context:
    ctx = _OF_DEVICE.get((kind, index))
    if ctx is None:
        ctx = _OF_DEVICE[(kind, index)] = Context(kind, index)
    return ctx


def context_of(device: torch.device) -> Context:
    """Context of a torch device."""
    if device.type == "cuda":
        return _of("gpu", device.index or 0)
    return _of("cpu", 0)
