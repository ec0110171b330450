"""Optimizer-states files never crash, corrupt or silently change a run (issue 16, items 1
and 4, and the ``.states`` half of 7): a states file is validated against what it loads
into before anything changes, and a mismatched state never reaches an update kernel."""
from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import sys
import textwrap
import tracemalloc
import zipfile

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import DTypeError, FileFormatError, ShapeError
from symgraph.optimizer import fields
from symgraph.optimizer.updater import (
    MAGIC,
    StatesDTypeError,
    StatesFormatError,
    StatesShapeError,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _trained(opt, shapes, dtype="float32") -> mx.optimizer.Updater:
    """An updater of ``opt`` after one update of weights of ``shapes``."""
    upd = mx.optimizer.get_updater(opt)
    weights = [mx.nd.ones(s, dtype=dtype) for s in shapes]
    upd(list(range(len(shapes))), [w * 0.5 for w in weights], weights)
    return upd


def _split(blob: bytes) -> tuple[dict, bytes]:
    start = len(MAGIC) + 8
    (size,) = struct.unpack("<Q", blob[len(MAGIC):start])
    return json.loads(blob[start:start + size]), blob[start + size:]


def _join(header: dict, rest: bytes) -> bytes:
    head = json.dumps(header).encode()
    return MAGIC + struct.pack("<Q", len(head)) + head + rest


def _set_attr(blob: bytes, name: str, value) -> bytes:
    """``blob`` with optimizer attribute ``name`` set to ``value`` (added when missing)."""
    header, rest = _split(blob)
    entries = header["optimizer"]["attrs"]["@dict"]
    for entry in entries:
        if entry[0] == name:
            entry[1] = value
            break
    else:
        entries.append([name, value])
    return _join(header, rest)


def _sgd(**kw):
    return mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, **kw)


# ----------------------------------------------------------------- item 1: memory safety
SCRIPT = textwrap.dedent("""
    import os, sys
    import symgraph as mx
    from symgraph.base import MXNetError

    TMP, SMALL, BIG, IN = sys.argv[1], 2, 4096, 64

    def module(hidden):
        fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=hidden, name="fc")
        mod = mx.mod.Module(mx.sym.SoftmaxOutput(fc, name="softmax"), context=mx.cpu())
        bind(mod)
        mod.init_params(mx.init.Xavier())
        return mod

    def bind(mod):
        mod.bind(data_shapes=[("data", (8, IN))], label_shapes=[("softmax_label", (8,))])

    def init_optimizer(mod):
        mod.init_optimizer(optimizer="sgd",
                           optimizer_params={"learning_rate": 0.1, "momentum": 0.9})

    def step(mod):
        mod.forward(mx.io.DataBatch([mx.nd.ones((8, IN))], [mx.nd.zeros((8,))]))
        mod.backward()
        mod.update()

    def small_states(path):
        small = module(SMALL)
        init_optimizer(small)
        step(small)
        small.save_optimizer_states(path)

    def module_load():
        prefix = os.path.join(TMP, "net")
        module(BIG).save_checkpoint(prefix, 1)
        small_states(prefix + "-0001.states")
        mod = mx.mod.Module.load(prefix, 1, load_optimizer_states=True, context=mx.cpu())
        bind(mod)
        init_optimizer(mod)
        step(mod)

    def module_load_optimizer_states():
        path = os.path.join(TMP, "small.states")
        small_states(path)
        mod = module(BIG)
        init_optimizer(mod)
        mod.load_optimizer_states(path)
        step(mod)

    def trainer_with_grads(units):
        net = mx.gluon.nn.Dense(units, in_units=IN)
        net.initialize()
        trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"momentum": 0.9})
        with mx.autograd.record():
            loss = net(mx.nd.ones((8, IN))).sum()
        loss.backward()
        return trainer

    def trainer_load_states():
        path = os.path.join(TMP, "trainer.states")
        small = trainer_with_grads(SMALL)
        small.step(8)
        small.save_states(path)
        trainer = trainer_with_grads(BIG)
        trainer.load_states(path)
        trainer.step(8)

    def updater_set_states():
        upd = mx.optimizer.get_updater(mx.optimizer.SGD(momentum=0.9))
        upd(0, mx.nd.ones((SMALL,)), mx.nd.ones((SMALL,)))
        fresh = mx.optimizer.get_updater(mx.optimizer.SGD(momentum=0.9))
        fresh.set_states(upd.get_states())
        fresh(0, mx.nd.ones((BIG, IN)), mx.nd.ones((BIG, IN)))

    for name in sys.argv[2:]:
        try:
            globals()[name]()
            print(f"{name}: no error", file=sys.stderr)
        except MXNetError as err:
            print(f"{name}: {type(err).__name__}: {err}", file=sys.stderr)
""")
SCENARIOS = ["module_load", "module_load_optimizer_states", "trainer_load_states",
             "updater_set_states"]


