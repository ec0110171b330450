"""Variable-length sequence kernels: SequenceMask, SequenceReverse, SequenceLast and the
SequenceLast gradient, over data ``(T, B, ...)`` (``axis=0``) or ``(B, T, ...)`` (``axis=1``).

Lengths (``(B,)``, any dtype, truncated toward zero) are optional: without them every
sequence has length ``T``. Math, with ``L = length[b]``:

* mask:    ``out[t, b] = x[t, b] if t < L else value`` (its own gradient with value 0);
* reverse: ``out[t, b] = x[L - 1 - t, b] if t < L else x[t, b]`` with ``L`` clipped to
  ``[0, T]`` (its own gradient);
* last:    ``out[b] = x[clip(L - 1, 0, T - 1), b]``; its gradient puts ``dy[b]`` there in
  zeros.

Bytes moved: mask and reverse read and write the data once; last reads B rows and writes
them; the last gradient writes the whole data-shaped gradient once.
"""
from __future__ import annotations

import torch
import triton.language as tl

from .runtime import block_for, cdiv, kernel
from .table import KernelSpec, tensor_bytes

_KINDS = {"mask": 0, "reverse": 1, "last": 2, "last_backward": 3}


@kernel
def _seq_kernel(x, lengths, out, T, B, inner, total, value, KIND: tl.constexpr,
                AXIS: tl.constexpr, HAS_LEN: tl.constexpr, BLOCK: tl.constexpr):
    """One lane per element of the output (KIND: 0 mask, 1 reverse, 2 last, 3 last grad)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    i = offs % inner
    if KIND == 2:
        b = offs // inner
        t = offs * 0
    elif AXIS == 0:
        t = offs // (B * inner)
        b = (offs // inner) % B
    else:
        b = offs // (T * inner)
        t = (offs // inner) % T
    if HAS_LEN:
        n = tl.load(lengths + b, mask=mask, other=0).to(tl.int64)
    else:
        n = offs * 0 + T
    if KIND == 0:
        v = tl.load(x + offs, mask=mask)
        if v.dtype.is_bf16():  # select in fp32 (exact): mixing bf16 with the float scalar
            v = v.to(tl.float32)  # makes a bf16 constant, which Triton 3.8's interpreter lacks
        tl.store(out + offs, tl.where(t < n, v, value).to(out.dtype.element_ty), mask=mask)
    elif KIND == 1:
        n = tl.minimum(tl.maximum(n, 0), T)
        src = tl.where(t < n, n - 1 - t, t)
        tl.store(out + offs, tl.load(x + (src * B + b) * inner + i, mask=mask), mask=mask)
    else:
        last = tl.minimum(tl.maximum(n - 1, 0), T - 1)
        if KIND == 2:
            if AXIS == 0:
                src = (last * B + b) * inner + i
            else:
                src = (b * T + last) * inner + i
            tl.store(out + offs, tl.load(x + src, mask=mask), mask=mask)
        else:
            g = tl.load(x + b * inner + i, mask=mask)
            tl.store(out + offs, tl.where(t == last, g, 0.0).to(g.dtype), mask=mask)


def _launch(kind: str, x: torch.Tensor, lengths, out: torch.Tensor, dims: tuple,
            value: float = 0.0) -> torch.Tensor:
    """dims: (T, B, inner, axis)."""
    steps, batch, inner, axis = dims
    total = out.numel()
    block = block_for(total, cap=1024 if x.device.type == "cuda" else 256)
    _seq_kernel[(cdiv(total, block),)](
        x.contiguous(), x if lengths is None else lengths.contiguous(), out, steps, batch,
        inner, total, float(value), KIND=_KINDS[kind], AXIS=axis, HAS_LEN=lengths is not None,
        BLOCK=block)
    return out


def _dims(shape: tuple, axis: int) -> tuple:
    inner = 1
    for s in shape[2:]:
        inner *= s
    steps, batch = (shape[0], shape[1]) if axis == 0 else (shape[1], shape[0])
    return steps, batch, inner, axis


def sequence_mask(x: torch.Tensor, lengths, value: float = 0.0, axis: int = 0,
                  out=None) -> torch.Tensor:
    """Steps at or beyond each sequence's length set to ``value``."""
    out = out if out is not None else torch.empty_like(x, memory_format=torch.contiguous_format)
    return _launch("mask", x, lengths, out, _dims(tuple(x.shape), axis), value)


def _time_major(x: torch.Tensor, axis: int) -> torch.Tensor:
    return x.transpose(0, 1) if axis == 1 else x


def _len(lengths, steps: int, batch: int, device) -> torch.Tensor:
    if lengths is None:
        return torch.full((batch,), steps, dtype=torch.int64, device=device)
    return lengths.to(torch.int64)


def sequence_mask_ref(x, lengths, value=0.0, axis=0):
    """Reference: torch.where against arange (reads and writes x once)."""
    xt = _time_major(x, axis)
    t = torch.arange(xt.shape[0], device=x.device).unsqueeze(1)
    keep = t < _len(lengths, xt.shape[0], xt.shape[1], x.device).unsqueeze(0)
    keep = keep.reshape(keep.shape + (1,) * (x.dim() - 2))
    fill = torch.tensor(value, dtype=torch.float64).to(x.dtype)
    return _time_major(torch.where(keep, xt, fill), axis).contiguous()


