"""Fused elementwise kernels generated from expression programs.

A :class:`Program` is a straight-line list of Triton expressions over the inputs
(``x0, x1, ...``) and earlier temporaries (``t0, t1, ...``); :func:`run` generates one
Triton kernel per (program, rank, broadcast pattern, compute dtype), writes its source to
the kernel cache directory (readable, and a second process reuses it), and launches it.
Inputs may broadcast to the output shape (stride-0 dimensions); math runs in fp32 (fp64
for fp64 inputs) and results are cast to the output dtype.

Bytes moved by one launch: every input read once, every output written once.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import stat
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .runtime import block_for, cdiv
from .table import KernelSpec, tensor_bytes

_lock = threading.Lock()
_compiled: dict[str, object] = {}
_by_program: dict[tuple, object] = {}
_read_masks: dict = {}
_settings = {"cache_dir": None}


def set_cache_dir(path: str | None) -> None:
    """Where generated kernel sources are written (default: a per-process temp folder)."""
    _settings["cache_dir"] = path


def _cache_dir() -> str:
    """The ``fused`` folder of the cache: created private (0700); one another user owns or
    can write to is not trusted (its sources could be swapped), and a private temp folder is
    used instead."""
    if _settings["cache_dir"] is None:
        _settings["cache_dir"] = tempfile.mkdtemp(prefix="symgraph-kernels-")
    path = os.path.join(_settings["cache_dir"], "fused")
    os.makedirs(path, mode=0o700, exist_ok=True)
    if not _private(path):
        _settings["cache_dir"] = tempfile.mkdtemp(prefix="symgraph-kernels-")
        path = os.path.join(_settings["cache_dir"], "fused")
        os.makedirs(path, mode=0o700)
    return path


def _private(path: str) -> bool:
    """Whether only this user can change what is in ``path``."""
    info = os.stat(path)
    return (not hasattr(os, "geteuid") or info.st_uid == os.geteuid()) \
        and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


@dataclass(frozen=True)
class Program:
    """``body[i] = (template, operands)`` defines ``t{i}``; ``outputs`` names what is stored.

    A template is a ``str.format`` pattern over its operands, e.g. ``"tl.maximum({0}, 0.0)"``;
    operands are ``x<k>`` (input k), ``t<i>`` (an earlier result) or numeric literals.
    """

    n_inputs: int
    body: tuple[tuple[str, tuple[str, ...]], ...]
    outputs: tuple[str, ...]

    def reads(self, k: int) -> bool:
        """Whether any expression (or output) reads input ``x<k>``."""
        name = f"x{k}"
        return name in self.outputs or any(
            ops[i] == name and f"{{{i}}}" in tpl for tpl, ops in self.body
            for i in range(len(ops)))

    def expression(self) -> str:
        """The program as readable text (what ``debug_str`` shows)."""
        lines = [f"t{i} = {tpl.format(*ops)}" for i, (tpl, ops) in enumerate(self.body)]
        return "; ".join(lines) + f" -> {', '.join(self.outputs)}"


def _index_code(k: int, rank: int) -> list[str]:
    """Offset into input k from the linear output index, via per-dim coordinates."""
    terms = [f"((offs // ostep{d}) % odim{d}) * s{k}_{d}" for d in range(rank)]
    return [f"    i{k} = " + (" + ".join(terms) if terms else "offs * 0")]


def _source(prog: Program, name: str, rank: int, contiguous: tuple[bool, ...],
            acc: str) -> str:
    ins = [f"x{k}_ptr" for k in range(prog.n_inputs)]
    outs = [f"o{j}_ptr" for j in range(len(prog.outputs))]
    dims = [f"odim{d}, ostep{d}" for d in range(rank)]
    strides = [f"s{k}_{d}" for k in range(prog.n_inputs) if not contiguous[k]
               for d in range(rank)]
    params = ", ".join(ins + outs + ["n"] + dims + strides + ["BLOCK: tl.constexpr"])
    lines = ["import triton.language as tl", "",
             "from symgraph.kernels.runtime import kernel", "", "",
             "@kernel", f"def {name}({params}):",
             "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)",
             "    mask = offs < n"]
    for k in range(prog.n_inputs):
        if not prog.reads(k):  # an input no expression reads is never loaded
            continue
        if contiguous[k]:
            lines.append(f"    i{k} = offs")
        else:
            lines += _index_code(k, rank)
        lines.append(f"    x{k} = tl.load(x{k}_ptr + i{k}, mask=mask, other=0).to({acc})")
    for i, (tpl, ops) in enumerate(prog.body):
        lines.append(f"    t{i} = {tpl.format(*ops)}")
    for j, var in enumerate(prog.outputs):
        lines.append(f"    tl.store(o{j}_ptr + offs, ({var}).to(o{j}_ptr.dtype.element_ty), "
                     "mask=mask)")
    return "\n".join(lines) + "\n"


def source_for(prog: Program, rank: int, contiguous: tuple[bool, ...], acc: str) -> tuple:
    """(kernel name, generated source) for a program specialisation."""
    key = repr((prog, rank, contiguous, acc)).encode()
    name = "fused_" + hashlib.sha1(key).hexdigest()[:16]
    return name, _source(prog, name, rank, contiguous, acc)


def _kernel_for(prog: Program, rank: int, contiguous: tuple[bool, ...], acc: str):
    """The loaded kernel of a specialisation, memoised (launches pay a dict lookup)."""
    key = (prog, rank, contiguous, acc)
    fn = _by_program.get(key)
    if fn is None:
        fn = _by_program[key] = _load(*source_for(prog, rank, contiguous, acc))
    return fn


def _reads(prog: Program) -> tuple[bool, ...]:
    """Per input, whether the program reads it (memoised)."""
    got = _read_masks.get(prog)
    if got is None:
        got = _read_masks[prog] = tuple(prog.reads(k) for k in range(prog.n_inputs))
    return got


def _load(name: str, source: str):
    with _lock:
        if name in _compiled:
            return _compiled[name]
        path = os.path.join(_cache_dir(), f"{name}.py")
        if _cached_source(path) != source:  # missing, truncated or altered: write it anew
            _write_source(path, source)
        spec = importlib.util.spec_from_file_location(f"symgraph.kernels._generated.{name}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _compiled[name] = getattr(module, name)
        return _compiled[name]


def _cached_source(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError):
        return None


def _write_source(path: str, source: str) -> None:
    """Write ``source`` to ``path`` through an unpredictable temp name and a rename."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".fused-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(source)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _acc(inputs: Sequence[torch.Tensor]) -> str:
    return "tl.float64" if any(t.dtype == torch.float64 for t in inputs) else "tl.float32"


