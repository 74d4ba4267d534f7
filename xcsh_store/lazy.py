"""Names a package offers but imports on first use (a module ``__getattr__``, PEP 562), so
that a program needing one part of the store, ``xcsh-store ls`` for one, does not wait for
every other part to import.

Each name is written once: in the front's ``if TYPE_CHECKING:`` block, as
``from MODULE import NAME``. Type checkers and editors read the names there (they cannot follow
a ``__getattr__``); at run time that block does not run, and ``lazy_exports`` reads it from the
front's source the first time a name is missing, then imports each name from its module when
it is first asked for. ``__all__`` is the front's own names and the lazy ones, but for those
imported as ``NAME as NAME``: importable from the front, not part of its list.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

# The names of the machinery a front imports to be lazy, not offered by it.
_MACHINERY = ("TYPE_CHECKING", "lazy_exports")


def lazy_exports(package: str) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` (its ``__name__``, the front calls
    this after its own imports) that import each name of its ``if TYPE_CHECKING:`` block from
    its module when it is first asked for."""
    front = sys.modules[package]
    namespace = vars(front)
    own = [
        name
        for name, value in namespace.items()
        if not name.startswith("_") and name not in _MACHINERY and not isinstance(value, ModuleType)
    ]
    module_of: dict[str, str] = {}
    unlisted: set[str] = set()

    def table() -> dict[str, str]:
        """Each lazy name -> its module, read from the front's source once."""
        if not module_of:
            module_of.update(_checked_imports(front, unlisted))
        return module_of

    def __getattr__(name: str) -> object:
        if name == "__all__":
            value: object = sorted({*own, *(lazy for lazy in table() if lazy not in unlisted)})
        else:
            module = table().get(name)
            if module is None:
                raise AttributeError(f"module {package!r} has no attribute {name!r}")
            value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # found there from now on, without this function
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *table()})

    return __getattr__, __dir__


def _checked_imports(front: ModuleType, unlisted: set[str]) -> dict[str, str]:
    """Name -> module of each ``from MODULE import NAME`` under ``if TYPE_CHECKING:`` at the
    top of ``front``'s source; the names imported as ``NAME as NAME`` are added to
    ``unlisted``."""
    import ast  # (loaded already by dataclasses in practice; only a missing name needs it)

    spec = front.__spec__
    assert spec is not None and spec.loader is not None
    source = spec.loader.get_source(front.__name__)  # type: ignore[attr-defined]  # a SourceLoader's
    found: dict[str, str] = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"):
            continue
        for statement in node.body:
            if not (isinstance(statement, ast.ImportFrom) and statement.module):
                raise ImportError(f"{front.__name__}: only `from MODULE import NAME` is lazy")
            for alias in statement.names:
                if alias.asname not in (None, alias.name):
                    raise ImportError(f"{front.__name__}: {alias.name} is offered by its name")
                found[alias.name] = statement.module
                if alias.asname == alias.name:
                    unlisted.add(alias.name)
    return found
