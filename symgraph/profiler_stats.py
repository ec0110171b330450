"""Aggregate statistics of ``mx.profiler`` and their text forms: MXNet 1.9.1's
``dumps()`` table (``AggregateStats::DumpTable``) and JSON layout (``DumpJson``).

>>> st = Stat()
>>> for us in (1000.0, 3000.0):
...     st.add(us)
>>> render_table({'operator': {'dot': st}}, 'total', False).splitlines()[-2].split()
['dot', '2', '4.0000', '1.0000', '3.0000', '2.0000']
"""
from __future__ import annotations

import dataclasses
import json


@dataclasses.dataclass
class Stat:
    """One aggregate entry: MXNet's StatData (durations in us; counters hold values)."""

    counter: bool = False
    count: int = 0
    total: float = 0.0
    min: float = float("inf")
    max: float = 0.0

    def add(self, value: float) -> None:
        self.count += 1
        self.total = value if self.counter else self.total + value
        self.min, self.max = min(self.min, value), max(self.max, value)

    def avg(self) -> float:
        return (self.max - self.min) / 2 if self.counter else self.total / self.count


def _ordered(table: dict, sort_by: str, ascending: bool) -> list[tuple[str, Stat]]:
    """Entries in MXNet's heap order: largest first (smallest with ``ascending``), ties by
    name, last first."""
    def value(stat: Stat) -> float:
        v = {"total": stat.total, "min": stat.min, "max": stat.max,
             "count": stat.count}.get(sort_by)
        v = stat.avg() if v is None else v
        return -v if ascending else v
    return sorted(table.items(), key=lambda kv: (value(kv[1]), kv[0]), reverse=True)


def render_table(stats: dict, sort_by: str, ascending: bool) -> str:
    """MXNet's AggregateStats::DumpTable (times in ms, fixed 4 decimals)."""
    head = ("Name", "Total Count", "Time (ms)", "Min Time (ms)", "Max Time (ms)",
            "Avg Time (ms)")
    dashes = ("----", "-----------", "---------", "-------------", "-------------",
              "-------------")
    lines = ["", "Profile Statistics:", "\tNote the difference in units for different entries."]
    for category in sorted(stats):
        lines += [category, "=" * 17]
        lines += [f"{a:<25}{b:>16} {c:>16} {d:>16} {e:>16} {f:>16}" for a, b, c, d, e, f in
                  (head, dashes)]
        for name, st in _ordered(stats[category], sort_by, ascending):
            lines.append(f"{name:<25}{st.count:>16} {st.total / 1000:>16.4f} "
                         f"{st.min / 1000:>16.4f} {st.max / 1000:>16.4f} "
                         f"{st.avg() / 1000:>16.4f}")
        lines.append("")
    return "\n".join(lines) + "\n"


def _num(value: float) -> str:
    """A number as C++ streams it with precision 4."""
    return f"{value:.4g}"


def render_json(stats: dict, sort_by: str, ascending: bool) -> str:
    """MXNet's AggregateStats::DumpJson layout ('Time', an empty 'Memory', 'Unit')."""
    blocks = []
    for category in sorted(stats):
        entries = []
        for name, st in _ordered(stats[category], sort_by, ascending):
            fields = [f'"Count": {st.count}', f'"Total": {_num(st.total / 1000)}',
                      f'"Min": {_num(st.min / 1000)}', f'"Max": {_num(st.max / 1000)}',
                      f'"Avg": {_num(st.avg() / 1000)}']
            entries.append(f'            {json.dumps(name)}: {{\n' + ",\n".join(
                " " * 16 + f for f in fields) + "\n            }\n")
        blocks.append(f'        {json.dumps(category)}: {{\n' +
                      "            ,\n".join(entries) + "        }\n")
    return ('{\n    "Time": {\n' + "        ,\n".join(blocks) + '    }\n    ,\n'
            '    "Memory": {\n    }\n,\n    "Unit": {\n        "Time": "ms",\n'
            '        "Memory": "kB"\n    }\n}\n')
