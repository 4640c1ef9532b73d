"""Settings read from the environment (prefix CONCERTO_) or an optional `concerto.env` file.

The core's own settings are `Settings`; each pack declares its own as a `PackSettings`
subclass in its folder, read from the same variables and file, so users set
`CONCERTO_PROMETHEUS_URL` whichever class owns it. Code reaches a pack's settings
through the core ones: `MetricsSettings.of(settings)`, which reads them on first use
or returns the instance a caller gave with `settings.using(MetricsSettings(...))`.

Every setting has an embedded default so that a fresh install answers with no set-up;
the real backends are switched on by setting their URL.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar
from urllib.parse import urlsplit

from pydantic import Field, PrivateAttr, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from concerto.contracts.dispatch import MAX_TIMEOUT_MS, MIN_TIMEOUT_MS
from concerto.redact import MASK, mask_url, remember, scrub, scrub_data

S = TypeVar("S", bound="PackSettings")


class SettingsError(ValueError):
    """A setting whose value is not valid; the message names the variable and what is wrong."""


def _default_data_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("concerto", appauthor=False))


_HOST_NAME = re.compile(r"^(\*|(\*\.)?[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*\.?)$")


def _host_name(entry: str) -> str:
    """An entry of CONCERTO_ALLOWED_HOSTS as the host name the server compares (lower case): a
    scheme or a port written with it is dropped (`http://a.example:8000` is `a.example`; the
    server compares names, not ports), `[::1]` is `::1`; anything else that is not a name
    (`*.a.example`, `*`) or an IP address is refused, naming the entry."""
    text = entry.strip().lower()
    if _is_ip(text.strip("[]")):  # `::1` has colons, and no port
        return text.strip("[]")
    try:
        parts = urlsplit(text if "://" in text else f"//{text}")
        name, _ = parts.hostname or "", parts.port  # a port that is not a number is refused too
    except ValueError:
        name, parts = "", None
    plain = parts is not None and parts.path in ("", "/") and not (parts.query or parts.fragment or parts.username)
    if plain and (_HOST_NAME.match(name) or _is_ip(name)):
        return name
    raise ValueError(
        f"{entry.strip()[:100]!r} is not a host name; give names such as concerto.example or *.example.com, "
        "comma-separated"
    )


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class _ConcertoSettings(BaseSettings):
    """What every settings class shares: the `CONCERTO_` prefix and the settings file."""

    model_config = SettingsConfigDict(
        env_prefix="CONCERTO_",
        env_file=os.environ.get("CONCERTO_SETTINGS_FILE", "concerto.env"),
        env_file_encoding="utf-8",
        extra="ignore",
    )

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as exc:
            problems = []
            for err in exc.errors():
                name = str(err["loc"][0]) if err["loc"] else "?"
                given = repr(scrub_data(err.get("input")))[:60]
                problems.append(f"CONCERTO_{name.upper()}={given}: {err['msg'].removeprefix('Value error, ')}")
            raise SettingsError("invalid setting " + "; ".join(problems)) from None

    def masked(self) -> dict[str, Any]:
        """Values as JSON-able data with secrets masked, for `concerto config`: a secret as
        `***` (`concerto.redact.MASK`, as every secret shows; a secret URL as the URL without
        its password), any URL without its password or credential parameters
        (`concerto.redact.mask_url`)."""
        out: dict[str, Any] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, SecretStr):
                secret = value.get_secret_value()
                value = (mask_url(secret) if "://" in secret else MASK) if secret else None
            elif isinstance(value, Path):
                value = scrub(str(value))
            elif isinstance(value, str):
                value = mask_url(value)
            else:
                value = scrub_data(value)
            out[name] = value
        return out

    def model_post_init(self, context: Any, /) -> None:
        """The secrets these settings hold (keys, tokens, URL passwords) are masked from now on
        wherever text is scrubbed (`concerto.redact.remember`), even shown without their URL."""
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, SecretStr):
                remember(value.get_secret_value())
            elif isinstance(value, str) and "://" in value:
                remember(value)

    def __repr_args__(self) -> Any:
        """`repr(settings)` shows URLs without their passwords (SecretStr masks itself)."""
        for name, value in super().__repr_args__():
            yield name, mask_url(value) if isinstance(value, str) else value


class PackSettings(_ConcertoSettings):
    """Base of a pack's settings class. Field `foo_url` is read from `CONCERTO_FOO_URL`."""

    @classmethod
    def of(cls: type[S], settings: Settings) -> S:
        """This pack's settings as seen by `settings` (see `Settings.section`)."""
        return settings.section(cls)


