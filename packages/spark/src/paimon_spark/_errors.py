"""Paimon errors raised inside Spark, re-raised on the driver with the Paimon message first.

The data source, its tasks and the procedure UDTFs run in Python workers. A :class:`PaimonError` raised
there reaches the caller as Spark's exception (``AnalysisException``, ``PythonException``, a
``Py4JJavaError``...) whose text is Spark's prefix, the worker's traceback and, last, the Paimon message.
:func:`paimon_errors` finds that message and raises a :class:`RemotePaimonError` instead: ``str()`` is the
Paimon message, the exception is also an instance of the Paimon class raised in the worker (``except
TableNotFoundError`` works), and Spark's exception is its ``__cause__``.

paimon_spark's own functions do this already; Spark's DataFrame API (``spark.read.format("paimon")``, an
action such as ``collect()``) does it inside ``with paimon_spark.paimon_errors():``. Left uncaught, such an
exception is printed message-first by the hook :func:`paimon_spark.register` installs
(:func:`install_excepthook`): the Paimon error once, then the caller's own frames, not Spark's 40-odd lines
of two tracebacks with the message last.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import re
import sys
import traceback
from collections.abc import Iterator
from types import TracebackType

from paimon_core.errors import PaimonError

__all__ = ["RemotePaimonError", "install_excepthook", "paimon_error", "paimon_errors"]

# "paimon_core.errors.TableNotFoundError: table 'db.t' does not exist": the worker's final exception line,
# after Spark's prefix on the same line or at the start of one.
_RAISED = re.compile(r"(?:^|\s)(paimon_(?:core|spark|storage)(?:\.\w+)*)\.(\w+): ([^\n]*)", re.MULTILINE)
_SPARK_MODULES = ("pyspark.", "py4j.")
_HOOK_MARK = "__paimon_excepthook__"


class RemotePaimonError(PaimonError):
    """A Paimon error raised in a Spark Python worker, seen from the driver (see the module docstring).

    Its type also derives from the class raised in the worker when that class is importable here; that
    class's own attributes (``identifier``, ``key``...) are not carried over, only the message.

    Attributes:
        error_type: the qualified name of the class raised in the worker.
    """

    def __init__(self, message: str, error_type: str = "") -> None:
        PaimonError.__init__(self, message)
        self.error_type = error_type


@functools.cache
def _remote_class(module: str, name: str) -> type[RemotePaimonError]:
    try:
        raised = getattr(importlib.import_module(module), name, None)
    except ImportError:
        raised = None
    if not isinstance(raised, type) or not issubclass(raised, PaimonError) or raised is RemotePaimonError:
        return RemotePaimonError
    # The two __init__ differ: this one takes the message only, which is all that crossed the process.
    namespace = {
        "__init__": RemotePaimonError.__init__,
        "__module__": __name__,
        "__doc__": RemotePaimonError.__doc__,
    }
    return type(f"Remote{name}", (RemotePaimonError, raised), namespace)


def paimon_error(spark_error: BaseException) -> RemotePaimonError | None:
    """The Paimon error carried by an exception of Spark's, or None when it carries none."""
    if isinstance(spark_error, PaimonError) or not type(spark_error).__module__.startswith(_SPARK_MODULES):
        return None
    found = _RAISED.findall(str(spark_error))
    if not found:
        return None
    module, name, message = found[-1]  # a traceback ends with the exception that was raised
    return _remote_class(module, name)(message.strip(), f"{module}.{name}")


@contextlib.contextmanager
def paimon_errors() -> Iterator[None]:
    """Turn Spark's exceptions that carry a Paimon error into that error (:class:`RemotePaimonError`);
    others pass unchanged. A context manager and a decorator::

        with paimon_spark.paimon_errors():
            rows = spark.read.format("paimon").option("warehouse", wh).load("db.t").collect()
    """
    try:
        yield
    except Exception as exc:
        translated = paimon_error(exc)
        if translated is None:
            raise
        raise translated from exc


def uncaught_report(error: BaseException, tb: TracebackType | None) -> str | None:
    """What the hook prints for an uncaught Spark exception carrying a Paimon error, else None: the Paimon
    error's line, where it was raised, then the frames of this process outside PySpark and Py4J."""
    translated = paimon_error(error)
    if translated is None:
        return None
    spark_line = str(error).split("Traceback (most recent call last)", 1)[0].strip().splitlines()
    spark_says = f": {spark_line[0].rstrip(':')}" if spark_line else ""
    # The caller's frames up to its call into PySpark; after that come Spark's and, spliced in by PySpark,
    # the worker's (the message already says what the worker raised).
    frames = []
    for frame in traceback.extract_tb(tb):
        if any(f"{sep}{m.rstrip('.')}{sep}" in frame.filename for m in _SPARK_MODULES for sep in "/\\"):
            break
        frames.append(frame)
    lines = [
        f"{translated.error_type}: {translated}",
        f"  raised in a Spark Python worker; Spark reported it as {type(error).__name__}{spark_says}",
        "  (catch it as the Paimon class inside paimon_spark.paimon_errors(); Spark's error is its __cause__)",
    ]
    if frames:
        lines.append("Called from (most recent call last):")
        lines.extend(line.rstrip("\n") for line in traceback.format_list(frames))
    return "\n".join(lines) + "\n"


def install_excepthook() -> None:
    """Print uncaught Spark exceptions that carry a Paimon error message-first (:func:`uncaught_report`);
    every other exception goes to the hook that was there. Once per process."""
    previous = sys.excepthook
    if getattr(previous, _HOOK_MARK, False):
        return

    def paimon_excepthook(kind: type[BaseException], error: BaseException, tb: TracebackType | None) -> None:
        report = uncaught_report(error, tb)
        if report is None:
            previous(kind, error, tb)
        else:
            sys.stderr.write(report)

    setattr(paimon_excepthook, _HOOK_MARK, True)
    sys.excepthook = paimon_excepthook
