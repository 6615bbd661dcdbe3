"""The one rule that keeps credentials out of everything Paimon shows: reprs of options, the ``$options``
and ``$schemas`` system tables, ``paimon-py info``, Spark's ``DESCRIBE`` and ``SHOW CREATE TABLE``, error
messages and logs. Core and ``paimon-storage`` (its backends, the jdbc commit lock) use it alike.

What is a credential:

- the value of an option whose key names one (:func:`is_secret_key`: ``jdbc.password``, ``s3.secret-key``,
  ``azure.sas-token``, ``azure.connection-string``, ``gcs.token``, ``fs.azure.account.key.<host>``...);
- in any text: the password of a URI's user information (``postgresql://user:secret@host``), credential
  fields of URLs and connection strings (``password=``, ``sig=``, ``AccountKey=``, ``X-Amz-Signature=``...),
  and the secret members of credentials JSON (``"private_key": "..."``);
- in messages, also the values of the secret options in use and of the SDKs' credential environment
  variables, wherever they are repeated.

Each becomes ``***``. Redaction is for display only: the options themselves keep their values.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MASK",
    "RedactedCause",
    "RedactingFilter",
    "Redactor",
    "get_logger",
    "is_secret_key",
    "redact",
    "redacted_option",
    "redacted_options",
    "redacted_repr",
]

MASK = "***"

# Option keys whose values are credentials. ``-key`` alone is no credential (``bucket-key`` names columns);
# ``.key`` is (``s3.key``, ``fs.azure.account.key.<host>``).
_SECRET_KEY = re.compile(
    r"secret|passw|token|credential|access[-._]?key|account[-._]?key|\bsas\b|sas[-._]|signature|authori[sz]ation"
    r"|connection[-._]?string|private[-._]?key|api[-._]?key|(^|\.)key($|\.)",
    re.IGNORECASE,
)
_SECRET_ENV = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AZURE_STORAGE_KEY",
    "AZURE_STORAGE_ACCOUNT_KEY",
    "AZURE_STORAGE_CONNECTION_STRING",
    "AZURE_STORAGE_SAS_TOKEN",
    "AZURE_CLIENT_SECRET",
    "PGPASSWORD",
)
# Credentials inside texts the SDKs build: signed URLs, connection strings (libpq's quote values with
# spaces: password = 'p w'), request headers.
_SECRET_FIELD = re.compile(
    r"((?:AccountKey|SharedAccessSignature|sig|X-Amz-Signature|X-Amz-Credential|X-Amz-Security-Token"
    r"|Signature|AWSAccessKeyId|Credential|password|passwd|pwd)\s*=\s*)('[^']*'|[^&;,\s'\"]+)",
    re.IGNORECASE,
)
# The secret members of credentials JSON (a service account's key file given inline).
_SECRET_JSON = re.compile(
    r"(\"(?:private_key|private_key_id|client_secret|refresh_token|access_token|password|secret)\"\s*:\s*)"
    r"\"(?:[^\"\\]|\\.)*\"",
    re.IGNORECASE,
)
# The password of a URI's user information: postgresql://user:secret@host/db. Up to the first "@": a password
# written unencoded may hold "/" or "?" (not a port: http://host:9000/x@y holds none).
_URI_PASSWORD = re.compile(r"(://[^:/@\s'\"]*:)(?!\d+(?:[/?#\s'\"]|$))[^\s'\"@]*@")
_MIN_SECRET_LENGTH = 6  # shorter values ("anon", "true") are settings, and replacing them garbles messages


def is_secret_key(key: str) -> bool:
    """Whether the option ``key`` holds a credential (its whole value is masked)."""
    return _SECRET_KEY.search(key) is not None


def redacted_options(options: Mapping[str, str]) -> dict[str, str]:
    """``options`` for display: secret options' values are ``***``, and the others lose credentials they
    embed (a URI's ``user:secret@``, ``password=``...)."""
    return {key: redacted_option(key, str(value)) for key, value in options.items()}


def redacted_option(key: str, value: str) -> str:
    """One option's value for display (see :func:`redacted_options`)."""
    if is_secret_key(key):
        return MASK if value else value
    return redact(value)


def redacted_repr(obj: Any, option_fields: Collection[str]) -> str:
    """The repr of dataclass ``obj`` with its option mappings (the fields named) redacted."""
    shown = []
    for f in dataclasses.fields(obj):
        if not f.repr:
            continue
        value = getattr(obj, f.name)
        if f.name in option_fields and isinstance(value, Mapping):
            value = redacted_options(value)
        shown.append(f"{f.name}={value!r}")
    return f"{type(obj).__qualname__}({', '.join(shown)})"


@dataclass(frozen=True)
class Redactor:
    """Masks credentials in a text: the given secret values, and the shapes of credentials (see the module
    docstring). ``Redactor()`` masks the shapes only."""

    secrets: tuple[str, ...] = ()

    @classmethod
    def of(cls, options: Mapping[str, str]) -> Redactor:
        """The credentials among ``options`` (by key) and in the SDKs' environment variables."""
        found = {str(v) for k, v in options.items() if is_secret_key(k)}
        found |= {os.environ.get(name, "") for name in _SECRET_ENV}
        return cls(tuple(sorted((s for s in found if len(s) >= _MIN_SECRET_LENGTH), key=len, reverse=True)))

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, MASK)
        text = _SECRET_JSON.sub(lambda m: m.group(1) + f'"{MASK}"', text)
        text = _SECRET_FIELD.sub(lambda m: m.group(1) + MASK, text)
        return _URI_PASSWORD.sub(lambda m: m.group(1) + MASK + "@", text)

    def cause(self, error: BaseException) -> BaseException:
        """``error`` to chain as a cause, or a :class:`RedactedCause` standing in for it when its text (or
        that of an error it chains) held credentials."""
        chain: list[BaseException] = []
        link: BaseException | None = error
        while link is not None and link not in chain:
            chain.append(link)
            link = link.__cause__ or link.__context__
        if all(self(str(link)) == str(link) for link in chain):
            return error
        name = f"{type(error).__module__}.{type(error).__qualname__}"
        return RedactedCause(f"{name}: {self(str(error))}").with_traceback(error.__traceback__)


class RedactedCause(Exception):
    """Stands in for a failure whose text held credentials: its type name and redacted text, and its
    traceback."""


redact = Redactor()
"""Masks the shapes of credentials in a text (no known secret values)."""


class RedactingFilter(logging.Filter):
    """Masks the shapes of credentials in a log record's message (a table path inside a warehouse URI with
    ``user:secret@``, a connection string). Handlers see the masked text only."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        shown = redact(message)
        if shown != message:
            record.msg, record.args = shown, None
        return True


_REDACTING_FILTER = RedactingFilter()


def get_logger(name: str) -> logging.Logger:
    """``logging.getLogger(name)`` with credentials masked in its records: every module of the Paimon
    packages logs through one. (A filter applies to the records of its own logger only, not to those of
    child loggers, hence one per module rather than one on the package's logger.)"""
    logger = logging.getLogger(name)
    if _REDACTING_FILTER not in logger.filters:
        logger.addFilter(_REDACTING_FILTER)
    return logger