def test_states_of_a_smaller_model_raise_and_never_kill_the_process(tmp_path):
    """The heap overflow of issue 16 item 1: each way of resuming with the momentum of a
    smaller model raises a typed shape error; the process is never killed by a signal."""
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path), *SCENARIOS],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode >= 0, f"killed by signal {-proc.returncode}:\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = dict(line.split(": ", 1) for line in proc.stderr.splitlines() if ": " in line)
    for name in SCENARIOS:
        assert lines.get(name, "").startswith("StatesShapeError: "), proc.stderr[-3000:]
        assert "Shape inconsistent, Provided=(2" in lines[name]
    assert "fc_weight" in lines["module_load_optimizer_states"]
    assert "small.states" in lines["module_load_optimizer_states"]
    assert "trainer.states" in lines["trainer_load_states"]
    assert "expected shape=(4096" in lines["trainer_load_states"]


def test_set_states_with_weights_checks_them_and_changes_nothing_on_error():
    upd = _trained(_sgd(param_idx2name={0: "fc_weight", 1: "fc_bias"}), [(4, 3), (3,)])
    before_states, before_opt = upd.states, upd.optimizer
    blob = _trained(_sgd(), [(2, 3), (3,)]).get_states(dump_optimizer=True)
    weights = {0: mx.nd.ones((4, 3)), 1: mx.nd.ones((3,))}
    with pytest.raises(StatesShapeError) as err:
        upd.set_states(blob, weights=weights, source="run.states")
    assert isinstance(err.value, ShapeError) and isinstance(err.value, FileFormatError)
    assert str(err.value) == ("Error in optimizer state of weight 0 (fc_weight) from "
                              "run.states: Shape inconsistent, Provided=(2, 3), expected "
                              "shape=(4, 3)")
    assert upd.states is before_states and upd.optimizer is before_opt
    assert all(upd.states_synced.values())


def test_a_loaded_state_is_checked_at_its_first_update():
    blob = _trained(_sgd(), [(2,)]).get_states()
    upd = mx.optimizer.get_updater(_sgd())
    upd.set_states(blob)
    w = mx.nd.ones((5, 4))
    with pytest.raises(StatesShapeError, match=r"Provided=\(2,\), expected shape=\(5, 4\)"):
        upd(0, mx.nd.ones((5, 4)), w)
    np.testing.assert_array_equal(w.asnumpy(), np.ones((5, 4)))  # no kernel ran


@pytest.mark.parametrize("make, shapes, dtype, error, match", [
    (_sgd, [(3,)], "float64", StatesDTypeError, "Provided=float64, expected dtype=float32"),
    (lambda: mx.optimizer.Adam(), [(3,)], "float32", StatesFormatError,
     "expected an array of shape \\(3,\\), got a tuple of 2"),
    (lambda: mx.optimizer.SGD(momentum=0.0), [(3,)], "float32", StatesFormatError,
     "expected an array of shape \\(3,\\), got None"),
], ids=["dtype", "adam-into-sgd", "no-momentum-into-momentum"])
def test_dtype_and_structure_must_match_what_the_optimizer_creates(make, shapes, dtype, error,
                                                                    match):
    blob = _trained(make(), shapes, dtype).get_states()
    upd = mx.optimizer.get_updater(_sgd())
    with pytest.raises(error, match=match):
        upd.set_states(blob, weights={0: mx.nd.ones((3,))})
    assert issubclass(StatesDTypeError, DTypeError)


def _module(hidden: int) -> mx.mod.Module:
    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=hidden, name="fc")
    mod = mx.mod.Module(mx.sym.SoftmaxOutput(fc, name="softmax"), context=mx.cpu())
    mod.bind(data_shapes=[("data", (4, 5))], label_shapes=[("softmax_label", (4,))])
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    mod.forward(mx.io.DataBatch([mx.nd.ones((4, 5))], [mx.nd.zeros((4,))]))
    mod.backward()
    mod.update()
    return mod


