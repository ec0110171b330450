"""Pass: storage blocks for intermediate values (``plan_memory``): greedy best fit over
value lifetimes, in place where an op declares ``inplace``; planned against naive bytes."""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from ..base import NAME_TO_TORCH
from .lowering import Unit
from .schedule import last_uses


@dataclass
class MemoryPlan:
    """Storage blocks assigned to intermediate values."""

    naive_bytes: int = 0
    planned_bytes: int = 0
    block_of: dict[int, int] = field(default_factory=dict)  # slot -> block id
    block_bytes: list[int] = field(default_factory=list)

    def __str__(self) -> str:
        return (f"{self.planned_bytes / 2**20:.3f} MB in {len(self.block_bytes)} blocks "
                f"(naive {self.naive_bytes / 2**20:.3f} MB)")


def _nbytes(shape: tuple, dtype: str) -> int:
    n = 1
    for d in shape:
        n *= d
    return n * NAME_TO_TORCH[dtype].itemsize


def plan_memory(units: list[Unit], shapes, dtypes, persistent: set[int]) -> MemoryPlan:
    """Greedy best-fit storage assignment over value lifetimes (in place where ops allow)."""
    mem = MemoryPlan()
    last = last_uses(units)
    free = _FreeBlocks(mem)  # blocks available for reuse
    for pos, unit in enumerate(units):
        ins = unit.ins + unit.aux
        dying = [s for s in ins if s not in persistent and last.get(s) == pos and s in mem.block_of]
        for k, slot in enumerate(unit.outs):
            size = _nbytes(shapes[slot], dtypes[slot])
            mem.naive_bytes += size
            donor = next((ins[i] for o, i in unit.inplace if o == k and i < len(ins) and
                          ins[i] in dying and mem.block_bytes[mem.block_of[ins[i]]] >= size),
                         None)
            if donor is not None:  # in place: the output takes over its dying input's block
                mem.block_of[slot] = mem.block_of[donor]
                dying.remove(donor)
                continue
            mem.block_of[slot] = free.take(size)
        for s in dying:
            free.release(mem.block_of[s])
        for slot in unit.outs:  # outputs nobody reads die at once
            if last.get(slot) == pos and slot not in dying and slot not in persistent:
                free.release(mem.block_of[slot])
    mem.planned_bytes = sum(mem.block_bytes)
    return mem


class _FreeBlocks:
    """Free storage blocks ordered by (size, release order): best fit is a bisection.

    ``take(size)``: the smallest free block that fits (the earliest released among equal
    sizes); else the largest free block, grown to ``size``; else a new block.
    """

    def __init__(self, mem: MemoryPlan):
        self.mem, self.order, self.count = mem, [], 0

    def release(self, block: int) -> None:
        self.count += 1
        bisect.insort(self.order, (self.mem.block_bytes[block], self.count, block))

    def take(self, size: int) -> int:
        mem, order = self.mem, self.order
        at = bisect.bisect_left(order, (size, 0, 0))
        if at == len(order) and order:  # nothing fits: grow the largest (earliest released)
            at = bisect.bisect_left(order, (order[-1][0], 0, 0))
            block = order.pop(at)[2]
            mem.block_bytes[block] = size
            return block
        if at < len(order):
            return order.pop(at)[2]
        mem.block_bytes.append(size)
        return len(mem.block_bytes) - 1
