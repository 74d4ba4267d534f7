"""``push`` (this machine's index into the team index), ``export parquet``, and ``team
migrate`` (the team schema, created or brought up to date by its owner)."""

from __future__ import annotations

import time
from typing import Any

import click

from xcsh_store.cli.app import (
    TEAM_DB_ENV,
    Settings,
    cli,
    echo_wrapped,
    emit_json,
    error_line,
    json_option,
    pass_settings,
    require_extra,
    warn_of_visible_password,
)
from xcsh_store.cli.output.render import plural
from xcsh_store.cli.params import Duration
from xcsh_store.cli.verbs.redaction import no_redact_option, redaction
from xcsh_store.cli.verbs.share import export_group
from xcsh_store.index import SessionIndex

# team.TIERS, named here so that `--help` needs no import of the team part (nor of psycopg).
_TIERS = ("usage", "meta", "full")


@cli.command("push")
@click.argument("url", envvar=TEAM_DB_ENV)
@click.option("--host", help="Name of this machine on the server (default: the remembered one,"
              " else the hostname); remembered.")  # fmt: skip
@click.option(
    "--tier",
    type=click.Choice(_TIERS),
    help="What leaves the machine: usage (counts, tokens, cost, models, projects, times), meta"
    " (and titles, first prompts), full (and every entry's text and JSON, prompts). Default:"
    " the host's tier on the server, full for a new host.",
)
@click.option(
    "--redact-paths/--no-redact-paths",
    default=None,
    help="Send project labels (project-3fa2b1c9d0e4) instead of absolute paths (cwd, project,"
    " session file), which name users and clients. Default: the host's choice on the server,"
    " paths for a new host.",
)
@click.option(
    "--take-over",
    is_flag=True,
    help="Push as a host that another store (another agent dir) pushes, replacing its sessions"
    " on the server with this one's (refused otherwise).",
)
@click.option(
    "--watch",
    "every",
    type=Duration(),
    metavar="INTERVAL",
    help="Sync and push again every INTERVAL (30s, 5m) until interrupted.",
)
@no_redact_option
@json_option
@pass_settings
def push_command(
    settings: Settings,
    url: str,
    host: str | None,
    tier: str | None,
    redact_paths: bool | None,
    take_over: bool,
    every: Any,
    no_redact: bool,
    as_json: bool,
) -> None:
    """Push this machine's index to a PostgreSQL team index (URL: postgresql://…, or
    $XCSH_STORE_DB; the password from ~/.pgpass or PGPASSWORD, not the URL: docs/security.md).

    Incremental (only the files changed since this host's last push), idempotent and safe to
    interrupt: each file is replaced in one transaction. Each host writes only its own rows,
    and is pushed from one agent dir: another is refused (give it its own --host).
    Run `xcsh-store sync` first, or use --watch, which syncs before each push. Secrets in the
    text sent are replaced by [REDACTED:<kind>] (`xcsh-store secrets` lists them).

    \b
    Examples:
      xcsh-store push postgresql://team@db.example/xcsh
      xcsh-store push --tier usage --redact-paths --host ci-3  # $XCSH_STORE_DB
      xcsh-store push --watch 5m
    """
    require_extra("push", "team", "psycopg")
    redact = redaction("push", no_redact)
    from xcsh_store.team import TeamUnavailableError, push

    if every is not None and every.total_seconds() < 1:
        raise click.UsageError("--watch needs an interval of a second or more")
    warn_of_visible_password(url, "url")
    choices: dict[str, Any] = {
        "host": host,
        "tier": tier,
        "redact_paths": redact_paths,
        "redact": redact,
        "take_over": take_over,
    }
    if every is None:
        _show(push(settings.agent_dir, url, **choices), as_json)
        return
    if redact:
        from xcsh_store.secrets import Redactor

        # Made once: its rules take a second or two to load, which each round would pay.
        choices["redactor"] = Redactor()
    while True:
        # Watching, a round the server could not do (away, out of time, its disk full) is
        # reported and retried; any other error (a wrong URL, a newer schema, no permission)
        # ends the watch.
        try:
            with SessionIndex.open(settings.agent_dir) as index:
                index.sync()
            report = push(settings.agent_dir, url, **choices)
        except TeamUnavailableError as error:
            echo_wrapped(f"Error: {error_line(error)}", err=True)
        else:
            _show(report, as_json)
        time.sleep(every.total_seconds())


