"""The local web app of ``xcsh-store serve``: a read-only session browser over the index (the
sessions list, search, a session read as the tree it is, its contexts, usage charts), with live
updates while ``watch`` runs. Jinja2 templates and plain CSS/JS shipped as package data: no
front-end build step. This package front is what the CLI uses.

* ``app``: the Starlette app: routes, the token check, security headers, the live stream;
* ``pages``: what each page shows, as plain data for its template;
* ``server``: running the app under uvicorn, with a watcher beside it for ``serve --watch``.
"""

from xcsh_store.web.app import CONTENT_SECURITY_POLICY, create_app
from xcsh_store.web.server import serve

__all__ = ["CONTENT_SECURITY_POLICY", "create_app", "serve"]
