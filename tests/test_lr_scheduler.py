"""mx.lr_scheduler against MXNet 1.9.1 values (tests/fixtures/optim_api, generate.py)."""
from __future__ import annotations

import json
import pathlib

import pytest

import symgraph as mx

META = json.loads((pathlib.Path(__file__).parent / "fixtures" / "optim_api"
                   / "optim_api.json").read_text())


@pytest.mark.parametrize("key", sorted(META["sched"]))
def test_schedule_matches_mxnet(key):
    case = META["sched"][key]
    sched = getattr(mx.lr_scheduler, case["cls"])(**case["kwargs"])
    assert [sched(n) for n in case["steps"]] == case["lr"]  # bit-exact


@pytest.mark.parametrize("make, message", [
    (lambda: mx.lr_scheduler.FactorScheduler(step=2, factor=1.5), "Factor must be no more"),
    (lambda: mx.lr_scheduler.MultiFactorScheduler(step=[0, 2]), "greater or equal than 1"),
    (lambda: mx.lr_scheduler.PolyScheduler(max_update=0), "strictly positive"),
    (lambda: mx.lr_scheduler.CosineScheduler(10, base_lr=0.1, warmup_begin_lr=0.2),
     "Base lr has to be higher"),
    (lambda: mx.lr_scheduler.LRScheduler(warmup_steps=-1), "Warmup steps has to be positive"),
])
def test_invalid_arguments_raise_like_mxnet(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_base_scheduler_is_abstract():
    with pytest.raises(NotImplementedError):
        mx.lr_scheduler.LRScheduler()(1)
