"""Python logging and uncaught exceptions scrubbed (`concerto.redact.scrub`), process-wide.

Installed by the CLI and the HTTP app (not by the library, which leaves its host's logging
alone). This is where the access log's `?token=` is masked: uvicorn logs the query string as
the client sent it, and the record's arguments are scrubbed like every other record's.
"""

from __future__ import annotations

import logging
import sys
import threading
import traceback
from collections.abc import Callable, Mapping
from typing import Any

from concerto.redact import MASK, scrub

_installed = False
_lock = threading.Lock()


def install_log_redaction() -> None:
    """Scrub every log record this process makes, and the traceback of an uncaught exception.

    A record factory, not a handler's filter: it sees each record once, before any handler,
    including those a server adds later (uvicorn's own loggers do not propagate). The
    message's arguments are scrubbed in place, so formatters that read `record.args`
    (uvicorn's access log) keep working; an exception's traceback is formatted and scrubbed
    into `exc_text`, which formatters print instead of formatting it again. Twice is once."""
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
