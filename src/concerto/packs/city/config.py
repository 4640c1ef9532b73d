"""The MCP servers file (`CONCERTO_MCP_SERVERS_FILE`): external servers whose tools become agents.

Accepted YAML forms (the second is the `mcpServers` map other MCP clients use):

    servers:
      - name: notes
        command: python
        args: ["-m", "notes_server"]
      - name: weather            # replaces the built-in weather server
        url: http://127.0.0.1:8765/mcp

    mcpServers:
      notes: {command: python, args: ["-m", "notes_server"]}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from concerto.packs.city.client import ServerSpec


class ServersFileError(ValueError):
    """The servers file is missing, not YAML, or lists a server wrongly."""


def load_servers(path: Path | str | None) -> list[ServerSpec]:
    """The servers listed in the file, in order; none when no file is configured."""
    if path is None:
        return []
    import yaml
    from pydantic import ValidationError

    path = Path(path).expanduser()
    try:
        data: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ServersFileError(f"cannot read the MCP servers file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ServersFileError(f"the MCP servers file {path} is not valid YAML: {exc}") from None
    entries = _entries(data, path)
    specs: list[ServerSpec] = []
    for i, entry in enumerate(entries):
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
