"""``mx.registry``: MXNet's helpers that give a base class a name registry, with
``register``, ``alias`` and ``create`` functions (how initializers, optimizers and metrics
are looked up by name).

>>> from symgraph import registry
>>> class Shape: pass
>>> register = registry.get_register_func(Shape, "shape")
>>> create = registry.get_create_func(Shape, "shape")
>>> @register
... class Square(Shape):
...     def __init__(self, side=1): self.side = side
>>> create("square", side=3).side
3
>>> create("circle")
Traceback (most recent call last):
...
ValueError: Cannot find shape 'circle'. Registered: ['square']
"""
from __future__ import annotations

import json
import warnings

_REGISTRIES: dict[type, dict[str, type]] = {}


def get_registry(base_class: type) -> dict[str, type]:
    """A copy of the name -> class registry of ``base_class``."""
    return dict(_REGISTRIES.setdefault(base_class, {}))


def get_register_func(base_class: type, nickname: str):
    """A decorator registering subclasses of ``base_class`` under their lowercase names."""
    registry = _REGISTRIES.setdefault(base_class, {})

    def register(klass, name=None):
        if not issubclass(klass, base_class):
            raise TypeError(f"Can only register subclass of {base_class.__name__}")
        name = (name or klass.__name__).lower()
        if name in registry and registry[name] is not klass:
            warnings.warn(f"New {nickname} {klass.__module__}.{klass.__name__} registered "
                          f"with name {name} is overriding existing {nickname}", stacklevel=2)
        registry[name] = klass
        return klass

    register.__doc__ = f"Register a {nickname} to the {nickname} factory"
    return register


def get_alias_func(base_class: type, nickname: str):
    """A decorator factory registering a class under extra names."""
    register = get_register_func(base_class, nickname)

    def alias(*aliases):
        def reg(klass):
            for name in aliases:
                register(klass, name)
            return klass
        return reg
    return alias


def get_create_func(base_class: type, nickname: str):
    """``create(name_or_instance_or_json, *args, **kwargs)`` for ``base_class``."""
    registry = _REGISTRIES.setdefault(base_class, {})

    def create(*args, **kwargs):
        if not args:
            name, args = kwargs.pop(nickname), ()
        else:
            name, args = args[0], args[1:]
        if isinstance(name, base_class):
            if args or kwargs:
                raise ValueError(f"{nickname} is already an instance. Additional arguments "
                                 "are invalid")
            return name
        if isinstance(name, dict):
            return create(**name)
        if not isinstance(name, str):
            raise TypeError(f"{nickname} must be of string type")
        if name.startswith("["):
            if args or kwargs:
                raise ValueError("JSON form takes no additional arguments")
            name, kwargs = json.loads(name)
            return create(name, **kwargs)
        if name.startswith("{"):
            return create(**json.loads(name))
        key = name.lower()
        if key not in registry:
            raise ValueError(f"Cannot find {nickname} {name!r}. Registered: "
                             f"{sorted(registry)}")
        return registry[key](*args, **kwargs)

    create.__doc__ = f"Create a {nickname} instance from config."
    return create
