"""symgraph.config: every setting is read somewhere, every environment variable symgraph
honours is in one table, parsed as the code that used to read it did."""
from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from symgraph import config

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [p for p in sorted((ROOT / "symgraph").rglob("*.py")) if p.name != "config.py"]


def _texts() -> dict[str, str]:
    return {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in SOURCES}


def _is_config_get(node: ast.AST) -> bool:
    """``config.get()`` or, inside config, ``get()``."""
    if not isinstance(node, ast.Call) or node.args or node.keywords:
        return False
    func = node.func
    return (isinstance(func, ast.Name) and func.id == "get") or (
        isinstance(func, ast.Attribute) and func.attr == "get"
        and isinstance(func.value, ast.Name) and func.value.id in ("config", "_config"))


def _setting_reads(path: Path) -> set[str]:
    """The fields read as ``config.get().<field>``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.attr for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and _is_config_get(n.value)}


def test_every_config_field_is_read():
    read = set().union(*(_setting_reads(p) for p in (ROOT / "symgraph").rglob("*.py")))
    unread = [f.name for f in dataclasses.fields(config.Config) if f.name not in read]
    assert not unread, f"Config fields nothing reads (dead settings): {unread}"


def test_every_mxnet_variable_is_read_and_no_other_is():
    texts = _texts()
    unread = [name for name in config.MXNET_ENV
              if not any(f'"{name}"' in text for text in texts.values())]
    assert not unread, f"MXNET_ENV entries nothing reads: {unread}"
    calls = []
    for rel, text in texts.items():
        for node in ast.walk(ast.parse(text)):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "env" and node.args
                    and isinstance(node.args[0], ast.Constant)):
                calls.append((rel, node.args[0].value))
    unknown = [c for c in calls if c[1] not in config.MXNET_ENV]
    assert calls and not unknown, f"config.env of variables not in MXNET_ENV: {unknown}"


def test_no_module_reads_a_variable_outside_the_table():
    """The free-form passthrough is gone: variables are read through ``config.env`` (the
    ``MXNET_ENV`` table), ``Config`` or ``getenv`` (MXNet's ``mx.util.getenv``) only."""
    assert not hasattr(config, "env_flag") and not hasattr(config, "apply_kernel_settings")
    assert not [rel for rel, text in _texts().items() if "env_flag(" in text]


@pytest.mark.parametrize("name, text, value", [
    ("MXNET_UPDATE_ON_KVSTORE", None, True), ("MXNET_UPDATE_ON_KVSTORE", "0", False),
    ("MXNET_UPDATE_ON_KVSTORE", "2", True),
    ("MXNET_ELIMINATE_COMMON_EXPR", None, True), ("MXNET_ELIMINATE_COMMON_EXPR", "0", False),
    ("MXNET_ELIMINATE_COMMON_EXPR", "no", True),
    ("DMLC_ROLE", None, ""), ("DMLC_ROLE", "worker", "worker"),
    ("DMLC_PS_ROOT_URI", None, "127.0.0.1"), ("DMLC_PS_ROOT_PORT", None, None),
    ("DMLC_PS_ROOT_PORT", "", None), ("MASTER_PORT", "0", 0), ("RANK", "3", 3),
    ("TORCHELASTIC_USE_AGENT_STORE", "True", True), ("TORCHELASTIC_USE_AGENT_STORE", "1", False),
    ("NVIDIA_TF32_OVERRIDE", None, True), ("NVIDIA_TF32_OVERRIDE", "0", False),
    ("CD_JOB", None, False), ("CD_JOB", "1", True), ("MXNET_HOME", None, ""),
])
def test_env_parses_as_mxnet_does(monkeypatch, name, text, value):
    if text is None:
        monkeypatch.delenv(name, raising=False)
    else:
        monkeypatch.setenv(name, text)
    assert config.env(name) == value


def test_env_refuses_variables_not_in_the_table():
    with pytest.raises(KeyError):
        config.env("MXNET_SURELY_NOT_A_SETTING")


def test_a_bad_integer_fails_where_it_is_read(monkeypatch):
    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", "yes")
    with pytest.raises(ValueError):
        config.env("MXNET_UPDATE_ON_KVSTORE")


def test_getenv_and_setenv_are_free_form(monkeypatch):
    monkeypatch.setenv("SYMGRAPH_TEST_ANY_NAME", "x")  # restored afterwards
    config.setenv("SYMGRAPH_TEST_ANY_NAME", "y")
    assert config.getenv("SYMGRAPH_TEST_ANY_NAME") == "y"
    config.setenv("SYMGRAPH_TEST_ANY_NAME", None)
    assert config.getenv("SYMGRAPH_TEST_ANY_NAME") is None


@pytest.fixture
def fresh_kernel_caches(monkeypatch):
    """Undo what pointing the kernel caches changes: symgraph's record, the generated
    sources' folder, Triton's cache knob and the variable it mirrors."""
    knobs = pytest.importorskip("triton.knobs")
    from symgraph.kernels import elementwise
    monkeypatch.setattr(config, "_applied", {})
    monkeypatch.setitem(elementwise._settings, "cache_dir", elementwise._settings["cache_dir"])
    monkeypatch.setenv("TRITON_CACHE_DIR", "unset-below")  # teardown restores the original
    monkeypatch.delenv("TRITON_CACHE_DIR")
    yield knobs
    del knobs.cache.dir


def test_kernel_caches_follow_cache_dir(fresh_kernel_caches, tmp_path):
    from symgraph.kernels import elementwise
    with config.override(cache_dir=str(tmp_path)):
        config.point_kernel_caches_at_cache_dir()
    assert elementwise._settings["cache_dir"] == str(tmp_path)
    assert fresh_kernel_caches.cache.dir == str(tmp_path / "triton")


def test_a_users_triton_cache_dir_wins(fresh_kernel_caches, tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "mine"))
    with config.override(cache_dir=str(tmp_path)):
        config.point_kernel_caches_at_cache_dir()
        assert config.triton_cache_dir() == str(tmp_path / "mine")
    assert fresh_kernel_caches.cache.dir == str(tmp_path / "mine")
