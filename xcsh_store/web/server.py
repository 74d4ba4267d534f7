"""Running the web app: uvicorn on one address, and with ``watch`` an index watcher in a thread
beside it, stopped with the server."""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection

import uvicorn

from xcsh_store.index import REFRESH_SECONDS
from xcsh_store.watch import AppliedChange, IndexWatcher
from xcsh_store.web.access import LOOPBACK_NAMES, allowed_host_names, beyond_loopback
from xcsh_store.web.app import create_app
from xcsh_store.web.highlight import Highlighter
from xcsh_store.web.site import PAGES_AT_ONCE


def serve(
    agent_dir: str,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    watch: bool = False,
    on_change: Callable[[AppliedChange], None] | None = None,
    on_ready: Callable[[str], None] | None = None,
    allowed_hosts: Collection[str] = (),
    redact: bool | None = None,
    sync_every: float | None = REFRESH_SECONDS,
    highlighter: Highlighter | None = None,
) -> None:
    """Serve until SIGINT/SIGTERM, whatever the pages being made cost (their highlighting
    workers are killed). Any address but loopback needs a ``token``. Requests must name
    loopback, ``host`` or one of ``allowed_hosts`` in their Host header. ``on_ready`` is given
    the URL to open (without the token). ``redact`` (default: when a name but loopback's is
    answered) takes the secrets out of every page. ``highlighter``: create_app's."""
    if host not in LOOPBACK_NAMES and not token:
        raise ValueError(f"serving on {host} needs a token")
    hosts = allowed_host_names(host, allowed_hosts)
    highlighter = highlighter or Highlighter(workers=PAGES_AT_ONCE)
    config = uvicorn.Config(
        create_app(
            agent_dir,
            token,
            hosts,
            beyond_loopback(hosts) if redact is None else redact,
            sync_every,
            highlighter,
        ),
        host=host,
        port=port,
        log_level="warning",
        # No access log: a URL can carry ?token= (the page it opens moves it into a cookie).
        access_log=False,
        server_header=False,
        # Open live streams end with the server instead of holding its exit.
        timeout_graceful_shutdown=2,
    )
    server = uvicorn.Server(config)
    if on_ready is not None:
        shown = f"[{host}]" if ":" in host else host
        on_ready(f"http://{shown}:{port}/")
    stop = threading.Event()
    watcher = None
    if watch:
        watcher = threading.Thread(
            target=IndexWatcher(agent_dir, on_change or (lambda _change: None), stop=stop).run,
            name="xcsh-store-watch",
            daemon=True,
        )
        watcher.start()
    try:
        server.run()
    finally:
        # The app closes it as it shuts down, but not when a second Ctrl-C forced the exit:
        # a page still highlighting would then hold the process (its thread is joined).
        highlighter.close()
        stop.set()
        if watcher is not None:
            watcher.join()
