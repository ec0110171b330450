"""Automatic naming (``mx.name.NameManager``, ``Prefix``) and ``mx.AttrScope``."""
from __future__ import annotations

import collections
import threading

from ..attrs import hide_keys
from ..base import AttrError, classproperty, string_types, with_metaclass  # noqa: F401

_local = threading.local()


class NameManager:
    """Gives unnamed symbols names ``<hint><count>`` (``fullyconnected0``, ``fullyconnected1``).

    >>> with NameManager() as names:
    ...     names.get(None, 'fullyconnected'), names.get(None, 'fullyconnected')
    ('fullyconnected0', 'fullyconnected1')
    """

    def __init__(self):
        self._counter: dict[str, int] = {}
        self._old_manager: NameManager | None = None

    def get(self, name: str | None, hint: str) -> str:
        """The given name, or a new ``hint`` + counter name."""
        if name:
            return name
        count = self._counter.get(hint, 0)
        self._counter[hint] = count + 1
        return f"{hint}{count}"

    def __enter__(self) -> NameManager:
        self._old_manager = NameManager.current
        _local.name_manager = self
        return self

    def __exit__(self, *exc) -> None:
        _local.name_manager = self._old_manager

    class _Current:
        def __get__(self, obj, cls) -> NameManager:
            manager = getattr(_local, "name_manager", None)
            if manager is None:
                manager = _local.name_manager = NameManager()
            return manager

    current = _Current()


class Prefix(NameManager):
    """A name manager that prepends ``prefix`` to every name, given or generated.

    >>> with Prefix('net_'):
    ...     Prefix.current.get(None, 'conv'), Prefix.current.get('fc', 'fullyconnected')
    ('net_conv0', 'net_fc')
    """

    def __init__(self, prefix: str):
        super().__init__()
        self._prefix = prefix

    def get(self, name: str | None, hint: str) -> str:
        return self._prefix + super().get(name, hint)


class AttrScope:
    """Attributes attached to every symbol created inside ``with AttrScope(...)``.

    >>> with AttrScope(ctx_group='dev1'):
    ...     AttrScope.current.get({'__mood__': 'happy'})
    {'__ctx_group__': 'dev1', '__mood__': 'happy'}
    """

    # per-process counters of control-flow subgraph names (MXNet keeps them here too)
    _subgraph_names: collections.defaultdict = collections.defaultdict(int)

    def __init__(self, **kwargs: str):
        for key, value in kwargs.items():
            if not isinstance(value, str):
                raise AttrError(f"Attributes need to be string, got {key}={value!r}")
        self._attr = hide_keys(kwargs)
        self._old_scope: AttrScope | None = None

    def get(self, attr: dict[str, str] | None) -> dict[str, str]:
        """Scope attributes updated by ``attr``."""
        if not self._attr:
            return hide_keys(attr or {})
        merged = dict(self._attr)
        merged.update(hide_keys(attr or {}))
        return merged

    def __enter__(self) -> AttrScope:
        self._old_scope = AttrScope.current
        merged = dict(self._old_scope._attr)
        merged.update(self._attr)
        self._attr = merged
        _local.attr_scope = self
        return self

    def __exit__(self, *exc) -> None:
        _local.attr_scope = self._old_scope

    class _Current:
        def __get__(self, obj, cls) -> AttrScope:
            scope = getattr(_local, "attr_scope", None)
            if scope is None:
                scope = _local.attr_scope = AttrScope()
            return scope

    current = _Current()
