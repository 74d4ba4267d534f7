"""Datasette's own test client on a database, in a child process: the test that starts it holds
the index open through apsw, and Datasette reads with the stdlib sqlite3 module (index.md: one
SQLite library per process).

    python datasette_child.py DB_PATH URL...

prints ``{url: [status, body]}`` as JSON, each body parsed when it is JSON; Datasette opens the
file as ``datasette DB_PATH`` does, with every plugin of the environment (xcsh-store's).
"""

from __future__ import annotations

import asyncio
import json
import sys

from datasette.app import Datasette


async def fetch(db_path: str, urls: list[str]) -> dict[str, list[object]]:
    client = Datasette([db_path]).client
    found: dict[str, list[object]] = {}
    for url in urls:
        response = await client.get(url)
        try:
            body: object = response.json()
        except ValueError:
            body = response.text
        found[url] = [response.status_code, body]
    return found


if __name__ == "__main__":
    print(json.dumps(asyncio.run(fetch(sys.argv[1], sys.argv[2:]))))