def _show(report: Any, as_json: bool) -> None:
    if as_json:
        emit_json(_report_json(report))
    else:
        echo_wrapped(_report_line(report))


def _report_json(report: Any) -> dict[str, Any]:
    return {
        "host": report.host,
        "tier": report.tier,
        "redact_paths": report.redact_paths,
        "lowered_from": report.lowered_from,
        "files": report.files,
        "pushed": report.pushed,
        "appended": report.appended,
        "unchanged": report.unchanged,
        "deleted": report.deleted,
        "entries": report.entries,
        "history": report.history,
    }


def _report_line(report: Any) -> str:
    lowered = f" (lowered from {report.lowered_from})" if report.lowered_from else ""
    labels = " · paths as labels" if report.redact_paths else ""
    return (
        f"Pushed {plural(report.pushed, 'file')} ({plural(report.entries, 'entry', 'entries')}),"
        f" deleted {report.deleted}, {report.unchanged:,} unchanged, as {report.host}"
        f" · tier {report.tier}{lowered}{labels}"
    )


@export_group.command("parquet")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--host", help="Host partition to write (default: as for push); remembered.")
@click.option(
    "--tier",
    type=click.Choice(_TIERS),
    default="full",
    show_default=True,
    help="What the files hold, as for push: usage, meta (and titles) or full (and text).",
)
@click.option(
    "--redact-paths",
    is_flag=True,
    help="Project labels instead of absolute paths, as for push.",
)
@no_redact_option
@json_option
@pass_settings
def export_parquet_command(
    settings: Settings,
    folder: str,
    host: str | None,
    tier: str,
    redact_paths: bool,
    no_redact: bool,
    as_json: bool,
) -> None:
    """Write sessions, entries and usage as Parquet files under FOLDER, partitioned by host
    and month (Hive layout: FOLDER/entries/host=H/month=2026-01/data.parquet).

    Incremental: only the partitions holding a new, changed or deleted session are written
    again, each replaced atomically; FOLDER/_xcsh_manifests/HOST.json says what was exported.
    Secrets in titles and text are replaced by [REDACTED:<kind>], as for push.

    \b
    Examples:
      xcsh-store export parquet ~/xcsh-parquet
      duckdb -c "SELECT host, month, sum(cost) FROM read_parquet(
        '$HOME/xcsh-parquet/usage/**/*.parquet', hive_partitioning = true)
        GROUP BY ALL"
    """
    require_extra("export parquet", "team", "pyarrow")
    redact = redaction("export parquet", no_redact)
    from xcsh_store.team import export_parquet

    report = export_parquet(
        settings.agent_dir, folder, tier=tier, host=host, redact_paths=redact_paths, redact=redact
    )
    if as_json:
        emit_json(
            {
                "folder": folder,
                "host": report.host,
                "tier": report.tier,
                "sessions": report.sessions,
                "changed": report.changed,
                "partitions": report.partitions,
                "rows": report.rows,
            }
        )
        return
    echo_wrapped(
        f"Exported {plural(report.changed, 'changed session')} of {report.sessions:,}:"
        f" {plural(report.partitions, 'partition file')}, {plural(report.rows, 'row')}"
        f" → {folder} (host {report.host}, tier {report.tier})"
    )


@cli.group("team")
def team_group() -> None:
    """The team index's schema (its roles and hosts: docs/security.md)."""


@team_group.command("migrate")
@click.argument("url", envvar=TEAM_DB_ENV)
@json_option
def team_migrate_command(url: str, as_json: bool) -> None:
    """Create the team schema at URL, or bring it up to date, as its owner.

    A push does this itself when its role owns the schema; hosts that push with roles of their
    own (docs/security.md, Per-host roles) need the admin to run this once after an upgrade.
    """
    require_extra("team migrate", "team", "psycopg")
    from xcsh_store.team import Target, connect, schema_version

    warn_of_visible_password(url, "url")
    connect(url).close()
    target = Target.parse(url).shown
    if as_json:
        emit_json({"url": target, "schema_version": schema_version()})
    else:
        echo_wrapped(f"Team schema at {target}: version {schema_version()}")
