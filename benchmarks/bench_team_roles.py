"""What the team index's safeguards of issue 26 cost a push, side by side in one run.

    python benchmarks/bench_team_roles.py [--pg postgresql://postgres@127.0.0.1:5432/postgres]
        [--corpus DIR] [--small DIR] [--repeat N]

Rows:

* a full push as a per-host role (docs/security.md: row-level security, the rows staged in
  temporary tables and inserted from them) against the same push as the tables' owner (plain
  COPY, no row-level security), interleaved, each into its own database, a new host each time;
* a no-change push of 10,000 files (each file's watermark is now a MAC under the host key):
  at most 200 ms, as issue 17 set it.

The corpora (agent-200mb-2000 and small-10000 of index_common, generated once into
$XCSH_BENCH_DATA) are read, never written; their indexes live in the benchmarks' work folder.
Each run creates its databases and roles (unique names) and drops them after.
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg

from benchmarks.bench_team import built_index, fresh_database
from benchmarks.harness import compare, print_table, time_interleaved
from benchmarks.index_common import agent_corpus, small_sessions_corpus
from xcsh_store.team import connect, push

SECURITY_DOC = Path(__file__).resolve().parents[1] / "docs" / "security.md"


def documented_sql(name: str) -> str:
    found = re.search(rf"<!-- sql: {name} -->\n```sql\n(.*?)```", SECURITY_DOC.read_text(), re.S)
    assert found, name
    return found.group(1)


def host_role(url: str, suffix: str, hosts: list[str]) -> tuple[str, list[str]]:
    """The docs' pushers and host role (names made unique), given ``hosts``; its URL and the
    roles made."""
    database = url.rsplit("/", 1)[1]
    sql = documented_sql("pushers") + documented_sql("host")
    sql = re.sub(r"\bxcsh_(?!admin\b)\w+", lambda name: name.group() + suffix, sql)
    sql = sql.replace("DATABASE team", f'DATABASE "{database}"')
    sql = sql.replace("FOR ROLE xcsh_admin", "FOR ROLE postgres")
    made = re.findall(r"CREATE ROLE (\w+)", sql)
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(sql)
        for host in hosts:
            connection.execute(
                "INSERT INTO host_roles (host, role) VALUES (%s, %s)", (host, made[-1])
            )
    return url.replace("postgres@", f"{made[-1]}@"), made


def drop_roles(url: str, roles: list[str]) -> None:
    with psycopg.connect(url, autocommit=True) as connection:
        for role in reversed(roles):
            connection.execute(f'DROP OWNED BY "{role}"')
            connection.execute(f'DROP ROLE "{role}"')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--corpus", help="the agent dir to push (default: 200 MB, generated)")
    parser.add_argument("--small", help="10,000 small sessions (default: generated once)")
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    options.corpus = options.corpus or agent_corpus("200MB", 2000).agent_dir
    options.small = options.small or small_sessions_corpus(10_000).agent_dir
    print(f"load before: {os.getloadavg()}", flush=True)
    big_db = built_index(options.corpus, "team-roles-corpus")
    small_db = built_index(options.small, "team-roles-small")
    rows = []
    hosts = [f"h{number}" for number in range(options.repeat + 1)]
    with fresh_database(options.pg) as owner_url, fresh_database(options.pg) as role_url:
        connect(owner_url).close()
        connect(role_url).close()
        role, made = host_role(role_url, f"_{os.getpid()}_{secrets.token_hex(3)}", hosts)
        try:
            as_owner, as_role = iter(hosts), iter(hosts)
            owner_push, role_push = time_interleaved(
                lambda: push(options.corpus, owner_url, host=next(as_owner), db_path=big_db),
                lambda: push(options.corpus, role, host=next(as_role), db_path=big_db),
                repeat=options.repeat,
            )
            report = role_push.result
            assert report.pushed == owner_push.result.pushed == report.files
            rows.append(
                compare(
                    f"push {report.files:,} files ({report.entries:,} entries) as a per-host"
                    " role vs as the owner",
                    role_push,
                    owner_push,
                )
            )
            push(options.small, owner_url, host="small", db_path=small_db)
            (nochange,) = time_interleaved(
                lambda: push(options.small, owner_url, host="small", db_path=small_db), repeat=7
            )
            assert nochange.result.pushed == 0
            row = compare("no-change push, 10,000 files (keyed watermarks)", nochange, limit=0.2)
            rows.append(row)
        finally:
            drop_roles(role_url, made)
    print(f"load after: {os.getloadavg()}")
    print_table(rows, title="Team index safeguards (benchmarks/bench_team_roles.py)")


if __name__ == "__main__":
    main()
