"""Data classes without the `dataclasses` module (pure).

`dataclasses` imports `inspect`, and with it `ast`, `dis`, `tokenize` and more: ~8 ms of
every `memctl add` and `memctl show` before a class is even made (bench/bench_write.py).
The classes on those paths use only what is here, which makes the same methods the same
way: `__init__` taking the fields in their order (plain defaults, `field(default_factory=…)`),
`__repr__`, `__eq__` over the fields (`compare=False` left out), and with `frozen=True`
no assignment and a `__hash__`. tests/test_records.py holds each equal to what
`dataclasses.dataclass` makes of the same class.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_MISSING: Any = object()


class FrozenInstanceError(AttributeError):
    """A field of a frozen record was assigned (as `dataclasses.FrozenInstanceError`)."""


class Field:
    """What `field()` says of one field."""

    __slots__ = ("default", "default_factory", "repr", "compare")

    def __init__(self, default: Any, default_factory: Callable[[], Any] | Any, repr: bool,
                 compare: bool) -> None:
        self.default = default
        self.default_factory = default_factory
        self.repr = repr
        self.compare = compare


def field(*, default: Any = _MISSING, default_factory: Callable[[], Any] | Any = _MISSING,
          repr: bool = True, compare: bool = True) -> Any:
    return Field(default, default_factory, repr, compare)


def dataclass(cls: type | None = None, /, *, frozen: bool = False) -> Any:
    """`@dataclass` or `@dataclass(frozen=True)`, for a class that inherits no fields."""
    def wrap(cls: type) -> type:
        return _make(cls, frozen)

    return wrap if cls is None else wrap(cls)


def _make(cls: type, frozen: bool) -> type:
    specs: list[tuple[str, Field]] = []
    for name in cls.__dict__.get("__annotations__", {}):
        value = cls.__dict__.get(name, _MISSING)
        spec = value if isinstance(value, Field) else Field(value, _MISSING, True, True)
        specs.append((name, spec))
        if isinstance(value, Field):  # the class keeps a plain default, as dataclasses does
            if spec.default is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, spec.default)
    scope: dict[str, Any] = {"_MISSING": _MISSING, "_set": object.__setattr__}
    params, lines = [], []
    for name, spec in specs:
        value = name
        if spec.default_factory is not _MISSING:
            scope[f"_factory_{name}"] = spec.default_factory
            params.append(f"{name}=_MISSING")
            value = f"_factory_{name}() if {name} is _MISSING else {name}"
        elif spec.default is not _MISSING:
            scope[f"_default_{name}"] = spec.default
            params.append(f"{name}=_default_{name}")
        else:
            params.append(name)
        lines.append(f"_set(self, {name!r}, {value})" if frozen else f"self.{name} = {value}")
    source = (f"def __init__(self, {', '.join(params)}):\n"
              + "".join(f"    {line}\n" for line in lines or ["pass"]))
    exec(source, scope)  # noqa: S102 - our own source, made from the class's field names
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    shown = tuple(name for name, spec in specs if spec.repr)
    compared = tuple(name for name, spec in specs if spec.compare)

    def __repr__(self: Any) -> str:
        return (f"{self.__class__.__qualname__}("
                + ", ".join(f"{name}={getattr(self, name)!r}" for name in shown) + ")")

    def __eq__(self: Any, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return tuple(getattr(self, name) for name in compared) \
            == tuple(getattr(other, name) for name in compared)

    methods: dict[str, Any] = {"__init__": init, "__repr__": __repr__, "__eq__": __eq__,
                               "__match_args__": tuple(name for name, _ in specs)}
    if frozen:
        names = frozenset(name for name, _ in specs)

        def __setattr__(self: Any, name: str, value: object) -> None:
            if type(self) is cls or name in names:
                raise FrozenInstanceError(f"cannot assign to field {name!r}")
            super(cls, self).__setattr__(name, value)  # type: ignore[misc]

        def __delattr__(self: Any, name: str) -> None:
            if type(self) is cls or name in names:
                raise FrozenInstanceError(f"cannot delete field {name!r}")
            super(cls, self).__delattr__(name)  # type: ignore[misc]

        def __hash__(self: Any) -> int:
            return hash(tuple(getattr(self, name) for name in compared))

        methods.update(__setattr__=__setattr__, __delattr__=__delattr__, __hash__=__hash__)
    else:
        methods["__hash__"] = None  # equal by value and mutable: unhashable
    for name, method in methods.items():
        if name in cls.__dict__:
            continue  # the class's own, which dataclasses keeps too
        if callable(method):
            method.__qualname__ = f"{cls.__qualname__}.{name}"
        setattr(cls, name, method)
    return cls