def run(prog: Program, inputs: Sequence[torch.Tensor], shape: tuple, dtype: torch.dtype,
        out: Sequence[torch.Tensor] | None = None,
        device: torch.device | None = None) -> tuple[torch.Tensor, ...]:
    """Check, allocate, launch: evaluate ``prog`` elementwise over ``inputs`` (broadcast).

    Expressions may also read ``offs``, the flat output index (``arange``-like programs).
    """
    if len(inputs) != prog.n_inputs:
        raise ValueError(f"program takes {prog.n_inputs} inputs, got {len(inputs)}")
    device = inputs[0].device if inputs else (device or torch.device("cpu"))
    outs = tuple(out) if out is not None else tuple(
        torch.empty(shape, dtype=dtype, device=device) for _ in prog.outputs)
    for o in outs:
        if tuple(o.shape) != tuple(shape) or not o.is_contiguous():
            raise ValueError(f"output must be contiguous of shape {tuple(shape)}, got "
                             f"{tuple(o.shape)}")
    n = 1
    for d in shape:
        n *= d
    if n == 0:
        return outs
    reads = _reads(prog)
    expanded = [t.expand(shape) if r and t.shape != shape else t
                for r, t in zip(reads, inputs)]
    contiguous = tuple(not r or t.is_contiguous() for r, t in zip(reads, expanded))
    rank = len(shape)
    fn = _kernel_for(prog, rank, contiguous, _acc(inputs))
    steps = [1] * rank
    for d in range(rank - 2, -1, -1):
        steps[d] = steps[d + 1] * shape[d + 1]
    dims = [v for d in range(rank) for v in (shape[d], steps[d])]
    strides = [st for t, c in zip(expanded, contiguous) if not c for st in t.stride()]
    block = block_for(n, cap=1024 if device.type == "cuda" else 128)
    fn[(cdiv(n, block),)](*expanded, *outs, n, *dims, *strides, BLOCK=block)
    return outs


# ---------------------------------------------------------------- table entries

_RELU_AXPY = Program(2, (("({0} * 2.0)", ("x0",)), ("({0} + {1})", ("t0", "x1")),
                         ("tl.maximum({0}, 0.0)", ("t1",))), ("t2",))


def relu_axpy(x: torch.Tensor, y: torch.Tensor, out=None) -> torch.Tensor:
    """``relu(x * 2 + y)`` as one fused kernel (the fusion example from the issue)."""
    shape = x.shape if x.shape == y.shape else torch.broadcast_shapes(x.shape, y.shape)
    return run(_RELU_AXPY, [x, y], tuple(shape), x.dtype, None if out is None else [out])[0]


def relu_axpy_ref(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Reference: three torch kernels, 5 tensor passes of traffic."""
    return torch.relu(x * 2 + y)


def _make_pair(dtype, device, shape):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(shape, generator=gen).to(device=device, dtype=dtype)
    y = torch.randn(shape[-1:], generator=gen).to(device=device, dtype=dtype)
    return (x, y), {}


def _make_same(dtype, device, shape):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(shape, generator=gen).to(device=device, dtype=dtype)
    y = torch.randn(shape, generator=gen).to(device=device, dtype=dtype)
    return (x, y), {}


KERNELS = [
    KernelSpec(
        name="fused_relu_axpy", fn=relu_axpy, ref=relu_axpy_ref, make=_make_same,
        shapes=((3, 37), (5, 129), (7,), (2, 3, 5)),
        bench_shapes=((1 << 20,), (1 << 24,)),
        dtypes=(torch.float32, torch.float16, torch.bfloat16),
        bytes=lambda x, y: tensor_bytes(x, y, x), family="elementwise"),
    KernelSpec(
        name="fused_relu_axpy_broadcast", fn=relu_axpy, ref=relu_axpy_ref, make=_make_pair,
        shapes=((3, 37), (5, 129), (2, 3, 5)),
        bench_shapes=((4096, 4096),),
        dtypes=(torch.float32, torch.float16),
        bytes=lambda x, y: tensor_bytes(x, y, x), family="elementwise"),
]
