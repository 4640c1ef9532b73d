"""`concerto ask` options derived from `OrchestratorInput`: a field added there is an option here.

Each field becomes `--field-name` (a few keep the short names of DESIGN.md: `--format`,
`--expertise`), typed from its annotation: a Literal is a choice, a list repeats the
option, `parameters` takes KEY=VALUE pairs, anything else structured takes JSON text.
The values go to the orchestrator as they are, so it validates them and answers in its
own error contract.
"""

from __future__ import annotations

import json
import types
from typing import TYPE_CHECKING, Any, Literal, Union, get_args, get_origin

import click

if TYPE_CHECKING:
    from pydantic.fields import FieldInfo

FLAGS = {
    "output_format": "--format",
    "user_expertise": "--expertise",
    "parameters": "--param",
    "conversation_history": "--history",
    "prior_analysis_ids": "--prior-analysis-id",
}
ARGUMENT = "query"  # the question itself is the command's argument
HELP = {
    "parameters": "A parameter for the agents, KEY=VALUE (VALUE is JSON if it parses); repeat for more.",
    "conversation_history": 'Earlier turns as JSON, e.g. \'[{"role": "user", "content": "..."}]\'.',
}


def input_params() -> list[click.Option]:
    """One click option per `OrchestratorInput` field but the question itself."""
    from concerto.contracts.orchestrator import OrchestratorInput

    return [
        click.Option([FLAGS.get(name, "--" + name.replace("_", "-")), name], **_option(name, field))
        for name, field in OrchestratorInput.model_fields.items()
        if name != ARGUMENT
    ]


class InputCommand(click.Command):
    """A command that takes the input contract's fields as options, built on first use.

    Building them imports the contracts (pydantic); `concerto --help` only needs the
    command's one-line help, so it does not pay for that.
    """

    _input_added = False

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        if not self._input_added:
            self.params.extend(input_params())
            self._input_added = True
        return super().get_params(ctx)


def input_values(options: dict[str, Any]) -> dict[str, Any]:
    """The `OrchestratorInput` fields the user gave (unset options are left to the model's defaults)."""
    from concerto.contracts.orchestrator import OrchestratorInput

    structured = OrchestratorInput.structured_fields()
    values: dict[str, Any] = {}
    for name in OrchestratorInput.model_fields:
        value = options.get(name)
        if value is None or value == ():
            continue
        if name == "parameters":
            value = dict(_pair(item) for item in value)
        elif isinstance(value, tuple):
            value = list(value)
        elif name in structured and isinstance(value, str):
            value = _json(value, FLAGS.get(name, name))
        values[name] = value
    return values


def _option(name: str, field: FieldInfo) -> dict[str, Any]:
    kind = _unwrap(field.annotation)
    help_text = HELP.get(name) or (field.description or name.replace("_", " ")).rstrip(".") + "."
    if get_origin(kind) is Literal:
        return {
            "type": click.Choice([str(v) for v in get_args(kind)]),
            "help": f"{help_text} [default: {field.default}]",
        }
    if name == "parameters" or (get_origin(kind) is list and _unwrap(get_args(kind)[0]) is str):
        return {"multiple": True, "help": help_text, "metavar": "KEY=VALUE" if name == "parameters" else None}
    if kind is int:
        return {"type": _int_range(field), "help": help_text}
    if get_origin(kind) in (list, dict):
        return {"help": help_text, "metavar": "JSON"}
    return {"help": help_text}


def _int_range(field: FieldInfo) -> click.IntRange:
    """The field's bounds (`gt`, `ge`, `lt`, `le`) as a click type, so a bad value is a usage error."""
    low = high = None
    for bound in field.metadata:
        low = getattr(bound, "ge", None) if getattr(bound, "ge", None) is not None else low
        low = bound.gt + 1 if getattr(bound, "gt", None) is not None else low
        high = getattr(bound, "le", None) if getattr(bound, "le", None) is not None else high
        high = bound.lt - 1 if getattr(bound, "lt", None) is not None else high
    return click.IntRange(min=low, max=high)


def _unwrap(annotation: Any) -> Any:
    """`X | None` → `X`."""
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else annotation
    return annotation


def _pair(item: str) -> tuple[str, Any]:
    key, sep, raw = item.partition("=")
    if not sep or not key.strip():
        raise click.BadParameter(f"'{item}' is not KEY=VALUE", param_hint="--param")
    try:
        return key.strip(), json.loads(raw)
    except ValueError:
        return key.strip(), raw


def _json(text: str, flag: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise click.BadParameter(f"not valid JSON: {exc}", param_hint=f"--{flag.lstrip('-')}") from None
