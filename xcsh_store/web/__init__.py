"""The local web app of ``xcsh-store serve``: a read-only session browser over the index (the
sessions list, search, a session read as the tree it is, its contexts, usage charts), with live
updates while ``watch`` runs. Jinja2 templates and plain CSS/JS shipped as package data: no
front-end build step. This package front is what the CLI uses.

* ``access``: who may read it: the Host names it answers to, the Origin of requests other
  pages make, the token (and the token file), the security headers;
* ``app``: the Starlette app: the pages on their routes, behind the access checks;
* ``site``: what every page shares: the index, the redaction, the templates, bounded
  rendering, error pages, the gate that runs pages a few at a time, the live stream;
* ``views``: the pages, one module each (its function and its routes);
* ``params``: what a page reads from its query string, checked;
* ``pages``: what each page shows, as plain data for its template, each bounded in size;
* ``markup``: a session's text as safe HTML (markdown, sanitised; code highlighted);
* ``highlight``: code highlighted under a budget, in worker processes (``highlight_worker``,
  run as a script) killed when a block runs over, with the lexers of ``lexers.txt`` only and
  within each one's cap there;
* ``server``: running the app under uvicorn, with a watcher beside it for ``serve --watch``.
"""

from xcsh_store.web.access import (
    CONTENT_SECURITY_POLICY,
    LOOPBACK_NAMES,
    allowed_host_names,
    beyond_loopback,
    read_token_file,
)
from xcsh_store.web.app import create_app
from xcsh_store.web.server import serve

__all__ = [
    "CONTENT_SECURITY_POLICY",
    "LOOPBACK_NAMES",
    "allowed_host_names",
    "beyond_loopback",
    "create_app",
    "read_token_file",
    "serve",
]