def test_module_load_optimizer_states_is_all_or_nothing(tmp_path):
    path = str(tmp_path / "small.states")
    _module(2).save_optimizer_states(path)
    mod = _module(3)
    states = {k: v.asnumpy() for k, v in mod._updater.states.items()}
    with pytest.raises(StatesShapeError, match="fc_weight.*small.states.*Provided=\\(2, 5\\)"):
        mod.load_optimizer_states(path)
    assert {k: v.asnumpy().tolist() for k, v in mod._updater.states.items()} == \
        {k: v.tolist() for k, v in states.items()}


def test_module_load_with_mismatched_states_leaves_the_optimizer_uninitialized(tmp_path):
    prefix = str(tmp_path / "net")
    _module(3).save_checkpoint(prefix, 1)
    _module(2).save_optimizer_states(prefix + "-0001.states")
    mod = mx.mod.Module.load(prefix, 1, load_optimizer_states=True, context=mx.cpu())
    mod.bind(data_shapes=[("data", (4, 5))], label_shapes=[("softmax_label", (4,))])
    with pytest.raises(StatesShapeError, match="fc_weight"):
        mod.init_optimizer(optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    assert not mod.optimizer_initialized


def _trainer(units: int, ctx=None):
    net = mx.gluon.nn.Dense(units, in_units=3)
    net.initialize(ctx=ctx or mx.cpu())
    trainer = mx.gluon.Trainer(net.collect_params(), "adam")
    for c in ctx or [mx.cpu()]:
        with mx.autograd.record():
            loss = net(mx.nd.ones((2, 3), ctx=c)).sum()
        loss.backward()
    trainer.step(2)
    return trainer


def test_trainer_load_states_is_all_or_nothing(tmp_path):
    path = str(tmp_path / "small.states")
    _trainer(2).save_states(path)
    ctx = [mx.cpu(0), mx.cpu(1)]
    trainer = _trainer(4, ctx)
    before = [(u.states, u.optimizer) for u in trainer._updaters]
    with pytest.raises(StatesShapeError, match=r"state\[0\] of weight 0 .* from .*small.states: "
                                               r"Shape inconsistent, Provided=\(2,\), expected "
                                               r"shape=\(4,\)"):
        trainer.load_states(path)
    assert [(u.states, u.optimizer) for u in trainer._updaters] == before


def test_kvstore_load_optimizer_states_checks_the_stored_weights(tmp_path):
    path = str(tmp_path / "kv.states")
    kv = mx.kv.create("local")
    kv.set_optimizer(_sgd())
    kv.init("w", mx.nd.ones((2,)))
    kv.push("w", mx.nd.ones((2,)))
    kv.save_optimizer_states(path)
    big = mx.kv.create("local")
    big.set_optimizer(_sgd())
    big.init("w", mx.nd.ones((6,)))
    with pytest.raises(StatesShapeError, match=r"weight 'w' from .*kv.states.*Provided=\(2,\)"):
        big.load_optimizer_states(path)
    assert big._updater.states == {}


# ------------------------------------------------------- item 7: optimizer fields are data
@pytest.mark.parametrize("name, value, match", [
    ("lr", float("nan"), "optimizer field 'lr': nan is not a finite number"),
    ("wd", float("inf"), "optimizer field 'wd'"),
    ("rescale_grad", 1e300, "optimizer field 'rescale_grad'"),
    ("momentum", "0.9", "optimizer field 'momentum': expected a number, got str"),
    ("num_update", -1, "optimizer field 'num_update'"),
    ("num_update", 0, "an update count is above num_update"),
    ("multi_precision", 1, "optimizer field 'multi_precision': expected a bool, got int"),
    ("idx2name", {"@dict": [[0, 5]]}, "optimizer field 'idx2name': entry 0"),
    ("__class__", "x", "unknown optimizer field '__class__'"),
    ("update", 1, "unknown optimizer field 'update'"),
])
def test_states_files_set_only_declared_valid_fields(tmp_path, name, value, match):
    blob = _trained(_sgd(), [(3,)]).get_states(dump_optimizer=True)
    path = tmp_path / "bad.states"
    path.write_bytes(_set_attr(blob, name, value))
    upd = mx.optimizer.get_updater(_sgd())
    before = upd.optimizer
    with pytest.raises(StatesFormatError, match=f"bad.states: SGD optimizer: {match}"):
        upd.set_states(path.read_bytes(), source=str(path))
    assert upd.optimizer is before


def test_missing_field_and_lr_scheduler_fields_are_checked():
    sched = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=0.1)
    blob = _trained(mx.optimizer.SGD(lr_scheduler=sched), [(3,)]).get_states(True)
    header, rest = _split(blob)
    entries = header["optimizer"]["attrs"]["@dict"]
    (sched_entry,) = [e for e in entries if e[0] == "lr_scheduler"]
    cases = {"unknown FactorScheduler field 'evil'": ["evil", 1],
             "FactorScheduler field 'step'": ["step", 0]}
    for match, entry in cases.items():
        changed = json.loads(json.dumps(header))
        (target,) = [e for e in changed["optimizer"]["attrs"]["@dict"] if e[0] == "lr_scheduler"]
        target[1]["state"]["@dict"].append(entry)
        with pytest.raises(StatesFormatError, match=match):
            mx.optimizer.get_updater(_sgd()).set_states(_join(changed, rest))
    sched_entry[1]["@sched"] = "LRScheduler"  # the abstract base: fails at its first call
    with pytest.raises(StatesFormatError, match="'LRScheduler' is not a scheduler class"):
        mx.optimizer.get_updater(_sgd()).set_states(_join(header, rest))
    entries.remove(sched_entry)
    with pytest.raises(StatesFormatError, match="missing optimizer field 'lr_scheduler'"):
        mx.optimizer.get_updater(_sgd()).set_states(_join(header, rest))


