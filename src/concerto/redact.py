"""Secrets kept out of what Concerto prints, returns, logs and stores.

A backend's URL may carry a password (`http://user:pw@host`, `postgresql://user:pw@db/x`)
or a credential in its query (`?api_key=...`, `?token=...`); settings hold keys and tokens.
Two layers keep them in:

- at the source, every message built from a URL shows `mask_url(url)`, never the URL: the
  fix, where the code knows what it prints;
- at the boundaries where text leaves the process or is stored (events as they are read or
  streamed, the shared log's rows, the error contract, Python logging), `scrub` masks what
  looks like a secret in any text: the safety net for the message someone forgets to mask,
  or a library's error that quotes the URL it was given (psycopg, httpx).

`scrub` masks a URL's password, credential-like parameters (`name=value` where the name says
password, secret, token, key, signature ...), an `Authorization:` value, and the values the
settings hold as secrets (`remember`: the settings register them when read), so a password
echoed without its URL (psycopg: `unexpected spaces found in "..."`) is masked too. User
names, hosts, ports and paths stay: they say which backend is meant.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

MASK = "***"
MIN_REMEMBERED = 6  # shorter values are not masked wherever they appear (too many false hits)

# Names of parameters that carry a credential: `api_key`, `x-amz-signature`, `client_secret`,
# `password`, `access_token`, or exactly `key`, `auth`, `sig` (Google's `?key=`, Azure's `sig`);
# not `max_tokens` (a count).
_CREDENTIAL_NAME = (
    r"(?:[\w.-]*?(?:passw(?:or)?d|pwd|secret|token(?!s)|api[_-]?key|access[_-]?key|private[_-]?key"
    r"|signature|credential)[\w.-]*|key|auth|sig)"
)
# One value: quoted (libpq's `password='a b'`, or `"..."` and its JSON-escaped `\"...\"`), or
# up to a separator of queries, DSNs and argument lists (a backslash ends it: JSON text stays
# JSON; a comma or parenthesis too: `send(request, auth=auth, ...)` in a traceback).
_VALUE = r"(?:'[^']*'|\\?\"(?:[^\"\\]|\\[^\"])*\\?\"|[^\s&#\"'<>\\,;()]+)"
# ://user:password@ — the password runs to the last `@` before the host; or, at the end of
# a text cut short (`message[:200]`), `://user:passw` with no `@` left (all digits: a port).
# Starting with the literal `://` lets the regex engine skip to it; each pattern runs only on
# text that holds its literal, so text without secrets costs a few substring searches.
_URL_PASSWORD = re.compile(
    r"(?P<keep>://[^\s/?#@:\[\]\"'<>\\]*:)"
    r"(?:[^\s/?#\"'<>\\]*@|(?=[^\s/?#@\"'<>\\]*[^\d\s/?#@\"'<>\\])[^\s/?#@\"'<>\\]*\Z)"
)
_VALUE_AT = re.compile(_VALUE)
_CREDENTIAL = re.compile(_CREDENTIAL_NAME, re.IGNORECASE)
_AUTHORIZATION = re.compile(
    r"(?P<keep>authorization[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic|token)\s+)?)[^\s\"',;]+", re.IGNORECASE
)
# A dict key whose value is a credential (the parameter names, but not the short `key`,
# `auth`, `sig`, which name other things in data).
_CREDENTIAL_KEY = re.compile(
    r"[\w.-]*?(?:passw(?:or)?d|pwd|secret|token(?!s)|api[_-]?key|access[_-]?key|private[_-]?key"
    r"|signature|credential|authorization)[\w.-]*",
    re.IGNORECASE,
)
_CONTAINERS = (dict, list, tuple)
_QUERY_PARAM = re.compile(rf"(?P<name>(?:^|(?<=[&;])){_CREDENTIAL_NAME}=)[^&;#]*", re.IGNORECASE)

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
    query = _QUERY_PARAM.sub(lambda m: m["name"] + MASK, parts.query)
    fragment = _QUERY_PARAM.sub(lambda m: m["name"] + MASK, parts.fragment)
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
        text = _URL_PASSWORD.sub(lambda m: m["keep"] + MASK + ("@" if m[0].endswith("@") else ""), text)
    if "=" in text:
        text = _mask_credentials(text)
    if "uthorization" in text or "UTHORIZATION" in text:
        text = _AUTHORIZATION.sub(lambda m: m["keep"] + MASK, text)
    for secret in _remembered:
        if secret in text:
            text = text.replace(secret, MASK)
    return original if text == original else text


def _mask_credentials(text: str) -> str:
    """Mask the value after each `name=` whose name says credential. Found from each `=`
    backwards (a regex for `name=` would try every position of the text: 20 times slower)."""
    pieces: list[str] = []
    done = 0
    at = text.find("=")
    while at != -1:
        start = at
        while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_.-"):
            start -= 1
        value = _VALUE_AT.match(text, at + 1) if start < at else None
        if value is not None and _CREDENTIAL.fullmatch(text, start, at):
            pieces += (text[done : at + 1], MASK)
            done = value.end()
        at = text.find("=", max(at + 1, done))
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
        or "passw" in low
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
    is not remembered whole: its password is (as written and percent-decoded). Values shorter
    than `MIN_REMEMBERED` are not, as they would mask ordinary words; a password that is a
    common word is masked wherever that word appears (noise, never a leak)."""
    if not secret:
        return
    values = {secret}
    if "://" in secret:
        try:
            parts = urlsplit(secret)
            user, password = parts.username, parts.password
        except ValueError:
            user = password = None
        # A password that is the user name (postgres:postgres) is shown with the user anyway;
        # remembered, it would mask that word everywhere.
        values = {password, unquote(password)} - {user} if password else set()
    values = {v for v in values if len(v) >= MIN_REMEMBERED}
    global _remembered, _remembered_forms
    with _lock:
        if values <= set(_remembered):
            return
        _remembered = tuple(sorted(values | set(_remembered), key=len, reverse=True))
        forms = {repr(v)[1:-1] for v in _remembered} | {json.dumps(v)[1:-1] for v in _remembered}
        _remembered_forms = tuple(forms)


