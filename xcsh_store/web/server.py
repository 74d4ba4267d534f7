"""Running the web app: uvicorn on one address, and with ``watch`` an index watcher in a thread
beside it, stopped with the server."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import uvicorn

from xcsh_store.watch import AppliedChange, IndexWatcher
from xcsh_store.web.app import create_app

log = logging.getLogger("xcsh_store")

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def serve(
    agent_dir: str,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    watch: bool = False,
    on_change: Callable[[AppliedChange], None] | None = None,
    on_ready: Callable[[str], None] | None = None,
    redact: bool | None = None,
) -> None:
    """Serve until SIGINT/SIGTERM. Any address but loopback needs a ``token``. ``redact``
    (default: on any address but loopback) takes the secrets out of every page."""
    if host not in LOOPBACK and not token:
        raise ValueError(f"serving on {host} needs a token")
    config = uvicorn.Config(
        create_app(agent_dir, token, host not in LOOPBACK if redact is None else redact),
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        server_header=False,
        # Open live streams end with the server instead of holding its exit.
        timeout_graceful_shutdown=2,
    )
    server = uvicorn.Server(config)
    if on_ready is not None:
        shown = f"[{host}]" if ":" in host else host
        on_ready(f"http://{shown}:{port}/" + (f"?token={token}" if token else ""))
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
        stop.set()
        if watcher is not None:
            watcher.join()