def test_a_scheduler_far_behind_its_update_count_is_refused_not_looped():
    sched = mx.lr_scheduler.FactorScheduler(step=1, factor=1.0, base_lr=0.1)
    blob = _trained(mx.optimizer.SGD(lr_scheduler=sched), [(3,)]).get_states(True)
    with pytest.raises(StatesFormatError, match="too far behind num_update"):
        mx.optimizer.get_updater(_sgd()).set_states(_set_attr(blob, "num_update", 2 ** 60))


def _builtin_optimizers() -> list[tuple[str, type]]:
    return sorted((n, k) for n, k in mx.optimizer.Optimizer.opt_registry.items()
                  if k.__module__.startswith("symgraph."))


def _kwargs(name: str, i: int) -> dict:
    """Constructor arguments exercising the fields (a scheduler of each kind in turn)."""
    if name == "groupadagrad":
        return {"learning_rate": 0.1}
    scheds = [mx.lr_scheduler.FactorScheduler(step=1, factor=0.9, base_lr=0.1),
              mx.lr_scheduler.MultiFactorScheduler(step=[1, 3], factor=0.5, base_lr=0.1),
              mx.lr_scheduler.PolyScheduler(max_update=10, base_lr=0.1),
              mx.lr_scheduler.CosineScheduler(max_update=10, base_lr=0.1)]
    kw = {"lr_scheduler": scheds[i % 4], "wd": 0.01, "clip_gradient": 5.0}
    if name in ("sgd", "nag", "ccsgd", "lars", "lbsgd", "dcasgd", "signum"):
        kw["momentum"] = 0.9
    return kw


@pytest.mark.parametrize("name, klass", _builtin_optimizers())
def test_every_registered_optimizer_round_trips_exactly(name, klass):
    i = [n for n, _ in _builtin_optimizers()].index(name)
    opt = klass(param_idx2name={0: "fc_weight", 1: "fc_bias"}, **_kwargs(name, i))
    upd = mx.optimizer.get_updater(opt)
    ws = [mx.nd.array(np.linspace(-1, 1, 6).reshape(3, 2)), mx.nd.ones((2, 2))]
    for _ in range(2):
        upd([0, 1], [w * 0.3 + 0.1 for w in ws], ws)
    blob = upd.get_states(dump_optimizer=True)
    other = mx.optimizer.get_updater(mx.optimizer.Test())
    other.set_states(blob, weights=dict(enumerate(ws)))
    assert type(other.optimizer) is klass
    assert _split(other.get_states(dump_optimizer=True))[0] == _split(blob)[0]
    ws2 = [w.copy() for w in ws]
    for u, w in ((upd, ws), (other, ws2)):
        mx.random.seed(1)  # SGLD's noise
        u([0, 1], [x * 0.2 for x in w], w)
    for a, b in zip(ws, ws2):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


