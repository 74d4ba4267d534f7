"""Names a package offers but imports on first use (a module ``__getattr__``, PEP 562), so
that a program needing one part of the store, ``xcsh-store ls`` for one, does not wait for
every other part to import."""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable


def lazy_exports(
    package: str, *sources: dict[str, tuple[str, ...]]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` (its ``__name__``) that import each
    name of ``sources`` (each module -> names) from its module when it is first asked for."""
    namespace = vars(sys.modules[package])
    module_of = {
        name: module for source in sources for module, names in source.items() for name in names
    }

    def __getattr__(name: str) -> object:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # found there from now on, without this function
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *module_of})

    return __getattr__, __dir__
