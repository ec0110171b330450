"""Random state: ``mx.random.seed`` seeds every generator symgraph draws from.

Dropout masks, random initializers and ``nd.random.*`` draw from one
``torch.Generator`` per device, created lazily, so a seed makes runs reproducible.
"""
from __future__ import annotations

import torch

from .context import Context, current_context

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
    if not isinstance(seed_state, int):
        raise ValueError(f"seed_state must be an int, got {type(seed_state).__name__}")
    if ctx == "all":
        _seed_state["seed"] = seed_state
        torch.manual_seed(seed_state)
        # re-seed in place: bound executors hold these generator objects (as in MXNet,
        # seeding affects executors that already exist)
        for device, gen in _generators.items():
            gen.manual_seed(seed_state + (device.index or 0))
        return
    generator(ctx).manual_seed(seed_state)
