"""Load every installed pack in one pass over the `concerto.agents` entry points.

`load_packs()` imports each entry point once and keeps going when one fails: the
failure (which pack, which part, why) is logged and kept in `Packs.failures`, which
`concerto agents` and `/health` report, and the other packs keep working.
`CONCERTO_AGENTS` is read here, once, as a `Selection`; it limits which agents load
(static and discovered alike), not which commands, routes or settings exist.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from concerto.agents.pack import Pack, PackError, Ref, resolve

if TYPE_CHECKING:
    from concerto.agents.base import Agent, AgentInfo
    from concerto.agents.registry import AgentRegistry
    from concerto.settings import PackSettings, Settings

ENTRY_POINT_GROUP = "concerto.agents"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PackFailure:
    """One part of one pack that could not be used: `part` is import, agents, discover, settings, ..."""

    pack: str
    part: str
    error: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)

    def __str__(self) -> str:
        return f"pack '{self.pack}' ({self.part}): {self.error}"


class Selection:
    """`CONCERTO_AGENTS`: comma-separated agent names, pack names or agent `pack` labels; empty = all."""

    def __init__(self, text: str | None = None) -> None:
        names = {part.strip() for part in (text or "").split(",") if part.strip()}
        self.names: frozenset[str] | None = frozenset(names) if names else None

    def allows(self, info: AgentInfo, pack: str) -> bool:
        """Whether an agent of `pack` loads."""
        return self.names is None or bool({info.name, info.pack, pack} & self.names)

    def discovers(self, pack: str, known: set[str]) -> bool:
        """Whether a pack's run-time discovery runs: no selection, the pack is named, or a
        name that no static agent or pack explains (an agent discovery may find)."""
        return self.names is None or pack in self.names or bool(self.names - known)


class Packs:
    """The loaded packs, what each contributes, and what failed."""

    def __init__(self, packs: Iterable[Pack] = (), failures: Iterable[PackFailure] = (), agents: str | None = None):
        self.packs = list(packs)
        self.failures = list(failures)
        self.selection = Selection(agents)
        self._selected: list[type[Agent]] | None = None
        self._pack_of: dict[type[Agent], str] = {}
        self._known: set[str] = set()

    def __iter__(self) -> Iterator[Pack]:
        return iter(self.packs)

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.packs]

    @property
    def known(self) -> frozenset[str]:
        """Every static agent's name and pack label, selected or not (once `registry` has run)."""
        return frozenset(self._known)

    def fail(self, pack: str, part: str, error: BaseException | str) -> None:
        """Record (and log) a failure; the pack's other parts and the other packs go on."""
        failure = PackFailure(pack, part, str(error))
        if failure not in self.failures:
            log.warning("%s", failure)
            self.failures.append(failure)

    def registry(self, settings: Settings | None = None) -> AgentRegistry:
        """A new registry of the selected static agents of every pack (resolved once): each
        orchestrator adds its own discovered agents to its own.

        With `settings`, a pack whose own settings are invalid (a bad `CONCERTO_*` value) is
        reported and its agents left out, as if it had failed to load.
        """
        from concerto.agents.registry import AgentRegistry, RegistryError

        misconfigured = self._misconfigured(settings) if settings is not None else set()
        if self._selected is not None:
            return AgentRegistry(c for c in self._selected if self._pack_of[c] not in misconfigured)
        registry = AgentRegistry()
        self._known = set(self.names)
        for pack in self.packs:
            try:
                classes = pack.agent_classes()
            except Exception as exc:
                self.fail(pack.name, "agents", exc)
                continue
            for cls in classes:
                try:
                    cls = labelled(cls, pack.name)
                except PackError as exc:
                    self.fail(pack.name, "agents", exc)
                    continue
                self._known |= {cls.info.name, cls.info.pack}
                if self.selection.allows(cls.info, pack.name):
                    try:
                        registry.register(cls)
                        self._pack_of[cls] = pack.name
                    except RegistryError as exc:
                        self.fail(pack.name, "agents", exc)
        self._selected = [registry.get(name) for name in registry.names()]
        return AgentRegistry(c for c in self._selected if self._pack_of[c] not in misconfigured)

    def _misconfigured(self, settings: Settings) -> set[str]:
        """Packs whose settings do not validate with the environment `settings` reads."""
        from concerto.settings import SettingsError

        bad = set()
        for pack, cls in self.settings_classes():
            try:
                cls.of(settings)
            except SettingsError as exc:
                self.fail(pack, "settings", exc)
                bad.add(pack)
        return bad

    async def discover(self, settings: Settings) -> list[type[Agent]]:
        """Agents the packs find at run time (their `discover` hooks), selected."""
        self.registry()  # fills the names a selection may refer to
        found: list[type[Agent]] = []
        for pack in self.packs:
            if pack.discover is None or not self.selection.discovers(pack.name, self._known):
                continue
            try:
                result = resolve(pack.discover, f"discover of pack {pack.name}")(settings)
                if inspect.isawaitable(result):
                    result = await result
                classes = [labelled(cls, pack.name) for cls in result or []]
            except Exception as exc:  # a broken external server must not stop the others
                self.fail(pack.name, "discover", exc)
                continue
            found += [cls for cls in classes if self.selection.allows(cls.info, pack.name)]
            self._pack_of.update(dict.fromkeys(classes, pack.name))
        return found

    def serving(self, registry: AgentRegistry) -> list[Pack]:
        """The packs with an agent in `registry` (static or discovered), in load order."""
        names = {self._pack_of.get(registry.get(name)) for name in registry.names()}
        return [pack for pack in self.packs if pack.name in names]

    def readers(self) -> list[tuple[str, Any]]:
        """(pack name, reader function) of every pack that declares a `reader`; a reader that
        cannot be imported is the pack's failure, as for its other parts."""
        out = []
        for pack in self.packs:
            if pack.reader is None:
                continue
            try:
                out.append((pack.name, resolve(pack.reader, f"reader of pack {pack.name}")))
            except Exception as exc:
                self.fail(pack.name, "reader", exc)
        return out

    def intent_files(self) -> list[Path]:
        return [Path(path) for pack in self.packs for path in pack.intents]

    def settings_classes(self) -> list[tuple[str, type[PackSettings]]]:
        """(pack name, settings class) of every pack that declares settings."""
        out = []
        for pack in self.packs:
            try:
                cls = pack.settings_class()
            except Exception as exc:
                self.fail(pack.name, "settings", exc)
                continue
            if cls is not None:
                out.append((pack.name, cls))
        return out

    def settings_sections(self) -> list[tuple[str, type[Settings] | type[PackSettings]]]:
        """("core", Settings) then each pack's settings class; a pack that re-declares a
        setting another owns is reported and left out (both would read the same variable)."""
        from concerto.settings import Settings

        sections: list[tuple[str, type[Settings] | type[PackSettings]]] = [("core", Settings)]
        owner = dict.fromkeys(Settings.model_fields, "core")
        for pack, cls in self.settings_classes():
            taken = [f"CONCERTO_{f.upper()} ({owner[f]})" for f in cls.model_fields if f in owner]
            if taken:
                self.fail(pack, "settings", f"declares settings that are already taken: {', '.join(taken)}")
                continue
            owner.update(dict.fromkeys(cls.model_fields, pack))
            sections.append((pack, cls))
        return sections

    def commands(self) -> dict[str, tuple[str, Ref]]:
        """Command name → (pack, command or its path); the first pack to claim a name keeps it."""
        out: dict[str, tuple[str, Ref]] = {}
        for pack in self.packs:
            for name, ref in pack.commands.items():
                if name in out:
                    self.fail(pack.name, "commands", f"command '{name}' is already provided by pack '{out[name][0]}'")
                else:
                    out[name] = (pack.name, ref)
        return out

    def mcp_servers(self) -> dict[str, tuple[str, Ref]]:
        """MCP server name → (pack, factory or its path)."""
        out: dict[str, tuple[str, Ref]] = {}
        for pack in self.packs:
            for name, ref in pack.mcp_servers.items():
                out.setdefault(name, (pack.name, ref))
        return out


