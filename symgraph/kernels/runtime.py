"""Launching Triton kernels: compiled on CUDA tensors, interpreted on CPU tensors.

``@kernel`` replaces ``@triton.jit``. The decorated object launches like a JIT function
(``k[grid](*args, **meta)``) and picks, per launch, the compiled kernel for CUDA tensors or
Triton's interpreter for CPU tensors, so one process can test on CPU and run on GPU without
setting ``TRITON_INTERPRET`` before import. Nothing is compiled until the first launch.
"""
from __future__ import annotations

import contextlib
import struct
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import torch

_compile_check: dict = {"target": None, "done": set(), "ptx": {}}


def compile_check(arch: int | None) -> None:
    """While set, every interpreted launch is also compiled ahead of time for ``sm_<arch>``
    (to cubin, no GPU needed), so code that only the GPU compiler rejects fails on CPU too.
    ``None`` turns it off."""
    _compile_check["target"] = arch
    _compile_check["done"].clear()
    _compile_check["ptx"].clear()


def compile_target() -> int | None:
    """The architecture ``compile_check`` compiles for, or None."""
    return _compile_check["target"]


def compiled_ptx(name: str) -> list[str]:
    """The PTX of every ahead-of-time compile of kernel ``name`` since ``compile_check``."""
    return _compile_check["ptx"].get(name, [])


