"""How to reach an MCP server (`ServerSpec`), and the servers file that lists external ones.

`CONCERTO_MCP_SERVERS_FILE` accepts these YAML forms (the second is the `mcpServers`
map other MCP clients use):

    servers:
      - name: notes
        command: python
        args: ["-m", "notes_server"]
      - name: weather            # replaces a pack's server of the same name
        url: http://127.0.0.1:8765/mcp

    mcpServers:
      notes: {command: python, args: ["-m", "notes_server"]}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from concerto.redact import is_credential_name, mask_url, remember, scrub


class ServerSpec(BaseModel):
    """One MCP server: a command to start (stdio) or a streamable HTTP URL."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., min_length=1, description="Server name; prefixes its tools' agent names")
    command: str | None = Field(None, description="Executable started with stdio transport")
    args: list[str] = []
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment variables")
    cwd: str | None = None
    url: str | None = Field(None, description="Streamable HTTP endpoint, e.g. http://host:8000/mcp")
    headers: dict[str, str] = {}
    description: str | None = Field(None, description="Shown before each tool's own description")
    type: Literal["stdio", "http", "streamable-http"] | None = Field(
        None, description="Accepted for compatibility with other clients' files; inferred anyway"
    )

    @model_validator(mode="after")
    def _one_transport(self) -> ServerSpec:
        if bool(self.command) == bool(self.url):
            raise ValueError(f"MCP server '{self.name}': give exactly one of `command` or `url`")
        return self

    def model_post_init(self, context: Any, /) -> None:
        """The values of its credential headers (`Authorization: Bearer ...`, `X-API-Key`) and
        environment variables (`NOTES_TOKEN`) are masked from now on wherever text is scrubbed."""
        for name, value in [*self.headers.items(), *self.env.items()]:
            if is_credential_name(name) or name.lower() == "cookie":
                remember(value)
                remember(value.partition(" ")[2])  # the token after `Bearer`

    @property
    def where(self) -> str:
        """The URL or command line, for messages (without a password, key or token)."""
        return mask_url(self.url) if self.url else scrub(" ".join([self.command or "", *self.args]).strip())


class ServersFileError(ValueError):
    """The servers file is missing, not YAML, or lists a server wrongly."""


def load_servers(path: Path | str | None) -> list[ServerSpec]:
    """The servers listed in the file, in order; none when no file is configured."""
    if path is None:
        return []
    import yaml

    path = Path(path).expanduser()
    try:
        data: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ServersFileError(f"cannot read the MCP servers file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ServersFileError(f"the MCP servers file {path} is not valid YAML: {exc}") from None
    specs: list[ServerSpec] = []
    for i, entry in enumerate(_entries(data, path)):
        try:
            specs.append(ServerSpec.model_validate(entry))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'server'}: {e['msg']}" for e in exc.errors())
            raise ServersFileError(f"{path}: server #{i + 1}: {problems}") from None
    names = [s.name for s in specs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ServersFileError(f"{path}: server names must be unique; repeated: {', '.join(dupes)}")
    return specs


def _entries(data: Any, path: Path) -> list[Any]:
    if data is None:
        return []
    if isinstance(data, list):
        return data
    if isinstance(data, dict) and isinstance(data.get("servers"), list):
        return list(data["servers"])
    if isinstance(data, dict) and isinstance(data.get("mcpServers"), dict):
        return [{"name": name, **(body or {})} for name, body in data["mcpServers"].items()]
    raise ServersFileError(f"{path}: expected a list of servers, a `servers:` list or an `mcpServers:` map")