class Settings(_ConcertoSettings):
    """The core's configuration; `concerto config` prints it with every pack's."""

    data_dir: Path = Field(default_factory=_default_data_dir, description="Where demo data, stores and logs live")
    agents: str | None = Field(None, description="Comma-separated agent or pack names to load (default: all)")

    # LLM (none by default: deterministic routing, extraction and synthesis)
    llm_base_url: str | None = Field(None, description="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1")
    llm_model: str | None = Field(None, description="Model id sent to the endpoint")
    llm_api_key: SecretStr | None = Field(None, description="API key (OPENAI_API_KEY also honoured)")
    llm_timeout_s: float = Field(30.0, gt=0, description="Timeout of one LLM call")
    llm_json_mode: Literal["json_object", "json_schema", "none"] = Field(
        "json_object", description="How structured output is requested from the endpoint"
    )
    llm_max_retries: int = Field(1, ge=0, le=5, description="Extra attempts when the LLM returns invalid output")

    # Orchestration
    max_concurrency: int = Field(8, ge=1, le=1024, description="Agent tasks running at once per query")
    default_timeout_ms: int = Field(
        30000,
        ge=MIN_TIMEOUT_MS,
        le=MAX_TIMEOUT_MS,
        description="Task timeout for agents that declare none of their own",
    )
    agent_timeouts: Annotated[dict[str, int], NoDecode] = Field(
        default_factory=dict,
        description="Task timeout per agent in ms, e.g. `segmentation=60000,kpi=45000`: wins over the agent's "
        "own timeout, the intent tables' and CONCERTO_MIN_TIMEOUT_MS (a timeout error names this setting)",
    )
    min_timeout_ms: int = Field(
        0,
        ge=0,
        le=MAX_TIMEOUT_MS,
        description="Every task's timeout is at least this many ms (0: none); raises all the agents' own "
        "timeouts at once on a slow or busy machine",
    )
    semantic_threshold: float = Field(0.35, ge=0, le=1, description="Minimum similarity for the semantic router")
    intents_file: Path | None = Field(None, description="Extra intent table (YAML) for the planner")
    store_events: bool = Field(
        True, description="Append every question's events to the log (events.sqlite, or the CONCERTO_DATABASE_URL one)"
    )
    max_events: int = Field(1000, ge=10, description="Events kept in memory per query")
    events_max_age_days: float = Field(
        30.0, gt=0, description="Days the event log, runs and conversation turns are kept (pruned as it goes)"
    )
    events_max_rows: int = Field(
        200_000, ge=100, description="Rows of the event log (and of conversation turns) kept, newest first"
    )

    # Storage (concerto.store; docs/scale-out.md)
    database_url: SecretStr | None = Field(
        None,
        description="PostgreSQL URL, e.g. postgresql://user:pw@host/db: the shared log (schema concerto_log: "
        "events, runs, conversations, A2A tasks) and loaded tables (schema concerto); default: events.sqlite "
        "and DuckDB files in the data dir",
    )

    # Scale-out (docs/scale-out.md)
    executor: Literal["local", "ray"] = Field(
        "local", description="Where agents that declare `remote` run: in this process, or on a Ray cluster"
    )
    ray_address: str = Field(
        "", description="Ray cluster to join (host:port, ray://host:10001, auto); empty: start a local one"
    )
    ray_replicas: int = Field(1, ge=1, le=64, description="Ray actors per agent that declares `remote: actor`")

    # The HTTP edge of `concerto serve` (docs/security.md)
    allowed_hosts: Annotated[list[str], NoDecode] = Field(
        ["localhost", "127.0.0.1", "::1"],
        description="Host names the server answers to (comma-separated; `*.example.com` for its subdomains, `*` "
        "for any); `concerto serve` adds its `--host`, and the address a request arrived at is always accepted",
    )
    api_token: SecretStr | None = Field(
        None,
        description="Require this token on every route but /health and /ready (`Authorization: Bearer TOKEN`; "
        "the page: open /?token=TOKEN once)",
    )
    max_body_bytes: int = Field(
        1_048_576, ge=1024, description="Largest request body (413 beyond it); uploads: CONCERTO_DATA_MAX_FILE_MB"
    )

    _sections: dict[type[PackSettings], PackSettings] = PrivateAttr(default_factory=dict)

    @field_validator("agent_timeouts", mode="before")
    @classmethod
    def _timeouts(cls, value: Any) -> Any:
        """`name=ms,name=ms` (the environment's form), a JSON object or a mapping; each in MIN..MAX_TIMEOUT_MS."""
        if isinstance(value, str) and value.lstrip().startswith("{"):
            import json

            try:
                value = json.loads(value)
            except ValueError:
                raise ValueError("not a JSON object; or write it as segmentation=60000,kpi=45000") from None
        if isinstance(value, str):
            entries = [e.strip() for e in value.split(",") if e.strip()]
            if any(e.count("=") != 1 for e in entries):
                raise ValueError("write it as agent=milliseconds, separated by commas: segmentation=60000,kpi=45000")
            value = {k.strip(): v.strip() for k, v in (e.split("=") for e in entries)}
        if isinstance(value, dict):
            for name, ms in value.items():
                if not (str(ms).isdigit() and MIN_TIMEOUT_MS <= int(ms) <= MAX_TIMEOUT_MS):
                    raise ValueError(f"the timeout of {name} must be {MIN_TIMEOUT_MS}..{MAX_TIMEOUT_MS} ms, not {ms!r}")
        return value

    @field_validator("llm_api_key", mode="before")
    @classmethod
    def _openai_key(cls, value: Any) -> Any:
        return value or os.environ.get("OPENAI_API_KEY") or None

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _host_list(cls, value: Any) -> Any:
        """`CONCERTO_ALLOWED_HOSTS=a.example,b.example` as a list of host names (`_host_name`)."""
        names = value.split(",") if isinstance(value, str) else value
        return [_host_name(str(n)) for n in names if str(n).strip()] if isinstance(names, list) else names

    @field_validator("api_token", mode="after")
    @classmethod
    def _token_or_none(cls, value: SecretStr | None) -> SecretStr | None:
        """An empty or blank token is no token (a set-but-empty variable must not mean "any token")."""
        return value if value is not None and value.get_secret_value().strip() else None

    @property
    def llm_configured(self) -> bool:
        """An LLM is used only when a model and an endpoint (or a key for OpenAI) are set."""
        return bool(self.llm_model and (self.llm_base_url or self.llm_api_key))

    def section(self, cls: type[S]) -> S:
        """A pack's settings: the instance given to `using`, else read from the environment once."""
        found = self._sections.get(cls)
        if found is None:
            found = self._sections[cls] = cls()
        assert isinstance(found, cls)
        return found

    def using(self, *sections: PackSettings) -> Settings:
        """A copy of these settings whose packs see `sections` (tests, embedding applications)."""
        copy = self.model_copy()
        copy._sections = {**self._sections, **{type(s): s for s in sections}}
        return copy


Section = tuple[str, "type[Settings] | type[PackSettings]"]


def effective(settings: Settings, sections: Sequence[Section]) -> dict[str, dict[str, Any]]:
    """Owner → its settings' values, secrets masked, as `settings` sees them."""
    out: dict[str, dict[str, Any]] = {}
    for owner, cls in sections:
        part = cls.of(settings) if issubclass(cls, PackSettings) else settings
        out[owner] = part.masked()
    return out


def reference(sections: Sequence[Section]) -> str:
    """The settings reference as a Markdown table, one row per setting, grouped by owner."""
    lines = ["| variable | default | meaning |", "|---|---|---|"]
    for owner, cls in sections:
        lines.append(f"| **{owner}** | | |")
        for name, field in cls.model_fields.items():
            default = "" if field.is_required() or field.default_factory else _default_text(field.default)
            meaning = (field.description or "").replace("|", "\\|")
            lines.append(f"| `CONCERTO_{name.upper()}` | {default} | {meaning} |")
    return "\n".join(lines) + "\n"


def _default_text(value: Any) -> str:
    return "" if value is None else f"`{value}`"
