"""``push`` (this machine's index into the team index) and ``export parquet``."""

from __future__ import annotations

import time
from typing import Any

import click

from xcsh_store.cli.app import (
    TEAM_DB_ENV,
    Settings,
    cli,
    echo,
    emit_json,
    error_line,
    json_option,
    pass_settings,
    require_extra,
)
from xcsh_store.cli.params import Duration
from xcsh_store.cli.redaction import no_redact_option, redaction
from xcsh_store.cli.render import plural
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
    every: Any,
    no_redact: bool,
    as_json: bool,
) -> None:
    """Push this machine's index to a PostgreSQL team index (URL: postgresql://…).

    Incremental (only the files changed since this host's last push), idempotent and safe to
    interrupt: each file is replaced in one transaction. Each host writes only its own rows.
    Run `xcsh-store sync` first, or use --watch, which syncs before each push. Secrets in the
    text sent are replaced by [REDACTED:<kind>] (`xcsh-store secrets` lists them).

    \b
    Examples:
      xcsh-store push postgresql://team@db.example/xcsh
      xcsh-store push "$XCSH_STORE_DB" --tier usage --host ci-runner-3
      xcsh-store push "$XCSH_STORE_DB" --watch 5m
    """
    require_extra("push", "team", "psycopg")
    redact = redaction("push", no_redact)
    from xcsh_store.team import TeamConnectionError, push

    if every is not None and every.total_seconds() < 1:
        raise click.UsageError("--watch needs an interval of a second or more")
    if every is None:
        _show(push(settings.agent_dir, url, host=host, tier=tier, redact=redact), as_json)
        return
    while True:
        # Watching, a round the server was away for is reported and retried; any other
        # error (a wrong URL, a newer schema, no permission) ends the watch.
        try:
            with SessionIndex.open(settings.agent_dir) as index:
                index.sync()
            report = push(settings.agent_dir, url, host=host, tier=tier, redact=redact)
        except TeamConnectionError as error:
            echo(f"Error: {error_line(error)}", err=True)
        else:
            _show(report, as_json)
        time.sleep(every.total_seconds())


def _show(report: Any, as_json: bool) -> None:
    if as_json:
        emit_json(_report_json(report))
    else:
        echo(_report_line(report))


def _report_json(report: Any) -> dict[str, Any]:
    return {
        "host": report.host,
        "tier": report.tier,
        "lowered_from": report.lowered_from,
        "files": report.files,
        "pushed": report.pushed,
        "unchanged": report.unchanged,
        "deleted": report.deleted,
        "entries": report.entries,
        "history": report.history,
    }


def _report_line(report: Any) -> str:
    lowered = f" (lowered from {report.lowered_from})" if report.lowered_from else ""
    return (
        f"Pushed {plural(report.pushed, 'file')} ({plural(report.entries, 'entry', 'entries')}),"
        f" deleted {report.deleted}, {report.unchanged:,} unchanged, as {report.host}"
        f" · tier {report.tier}{lowered}"
    )


@cli.group("export")
def export_group() -> None:
    """Export the index for other tools."""


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
@no_redact_option
@json_option
@pass_settings
def export_parquet_command(
    settings: Settings, folder: str, host: str | None, tier: str, no_redact: bool, as_json: bool
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
          '$HOME/xcsh-parquet/usage/**/*.parquet', hive_partitioning = true) GROUP BY ALL"
    """
    require_extra("export parquet", "team", "pyarrow")
    redact = redaction("export parquet", no_redact)
    from xcsh_store.team import export_parquet

    report = export_parquet(settings.agent_dir, folder, tier=tier, host=host, redact=redact)
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
    echo(
        f"Exported {plural(report.changed, 'changed session')} of {report.sessions:,}:"
        f" {plural(report.partitions, 'partition file')}, {plural(report.rows, 'row')}"
        f" → {folder} (host {report.host}, tier {report.tier})"
    )
