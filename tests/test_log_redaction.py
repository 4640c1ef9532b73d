"""`concerto.log_redaction`: every log record and an uncaught exception's traceback scrubbed."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap

from concerto.log_redaction import scrub_record

PASSWORD = "s3cret-PASSWORD"


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
    """In a process of its own: the record factory and the excepthook are process-wide. The
    access log's `?token=` is masked here, by the log's redaction alone (the HTTP edge leaves
    the query as the client sent it)."""
    code = textwrap.dedent(f"""
        import logging, sys
        from concerto.log_redaction import install_log_redaction
        install_log_redaction()
        install_log_redaction()  # twice is once
        logging.basicConfig(level=logging.INFO, stream=sys.stderr)
        quiet = logging.getLogger("uvicorn.access")
        quiet.propagate = False
        handler = logging.StreamHandler(sys.stderr)
        quiet.addHandler(handler)
        quiet.info('%s - "%s %s HTTP/%s" %d', "127.0.0.1", "GET", "/x?a=1&token={PASSWORD}&b=2", "1.1", 200)
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
    assert "/x?a=1&token=***&b=2" in done.stderr
    assert "HTTP Request: GET http://u:***@h/api" in done.stderr
    assert "RuntimeError: boom at http://u:***@h" in done.stderr
    assert "ValueError: uncaught http://u:***@h" in done.stderr