def sequence_reverse(x: torch.Tensor, lengths, out=None) -> torch.Tensor:
    """The first ``length`` steps of each (time-major) sequence reversed."""
    out = out if out is not None else torch.empty_like(x, memory_format=torch.contiguous_format)
    return _launch("reverse", x, lengths, out, _dims(tuple(x.shape), 0))


def sequence_reverse_ref(x, lengths):
    """Reference: torch.gather of source steps (reads and writes x once)."""
    steps, batch = x.shape[0], x.shape[1]
    n = _len(lengths, steps, batch, x.device).clamp(0, steps).unsqueeze(0)
    t = torch.arange(steps, device=x.device).unsqueeze(1)
    src = torch.where(t < n, n - 1 - t, t)
    src = src.reshape(src.shape + (1,) * (x.dim() - 2)).expand(x.shape)
    return torch.gather(x, 0, src)


def sequence_last(x: torch.Tensor, lengths, axis: int = 0, out=None) -> torch.Tensor:
    """Each sequence's last step: shape ``(B, ...)``."""
    dims = _dims(tuple(x.shape), axis)
    shape = tuple(s for d, s in enumerate(x.shape) if d != axis)
    out = out if out is not None else torch.empty(shape, dtype=x.dtype, device=x.device)
    return _launch("last", x, lengths, out, dims)


def sequence_last_ref(x, lengths, axis=0):
    """Reference: advanced indexing (reads and writes B rows)."""
    xt = _time_major(x, axis)
    idx = (_len(lengths, xt.shape[0], xt.shape[1], x.device) - 1).clamp(0, xt.shape[0] - 1)
    return xt[idx, torch.arange(xt.shape[1], device=x.device)]


def sequence_last_backward(g: torch.Tensor, lengths, shape: tuple, axis: int = 0,
                           out=None) -> torch.Tensor:
    """Gradient of :func:`sequence_last`: ``g`` at each last step of zeros of ``shape``."""
    out = out if out is not None else torch.empty(tuple(shape), dtype=g.dtype, device=g.device)
    return _launch("last_backward", g, lengths, out, _dims(tuple(shape), axis))


def sequence_last_backward_ref(g, lengths, shape, axis=0):
    """Reference: zeros with an indexed assignment (writes the gradient once)."""
    out = torch.zeros(tuple(shape), dtype=g.dtype, device=g.device)
    xt = _time_major(out, axis)
    idx = (_len(lengths, xt.shape[0], xt.shape[1], g.device) - 1).clamp(0, xt.shape[0] - 1)
    xt[idx, torch.arange(xt.shape[1], device=g.device)] = g
    return out


def _lengths(batch: int, steps: int, device):
    gen = torch.Generator().manual_seed(3)
    return torch.randint(-1, steps + 2, (batch,), generator=gen).float().to(device)


def _rand(dtype, device, shape):
    gen = torch.Generator().manual_seed(0)
    return torch.randn(tuple(shape), generator=gen).to(device=device, dtype=dtype)


def _make(kind: str, axis: int):
    def make(dtype, device, shape):
        x = _rand(dtype, device, shape)
        steps, batch = (shape[0], shape[1]) if axis == 0 else (shape[1], shape[0])
        n = _lengths(batch, steps, device)
        if kind == "mask":
            return (x, n, -1.5, axis), {}
        if kind == "reverse":
            return (x, n), {}
        if kind == "last":
            return (x, n, axis), {}
        g = _rand(dtype, device, tuple(s for d, s in enumerate(shape) if d != axis))
        return (g, n, tuple(shape), axis), {}
    return make


_SHAPES = ((7, 3, 37), (5, 4), (2, 3, 7, 6))
_DT = (torch.float32, torch.float16, torch.bfloat16)
_EXACT = {torch.float32: (0, 0), torch.float16: (0, 0), torch.bfloat16: (0, 0)}


def _entry(name, fn, ref, make, traffic) -> KernelSpec:
    return KernelSpec(name=name, fn=fn, ref=ref, make=make, shapes=_SHAPES,
                      bench_shapes=((128, 256, 1024),), dtypes=_DT, tol=_EXACT, bytes=traffic,
                      family="sequence")


KERNELS = [
    _entry("sequence_mask", sequence_mask, sequence_mask_ref, _make("mask", 0),
           lambda x, *a: 2 * tensor_bytes(x)),
    _entry("sequence_mask_batch_major", sequence_mask, sequence_mask_ref, _make("mask", 1),
           lambda x, *a: 2 * tensor_bytes(x)),
    _entry("sequence_reverse", sequence_reverse, sequence_reverse_ref, _make("reverse", 0),
           lambda x, *a: 2 * tensor_bytes(x)),
    _entry("sequence_last", sequence_last, sequence_last_ref, _make("last", 1),
           lambda x, *a: 2 * tensor_bytes(x) // x.shape[1]),
    _entry("sequence_last_backward", sequence_last_backward, sequence_last_backward_ref,
           _make("last_backward", 0), lambda g, n, shape, axis: tensor_bytes(g) * shape[0]),
]
