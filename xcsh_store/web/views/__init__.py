"""The pages of the web app, one module each (or one per kind, as the images): a module holds
the page's function, which answers a request given the ``Site`` (site.py: the index, the
redaction, the templates), and ``ROUTES``, its paths -> its functions. create_app serves every
module of this package, so a new page is its module and its template.

Each page runs in a worker thread, PAGES_AT_ONCE at a time (site.py); what it shows it takes
from pages.py, which bounds it, and renders with ``site.render``.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator

from xcsh_store.web.site import Page


def routes() -> Iterator[tuple[str, Page]]:
    """Every page's paths and functions, the modules in the order of their names."""
    for found in sorted(pkgutil.iter_modules(__path__), key=lambda found: found.name):
        module = importlib.import_module(f"{__name__}.{found.name}")
        pages: dict[str, Page] = module.ROUTES
        yield from pages.items()
