"""The `concerto` command: the group that finds every sub-command the same way, the core's
(`ask`, `agents`, `serve`, `config`, `events`: `concerto/core.py`, `concerto/commands/`) and
those packs declare (`Pack.commands`), each imported only when run or listed.

Heavy libraries (numpy, the model, FastAPI, rich) are imported inside the commands that
need them, so `concerto --help` and structured questions start fast.
"""

from __future__ import annotations

from typing import Any

import click

from concerto.cli_input import InputCommand
from concerto.core import pack as core


class _Cli(click.Group):
    """The core's commands, then those packs declare, imported only when run (or listed); the
    core's are looked up first, so a pack's command of the same name is never used, and
    without loading the packs (`concerto ask` does not import every pack's declaration)."""

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
        return sorted(set(core.commands) | set(self._plugins()))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        found = (core.name, core.commands[name]) if name in core.commands else self._plugins().get(name)
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


if __name__ == "__main__":
    main()
