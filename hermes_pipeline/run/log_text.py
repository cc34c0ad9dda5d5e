"""Log lines that can always be written, whatever the input held.

A record read from a broken transcript may carry lone surrogates (a JSON
`\\udc80` escape, parsed as it is). A log line quoting it (an id, a reason)
could then not be encoded: a log file would print a "Logging error" instead
of the line, and a test runner sending captured logs between processes would
fail. So the records of this package's loggers carry their message with such
characters escaped (`\\udc80`, as Python's own stderr writes them).
"""
from __future__ import annotations

import logging

_previous_factory = logging.getLogRecordFactory()


def _record(*args, **kwargs) -> logging.LogRecord:
    record = _previous_factory(*args, **kwargs)
    if record.name.startswith("hermes_pipeline"):
        message = record.getMessage()
        try:
            message.encode("utf-8")
        except UnicodeEncodeError:
            record.msg, record.args = message.encode("utf-8", "backslashreplace").decode("utf-8"), ()
    return record


def install() -> None:
    """Once per process: the factory wraps whatever factory was there before."""
    if logging.getLogRecordFactory() is not _record:
        logging.setLogRecordFactory(_record)
