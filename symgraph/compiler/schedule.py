"""Passes: launch units per step list (``units``), then flat steps with the value slots each
step frees (``steps``).

A ``Step`` is what the executor's hot loop unpacks: a NamedTuple, so the loop's tuple
unpacking costs what it did for plain tuples while every field has a name and a type.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import torch

from .. import config
from .layout import Layout
from .lowering import (
    Unit,
    epilogue_pairs,
    epilogue_unit,
    fused_unit,
    group,
    single_unit,
    storage_unit,
    uses_triton,
)


class Step(NamedTuple):
    """One prepared launch: ``fn(params, inputs, aux, runtime)`` -> outputs."""

    fn: Callable
    params: object
    ins: tuple[int, ...]  # input value slots
    aux: tuple[int, ...]  # aux-state slots (updated in place)
    outs: tuple[int, ...]  # output slots
    frees: tuple[int, ...]  # slots whose last use this is
    node: object  # the Node, or a FusedNode for a fused chain


@dataclass
class LowerContext:
    """What choosing a unit per node needs to know about the whole plan."""

    device: torch.device
    shapes: list[tuple]
    dtypes: list[str]
    users: dict[int, list[int]]  # slot -> node ids reading it
    position: dict[int, int]  # node id -> place in forward + backward order
    keep: set[int]  # slots the plan must keep (variables, heads, gradients)
    sparse_nodes: set[int] = field(default_factory=set)  # run by storage dispatch


def units(layout: Layout, order: list[int], ctx: LowerContext) -> list[Unit]:
    """Launch units for one step list: fused chains where Triton is on, else single nodes."""
    device, shapes, dtypes, keep, users = ctx.device, ctx.shapes, ctx.dtypes, ctx.keep, ctx.users

    def read(slot: int) -> bool:
        return slot in keep or bool(users.get(slot))
    sparse = ctx.sparse_nodes
    if not (uses_triton(device) and config.get().fusion):
        return [storage_unit(layout, nid, shapes, read) if nid in sparse else
                single_unit(layout, nid, device, shapes, dtypes, read) for nid in order]
    dense = [nid for nid in order if nid not in sparse]
    pairs = epilogue_pairs(layout, dense, users, keep)
    paired = set(pairs) | set(pairs.values())
    rest = [nid for nid in dense if nid not in paired]
    groups = group(layout, rest, shapes, dtypes, users, ctx.position)
    placed = [(ctx.position[g[-1]],
               single_unit(layout, g[0], device, shapes, dtypes, read) if len(g) == 1 else
               fused_unit(layout, g, shapes, dtypes, users, keep))
              for g in groups]
    placed += [(ctx.position[a], epilogue_unit(layout, a, p)) for a, p in pairs.items()]
    placed += [(ctx.position[nid], storage_unit(layout, nid, shapes, read))
               for nid in order if nid in sparse]
    return [unit for _, unit in sorted(placed, key=lambda pu: pu[0])]


def last_uses(step_units: list[Unit]) -> dict[int, int]:
    """slot -> position of the last unit reading (or, unread, writing) it."""
    last: dict[int, int] = {}
    for pos, unit in enumerate(step_units):
        for s in unit.ins + unit.aux:
            last[s] = pos
        for s in unit.outs:
            last.setdefault(s, pos)
    return last


def steps(step_units: list[Unit], keep: set[int], last_use: dict, impl: dict) -> list[Step]:
    """The step list: each unit with the slots it frees; ``impl`` gets each node's label."""
    out = []
    for pos, u in enumerate(step_units):
        impl[u.node.name] = u.label
        ins, aux, outs = tuple(u.ins), tuple(u.aux), tuple(u.outs)
        frees = tuple({s: None for s in ins + aux + outs
                       if s not in keep and last_use.get(s, pos) == pos})
        out.append(Step(u.fn, u.params, ins, aux, outs, frees, u.node))
    return out
