"""Seeded mutation fuzzing of symgraph's file readers (issue 16).

Every reader gets ``N`` mutants of valid inputs (bytes-level and, for JSON, structure-aware)
and each must either load or raise an ``MXNetError``: any other exception, a crash, a hang
or a memory blow-up is a defect. ``N`` is small in CI; a longer local run is

    SYMGRAPH_FUZZ_N=10000 python -m pytest tests/test_fuzz_readers.py -q -s

which prints the counts per reader (``-s``). The mutants depend only on the seed.
"""
from __future__ import annotations

import copy
import json
import os
import random
import resource
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from symgraph.base import MXNetError

N = int(os.environ.get("SYMGRAPH_FUZZ_N", "250"))
SLOW_S = 5.0  # one input taking longer than this counts as a hang
MAX_RSS_GROWTH_MB = 1024

_INTERESTING_INTS = [0, -1, 1, 2, 255, 2**31 - 1, -2**31, 2**32, 2**63 - 1, -2**63, 2**64,
                     10**30]
_INTERESTING_STRS = ["", "-1", "0", "1e400", "-1e400", "nan", "inf", "None", "()", "(0,)",
                     "(-1, 3)", "(0, 3)", "(1e400,)", "(" + "1, " * 64 + ")", "[[[[", "'",
                     "-" * 100000 + "1", "(2, 3", "True", "float16", "int64", "\x00",
                     "null", "{}", "x" * 5000]


_DEEP = "<a list nested 5000 deep>"


def byte_mutants(seed: bytes, n: int, rng_seed: int = 0) -> Iterator[bytes]:
    """``n`` mutants of ``seed``: bit flips, byte overwrites with interesting values,
    insertions, deletions, truncations and duplicated chunks, 1-4 of them stacked."""
    rng = random.Random(rng_seed)
    for _ in range(n):
        data = bytearray(seed)
        for _ in range(rng.randint(1, 4)):
            data = _mutate_bytes(data, rng)
        yield bytes(data)


def _mutate_bytes(data: bytearray, rng: random.Random) -> bytearray:
    if not data:
        return bytearray(rng.randbytes(rng.randint(1, 16)))
    pos = rng.randrange(len(data))
    kind = rng.randrange(7)
    if kind == 0:
        data[pos] ^= 1 << rng.randrange(8)
    elif kind == 1:
        width = rng.choice([1, 2, 4, 8])
        value = rng.choice(_INTERESTING_INTS) % (1 << (8 * width))
        data[pos:pos + width] = value.to_bytes(width, "little")
    elif kind == 2:
        data[pos:pos] = rng.randbytes(rng.randint(1, 16))
    elif kind == 3:
        del data[pos:pos + rng.randint(1, 64)]
    elif kind == 4:
        del data[pos:]
    elif kind == 5:
        chunk = data[pos:pos + rng.randint(1, 256)]
        at = rng.randrange(len(data))
        data[at:at] = chunk
    else:
        data[pos] = rng.randrange(256)
    return data


def json_mutants(doc, n: int, rng_seed: int = 0) -> Iterator[str]:
    """``n`` JSON texts, each ``doc`` with 1-3 structure-aware mutations (values replaced by
    extreme numbers, hostile strings, other types, deep nesting; keys and items dropped or
    duplicated); one in eight is additionally byte-mutated."""
    rng = random.Random(rng_seed)
    for _ in range(n):
        tree = copy.deepcopy(doc)
        for _ in range(rng.randint(1, 3)):
            tree = _mutate_tree(tree, rng)
        text = json.dumps(tree).replace(json.dumps(_DEEP), "[" * 5000 + "]" * 5000)
        if rng.random() < 0.125:
            text = _mutate_bytes(bytearray(text.encode()), rng).decode("utf-8", "replace")
        yield text


def _paths(tree) -> Iterator[tuple]:
    """Every path of ``tree`` in pre-order, without recursion."""
    stack = [((), tree)]
    while stack:
        prefix, node = stack.pop()
        yield prefix
        if isinstance(node, dict):
            children = list(node.items())
        elif isinstance(node, list):
            children = list(enumerate(node))
        else:
            continue
        stack.extend((prefix + (k,), v) for k, v in reversed(children))


def _mutate_tree(tree, rng: random.Random):
    paths = list(_paths(tree))
    path = rng.choice(paths)
    if not path:
        return _replacement(tree, rng)
    parent = tree
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    roll = rng.random()
    if roll < 0.15 and isinstance(parent, dict):
        del parent[key]
    elif roll < 0.25 and isinstance(parent, list):
        if rng.random() < 0.5:
            del parent[key]
        else:
            parent.insert(key, copy.deepcopy(parent[key]))
    else:
        parent[key] = _replacement(parent[key], rng)
    return tree


def _replacement(value, rng: random.Random):
    roll = rng.randrange(6)
    if roll == 0:
        return rng.choice(_INTERESTING_INTS)
    if roll == 1:
        return rng.choice(_INTERESTING_STRS)
    if roll == 2 and isinstance(value, int) and not isinstance(value, bool):
        return value + rng.choice([-2, -1, 1, 2, 1000])
    if roll == 3:  # the deepest nest is spliced into the text (json.dumps cannot nest so)
        depth = rng.choice([2, 50, 5000])
        return _DEEP if depth == 5000 else json.loads("[" * depth + "]" * depth)
    if roll == 4:
        return rng.choice([None, True, 1.5, -0.0, [], {}, [1, 2], {"a": 1}])
    if isinstance(value, str) and value:
        cut = rng.randrange(len(value))
        return value[:cut] + rng.choice(_INTERESTING_STRS)[:8] + value[cut + 1:]
    return rng.choice(_INTERESTING_STRS)


@dataclass
class Tally:
    """What a reader did with the mutants."""
    name: str
    accepted: int = 0
    rejected: int = 0
    defects: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return (f"{self.name}: {self.accepted + self.rejected + len(self.defects)} inputs, "
                f"{self.accepted} loaded, {self.rejected} rejected with MXNetError, "
                f"{len(self.defects)} defects")


def run(name: str, reader: Callable, inputs, check: Callable | None = None) -> Tally:
    """Feed each input to ``reader``; ``check(result)`` validates what loaded (it raises on
    a silent acceptance of bad data). Untyped exceptions, slow inputs and RSS growth over
    ``MAX_RSS_GROWTH_MB`` are recorded as defects."""
    tally = Tally(name)
    rss0 = _rss_mb()
    for i, data in enumerate(inputs):
        start = time.perf_counter()
        try:
            result = reader(data)
            if check is not None:
                check(result)
            tally.accepted += 1
        except MXNetError:
            tally.rejected += 1
        except Exception as err:  # classifying every failure is the point
            tally.defects.append(f"input {i}: {type(err).__name__}: {err!s:.200}\n"
                                 + "".join(traceback.format_tb(err.__traceback__)[-3:]))
        elapsed = time.perf_counter() - start
        if elapsed > SLOW_S:
            tally.defects.append(f"input {i}: took {elapsed:.1f} s")
    growth = _rss_mb() - rss0
    if growth > MAX_RSS_GROWTH_MB:
        tally.defects.append(f"peak RSS grew by {growth:.0f} MB")
    print(tally)
    return tally


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
