"""The bind-time pipeline (``symgraph.compiler.plan``): ``build_plan`` is ``PASSES`` run in
order, every pass runs alone on the previous stage, and every stage prints."""
from __future__ import annotations

import torch

import symgraph as mx
from symgraph.compiler import plan as P
from symgraph.compiler.schedule import Step


def _net():
    x = mx.sym.Variable("x")
    h = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=5, name="fc"), act_type="relu")
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=3, name="out"),
                                name="softmax")


def _request():
    sym = _net()
    shapes = {"x": (4, 6), "softmax_label": (4,), "fc_weight": (5, 6), "fc_bias": (5,),
              "out_weight": (3, 5), "out_bias": (3,)}
    dtypes = {n: "float32" for n in shapes}
    return sym, shapes, dtypes, ["x", "fc_weight", "out_weight"]


def test_build_plan_is_the_pass_list_and_each_pass_runs_alone():
    sym, shapes, dtypes, wrt = _request()
    seen = []
    whole = P.build_plan(sym._outputs, shapes, dtypes, wrt, torch.device("cpu"),
                         trace=lambda name, stage: seen.append((name, type(stage).__name__)))
    assert [name for name, _ in seen] == [p.__name__ for p in P.PASSES]
    assert [t for _, t in seen][-6:] == ["Differentiated", "Typed", "Typed", "Laid", "Lowered",
                                         "Plan"]
    # by hand, one stage at a time
    req = P.BindRequest(sym._outputs, shapes, dtypes, wrt, torch.device("cpu"))
    stage = P.GraphStage(req, req.heads)
    for graph_pass in (P.expand_composites, P.apply_rewrites, P.eliminate_common,
                       P.check_plannable):
        stage = graph_pass(stage)
    typed = P.infer_entries(P.differentiate(stage))
    assert typed.shapes[typed.diff.graph.entry_id(typed.diff.graph.heads[0])] == (4, 3)
    plan = P.schedule(P.lower(P.lay_out(P.infer_storage(typed))))
    assert [s.node.name for s in plan.forward_train] == \
        [s.node.name for s in whole.forward_train]
    assert [s.node.name for s in plan.backward] == [s.node.name for s in whole.backward]
    assert plan.impl == whole.impl and plan.grad_slot.keys() == whole.grad_slot.keys()


def test_steps_are_named_tuples_the_hot_loop_unpacks():
    sym, shapes, dtypes, wrt = _request()
    plan = P.build_plan(sym._outputs, shapes, dtypes, wrt, torch.device("cpu"))
    step = plan.forward_train[0]
    assert isinstance(step, Step) and isinstance(step, tuple)
    fn, params, ins, aux, outs, frees, node = step
    assert (fn, ins, outs, node) == (step.fn, step.ins, step.outs, step.node)
    assert all(isinstance(s, int) for s in step.ins + step.outs + step.frees)


def test_debug_str_shows_every_pass():
    sym, shapes, _, _ = _request()
    exe = sym.simple_bind(mx.cpu(), x=shapes["x"])
    text = exe.debug_str(show_passes=True)
    positions = [text.index(f"pass {p.__name__}") for p in P.PASSES]
    assert positions == sorted(positions)
    assert "fc: 4x5 float32" in text  # the inference pass lists every entry
    assert "Total planned memory" in text and "pass " not in exe.debug_str()
