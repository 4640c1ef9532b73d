"""`concerto.redact`: what is masked, what is left alone, and the logging net."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap

import pytest

from concerto.redact import (
    MASK,
    is_credential_name,
    mask_url,
    remember,
    scrub,
    scrub_data,
    scrub_record,
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
        # A text cut short inside the password (`message[:200]`) hides what is left of it.
        (f"failed: http://user:{PASSWORD[:6]}", "failed: http://user:***"),
        ("see http://127.0.0.1:9090", "see http://127.0.0.1:9090"),  # a port is not a password
        ("http://[::1]:8080", "http://[::1]:8080"),
        ('rate(node_cpu_seconds_total{mode="idle"}[5m])', 'rate(node_cpu_seconds_total{mode="idle"}[5m])'),
        ("SELECT a FROM t WHERE key = 'x' AND n=3", "SELECT a FROM t WHERE key = 'x' AND n=3"),
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
    assert scrub('unexpected spaces found in "an odd password"') == f'unexpected spaces found in "{MASK}"'
    assert scrub("key sk-remembered-0123456789 refused") == f"key {MASK} refused"
    assert scrub("a short word") == "a short word"
    assert scrub_data({"e": ["sk-remembered-0123456789"]}) == {"e": [MASK]}


def test_credential_names() -> None:
    for name in ("API_KEY", "client_secret", "GITHUB_TOKEN", "password", "db-passwd", "Authorization"):
        assert is_credential_name(name), name
    for name in ("PATH", "HOME", "max_tokens", "key_findings", "monkey"):
        assert not is_credential_name(name), name


def test_a_log_record_is_scrubbed_in_place_and_still_formats() -> None:
    try:
        raise ConnectionError(f"cannot connect to http://u:{PASSWORD}@h")
    except ConnectionError:
        record = logging.LogRecord(
            "x", logging.WARNING, __file__, 1, "%s refused %r after %d tries (%.1f s): %s",
            (f"http://u:{PASSWORD}@h", f"token={PASSWORD}", 3, 1.5, ValueError(f"http://u:{PASSWORD}@h")),
            sys.exc_info(),
        )  # fmt: skip
    scrub_record(record)
    formatted = logging.Formatter().format(record)
    assert PASSWORD not in formatted
    assert "http://u:***@h refused 'token=***' after 3 tries (1.5 s): http://u:***@h" in formatted
    assert "ConnectionError: cannot connect to http://u:***@h" in formatted


def test_installed_redaction_covers_every_logger_and_uncaught_exceptions() -> None:
    """In a process of its own: the record factory and the excepthook are process-wide."""
    code = textwrap.dedent(f"""
        import logging, sys
        from concerto.redact import install_log_redaction
        install_log_redaction()
        install_log_redaction()  # twice is once
        logging.basicConfig(level=logging.INFO, stream=sys.stderr)
        quiet = logging.getLogger("uvicorn.access")
        quiet.propagate = False
        handler = logging.StreamHandler(sys.stderr)
        quiet.addHandler(handler)
        quiet.info('%s - "%s %s HTTP/%s" %d', "127.0.0.1", "GET", "/x?token={PASSWORD}", "1.1", 200)
        logging.getLogger("httpx").info("HTTP Request: GET http://u:{PASSWORD}@h/api")
        try:
            raise RuntimeError("boom at http://u:{PASSWORD}@h")
        except RuntimeError:
            logging.getLogger("x").exception("failed")
        raise ValueError("uncaught http://u:{PASSWORD}@h")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert PASSWORD not in done.stderr + done.stdout
    assert "/x?token=***" in done.stderr
    assert "HTTP Request: GET http://u:***@h/api" in done.stderr
    assert "RuntimeError: boom at http://u:***@h" in done.stderr
    assert "ValueError: uncaught http://u:***@h" in done.stderr