def labelled(cls: Any, pack: str) -> type[Agent]:
    """Check that `cls` is an agent class; give its `info` the pack's name when it has none."""
    from concerto.agents.base import Agent, AgentInfo

    if not (isinstance(cls, type) and issubclass(cls, Agent)):
        raise PackError(f"{cls!r} is not an Agent subclass")
    info = getattr(cls, "info", None)
    if not isinstance(info, AgentInfo):
        raise PackError(f"{cls.__qualname__} has no `info: AgentInfo`")
    if not info.pack:
        cls.info = info.model_copy(update={"pack": pack})
    return cls


def load_packs(agents: str | None = None, *, group: str = ENTRY_POINT_GROUP) -> Packs:
    """Import every pack named in the entry-point group, in one pass; never raises.

    Concerto's own packs come first, then the others by name: where two packs claim one
    agent name, setting or command, the first keeps it, so a plugin cannot take over a
    built-in's, and the outcome does not depend on the order of sys.path.
    """
    packs = Packs(agents=agents)
    seen: dict[str, str] = {}
    for ep in sorted(entry_points(group=group), key=_builtin_first):
        if ep.name in seen:
            if seen[ep.name] != ep.value:
                packs.fail(ep.name, "import", f"{ep.value} is shadowed by {seen[ep.name]} (same pack name)")
            continue
        seen[ep.name] = ep.value
        try:
            pack = _pack_of(ep)
        except Exception as exc:  # any error in a plugin's import: report it, keep the others
            packs.fail(ep.name, "import", f"{ep.value} failed to load: {type(exc).__name__}: {exc}")
            continue
        packs.packs.append(pack)
    return packs


def _builtin_first(ep: EntryPoint) -> tuple[bool, str]:
    dist = getattr(ep, "dist", None)
    return (dist is None or dist.name != "concerto", ep.name)


def _pack_of(ep: EntryPoint) -> Pack:
    """The `Pack` an entry point names: a `Pack`, or a module with a `pack` attribute, or
    (the older form) a module whose `@register_agent` classes become the pack's agents."""
    value = ep.load()
    if isinstance(value, Pack):
        return value
    if isinstance(value, ModuleType):
        declared = getattr(value, "pack", None)
        if isinstance(declared, Pack):
            return declared
        from concerto.agents.registry import registered_in

        return Pack(name=ep.name, agents=registered_in(value.__name__))
    raise PackError(f"{ep.value} is a {type(value).__name__}, not a Pack")


def load_registry(agents: str | None = None) -> AgentRegistry:
    """The agents of every installed pack, limited by `agents` (the `CONCERTO_AGENTS` syntax).

    A pack that fails to load is logged and left out; `load_packs` says which and why.
    """
    return load_packs(agents).registry()
