"""`concerto.redact`: what is masked, what is left alone, and what hostile text costs."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from concerto.redact import (
    MASK,
    is_credential_name,
    mask_url,
    remember,
    remembered_scope,
    scrub,
    scrub_data,
    scrub_serialized,
)

PASSWORD = "s3cret-PASSWORD"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"http://user:{PASSWORD}@127.0.0.1:9090", "http://user:***@127.0.0.1:9090"),
        (f"postgresql://user:{PASSWORD}@db/x?sslmode=require", "postgresql://user:***@db/x?sslmode=require"),
        (f"redis://:{PASSWORD}@h:6379/0", "redis://:***@h:6379/0"),
        ("http://u:p@ss@host/x", "http://u:***@host/x"),  # an unencoded `@` in the password
        (f"http://u:{PASSWORD.replace('-', ' ')}@h/", "http://u:***@h/"),  # a space (psycopg's case)
        (
            "https://h/v1?api_key=abc&model=x&Token=t&X-Amz-Signature=ff#access_token=q",
            "https://h/v1?api_key=***&model=x&Token=***&X-Amz-Signature=***#access_token=***",
        ),
        ("https://maps.example/api?key=AIza123&q=x", "https://maps.example/api?key=***&q=x"),
        ("https://h/x?sig=abc&auth=def", "https://h/x?sig=***&auth=***"),
        # A password with `/`, `#` or `?` (not percent-encoded: libpq and urlsplit then read it
        # as a host and a path, a fragment or a query; the message still shows the URL).
        ("postgresql://bob:Zx9/Kq+4Lm@db/x", "postgresql://bob:***@db/x"),
        ("http://bob:pa#ss99word@h", "http://bob:***@h"),
        ("http://bob:pa?ss/w@rd@h:80/x?api_key=1", "http://bob:***@h:80/x?api_key=***"),
        # Nothing to mask: the same text.
        ("https://api.open-meteo.com", "https://api.open-meteo.com"),
        ("http://user@host:9090/x?", "http://user@host:9090/x?"),
        ("http://h/?max_tokens=5&monkey=1", "http://h/?max_tokens=5&monkey=1"),
        ("127.0.0.1:6379", "127.0.0.1:6379"),
    ],
)
def test_mask_url(url: str, shown: str) -> None:
    assert mask_url(url) == shown


def test_mask_url_of_an_unparsable_url_still_masks_the_password() -> None:
    assert mask_url(f"postgresql://user:{PASSWORD}@[bad/db") == "postgresql://user:***@[bad/db"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (
            f"Prometheus at http://user:{PASSWORD}@127.0.0.1:9 cannot be reached.",
            "Prometheus at http://user:***@127.0.0.1:9 cannot be reached.",
        ),
        (f"host=127.0.0.1 password={PASSWORD} port=x", "host=127.0.0.1 password=*** port=x"),
        ("user=x password='a b c' dbname=y", "user=x password=*** dbname=y"),
        ("{'Authorization': 'Bearer abcdef123'}", "{'Authorization': 'Bearer ***'}"),
        ("curl -H 'authorization: token ghp_123'", "curl -H 'authorization: token ***'"),
        ("--api-key=sk-123 --verbose", "--api-key=*** --verbose"),
        ("PGPASS=x pass=hunter22 db_pass='a b'", "PGPASS=x pass=*** db_pass=***"),
        # `name: value` (headers, YAML) and quoted keys (JSON or a dict's repr inside a text).
        ("x-api-key: abc123\npassword:  hunter22", "x-api-key: ***\npassword:  ***"),
        (
            "password: swordfish  # the old one\ntoken: sk-123 is invalid",
            "password: ***  # the old one\ntoken: *** is invalid",
        ),
        ('sent {"api_key": "sk-123", "n": 1}', 'sent {"api_key": ***, "n": 1}'),
        ("{'client_secret': 'abc', 'key': 'x'}", "{'client_secret': ***, 'key': 'x'}"),
        ('{\\"access_token\\": \\"abc\\"}', '{\\"access_token\\": ***}'),  # JSON inside JSON
        # A password with `/`, `#` or `?` in a URL quoted by an error message.
        (
            'invalid port "Zx9" in "postgresql://bob:Zx9/Kq+4Lm@db/x"; try again',
            'invalid port "Zx9" in "postgresql://bob:***@db/x"; try again',
        ),
        ("at http://bob:pa#ss99word@h.", "at http://bob:***@h."),
        ("https://x-access-token:ghp_abc@github.com/o/r", "https://x-access-token:***@github.com/o/r"),
        # The short names `key`, `auth` and `sig` are credentials in a URL's query only.
        ("GET /maps?q=x&key=AIza123 then sig=1", "GET /maps?q=x&key=*** then sig=1"),
        # A text cut short inside the password (`message[:200]`) hides what is left of it.
        (f"failed: http://user:{PASSWORD[:6]}", "failed: http://user:***"),
        ("see http://127.0.0.1:9090", "see http://127.0.0.1:9090"),  # a port is not a password
        ("http://[::1]:8080", "http://[::1]:8080"),
        ('rate(node_cpu_seconds_total{mode="idle"}[5m])', 'rate(node_cpu_seconds_total{mode="idle"}[5m])'),
        ("SELECT a FROM t WHERE key = 'x' AND n=3", "SELECT a FROM t WHERE key = 'x' AND n=3"),
        ("WHERE key='x' OR auth=basic OR sig=3", "WHERE key='x' OR auth=basic OR sig=3"),
        # A name then a sentence: words, not a credential.
        ("Check CONCERTO_GRAFANA_TOKEN: it needs permission", "Check CONCERTO_GRAFANA_TOKEN: it needs permission"),
        ("compass=north bypass=1 passes=3", "compass=north bypass=1 passes=3"),
        ("see http://h:8080/x?to=me@example.com", "see http://h:8080/x?to=me@example.com"),
        ("http://u:p@h/x?next=http://v@w", "http://u:***@h/x?next=http://v@w"),
        ("max_tokens=512, prompt_tokens=3", "max_tokens=512, prompt_tokens=3"),
        ("mail me@example.com at 10:30", "mail me@example.com at 10:30"),
    ],
)
def test_scrub(text: str, shown: str) -> None:
    assert scrub(text) == shown


def test_scrub_returns_clean_text_itself() -> None:
    text = "CPU usage averaged 12% over the last hour: 10:00 to 11:00, mode=idle"
    assert scrub(text) is text


def test_scrub_data_masks_strings_keys_and_credential_keys_without_copying_clean_data() -> None:
    clean = {"ms": 1.5, "summary": "fine", "agents": ["a", "b"], "nested": {"n": [1, 2]}}
    assert scrub_data(clean) is clean
    dirty = {
        "url": f"http://u:{PASSWORD}@h/x",
        "password": PASSWORD,
        "headers": {"Authorization": "Bearer abc"},
        "items": [ValueError(f"cannot reach http://u:{PASSWORD}@h"), 3, None],
        (f"http://u:{PASSWORD}@h", 1): "a tuple key",
    }
    out = scrub_data(dirty)
    assert PASSWORD not in repr(out)
    assert out["url"] == "http://u:***@h/x" and out["password"] == MASK
    assert out["headers"] == {"Authorization": MASK}
    assert scrub_data({"db_pass": "hunter22", "n": "x-api-key: k1"}) == {"db_pass": MASK, "n": f"x-api-key: {MASK}"}
    assert out["items"] == ["ValueError: cannot reach http://u:***@h", 3, None]


def test_scrub_serialized_keeps_json_valid() -> None:
    """Text masking could cut a JSON string at an escaped quote; a document is masked value by value."""
    document = json.dumps({"a": f'dsn password="{PASSWORD}" x', "b": f"http://u:{PASSWORD}@h", "n": 1})
    masked = scrub_serialized(document)
    assert PASSWORD not in masked
    assert json.loads(masked) == {"a": "dsn password=*** x", "b": "http://u:***@h", "n": 1}
    assert scrub_serialized('{"clean": true}') == '{"clean": true}'


def test_remembered_secrets_are_masked_without_their_url() -> None:
    """psycopg quotes a password alone: `unexpected spaces found in "..."`."""
    remember("postgresql://user:an%20odd%20password@h/db")  # settings remember their URLs' passwords
    remember("sk-remembered-0123456789")  # and their keys
    remember("short")  # too short to mask wherever it appears
    remember("postgresql://user:a raw space@h/db")
    remember("postgresql://bob:Zx9/Kq+4Lm@db/x")  # a password with `/`, `#` or `?` whole
    remember("http://bob:pa#ss99word@h")
    remember("postgres://postgres:postgres@db/x")  # the user name: not remembered
    assert scrub('unexpected spaces found in "an odd password"') == f'unexpected spaces found in "{MASK}"'
    assert scrub("key sk-remembered-0123456789 refused") == f"key {MASK} refused"
    assert scrub("a short word") == "a short word"
    assert scrub_data({"e": ["sk-remembered-0123456789"]}) == {"e": [MASK]}
    assert scrub('found in "a raw space"') == f'found in "{MASK}"'
    assert scrub("bad Zx9/Kq+4Lm and pa#ss99word") == f"bad {MASK} and {MASK}"
    assert scrub("role postgres") == "role postgres"


def test_a_remembered_scope_forgets_what_it_remembered() -> None:
    """Tests remember secrets (every `Settings(api_token=...)` does): each test forgets its own
    (the autouse fixture in tests/conftest.py), so no result depends on the tests run before."""
    with remembered_scope():
        remember("sk-outer-0123456789")
        with remembered_scope():
            remember("sk-inner-0123456789")
            assert scrub("sk-outer-0123456789 sk-inner-0123456789") == f"{MASK} {MASK}"
        assert scrub("sk-outer-0123456789 sk-inner-0123456789") == f"{MASK} sk-inner-0123456789"
        assert scrub_data(["sk-inner-0123456789"]) == ["sk-inner-0123456789"]
    assert scrub("sk-outer-0123456789") == "sk-outer-0123456789"


def test_stored_answers_keep_what_is_not_a_credential() -> None:
    """Runs' results and conversation turns are scrubbed as they are stored: an answer quoting
    SQL or data with `key`, `auth` or `sig` must read back as it was streamed."""
    answer = json.dumps({"summary": "WHERE key='x' AND sig=2", "sql": "SELECT auth=1", "rows": [{"key": "k1"}]})
    assert scrub_serialized(answer) == answer
    assert scrub("the key='x' filter") == "the key='x' filter"


def test_credential_names() -> None:
    for name in ("API_KEY", "client_secret", "GITHUB_TOKEN", "password", "db-passwd", "Authorization", "DB_PASS"):
        assert is_credential_name(name), name
    for name in ("PATH", "HOME", "max_tokens", "key_findings", "monkey", "compass", "passes"):
        assert not is_credential_name(name), name


# -- what hostile text costs: linear time -----------------------------------------------------

# Texts built to make a regex or a scan go back over what it read: each repeats a unit up to
# the size asked. Every pattern of `concerto.redact` meets at least one made for it.
HOSTILE: dict[str, str] = {
    "name=name=": "a=",
    "credential=credential=": "password=",
    "unclosed quotes": "password='",
    "unclosed double quotes": 'password="',
    "escaped quotes": 'password=\\"',
    "long names": "token_" * 40 + " ",
    "shortest words": "pwd",
    "long names with no word": "a" * 200 + "=",
    "short names": "?key=&",
    "pass names": "db_pass_",
    "name: name:": "api_key: ",
    "quoted keys": '"api_key": "',
    "separators": "=:",
    "url schemes": "://:",
    "url users": "://u:",
    "url passwords with slashes": "://u:a/",
    "url passwords without @": "http://u:p#",
    "url passwords with @": "://u:@",
    "url user names": "//a-token:x",
    "ports": "://h:1",
    "authorization": "authorization ",
    "authorization:": "authorization: bearer ",
    "authorization=": "Authorization=",
}


def _hostile(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def _cpu_s(work: Callable[[Any], object], argument: Any) -> float:
    """CPU seconds of `work(argument)` in this process: not the wall clock, which a busy machine
    stretches."""
    start = time.process_time()
    work(argument)
    return time.process_time() - start


def _within_linear_bound(size: int, taken: float) -> bool:
    """1 s of CPU per MiB, and 0.05 s for any size: generous (the slowest text measured takes
    0.1 s per MiB), and 64 KiB of `a=` took 3.3 s when matching was quadratic."""
    return taken <= 0.05 + size / 2**20


@pytest.mark.parametrize("unit", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_text_costs_linear_time(unit: str) -> None:
    """`scrub` runs on what clients send (the access log's query string) and on what agents
    return: 1 MiB of text made to defeat its patterns costs well under a second of CPU. The
    small size first: a quadratic scan fails there instead of running for minutes."""
    for size in (2**16, 2**20):
        text = _hostile(unit, size)
        for work, argument, read in (
            (scrub, text, size),
            (mask_url, "http://h/x?" + text, size),
            (scrub_data, {text: text}, 2 * size),  # the key and the value
            (remember, text, size),
        ):
            with remembered_scope():
                taken = _cpu_s(work, argument)
            message = f"{work.__name__} of {read:,} characters took {taken:.2f} s of CPU"
            assert _within_linear_bound(read, taken), message


@pytest.mark.parametrize(
    "text",
    [
        "http://h/?" + "token" * 4000,  # a query's name that never ends in `=`
        "http://u:" + "p/" * 20000 + "@h",
        "http://h/?" + "&".join(["password=x"] * 10000),  # many values to mask: linear too
    ],
)
def test_hostile_urls_cost_linear_time(text: str) -> None:
    assert _within_linear_bound(len(text), _cpu_s(mask_url, text))


def test_hostile_names_cost_linear_time() -> None:
    name = "token" * 20000 + " "  # `is_credential_name` and dict keys: a name with a space after it
    assert _within_linear_bound(len(name), _cpu_s(is_credential_name, name))
    assert _within_linear_bound(len(name), _cpu_s(scrub_data, {name: "v"}))
