"""``push`` (this machine's index into the team index), ``export`` (a session to share:
``export ID``; the index for other tools: ``export parquet``), and ``team migrate`` (the team
schema, created or brought up to date by its owner)."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import click

from xcsh_store.cli.app import (
    TEAM_DB_ENV,
    Settings,
    SuggestingGroup,
    cli,
    echo_wrapped,
    emit_json,
    error_line,
    json_option,
    open_index,
    pass_settings,
    require_extra,
    warn_of_visible_password,
)
from xcsh_store.cli.complete import complete_session
from xcsh_store.cli.output.render import home_relative, plural
from xcsh_store.cli.params import Duration
from xcsh_store.cli.verbs.redaction import no_redact_option, redaction
from xcsh_store.index import SessionIndex

# The passphrase of `export --encrypt` when no terminal can ask for it.
PASSPHRASE_ENV = "XCSH_STORE_PASSPHRASE"
MIN_PASSPHRASE = 8
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
        "quota_readings": report.quota,
        "budgets": report.budgets,
        "budgets_error": report.budgets_error,
    }


def _report_line(report: Any) -> str:
    lowered = f" (lowered from {report.lowered_from})" if report.lowered_from else ""
    labels = " · paths as labels" if report.redact_paths else ""
    # (the readings and budgets leave at every tier: said when some did, or could not)
    quota = f", {plural(report.quota, 'quota reading')}" if report.quota else ""
    budgets = f", {plural(report.budgets, 'budget')}" if report.budgets is not None else ""
    unsent = f". Budgets not sent: {report.budgets_error}" if report.budgets_error else ""
    return (
        f"Pushed {plural(report.pushed, 'file')} ({plural(report.entries, 'entry', 'entries')}"
        f"{quota}{budgets}), deleted {report.deleted}, {report.unchanged:,} unchanged,"
        f" as {report.host} · tier {report.tier}{lowered}{labels}{unsent}"
    )


class ExportGroup(SuggestingGroup):
    """``export`` with a session id exports that session (``export session ID``); a known
    sub-verb (``parquet``) is itself."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and not args[0].startswith("-") and self.get_command(ctx, args[0]) is None:
            args = ["session", *args]
        return super().resolve_command(ctx, args)


@cli.group("export", cls=ExportGroup)
def export_group() -> None:
    """Export a session to share it (export ID), or the index for other tools (export parquet).

    \b
    Examples:
      xcsh-store export 0195f3c2 > session.md
      xcsh-store export 0195f3c2 --format json -o session.json
      xcsh-store export parquet ~/xcsh-parquet
    """


@export_group.command("session")
@click.argument("session", shell_complete=complete_session)
@click.option(
    "--format",
    "form",
    type=click.Choice(["md", "html", "json"]),  # transcript.EXPORT_TYPES
    default="md",
    show_default=True,
    help="Markdown (tool output folded in <details>), one self-contained HTML page, or JSON.",
)
@click.option(
    "--output", "-o", type=click.Path(dir_okay=False), help="Write to this file, not stdout."
)
@click.option(
    "--encrypt",
    is_flag=True,
    help=f"HTML only: encrypt the page with a passphrase (asked for, or ${PASSPHRASE_ENV});"
    " the browser asks for it to open the page.",
)
@click.option(
    "--no-redact",
    "no_redact",
    is_flag=True,
    help="Keep secrets as they are (by default they are replaced by [REDACTED:<kind>]).",
)
@pass_settings
def export_session_command(
    settings: Settings,
    session: str,
    form: str,
    output: str | None,
    encrypt: bool,
    no_redact: bool,
) -> None:
    """Write a session's active branch as a document to share: what was said, each tool call
    as what it did (a command, a diff of an edit, the file a read read), output folded.

    Secrets (API keys, tokens, passwords, private keys) are replaced by [REDACTED:<kind>]
    unless --no-redact. SESSION is an id prefix, a file-name prefix or a path.
    """
    from xcsh_store.format.transcript import transcript

    if encrypt and form != "html":
        raise click.UsageError("--encrypt is for --format html")
    if form == "html":
        require_extra("export --format html", "web", "markdown_it", "nh3", "pygments")
    passphrase = _passphrase() if encrypt else None
    with open_index(settings, team=True, fresh=True) as index:
        info = index.find_session(session)
        document = transcript(info, index.branch_entries(info, None))
    if no_redact:
        from xcsh_store.cli.verbs.redaction import NO_REDACT_WARNING

        echo_wrapped(NO_REDACT_WARNING, err=True)
    else:
        require_extra("export", "secrets", "kingfisher_sdk", "detect_secrets")
        from xcsh_store.secrets.redact import Redactor

        document.redact(Redactor())
    if form == "html":
        from xcsh_store.web.export_page import page, sealed_page

        html = page(document) if passphrase is None else sealed_page(document, passphrase)
        payload = html.encode("utf-8", "surrogatepass")
    else:
        payload = document.encoded(form)
    if output is None:
        sys.stdout.buffer.write(payload)
        sys.stdout.flush()
        return
    with open(output, "wb") as stream:
        stream.write(payload)
    echo_wrapped(f"Exported {info.agent} session {info.session_id} → {home_relative(output)}")


def _passphrase() -> str:
    given = os.environ.get(PASSPHRASE_ENV)
    if given:
        return given
    if not sys.stdin.isatty():
        raise click.UsageError(f"--encrypt needs a passphrase: set ${PASSPHRASE_ENV}")
    chosen: str = click.prompt("Passphrase", hide_input=True, confirmation_prompt=True, err=True)
    if len(chosen) < MIN_PASSPHRASE:
        raise click.UsageError(f"a passphrase of {MIN_PASSPHRASE} characters at least, please")
    return chosen


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
