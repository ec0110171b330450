"""``mx.random``: ``seed`` and the samplers of ``nd.random``.

Dropout masks, random initializers and the random operators draw from one
``torch.Generator`` per device, created lazily, so a seed makes runs reproducible.
As in MXNet, this module re-exports ``nd.random``'s functions (``mx.random.uniform``...);
they are looked up on first use, because ``nd`` itself imports this module.

>>> import symgraph as mx
>>> mx.random.seed(5); a = mx.random.uniform(shape=(3,))
>>> mx.random.seed(5); bool((a == mx.random.uniform(shape=(3,))).min())
True
"""
from __future__ import annotations

import numbers

import torch

from .base import check_call, integer_types  # noqa: F401 - names MXNet's module carries
from .context import Context, current_context

# nd.random's public functions, which MXNet's mx.random re-exports
_SAMPLERS = ("uniform", "normal", "randn", "poisson", "exponential", "gamma", "multinomial",
             "negative_binomial", "generalized_negative_binomial", "shuffle", "randint")

_DEFAULT_SEED = 0
_generators: dict[torch.device, torch.Generator] = {}
_seed_state = {"seed": _DEFAULT_SEED}


def _key(device: torch.device) -> torch.device:
    if device.type == "cuda":
        return torch.device("cuda", device.index or 0)
    return torch.device("cpu")


def generator(ctx: Context | torch.device | None = None) -> torch.Generator:
    """The generator for ``ctx`` (the current context by default)."""
    if ctx is None:
        ctx = current_context()
    device = _key(ctx.torch_device if isinstance(ctx, Context) else ctx)
    gen = _generators.get(device)
    if gen is None:
        gen = torch.Generator(device=device)
        gen.manual_seed(_seed_state["seed"] + (device.index or 0))
        _generators[device] = gen
    return gen


def seed(seed_state: int, ctx="all") -> None:
    """Seed the random number generators (MXNet's ``mx.random.seed``).

    >>> seed(42); a = generator().initial_seed()
    >>> seed(42); a == generator().initial_seed()
    True
    """
    if not isinstance(seed_state, numbers.Integral):
        raise ValueError(f"seed_state must be an int, got {type(seed_state).__name__}")
    seed_state = int(seed_state)
    if ctx == "all":
        _seed_state["seed"] = seed_state
        torch.manual_seed(seed_state)
        # re-seed in place: bound executors hold these generator objects (as in MXNet,
        # seeding affects executors that already exist)
        for device, gen in _generators.items():
            gen.manual_seed(seed_state + (device.index or 0))
        return
    generator(ctx).manual_seed(seed_state)


def cuda_generators(index: int) -> list[torch.Generator]:
    """The generators made so far for CUDA device ``index`` (a CUDA-graph capture on that
    device registers them, so its replays draw anew)."""
    return [g for d, g in _generators.items() if d.type == "cuda" and d.index == index]


def __getattr__(name: str):
    if name in _SAMPLERS:
        from .ndarray import random as nd_random
        fn = getattr(nd_random, name)
        globals()[name] = fn
        return fn
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_SAMPLERS))