# -- Python logging and uncaught exceptions ---------------------------------------------------

_installed = False


def install_log_redaction() -> None:
    """Scrub every log record this process makes, and the traceback of an uncaught exception.

    Installed by the CLI and the HTTP app (not by the library, which leaves its host's logging
    alone). A record factory, not a handler's filter: it sees each record once, before any
    handler, including those a server adds later (uvicorn's own loggers do not propagate).
    The message's arguments are scrubbed in place, so formatters that read `record.args`
    (uvicorn's access log) keep working; an exception's traceback is formatted and scrubbed
    into `exc_text`, which formatters print instead of formatting it again."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
    logging.setLogRecordFactory(_scrubbing_factory(logging.getLogRecordFactory()))
    previous = sys.excepthook

    def excepthook(kind: type[BaseException], exc: BaseException, tb: Any) -> None:
        if previous is not sys.__excepthook__:  # someone else's hook prints it their way
            previous(kind, exc, tb)
            return
        import traceback

        sys.stderr.write(scrub("".join(traceback.format_exception(kind, exc, tb))))

    sys.excepthook = excepthook


def _scrubbing_factory(make: Callable[..., logging.LogRecord]) -> Callable[..., logging.LogRecord]:
    formatter = logging.Formatter()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make(*args, **kwargs)
        try:
            scrub_record(record, formatter)
        except Exception:  # logging must never fail because of the net
            record.msg, record.args = MASK, None
        return record

    return factory


def scrub_record(record: logging.LogRecord, formatter: logging.Formatter | None = None) -> None:
    """Mask the secrets in a log record's message, arguments, traceback and stack, in place."""
    record.msg = _scrub_arg(record.msg)
    if isinstance(record.args, Mapping):
        record.args = {k: _scrub_arg(v) for k, v in record.args.items()}
    elif isinstance(record.args, tuple):
        record.args = tuple(_scrub_arg(a) for a in record.args)
    if record.exc_info and record.exc_info[0] is not None and not record.exc_text:
        record.exc_text = scrub((formatter or logging.Formatter()).formatException(record.exc_info))
    if record.stack_info:
        record.stack_info = scrub(record.stack_info)


def _scrub_arg(arg: Any) -> Any:
    if isinstance(arg, str):
        return scrub(arg)
    if arg is None or isinstance(arg, int | float):
        return arg  # `%d` and `%.2f` need the number
    text = str(arg)
    masked = scrub(text)
    return arg if masked is text or masked == text else masked