@pytest.mark.parametrize("name, klass", _builtin_optimizers())
def test_savable_fields_are_what_each_optimizer_holds(name, klass):
    opt = klass(**({"momentum": 0.9} if "momentum" in klass.__init__.__code__.co_varnames
                   else {}))
    w = mx.nd.ones((2, 2))
    opt.update(0, w, w * 0.1, opt.create_state(0, w))  # attributes set by the first update
    held = set(vars(opt)) - {"param_dict", "_index_update_count"}
    assert held == set(fields.fields_of(klass))


# ------------------------------------------------------- items 4 and 7: corrupt archives
def _deflated_states(nbytes: int) -> bytes:
    """A states blob whose one array member is deflated: ~1000x smaller than it expands."""
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        head, {"descr": "<f4", "fortran_order": False, "shape": (nbytes // 4,)})
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        with zf.open("a0.npy", "w", force_zip64=True) as f:
            f.write(head.getvalue())
            for _ in range(nbytes >> 20):
                f.write(bytes(1 << 20))
    header = {"format": "symgraph-optimizer-states", "version": 1,
              "states": {"@dict": [[0, {"@nd": 0}]]}, "optimizer": None}
    return _join(header, buf.getvalue())


def test_a_deflated_member_is_refused_without_expanding_it():
    blob = _deflated_states(128 << 20)
    assert len(blob) < 200_000
    upd = mx.optimizer.get_updater(_sgd())
    tracemalloc.start()
    try:
        with pytest.raises(StatesFormatError, match="a0.npy is compressed"):
            upd.set_states(blob, source="bomb.states")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, f"peak {peak / 2**20:.0f} MiB"


def _valid_blob() -> bytes:
    return _trained(mx.optimizer.Adam(), [(4, 3), (3,)]).get_states(dump_optimizer=True)


def _cuts():
    blob = _valid_blob()
    end = len(MAGIC) + 8 + _split(blob)[0].__len__()
    start = len(MAGIC) + 8 + struct.unpack("<Q", blob[len(MAGIC):len(MAGIC) + 8])[0]
    return [0, 5, len(MAGIC) + 3, start - 7, start + 10, (start + len(blob)) // 2,
            len(blob) - 30, len(blob) - 1, end]


@pytest.mark.parametrize("cut", _cuts())
def test_truncated_files_raise_file_format_error(tmp_path, cut):
    blob = _valid_blob()
    path = tmp_path / "cut.states"
    path.write_bytes(blob[:cut])
    kv = mx.kv.create("local")
    kv.set_optimizer(mx.optimizer.Adam())
    with pytest.raises(FileFormatError, match="cut.states"):
        kv.load_optimizer_states(str(path))
    assert kv._updater.states == {}


@pytest.mark.parametrize("data", [
    b"", bytes(100), b"\x80\x04K\x01.", np.random.RandomState(0).bytes(300),
    MAGIC + struct.pack("<Q", 2 ** 63) + b"{}",  # over the header limit
    MAGIC + struct.pack("<Q", 7) + b'{"a": [',
    b"[" * 100000,
], ids=["empty", "zeros", "pickle", "random", "header-over-limit", "bad-json", "brackets"])
def test_garbage_raises_file_format_error(data):
    with pytest.raises(FileFormatError, match="garbage.states"):
        mx.optimizer.get_updater(_sgd()).set_states(data, source="garbage.states")


def test_deep_nesting_and_bad_references_raise_file_format_error():
    header, rest = _split(_trained(_sgd(), [(3,)]).get_states())
    for states, match in [({"@tuple": [{"@tuple": []}]} , None),
                          ({"@dict": [[0, {"@nd": 7}]]}, "array 7 is not in the archive"),
                          ({"@dict": [[0, {"@nd": True}]]}, "not an archive index"),
                          ({"@dict": []}, "a0.npy is not referred to"),
                          (json.loads("[" * 50 + "]" * 50), "JSON list"),
                          ({"@dict": [[[1], None]]}, "is not an int or a string")]:
        if match is None:  # 40 levels of tuples: over the depth limit
            states, match = {"@dict": [[0, _nest(40)]]}, "nested more than"
        with pytest.raises(StatesFormatError, match=match):
            mx.optimizer.get_updater(_sgd()).set_states(_join({**header, "states": states},
                                                              rest))
    deep = MAGIC + struct.pack("<Q", 200000) + b"[" * 100000 + b"]" * 100000
    with pytest.raises(StatesFormatError, match="not valid JSON"):
        mx.optimizer.get_updater(_sgd()).set_states(deep)


def _nest(depth: int):
    node = None
    for _ in range(depth):
        node = {"@tuple": [node]}
    return node
