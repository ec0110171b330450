"""An executor's step list run with a monitor callback, naming arrays as MXNet 1.9.1 does.

MXNet's executor calls the callback after each operator with its outputs
(``<node>_output``, hidden outputs included) and, with ``monitor_all``, before it with its
inputs: a variable input first under the variable's own name, then every input as
``<node>_<input name>``, where the input names are the operator's ``FListInputNames``
(``input0, input1, ...`` for operators registered without them:
:func:`symgraph.ops.mxnet_names.monitor_input_names`). Two things the plan does are undone
for the callback: a composite op is reported as the one operator MXNet runs (its inputs
before the first step of its expansion, its outputs under its own output names, nothing of
the steps inside it), and a view op that the plan runs as no launch at all (Reshape,
BlockGrad, ...) is reported right after its input is made.
"""
from __future__ import annotations

from collections.abc import Callable

from .ndarray.ndarray import NDArray
from .ops.base import Runtime
from .ops.mxnet_names import monitor_input_names
from .symbol.graph import dfs_post_order


class MonitorName(str):
    """A name as monitor callbacks get it: a ``str`` that also answers ``decode()``, since
    MXNet hands them C strings (``bytes``) that callbacks read with ``py_str(name)``."""

    def decode(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        """The name itself (``bytes.decode``'s signature)."""
        return str(self)


class MonitoredRun:
    """Runs step lists of one plan with ``callback(name, array)`` around every operator."""

    def __init__(self, plan, callback: Callable, monitor_all: bool):
        self.graph = plan.graph
        self.alias = plan.alias
        self.var_names = {slot: name for name, slot in plan.var_slot.items()}
        self.callback = callback
        self.monitor_all = monitor_all
        # value slot -> the forward's view nodes reading it (no launch; the backward's are
        # the plan's own)
        self.views: dict[int, list] = {}
        rows = self.graph.row_ptr
        forward = {id(n) for n in dfs_post_order(self.graph.heads[:len(plan.head_slots)])}
        for nid, node in enumerate(self.graph.nodes):
            if node.op is not None and rows[nid] in self.alias and id(node) in forward:
                self.views.setdefault(self.resolve(rows[nid]), []).append(node)

    def resolve(self, slot: int) -> int:
        while slot in self.alias:
            slot = self.alias[slot]
        return slot

    def run(self, steps: list, v: list, rt: Runtime, forward: bool = True) -> None:
        """Run ``steps`` over the value slots ``v``, reporting as MXNet's executor does."""
        opened: set[int] = set()  # composites whose inputs were reported in this run
        if forward:
            for slot in self.var_names:
                self._report_views(slot, v, opened)
        for fn, p, ins, aux, outs, frees, node in steps:
            if self.monitor_all:
                self._report_inputs(node, p, ins + aux, v, opened)
            r = fn(p, [v[i] for i in ins], [v[i] for i in aux], rt)
            for o, t in zip(outs, r):
                v[o] = t
            self._report_outputs(node, [v[o] for o in outs])
            for slot in outs if forward else ():  # the backward's views are plan-made
                self._report_views(slot, v, opened)
            for f in frees:
                v[f] = None

    def _report_inputs(self, node, p, slots: list[int], v: list, opened: set[int]) -> None:
        expansion = getattr(node, "composite", None)
        if expansion is not None:
            if id(expansion) in opened:
                return
            opened.add(id(expansion))
            node = expansion.node
            p, slots = node.params, self._slots(node)
            if slots is None:  # the expansion was rewritten: its inputs are not known
                return
        if node.op is None:
            return
        names = monitor_input_names(node.op.name,
                                    node.op.input_names(p) + node.op.aux_names(p))
        if len(names) != len(slots):  # a node the plan made (gradient helpers)
            names = [f"input{i}" for i in range(len(slots))]
        for name, slot in zip(names, slots):
            if slot in self.var_names:
                self._call(self.var_names[slot], v[slot])
            self._call(f"{node.name}_{name}", v[slot])

    def _report_outputs(self, node, values: list) -> None:
        expansion = getattr(node, "composite", None)
        for k, value in enumerate(values):
            if value is None:  # an output nobody reads may not have been computed
                continue
            if node.op is not None and node.op.private_output(node.params, k):
                continue  # plan plumbing MXNet's executor has no name for
            if expansion is None:
                self._call(node.output_name(k), value)
                continue
            j = expansion.output_index((node, k))
            if j is not None:  # steps inside a composite are not MXNet operators
                self._call(expansion.node.output_name(j), value)

    def _report_views(self, slot: int, v: list, opened: set[int]) -> None:
        for node in self.views.get(slot, ()):
            if self.monitor_all:
                ins = self._slots(node)
                if ins is not None:
                    self._report_inputs(node, node.params, ins, v, opened)
            self._report_outputs(node, [v[slot]])

    def _slots(self, node) -> list[int] | None:
        """The value slots of ``node``'s inputs in the plan's graph (None: not all there)."""
        ids = self.graph.node_id
        if not all(id(src) in ids for src, _ in node.inputs):
            return None
        return [self.resolve(self.graph.entry_id(entry)) for entry in node.inputs]

    def _call(self, name: str, tensor) -> None:
        self.callback(MonitorName(name), NDArray(tensor))
