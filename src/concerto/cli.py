"""The `concerto` command: ask questions, list agents, serve the HTTP API, show settings.

Heavy libraries (numpy, the model, FastAPI, rich) are imported inside the commands that
need them, so `concerto --help` and structured questions start fast.
"""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import UTC, datetime
from typing import Any

import click

from concerto.cli_input import InputCommand, input_values


class _Cli(click.Group):
    """Built-in commands plus the commands packs declare, imported only when run."""

    _pack_commands: dict[str, tuple[str, Any]] | None = None

    def _plugins(self) -> dict[str, tuple[str, Any]]:
        if self._pack_commands is None:
            from concerto.agents.loader import load_packs

            type(self)._pack_commands = load_packs().commands()
        return self._pack_commands or {}

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """The command to run, once its text arguments and options are known to be UTF-8
        (`_refuse_text_not_utf8`)."""
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None and not ctx.resilient_parsing:
            _refuse_text_not_utf8(command, name, rest, ctx)
        return name, command, rest

    def invoke(self, ctx: click.Context) -> Any:
        from concerto.settings import SettingsError

        try:
            return super().invoke(ctx)
        except SettingsError as exc:  # a bad CONCERTO_* value: name it, no stack trace
            raise click.ClickException(str(exc)) from None

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self._plugins()))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        command = super().get_command(ctx, name)
        if command is not None:
            return command
        found = self._plugins().get(name)
        if found is None:
            return None
        pack, ref = found
        from concerto.agents.pack import resolve

        try:
            loaded = resolve(ref, f"command '{name}' of pack {pack}")
        except Exception as exc:  # a broken plugin: say so when it is run, keep the others
            return _broken(name, str(exc))
        if not isinstance(loaded, click.Command):
            return _broken(name, f"command '{name}' of pack {pack} is not a click command")
        return loaded


def _refuse_text_not_utf8(command: click.Command, name: str | None, args: list[str], parent: click.Context) -> None:
    """Refuse, before the command runs, a text argument or option whose bytes are not UTF-8:
    Python keeps them as lone surrogates, which no command can print, store or send. A file or
    folder name (`click.Path`, `click.File`) may be any bytes: the file system takes them back
    as they came. `ask` answers it itself, with the error contract (its `--json` output).

    The command line is parsed once more for this, without running anything (click's
    `resilient_parsing`), down through command groups (`concerto data load`)."""
    if isinstance(command, InputCommand):
        return
    with command.make_context(name, list(args), parent=parent, resilient_parsing=True) as ctx:
        for param in command.get_params(ctx):
            if isinstance(param.type, click.Path | click.File) or param.name is None:
                continue
            given = ctx.params.get(param.name)
            for value in given if isinstance(given, tuple | list) else (given,):
                if not isinstance(value, str):
                    continue
                try:
                    value.encode("utf-8")
                except UnicodeEncodeError as exc:
                    shown = value.encode("utf-8", "backslashreplace").decode("utf-8")[:60]
                    raise click.BadParameter(
                        f"'{shown}' is not UTF-8 text (character {exc.start + 1}); check the terminal's "
                        "encoding (LANG, LC_ALL) or the file that fed it",
                        ctx=ctx,
                        param=param,
                    ) from None
        rest = [*ctx._protected_args, *ctx.args]  # a group's command and its arguments, as click's invoke reads them
        if isinstance(command, click.Group) and rest:
            sub_name, sub, sub_args = command.resolve_command(ctx, rest)
            if sub is not None:
                _refuse_text_not_utf8(sub, sub_name, sub_args, ctx)


def _broken(name: str, reason: str) -> click.Command:
    """A pack command that cannot load: listed in --help with the reason, fails when run."""

    def fail() -> None:
        raise click.ClickException(reason)

    return click.Command(name, callback=fail, help=f"(unavailable: {reason})")


