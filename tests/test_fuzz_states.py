"""Seeded mutation fuzzing of the optimizer-states reader (issue 16, item 7).

Valid states blobs of SGD with momentum (and a scheduler) and Adam, saved with and without
the optimizer, are mutated byte by byte and through their JSON header (re-encoded with the
right length prefix). Each mutant goes to ``Updater.set_states`` with the weights it
belongs to; it must either be refused with an ``MXNetError`` or load and then update those
weights to finite values from finite gradients: a state that loads and fails only at the
first update, or turns finite weights into NaN, is a defect. A longer local run:

    SYMGRAPH_FUZZ_N=10000 python -m pytest tests/test_fuzz_states.py -q -s
"""
from __future__ import annotations

import json
import struct

import numpy as np
import pytest

import symgraph as mx
from symgraph.optimizer.updater import MAGIC
from tests.fuzzing import N, byte_mutants, json_mutants, run

SHAPES = [(4, 3), (3,), (2, 2)]
OPTIMIZERS = {
    "sgd-momentum": lambda: mx.optimizer.SGD(
        momentum=0.9, wd=1e-4, param_idx2name={0: "fc_weight", 1: "fc_bias", 2: "out_weight"},
        lr_scheduler=mx.lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=0.1)),
    "adam": lambda: mx.optimizer.Adam(learning_rate=0.01, wd=1e-4, clip_gradient=5.0),
}


def _weights() -> list:
    return [mx.nd.array(np.linspace(-1.0, 1.0, int(np.prod(s))).reshape(s)) for s in SHAPES]


def _grads() -> list:
    return [mx.nd.array(np.linspace(0.5, 1.5, int(np.prod(s))).reshape(s) * (-1) ** i)
            for i, s in enumerate(SHAPES)]


def _seed(name: str, dump: bool) -> bytes:
    """The states after two updates (so the counters and the scheduler have moved)."""
    upd = mx.optimizer.get_updater(OPTIMIZERS[name]())
    weights = _weights()
    for _ in range(2):
        upd(list(range(len(SHAPES))), _grads(), weights)
    return upd.get_states(dump_optimizer=dump)


def _reader(name: str):
    def read(blob: bytes) -> mx.optimizer.Updater:
        upd = mx.optimizer.get_updater(OPTIMIZERS[name]())
        upd.set_states(blob, weights=dict(enumerate(_weights())), source="fuzz.states")
        return upd
    return read


def _updates_to_finite_weights(upd: mx.optimizer.Updater) -> None:
    """What loaded must take one update of its weights to finite values."""
    weights = _weights()
    try:
        upd(list(range(len(SHAPES))), _grads(), weights)
    except Exception as err:  # any failure after a load is the defect
        raise AssertionError(f"loaded, then failed at the first update: "
                             f"{type(err).__name__}: {err}") from err
    for i, w in enumerate(weights):
        if not np.isfinite(w.asnumpy()).all():
            raise AssertionError(f"weight {i} is not finite after one update")


def _header_mutants(seed: bytes, n: int) -> list[bytes]:
    """``seed`` with its JSON header mutated, the length prefix written to match."""
    start = len(MAGIC) + 8
    (size,) = struct.unpack("<Q", seed[len(MAGIC):start])
    header, rest = json.loads(seed[start:start + size]), seed[start + size:]
    texts = list(json_mutants(header, n, rng_seed=1))
    return [MAGIC + struct.pack("<Q", len(head)) + head + rest
            for head in (text.encode("utf-8") for text in texts)]


@pytest.mark.parametrize("kind", ["bytes", "header"])
@pytest.mark.parametrize("dump", [True, False], ids=["with-optimizer", "states-only"])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_mutated_states_load_safely_or_raise_mxnet_errors(name, dump, kind):
    seed = _seed(name, dump)
    _updates_to_finite_weights(_reader(name)(seed))  # the seed itself loads and updates
    inputs = byte_mutants(seed, N) if kind == "bytes" else _header_mutants(seed, N)
    tally = run(f"states/{name}/{'dump' if dump else 'states'}/{kind}", _reader(name), inputs,
                check=_updates_to_finite_weights)
    assert tally.rejected > 0
    assert not tally.defects, "\n".join(tally.defects[:5])
