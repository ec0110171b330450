"""``Executor.debug_str``: the bound plan as text (each launch with its implementation and
output, planned memory), and optionally every compiler pass's result for the bind."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .base import dtype_name
from .compiler.plan import Plan, build_plan

if TYPE_CHECKING:
    from .executor import Executor


def _format_steps(title: str, steps, plan: Plan, show_source: bool) -> list[str]:
    launches = sum(1 for s in steps if not plan.impl[s[-1].name].startswith("view:"))
    lines = [f"{title} ({launches} kernel launches):"]
    for fn, *_, outs, _frees, node in steps:
        shape = plan.shapes[outs[0]]
        chosen = getattr(fn, "chosen", None)  # a measured choice (backend 'auto')
        lines.append(f"  {node.name:<32} {plan.impl[node.name]:<32} -> "
                     f"{'x'.join(map(str, shape))} {plan.dtypes[outs[0]]}"
                     + (f"  [{chosen}]" if chosen else ""))
        if show_source and hasattr(node, "source"):
            lines.append(f"    expression: {node.expression}")
            lines += ["    | " + line for line in node.source.rstrip().splitlines()]
    return lines


def pass_trace(exe: Executor) -> str:
    """Each compiler pass's result for this executor's bind, in pipeline order."""
    arrays = {**exe._arg_dict, **exe._aux_dict}
    lines: list[str] = []

    def trace(name: str, stage) -> None:
        text = str(stage)
        lines.append(f"pass {name}:" + ("\n" + text if "\n" in text else " " + text))
    build_plan(exe._symbol._outputs, {n: a.shape for n, a in arrays.items()},
               {n: dtype_name(a.dtype) for n, a in arrays.items()},
               [n for n, g in exe._grad_dict.items() if g is not None], exe._ctx.torch_device,
               trace=trace)
    return "\n".join(lines)


def debug_str(exe: Executor, show_source: bool = False) -> str:
    """The plan's launches (forward, backward) and its memory, as MXNet's debug_str."""
    plan = exe._plan
    mem = plan.memory
    lines = [f"Symbol outputs: {exe._output_names}"]
    lines += _format_steps("Forward", plan.forward_train, plan, show_source)
    lines += _format_steps("Backward", plan.backward, plan, show_source)
    lines.append(f"Total planned memory: {mem.planned_bytes / 2**20:.3f} MB in "
                 f"{len(mem.block_bytes)} blocks (naive {mem.naive_bytes / 2**20:.3f} MB, "
                 f"{mem.planned_bytes / max(mem.naive_bytes, 1):.0%})")
    lines.append(f"Total {mem.planned_bytes >> 20} MB allocated")  # MXNet's summary line
    return "\n".join(lines)