def aot_compile(fn: Callable, args: tuple, kwargs: dict, arch: int) -> None:
    """Compile ``fn`` for ``sm_<arch>`` with these arguments, constexprs and launch options
    (``num_warps``, ``num_stages``: the configuration a GPU launch would compile)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import ASTSource, make_backend
    from triton.runtime.jit import create_function_from_signature
    target = GPUTarget("cuda", arch, 32)
    jit = triton.jit(fn)
    backend = make_backend(target)
    binder = create_function_from_signature(jit.signature, jit.params, backend)
    bound, specialization, options = binder(*args, **kwargs)
    key = (fn.__qualname__, repr(specialization), repr(sorted(kwargs.items())))
    if key in _compile_check["done"]:
        return
    options, signature, constexprs, attrs = jit._pack_args(backend, kwargs, bound,
                                                           specialization, options)
    compiled = triton.compile(ASTSource(jit, signature, constexprs, attrs), target=target,
                              options=options.__dict__)
    _compile_check["done"].add(key)
    _compile_check["ptx"].setdefault(fn.__name__, []).append(compiled.asm.get("ptx", ""))


class Kernel:
    """A Triton kernel function, jitted lazily for the device of its first tensor argument."""

    def __init__(self, fn: Callable, **options: Any):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        # launch options given at the decorator (``enable_fp_fusion=False``) apply to every
        # launch; the rest go to ``triton.jit``
        self._launch_defaults = {k: v for k, v in options.items() if k in _LAUNCH_OPTIONS}
        self._jit_options = {k: v for k, v in options.items() if k not in _LAUNCH_OPTIONS}
        self._compiled = None
        self._interpreted = None

    def _impl(self, device: torch.device):
        if device.type == "cuda":
            if self._compiled is None:
                import triton
                self._compiled = triton.jit(self.fn, **self._jit_options)
            return self._compiled
        if self._interpreted is None:
            from triton.runtime.interpreter import InterpretedFunction
            self._interpreted = InterpretedFunction(self.fn)
        return self._interpreted

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            device = next((a.device for a in args if isinstance(a, torch.Tensor)),
                          torch.device("cpu"))
            if self._launch_defaults:
                kwargs = {**self._launch_defaults, **kwargs}
            if device.type != "cuda" and _compile_check["target"] is not None:
                aot_compile(self.fn, args, kwargs, _compile_check["target"])
            return self._impl(device)[grid](*args, **kwargs)
        return launch

    def __repr__(self) -> str:
        return f"<triton kernel {self.__name__}>"


_LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion")


def kernel(fn: Callable | None = None, **options: Any):
    """Decorator: ``@kernel`` or ``@kernel(do_not_specialize=...)`` in place of ``@triton.jit``;
    launch options (``enable_fp_fusion=False``: no fused multiply-add, so a floor or compare
    of ``a * b + c`` sees the host's rounding) apply to every launch."""
    if fn is None:
        return lambda f: Kernel(f, **options)
    return Kernel(fn, **options)


# (device, key) -> the device tensor(s) built for it, least recently used first
_META: OrderedDict[tuple, Any] = OrderedDict()
META_CACHE_SIZE = 4096  # entries; data pointers of eager calls churn through it
# the metadata each CUDA-graph capture in progress reads, kept alive by its graph
_HELD: list[list] = []


def device_cached(key: tuple, build: Callable[[], Any], device):
    """The device copy of ``build()`` (a host tensor, or a tuple of them), made once per
    (device, key): launches of a step list then do no host-device copy, so the list can be
    captured as a CUDA graph (the eager warm-up calls before a capture create the entries
    it needs, and the capture holds what it read, see :func:`held_meta`; values first met
    inside a capture, such as a pointer table of outputs allocated from the graph's pool,
    come through a recorded copy from pinned memory, :func:`_staged`). Kernels must only
    read it."""
    device = torch.device(device)
    full = (device, key)
    value = _META.get(full)
    if value is None:
        host = build()
        if _capturing(device):  # new values inside a capture (a pointer table of outputs
            value = _staged(host, device, key)  # the graph's pool allocated): a recorded copy
        else:
            _staging_arena(device)
            value = tuple(t.to(device) for t in host) if isinstance(
                host, (tuple, list)) else host.to(device)
        _META[full] = value
        if len(_META) > META_CACHE_SIZE:
            _META.popitem(last=False)
    else:
        _META.move_to_end(full)
    if _HELD:
        _HELD[-1].append(value)
    return value


# pinned host memory for metadata first met inside a CUDA-graph capture: the graph records a
# copy from it, so what is written there stays unchanged for the life of the process
STAGING_BYTES = 1 << 20
_STAGING: dict = {"arena": None, "used": 0}


def _capturing(device: torch.device) -> bool:
    return device.type == "cuda" and torch.cuda.is_current_stream_capturing()


def _staging_arena(device: torch.device) -> None:
    """Pins the staging arena at the first eager CUDA launch (pinning inside a capture is
    not allowed; every capture follows eager calls)."""
    if device.type == "cuda" and _STAGING["arena"] is None:
        _STAGING["arena"] = torch.empty(STAGING_BYTES, dtype=torch.uint8, pin_memory=True)


def _staged(host, device: torch.device, key: tuple):
    """The device copy of ``host`` (a tensor or a tuple of them) made by an asynchronous
    copy that the capture records, from a slot of the pinned arena written once here: the
    graph's replays copy the same bytes, with no host work."""
    parts = host if isinstance(host, (tuple, list)) else (host,)
    out = []
    for t in parts:
        t = t.contiguous()
        start = -(-_STAGING["used"] // 16) * 16
        nbytes = t.numel() * t.element_size()
        arena = _STAGING["arena"]
        if arena is None or start + nbytes > arena.numel():
            raise RuntimeError(f"kernel metadata {key} first met inside a CUDA-graph capture "
                               "does not fit the pinned staging arena (STAGING_BYTES)")
        slot = arena[start:start + nbytes].view(t.dtype).view(t.shape)
        slot.copy_(t)
        _STAGING["used"] = start + nbytes
        dev = torch.empty(t.shape, dtype=t.dtype, device=device)
        dev.copy_(slot, non_blocking=True)
        out.append(dev)
    return tuple(out) if isinstance(host, (tuple, list)) else out[0]


def device_meta(values, device, dtype=torch.int64) -> torch.Tensor:
    """``values`` (strides, sizes, geometry, data pointers) as a read-only device tensor,
    copied once per distinct values (:func:`device_cached`)."""
    values = tuple(values)
    return device_cached(("meta", dtype, values), lambda: torch.tensor(values, dtype=dtype),
                         device)


@contextlib.contextmanager
def held_meta():
    """Collects the metadata tensors launches read inside the block (a CUDA-graph
    capture): the caller keeps the list as long as the graph, so eviction from the cache
    never frees memory a graph reads."""
    held: list = []
    _HELD.append(held)
    try:
        yield held
    finally:
        _HELD.pop()


def fp32(value: float) -> float:
    """``value`` rounded to float32, as MXNet's fp32 host math (struct: torch.compile folds
    it without a graph break)."""
    return struct.unpack("f", struct.pack("f", value))[0]


def cdiv(a: int, b: int) -> int:
    """Ceiling division (grid sizes)."""
    return -(-a // b)


def block_for(n: int, cap: int = 1024, floor: int = 16) -> int:
    """The power of two >= n, within [floor, cap]: a block size for a row of length n."""
    b = floor
    while b < n and b < cap:
        b *= 2
    return b


def on_cpu(*tensors: torch.Tensor) -> bool:
    """Whether the launch will be interpreted (tests keep grids small there)."""
    return all(t.device.type != "cuda" for t in tensors)
