"""Counter-based random numbers shared by the kernels: Philox-4x32-10 and its uniform floats.

``philox(c0, c1, c2, c3, k0, k1)`` runs the ten rounds of Philox-4x32 (Salmon et al., SC'11)
on a 128-bit counter and a 64-bit key, with the constants and rounds of
``triton.language.random``; ``uniform``/``uniform64`` map output words to [0, 1) as
``tl.rand`` does (31 bits) and as numpy's ``random_double`` does (53 bits). A kernel keys
Philox with its launch seed and counts with the element index (and a round or stream
number), so a seed reproduces every draw on any grid. Launches read the seed from a
one-element int64 tensor (:func:`seed_key` on the device, :func:`seed_arg` on the host): an
op draws it on its device from the executor's generator, with no host read, so a step list
that draws random numbers can be captured as a CUDA graph and every replay draws anew.

These are device functions (:func:`device`): ``@triton.jit`` helpers that compiled kernels
inline and that interpreted kernels (CPU tensors, :mod:`symgraph.kernels.runtime`) call through
Triton's interpreter, which a plain ``@triton.jit`` helper does not allow without
``TRITON_INTERPRET=1`` set before import.

Below each device function is its torch reference, on int64 tensors holding uint32 words
(torch has no uint32 multiply-high): the kernel families' torch references draw the same
numbers from them.
"""
from __future__ import annotations

from collections.abc import Callable

import torch
import triton.language as tl
from triton.runtime.jit import JITFunction

_M0, _M1 = 0xD2511F53, 0xCD9E8D57  # round multipliers (as literals in :func:`philox`)
_W0, _W1 = 0x9E3779B9, 0xBB67AE85  # key increments
_U32 = 0xFFFFFFFF


class DeviceFunction(JITFunction):
    """A ``@triton.jit`` helper that interpreted kernels can call too."""

    def __call__(self, *args, **kwargs):
        # Reached only from an interpreted kernel (compiled kernels inline the helper), whose
        # launch has already patched triton.language for the interpreter: run the rewritten
        # function directly (InterpretedFunction.__call__ would patch it again, per call).
        rewritten = self.__dict__.get("_rewritten")
        if rewritten is None:
            from triton.runtime.interpreter import InterpretedFunction
            rewritten = self.__dict__["_rewritten"] = InterpretedFunction(self.fn).rewrite()
        return rewritten(*args, **kwargs)


def device(fn: Callable) -> DeviceFunction:
    """Decorator for helpers called from ``@kernel`` functions (compiled or interpreted)."""
    return DeviceFunction(fn)


@device
def philox(c0, c1, c2, c3, k0, k1):
    """Philox-4x32-10 of counter (c0, c1, c2, c3) under key (k0, k1): four uint32 words."""
    ra = c0 * 0 + 0xD2511F53  # the round multipliers and key increments (Weyl sequence);
    rb = c0 * 0 + 0xCD9E8D57  # literals: a jitted function reads no module globals
    ka = k0 * 0 + 0x9E3779B9
    kb = k0 * 0 + 0xBB67AE85
    for _ in tl.static_range(10):
        p0, p2 = c0, c2
        c0 = tl.math.umulhi(rb, p2) ^ c1 ^ k0
        c2 = tl.math.umulhi(ra, p0) ^ c3 ^ k1
        c1 = rb * p2
        c3 = ra * p0
        k0 = k0 + ka
        k1 = k1 + kb
    return c0, c1, c2, c3


def philox_ref(c0, c1, c2, c3, k0, k1) -> tuple[torch.Tensor, ...]:
    """Reference: the same rounds on int64 tensors (or ints) of uint32 words."""
    c0, c1, c2, c3, k0, k1 = (torch.as_tensor(v, dtype=torch.int64) for v in
                              (c0, c1, c2, c3, k0, k1))
    for _ in range(10):
        hi_b, lo_b = _mul_wide(_M1, c2)
        hi_a, lo_a = _mul_wide(_M0, c0)
        c0, c1, c2, c3 = hi_b ^ c1 ^ k0, lo_b, hi_a ^ c3 ^ k1, lo_a
        k0 = (k0 + _W0) & _U32
        k1 = (k1 + _W1) & _U32
    return c0, c1, c2, c3


def _mul_wide(a: int, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(high, low) 32-bit words of a * b for 32-bit a, b, without overflowing int64."""
    t = a * (b >> 16) + ((a * (b & 0xFFFF)) >> 16)  # (a * b) >> 16, below 2^49
    return t >> 16, (((t & 0xFFFF) << 16) | ((a * (b & 0xFFFF)) & 0xFFFF)) & _U32


@device
def seed_key(seed, offs):
    """The Philox key (two uint32 words shaped like ``offs``) of the 62-bit seed that the
    one-element int64 tensor ``seed`` holds."""
    s = offs * 0 + tl.load(seed)
    return (s & 0xFFFFFFFF).to(tl.uint32), ((s >> 32) & 0xFFFFFFFF).to(tl.uint32)


def seed_arg(seed, device) -> torch.Tensor:
    """A launch's seed argument: a one-element int64 tensor on ``device`` (an ``int`` is
    copied there once per value: tests, fixed seeds)."""
    if isinstance(seed, torch.Tensor):
        if seed.numel() != 1 or seed.dtype != torch.int64:
            raise ValueError(f"a seed tensor holds one int64, got {seed.dtype} of shape "
                             f"{tuple(seed.shape)}")
        return seed if seed.device == torch.device(device) else seed.to(device)
    from .runtime import device_meta
    return device_meta([int(seed)], device)


def seed_int(seed) -> int:
    """A seed (``int`` or one-element tensor) as an ``int``, for the torch references."""
    return int(seed)


@device
def uniform(w):
    """A uint32 word as a float32 in [0, 1) (31 bits; ``tl.rand``'s mapping)."""
    r = w.to(tl.int32, bitcast=True)
    return tl.where(r < 0, ~r, r).to(tl.float32) * 4.6566127342e-10


def uniform_ref(w: torch.Tensor) -> torch.Tensor:
    """Reference: the word's low 31 bits, or their complement when bit 31 is set."""
    r = torch.where(w >= 1 << 31, _U32 - w, w)
    return r.to(torch.float32) * 4.6566127342e-10


@device
def uniform64(w0, w1):
    """Two uint32 words as a float64 in [0, 1) with 53 random bits."""
    hi = (w0 >> 5).to(tl.float64)
    lo = (w1 >> 6).to(tl.float64)
    return (hi * 67108864.0 + lo) * 1.1102230246251565e-16


def uniform64_ref(w0: torch.Tensor, w1: torch.Tensor) -> torch.Tensor:
    """Reference: 27 bits of w0 above 26 bits of w1, over 2^53."""
    return ((w0 >> 5).double() * 67108864.0 + (w1 >> 6).double()) * 1.1102230246251565e-16
