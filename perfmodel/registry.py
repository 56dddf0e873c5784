"""One registry form for every plug-in: engines, inner solvers, outer searches, routers.

A :class:`Registry` is a read-only mapping ``name -> plug-in`` (so ``name in REG``,
``REG[name]`` and ``", ".join(REG)`` work as on a dict) that also knows, per entry, a
one-line summary for ``--help`` and a set of *capabilities* -- facts the plug-in declares
about itself ("needs the planning context", "takes any layout objective") so that
callers ask ``REG.can(name, CAP)`` instead of testing names.  :meth:`Registry.lookup`
turns an unknown name into the one-line user error that names the flag and the
choices; :meth:`Registry.help` writes the choices for the CLI, so the CLI never keeps a
list of its own.

It lives at the bottom layer, in the perf model, because the perf model's engine
profiles are one of its users and the perf model imports nothing above it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from perfmodel.errors import InputError

T = TypeVar("T")


@dataclass(frozen=True)
class Entry(Generic[T]):
    """One registered plug-in."""

    name: str
    obj: T
    summary: str
    capabilities: frozenset[str]


class Registry(Mapping[str, T]):
    """Plug-ins of one kind by name, in registration order (module docstring)."""

    def __init__(self, kind: str, flag: str | None = None) -> None:
        self.kind = kind  # "inner solver": the noun of error messages
        self.flag = flag  # "--inner": named in error messages when given
        self._entries: dict[str, Entry[T]] = {}

    def add(self, name: str, obj: T, summary: str,
            capabilities: Iterable[str] | None = None) -> T:
        """Register ``obj`` as ``name``; returns ``obj``.  Capabilities default to the
        plug-in's own declaration, its ``capabilities`` attribute (a class attribute of
        a solver or search), so that they live with the code they describe.  A second
        entry of the same name is a programming error."""
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        caps = getattr(obj, "capabilities", ()) if capabilities is None else capabilities
        self._entries[name] = Entry(name, obj, summary, frozenset(caps))
        return obj

    # Mapping interface -------------------------------------------------------------
    def __getitem__(self, name: str) -> T:
        return self._entries[name].obj

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    # What callers use --------------------------------------------------------------
    def entry(self, name: str) -> Entry[T]:
        return self._entries[name]

    def lookup(self, name: str) -> T:
        """The plug-in ``name``; an unknown name is an :class:`InputError` naming the
        flag and the choices."""
        if name not in self._entries:
            where = f"{self.flag}: " if self.flag else ""
            raise InputError(f"{where}unknown {self.kind} {name!r}; choose from "
                             f"{', '.join(self._entries)}")
        return self._entries[name].obj

    def create(self, name: str, **params: Any) -> Any:
        """``lookup(name)(**params)`` for registries of factories."""
        factory: Callable[..., Any] = self.lookup(name)  # type: ignore[assignment]
        return factory(**params)

    def can(self, name: str, capability: str) -> bool:
        """Whether ``name`` declared ``capability`` (False for unknown names)."""
        e = self._entries.get(name)
        return e is not None and capability in e.capabilities

    def having(self, capability: str) -> tuple[str, ...]:
        """The names that declared ``capability``, in registration order."""
        return tuple(n for n, e in self._entries.items() if capability in e.capabilities)

    def help(self, extra: Mapping[str, str] | None = None) -> str:
        """``name: summary; ...`` for ``--help``; ``extra`` adds choices the registry
        does not hold (e.g. ``auto``), first."""
        parts = [f"{k}: {v}" for k, v in (extra or {}).items()]
        parts += [f"{e.name}: {e.summary}" for e in self._entries.values()]
        return "; ".join(parts)


__all__ = ["Entry", "Registry"]
