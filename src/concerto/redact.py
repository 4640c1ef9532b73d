"""Secrets kept out of what Concerto prints, returns, logs and stores.

A backend's URL may carry a password (`http://user:pw@host`, `postgresql://user:pw@db/x`)
or a credential in its query (`?api_key=...`, `?token=...`); settings hold keys and tokens.
Two layers keep them in:

- at the source, every message built from a URL shows `mask_url(url)`, never the URL: the
  fix, where the code knows what it prints;
- at the boundaries where text leaves the process or is stored (events as they are read or
  streamed, the shared log's rows, the error contract, Python logging through
  `concerto.log_redaction`), `scrub` masks what looks like a secret in any text: the safety
  net for the message someone forgets to mask, or a library's error that quotes the URL it
  was given (psycopg, httpx).

`scrub` masks a URL's password (also one holding `/`, `#` or `?`, which a URL should
percent-encode but people type), credential-like parameters (`name=value`, `name: value`
and `"name": value` where the name says password, secret, token, key, signature ...; the
short `key`, `auth` and `sig` only in a URL's query, as they name other things in answers and
SQL), an `Authorization:` value, and the values the settings hold as secrets (`remember`:
the settings register them when read), so a password echoed without its URL (psycopg:
`unexpected spaces found in "..."`) is masked too. User names, hosts, ports and paths stay:
they say which backend is meant. Every secret is shown as `MASK`.

Its cost is linear in the text, whatever the text: `scrub` runs on what clients send (the
access log's query string) and what agents return. Each pattern starts at a literal (`://`,
or a name's credential word, searched in the lower-cased text) and looks at a bounded window
from there: at most `MAX_NAME` characters of name after the word, a quoted value of at most
`MAX_QUOTED` (a longer one is masked up to its first space), a URL's password up to the next
`://` or space. Every value it masks it skips, so no character is read again and again.

`without_paths` keeps the server's own file paths out of a message in the same spirit: a
client sees a file by its name only (the data layer and the engine's first-use work use it).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

MASK = "***"
MIN_REMEMBERED = 6  # shorter values are not masked wherever they appear (too many false hits)
MAX_NAME = 64  # longest end of a parameter's name looked at after its credential word
MAX_QUOTED = 512  # longest quoted value looked at for its closing quote

# Words that make a name a credential's: `api_key`, `x-amz-signature`, `client_secret`,
# `password`, `access_token`; not `max_tokens` (a count). Lower case: the patterns that find
# names in a text run on its lower-cased copy.
_WORD_LIST = (
    r"passw(?:or)?d",
    "passphrase",
    "pwd",
    "secret",
    "token(?!s)",
    "api[_-]?key",
    "access[_-]?key",
    "private[_-]?key",
    "signature",
    "credential",
)
_WORDS = "|".join(_WORD_LIST)
# A whole name (`str.fullmatch`, a dict's key): it holds one of the words, or ends in `pass`
# after a separator (`pass`, `db_pass`; not `bypass`). A lookahead, then a possessive run:
# nothing to go back over.
_NAME = rf"(?=[\w.-]*?(?:{_WORDS}))[\w.-]++|(?:[\w.-]*[_.-])?pass"


def _names_then(separator: str, short_names: str) -> str:
    """Alternatives for a name inside a text, each from its credential word to its end then
    `separator` (what comes before the word is any name: `x-api-key`, `CONCERTO_GRAFANA_TOKEN`):
    every one starts with a literal, so the regex engine skips to the characters that can
    start one instead of trying every position. Also `pass` not after a letter or digit, and
    the short names checked behind them."""
    words = [rf"{word}[\w.-]{{0,{MAX_NAME}}}+{separator}" for word in _WORD_LIST]
    return "|".join([*words, rf"pass(?<![^\W_]pass){separator}", short_names])


# One value: quoted (libpq's `password='a b'`, or `"..."` and its JSON-escaped `\"...\"`), or
# up to a separator of queries, DSNs and argument lists (a backslash ends it: JSON text stays
# JSON; a comma or parenthesis too: `send(request, auth=auth, ...)` in a traceback). A quote
# not closed within `MAX_QUOTED` characters: the quote and what follows, to a separator.
_VALUE = (
    rf"(?:'[^']{{0,{MAX_QUOTED}}}'|\\?\"(?:[^\"\\]|\\[^\"]){{0,{MAX_QUOTED}}}\\?\""
    r"|\\?[\"']?[^\s&#\"'<>\\,;()]+)"
)
# In a text: `name=value`, or `name: value` (not a scheme's `name://`, nor a URL's
# `//user:***@` whose password `_URL_PASSWORD` masked, keeping its host; nor a sentence, as
# in `set CONCERTO_API_TOKEN: it needs ...`: one word of letters, then more words); the name
# may be quoted (`"api_key": "..."`, `{'client_secret': '...'}`). The short names `key`,
# `auth` and `sig` (Google's `?key=`, Azure's `sig`) after `?` or `&` only: elsewhere they
# name data.
_TEXT_SEPARATOR = rf"""(?:\\?["'])?(?:=|:(?!//|{re.escape(MASK)}@)[ \t]*+(?![^\W\d_]++[ \t]+[^\W\d_]))"""
_SHORT_IN_TEXT = r"key(?<=[?&]key)=|auth(?<=[?&]auth)=|sig(?<=[?&]sig)="
_IN_TEXT = rf"(?P<keep>{_names_then(_TEXT_SEPARATOR, _SHORT_IN_TEXT)}){_VALUE}"
# In a URL's query or fragment: `name=value`, the short names first or after `&` or `;`.
_SHORT_IN_QUERY = r"key(?<![^&;]key)=|auth(?<![^&;]auth)=|sig(?<![^&;]sig)="
_IN_QUERY = rf"(?P<keep>{_names_then('=', _SHORT_IN_QUERY)})[^&;#]*"
# Each as it runs on lower-cased text, and on text whose lower-cased copy is not as long.
_PARAMETERS = (re.compile(_IN_TEXT), re.compile(_IN_TEXT, re.IGNORECASE))
_QUERY_PARAMETERS = (re.compile(_IN_QUERY), re.compile(_IN_QUERY, re.IGNORECASE))
# `://user:password@`: the password runs to the last `@` before the host, or, when what
# follows the `:` is not a port (not all digits up to `/`, `?` or `#`), to the last `@`
# before the next space or `://` (a password with `/`, `#` or `?`), or to the end of a text
# cut short inside it (`message[:200]`). Starting with the literal `://` lets the regex
# engine skip to it.
_URL_PASSWORD = re.compile(
    r"(?P<keep>://(?P<user>[^\s/?#@:\[\]\"'<>\\]*):)"
    r"(?:(?P<password>[^\s/?#\"'<>\\]*)@"
    r"|(?=\d*[^\d\s/?#@\"'<>\\])(?:(?P<loose>(?:(?!://)[^\s\"'<>\\])*)@|(?:(?!://)[^\s@\"'<>\\])*\Z))"
)
_AUTHORIZATION = re.compile(
    r"(?P<keep>authorization[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic|token)\s+)?)[^\s\"',;]+", re.IGNORECASE
)
# A dict key whose value is a credential (not the short `key`, `auth`, `sig`, which name other
# things in data).
_CREDENTIAL_KEY = re.compile(rf"{_NAME}|(?=[\w.-]*?authorization)[\w.-]++", re.IGNORECASE)
_CONTAINERS = (dict, list, tuple)

_remembered: tuple[str, ...] = ()  # longest first: the longest wins where two overlap
_remembered_forms: tuple[str, ...] = ()  # the same as `repr` and JSON show them (quick checks)
_lock = threading.Lock()


def mask_url(url: str) -> str:
    """`url` with its password and the values of credential-like query or fragment
    parameters replaced by `***`: `http://bob:***@host:9090/x?api_key=***`. The user
    name, host, port and path stay. A value that is not a URL is scrubbed as text."""
    if "://" not in url:
        return scrub(url)
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. an unclosed IPv6 bracket: the text patterns still apply
        return scrub(url)
    netloc = parts.netloc
    userinfo, at, host = netloc.rpartition("@")
    if at and ":" in userinfo:
        netloc = f"{userinfo.partition(':')[0]}:{MASK}@{host}"
    query = _mask_parameters(parts.query, _QUERY_PARAMETERS)
    fragment = _mask_parameters(parts.fragment, _QUERY_PARAMETERS)
    if (netloc, query, fragment) == (parts.netloc, parts.query, parts.fragment):
        return scrub(url)  # nothing structural; a remembered secret may still be in the path
    # Rebuilt by hand: urlunsplit would drop an empty `?` or `#` and normalise the text.
    out = f"{parts.scheme}://{netloc}{parts.path}"
    if query or "?" in url:
        out += f"?{query}"
    if fragment or "#" in url:
        out += f"#{fragment}"
    return scrub(out)


def scrub(text: str) -> str:
    """`text` with every secret it shows masked: URL passwords, credential parameters,
    `Authorization` values, and the values `remember` was given. Unchanged text is returned
    as is (the same object), so scrubbing what holds no secret costs a scan and nothing more."""
    if not text:
        return text
    original = text
    if "://" in text:
        text = _URL_PASSWORD.sub(_mask_password, text)
    text = _mask_parameters(text, _PARAMETERS)
    if "uthorization" in text or "UTHORIZATION" in text:
        text = _AUTHORIZATION.sub(lambda m: m["keep"] + MASK, text)
    for secret in _remembered:
        if secret in text:
            text = text.replace(secret, MASK)
    return original if text == original else text


def _mask_password(match: re.Match[str]) -> str:
    return match["keep"] + MASK + ("@" if match[0].endswith("@") else "")


def _mask_parameters(text: str, patterns: tuple[re.Pattern[str], re.Pattern[str]]) -> str:
    """The values of credential parameters masked: `patterns` find them in the lower-cased text
    (or, when lower-casing changes its length, in the text ignoring case)."""
    if "=" not in text and ":" not in text:
        return text
    lower = text.lower()
    pattern = patterns[0] if len(lower) == len(text) else patterns[1]
    found = lower if pattern is patterns[0] else text
    pieces: list[str] = []
    done = 0
    for match in pattern.finditer(found):
        pieces += (text[done : match.end("keep")], MASK)
        done = match.end()
    return "".join((*pieces, text[done:])) if pieces else text


def scrub_data(value: Any) -> Any:
    """`scrub` applied to every string (keys too) in nested dicts, lists and tuples, and the
    value of a key that names a credential (`"password": ...`, `"Authorization": ...`) masked;
    exceptions become their scrubbed text, other values are kept. What holds no secret is
    returned as is, not copied: one `repr` of the whole tells (a few µs for an event's details)."""
    if isinstance(value, str):
        return scrub(value)
    if type(value) in _CONTAINERS and not value:  # exact types: the ABC check below costs more
        return value
    if not isinstance(value, Mapping | list | tuple | BaseException):
        return value
    try:
        suspect = _suspect(repr(value))
    except Exception:  # a repr that fails: look at every part
        suspect = True
    return _scrub_nested(value) if suspect else value


def _suspect(text: str) -> bool:
    """Whether `text` may hold something `scrub_data` masks: literal checks, no regex."""
    if "://" in text or "=" in text:
        return True
    low = text.lower()  # the words of `_CREDENTIAL_KEY`, as plain substring searches (no regex: 4x faster)
    if (
        "key" in low
        or "token" in low
        or "secret" in low
        or "pass" in low  # `pass`, `db_pass`, `password`
        or "pwd" in low
        or "signature" in low
        or "credential" in low
        or "authorization" in low
    ):
        return True
    return bool(_remembered_forms) and any(s in text for s in _remembered_forms)


def _scrub_nested(value: Any) -> Any:
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            key = _scrub_nested(k)
            if isinstance(v, str) and v and isinstance(k, str) and _CREDENTIAL_KEY.fullmatch(k):
                out[key] = MASK
            else:
                out[key] = _scrub_nested(v)
        return out
    if isinstance(value, list | tuple):
        items = [_scrub_nested(v) for v in value]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, BaseException):
        return scrub(f"{type(value).__name__}: {value}")
    return value


def scrub_serialized(text: str) -> str:
    """`scrub` for text that may be a JSON document (a stored event's details, a run's result):
    a document stays valid JSON, with its strings scrubbed one by one and the values of
    credential keys masked; other text is scrubbed as text."""
    if text.lstrip()[:1] in ("{", "[") and _suspect(text):
        try:
            data = json.loads(text)
        except ValueError:
            return scrub(text)
        masked = _scrub_nested(data)
        return text if masked == data else json.dumps(masked, ensure_ascii=False)
    return scrub(text)


def is_credential_name(name: str) -> bool:
    """Whether a key, parameter or variable of this name holds a credential (`API_KEY`,
    `client_secret`, `GITHUB_TOKEN`, `password`), as `scrub_data` judges dict keys."""
    return _CREDENTIAL_KEY.fullmatch(name) is not None


def remember(secret: str | None) -> None:
    """Mask this value wherever `scrub` sees it from now on (a key, a token, a password). A URL
    is not remembered whole: its password is, as `scrub` finds it (one with `/`, `#` or `?`
    too), as written and percent-decoded. Values shorter than `MIN_REMEMBERED` are not, as
    they would mask ordinary words; a password that is a common word is masked wherever that
    word appears (noise, never a leak)."""
    if not secret:
        return
    values = {secret}
    if "://" in secret:
        values = set()
        try:  # as a URL library reads it (a password with a space: psycopg quotes it alone)
            parts = urlsplit(secret)
            found = [(parts.username, parts.password)]
        except ValueError:
            found = []
        for match in _URL_PASSWORD.finditer(secret):  # as `scrub` reads it (with `/`, `#`, `?`)
            if match[0].endswith("@"):
                found.append((match["user"], match["password"] if match["password"] is not None else match["loose"]))
        for user, password in found:
            # A password that is the user name (postgres:postgres) is shown with the user
            # anyway; remembered, it would mask that word everywhere.
            values |= {password, unquote(password)} - {user} if password else set()
    values = {v for v in values if len(v) >= MIN_REMEMBERED}
    with _lock:
        if values <= set(_remembered):
            return
        _remember(tuple(sorted(values | set(_remembered), key=len, reverse=True)))


def _remember(secrets: tuple[str, ...]) -> None:
    """Hold exactly `secrets` (longest first), with the forms `repr` and JSON show them in."""
    global _remembered, _remembered_forms
    _remembered = secrets
    forms = {repr(v)[1:-1] for v in secrets} | {json.dumps(v)[1:-1] for v in secrets}
    _remembered_forms = tuple(forms)


@contextmanager
def remembered_scope() -> Iterator[None]:
    """Forget, when the block ends, what `remember` was given inside it: for tests, where each
    `Settings(api_token=...)` remembers its token and one test's secrets must not mask what
    another shows (tests/conftest.py wraps every test in one). What was remembered before the
    block stays remembered; the product never forgets a secret."""
    with _lock:
        saved = _remembered
    try:
        yield
    finally:
        with _lock:
            _remember(saved)


# An absolute path (POSIX or Windows) not inside a word: "/srv/data/x.csv" → "x.csv".
_ABSOLUTE = re.compile(r"(?<![\w.~])(?:[A-Za-z]:)?[/\\](?:[^\s'\"/\\]+[/\\])+([^\s'\"/\\]+)")


def without_paths(text: str, *paths: Path) -> str:
    """`text` with each of `paths` (as given and resolved) shown by its own name, and any other
    absolute path by its last part: what a message may show a client of the server (DuckDB's,
    fastexcel's and the OS's errors name the files they could not read by their full paths)."""
    for path in paths:
        for shown in {str(path.resolve()), str(path)}:
            text = text.replace(shown, path.name)
    return _ABSOLUTE.sub(lambda m: m.group(1), text)