def _parse_now(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(f"'{value}' is not an ISO 8601 date-time (e.g. 2025-06-15T12:00:00Z)") from None


@click.group(cls=_Cli, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="concerto")
def main() -> None:
    """Concerto answers plain-language questions by routing them to specialist agents.

    \b
    Examples:
      concerto ask "what's the weather and the time in Seattle?"
      concerto ask "home-loan attrition rate previous 4 months" --now 2025-06-15T12:00:00Z
      concerto ask 'echo "hello"' --json
      concerto agents
    """
    from concerto.log_redaction import install_log_redaction

    install_log_redaction()  # no secret in what any command logs (concerto.log_redaction)


@main.command(cls=InputCommand)
@click.argument("question")
@click.option("--json", "as_json", is_flag=True, help="Print the output contract as one JSON object.")
@click.option(
    "--yaml",
    "as_yaml",
    is_flag=True,
    help="Print each agent's result as the spec's agent_to_orchestrator YAML handoff (one document per agent).",
)
@click.option("--now", help="Fix the clock every agent sees (ISO 8601), e.g. 2025-06-15T12:00:00Z.")
@click.option("--trace", is_flag=True, help="Show every step (events) live on stderr.")
def ask(question: str, as_json: bool, as_yaml: bool, now: str | None, trace: bool, **fields: Any) -> None:
    """Ask a question and print the answer (exit code 1 if the query failed).

    Every field of the input contract (`OrchestratorInput`) is an option below;
    `--param KEY=VALUE` passes anything else an agent reads from its payload.

    \b
    Examples:
      concerto ask "show CPU usage for the last hour"
      concerto ask "what time is it in Chicago?" --now 2025-03-09T08:30:00Z --json
      concerto ask "home-loan attrition rate last month" --format brief --trace
      concerto ask "What's the impact of increased sampling on Kisqali prescriptions?" --yaml
    """
    fixed_now = _parse_now(now)
    payload: dict[str, Any] = {"query": question, **input_values(fields)}
    started = datetime.now(UTC)
    result = asyncio.run(_ask(payload, fixed_now, trace))
    from concerto.contracts.orchestrator import OrchestratorOutput

    if as_json:
        click.echo(result.model_dump_json(indent=2))
    elif as_yaml:
        from concerto.contracts.handoff import result_yaml
        from concerto.settings import Settings

        settings = Settings()
        model = settings.llm_model if settings.llm_configured else None
        click.echo(result_yaml(result, start_time=started.isoformat(), model_used=model), nl=False)
    else:
        from concerto.cli_render import render_result

        render_result(result)
    sys.exit(0 if isinstance(result, OrchestratorOutput) else 1)


async def _ask(payload: dict[str, Any], now: datetime | None, trace: bool) -> Any:
    from concerto.orchestrator.engine import Orchestrator

    async with Orchestrator() as orchestrator:
        if not trace:  # (with --trace the events say it)
            orchestrator.first_use.notify = lambda line: click.echo(line, err=True)  # "Preparing the demo table…"
            return await orchestrator.ask(payload, now=now)
        from concerto.cli_render import render_event
        from concerto.contracts.events import Event

        result = None
        async for item in orchestrator.stream(payload, now=now):
            if isinstance(item, Event):
                render_event(item)
            else:
                result = item
        return result


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the agents' declarations as JSON.")
def agents(as_json: bool) -> None:
    """List the agents that are loaded, with what they can answer.

    A pack that failed to load is named on stderr with the reason; the others are listed.

    \b
    Example:
      CONCERTO_AGENTS=city concerto agents --json
    """
    from concerto.agents.loader import load_packs
    from concerto.cli_render import render_agents, render_failures
    from concerto.settings import Settings

    settings = Settings()
    packs = load_packs(settings.agents)
    infos = packs.registry(settings).infos()
    if as_json:
        click.echo(json.dumps([i.model_dump() for i in infos], indent=2))
    else:
        render_agents(infos)
    render_failures(packs.failures)


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535), help="TCP port.")
@click.option(
    "--shutdown-timeout",
    default=2,
    show_default=True,
    type=click.IntRange(0, 600),
    help="Seconds the requests in flight get to finish after SIGTERM or Ctrl-C; those still "
    "running then are answered 503 (ask again) and the server stops.",
)
def serve(host: str, port: int, shutdown_timeout: int) -> None:
    """Serve the HTTP API (OpenAPI at /docs) and the web page at /.

    It answers only to its own host names (CONCERTO_ALLOWED_HOSTS, plus --host), refuses
    cross-site requests from browsers and, with CONCERTO_API_TOKEN set, requests without the
    token (docs/security.md). On SIGTERM it stops within a few seconds (--shutdown-timeout,
    then closing the agents' connections and MCP servers), whatever its backends do.

    \b
    Example:
      concerto serve --port 8000 &
      curl -s localhost:8000/v1/ask -H 'content-type: application/json' -d '{"query": "echo: hi"}'
    """
    import uvicorn

    from concerto.server.app import create_app
    from concerto.server.shutdown import answer_when_cancelled
    from concerto.settings import Settings

    settings = Settings()
    name = host.strip("[]").lower()
    if name not in ("", "0.0.0.0", "::") and name not in settings.allowed_hosts:  # any address: see server/edge.py
        settings = settings.model_copy(update={"allowed_hosts": [*settings.allowed_hosts, name]})
    if settings.api_token is None and name not in ("localhost", "127.0.0.1", "::1"):
        click.echo(
            f"Warning: serving on {host} without CONCERTO_API_TOKEN: anyone who can reach it can ask, "
            "upload and delete (docs/security.md)",
            err=True,
        )
    uvicorn.run(
        answer_when_cancelled(create_app(settings)),
        host=host,
        port=port,
        log_level="info",
        timeout_graceful_shutdown=shutdown_timeout,
    )


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.option("--markdown", is_flag=True, help="Print the settings reference (docs/settings.md's table) instead.")
def config(as_json: bool, markdown: bool) -> None:
    """Print the effective settings of the core and every pack (environment, then concerto.env), secrets masked.

    \b
    Example:
      concerto config --json | jq .prometheus_url
    """
    from concerto.agents.loader import load_packs
    from concerto.settings import Settings, effective, reference

    packs = load_packs()
    sections = packs.settings_sections()
    if markdown:
        click.echo(reference(sections), nl=False)
        return
    values = effective(Settings(), sections)
    if as_json:
        click.echo(json.dumps({k: v for part in values.values() for k, v in part.items()}, indent=2, default=str))
        return
    for owner, part in values.items():
        click.echo(f"# {owner}")
        for key, value in part.items():
            if isinstance(value, dict):  # written as in the environment: name=value,name=value
                value = ",".join(f"{k}={v}" for k, v in value.items())
            click.echo(f"CONCERTO_{key.upper()}={'' if value is None else value}")


@main.command()
@click.option("--query-id", help="Only this query's events.")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 10000), help="How many.")
def events(query_id: str | None, limit: int) -> None:
    """Show stored events (the database log in the data dir).

    \b
    Example:
      concerto ask "echo: hi" --json | jq -r .query_id | xargs -I{} concerto events --query-id {}
    """
    from concerto.cli_render import render_event
    from concerto.orchestrator.log import EventLog
    from concerto.settings import Settings

    for event in EventLog.of(Settings()).read(query_id, limit):
        render_event(event)


if __name__ == "__main__":
    main()
