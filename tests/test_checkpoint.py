"""Crash-safe files and consistent checkpoints (issue 16, item 8)."""
from __future__ import annotations

import multiprocessing
import os
import random
import signal
import subprocess
import sys

import pytest

import symgraph as mx
from symgraph import checkpoint, fileio

# --------------------------------------------------------------------------- fileio


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def _mode(path) -> int:
    return os.stat(path).st_mode & 0o777


def _module(value: float = 1.0) -> mx.mod.Module:
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, name="fc")
    net = mx.sym.LinearRegressionOutput(net, name="lro")
    mod = mx.mod.Module(net, data_names=["data"], label_names=["lro_label"])
    mod.bind(data_shapes=[("data", (4, 3))], label_shapes=[("lro_label", (4, 2))])
    mod.init_params(mx.init.Constant(value))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"momentum": 0.9})
    batch = mx.io.DataBatch([mx.nd.ones((4, 3))], [mx.nd.zeros((4, 2))])
    mod.forward_backward(batch)
    mod.update()
    return mod


def test_files_follow_the_umask_new_or_existing(tmp_path, umask_022):
    mod = _module()
    existing = tmp_path / "net-0001.states"
    existing.write_bytes(b"old")
    existing.chmod(0o644)
    mod.save_checkpoint(str(tmp_path / "net"), 1, save_optimizer_states=True)
    mod.save_optimizer_states(str(tmp_path / "alone.states"))
    for name in ("net-symbol.json", "net-0001.params", "net-0001.states", "alone.states"):
        assert _mode(tmp_path / name) == 0o644, name
    os.umask(0o077)
    mod.save_checkpoint(str(tmp_path / "net"), 1, save_optimizer_states=True)
    assert _mode(tmp_path / "net-0001.states") == 0o600


def test_writes_fsync_the_file_and_the_directory(tmp_path, monkeypatch):
    synced = []
    real = os.fsync

    def fsync(fd):
        synced.append("dir" if os.path.isdir(f"/proc/self/fd/{fd}") else "file")
        real(fd)

    monkeypatch.setattr(fileio.os, "fsync", fsync)
    kv = mx.kv.create("local")
    kv.set_optimizer(mx.optimizer.SGD(momentum=0.9))
    kv.init(0, mx.nd.ones((2,)))
    kv.push(0, mx.nd.ones((2,)))
    kv.save_optimizer_states(str(tmp_path / "kv.states"))
    assert synced == ["file", "dir"]


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_the_next_save_removes_temp_files_of_killed_writers(tmp_path):
    target = tmp_path / "net-0001.params"
    dead = tmp_path / f".net-0001.params.tmp-{_dead_pid()}-0badcafe"
    live = tmp_path / f".net-0001.params.tmp-{os.getppid()}-0badcafe"  # a live writer's
    dead.write_bytes(b"partial")
    live.write_bytes(b"in progress")
    mx.nd.save(str(target), {"arg:w": mx.nd.ones((2,))})
    assert not dead.exists() and live.exists()


# --------------------------------------------------------------------------- pairing


def _states_value(blob: bytes) -> float:
    upd = mx.optimizer.get_updater(mx.optimizer.SGD(momentum=0.9))
    upd.set_states(blob)
    (value,) = {float(v) for s in upd.states.values() for v in s.asnumpy().ravel()}
    return value


def _set_everything(mod: mx.mod.Module, value: float) -> None:
    """Weights and momentum all equal to ``value``: one number identifies a save."""
    args, auxs = mod.get_params()
    mod.set_params({k: mx.nd.full(v.shape, value) for k, v in args.items()}, auxs)
    for state in mod._updater.states.values():
        state[:] = value


def _load_pair(prefix: str) -> tuple[float, float]:
    mod = mx.mod.Module.load(prefix, 1, load_optimizer_states=True, label_names=["lro_label"])
    (params,) = {float(v) for a in mod._arg_params.values() for v in a.asnumpy().ravel()}
    return params, _states_value(checkpoint.load_states(prefix, 1))


def test_a_save_killed_after_the_params_rolls_forward_on_load(tmp_path, monkeypatch):
    prefix = str(tmp_path / "net")
    mod = _module()
    _set_everything(mod, 1.0)
    mod.save_checkpoint(prefix, 1, save_optimizer_states=True)
    _set_everything(mod, 2.0)

    def killed(src, dst):
        raise KeyboardInterrupt  # the process dies between the params and the states rename

    monkeypatch.setattr(fileio, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        mod.save_checkpoint(prefix, 1, save_optimizer_states=True)
    monkeypatch.undo()
    assert os.path.exists(prefix + "-0001.states.pending")
    assert _load_pair(prefix) == (2.0, 2.0)
    assert not os.path.exists(prefix + "-0001.states.pending")


def test_states_of_another_save_are_refused(tmp_path):
    prefix = str(tmp_path / "net")
    mod = _module()
    _set_everything(mod, 1.0)
    mod.save_checkpoint(prefix, 1, save_optimizer_states=True)
    states = open(prefix + "-0001.states", "rb").read()
    _set_everything(mod, 2.0)
    mod.save_checkpoint(prefix, 1, save_optimizer_states=True)
    open(prefix + "-0001.states", "wb").write(states)
    with pytest.raises(checkpoint.CheckpointError, match="different saves"):
        mx.mod.Module.load(prefix, 1, load_optimizer_states=True, label_names=["lro_label"])
    assert isinstance(checkpoint.CheckpointError("x"), mx.base.MXNetError)
    mx.mod.Module.load(prefix, 1, label_names=["lro_label"])  # the params alone load


def _saver(prefix: str, ready) -> None:
    """Save checkpoints numbered 1, 2, 3, ... to one prefix and epoch until killed."""
    mod = _module()
    step = 1
    while True:
        _set_everything(mod, float(step))
        mod.save_checkpoint(prefix, 1, save_optimizer_states=True)
        ready.set()
        step += 1


def test_sigkill_during_save_checkpoint_never_mixes_saves(tmp_path):
    """20 SIGKILLs at random points of save_checkpoint(..., save_optimizer_states=True)."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["symgraph", "tests.test_checkpoint"])
    prefix = str(tmp_path / "net")
    rng = random.Random(16)
    for trial in range(20):
        ready = ctx.Event()
        proc = ctx.Process(target=_saver, args=(prefix, ready))
        proc.start()
        assert ready.wait(60), "the saver never saved"
        proc.join(rng.uniform(0.0, 0.2))
        os.kill(proc.pid, signal.SIGKILL)
        proc.join()
        assert proc.exitcode == -signal.SIGKILL
        params, states = _load_pair(prefix)
        assert params == states, f"trial {trial}: params of save {params}, states of {states}"
    mod = _module()
    mod.save_checkpoint(prefix, 1, save_optimizer_states=True)
    left = sorted(n for n in os.listdir(tmp_path) if n.startswith(".") or "pending" in n)
    assert left == []
