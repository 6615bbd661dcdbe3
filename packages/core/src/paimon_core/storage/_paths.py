"""Path strings: schemes, joining, parents and names, for local paths and URIs alike.

Paths are plain strings, taken literally: no percent-decoding (Paimon escapes partition values with ``%``,
e.g. ``dt=2024%3A01``, and Java's ``Path`` keeps them literal too), no ``.``/``..`` resolution (object keys may
contain them). Joining keeps the scheme and authority, and never leaves ``//`` inside the path part.
"""

from __future__ import annotations

import os
import re

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")
_SLASHES = re.compile(r"/{2,}")


def uri_scheme(uri: str) -> str:
    """The lower-cased scheme of ``uri``; ``"file"`` for plain paths and Windows drive letters (``C:\\x``)."""
    match = _SCHEME.match(uri)
    if match is None or len(match.group(1)) == 1:
        return "file"
    return match.group(1).lower()


def _split(uri: str) -> tuple[str, str]:
    """Split into a prefix kept verbatim (``""``, ``"C:"``, ``"file:"``, ``"s3://bucket"``) and the path part."""
    match = _SCHEME.match(uri)
    if match is None:
        return "", uri
    end = match.end()
    if len(match.group(1)) == 1:  # a Windows drive letter; its separators may be backslashes
        return uri[:end], uri[end:].replace("\\", "/")
    if uri.startswith("//", end):
        slash = uri.find("/", end + 2)
        if slash == -1:
            return uri, ""
        return uri[:slash], uri[slash:]
    return uri[:end], uri[end:]


def uri_authority(uri: str) -> str:
    """The authority of ``uri`` (``"bucket"`` for ``s3://bucket/k``); ``""`` for plain paths."""
    prefix, _ = _split(uri)
    _, sep, authority = prefix.partition("://")
    return authority if sep else ""


def _has_authority(prefix: str) -> bool:
    return "://" in prefix and not prefix.endswith("://")


def _clean(path: str) -> str:
    """Collapse repeated slashes and drop a trailing one (but keep a lone root ``/``)."""
    path = _SLASHES.sub("/", path)
    return path if path == "/" else path.rstrip("/")


def join_path(base: str, *parts: str) -> str:
    """Join path parts onto ``base``, keeping its scheme and authority.

    Parts may themselves contain ``/`` (``"snapshot/snapshot-1"``); leading, trailing and repeated slashes are
    dropped, so the result never contains ``//`` after the authority and never ends with ``/`` (except for a
    lone root).

    >>> join_path("s3://bucket/wh/", "db.db", "/t/")
    's3://bucket/wh/db.db/t'
    >>> join_path("file:///tmp", "a")
    'file:///tmp/a'
    """
    prefix, path = _split(base)
    head = _clean(path)
    rest = _clean("/".join(p.strip("/") for p in parts if p.strip("/")))
    if not rest:
        return prefix + head
    if head in ("", "/"):
        leading = "/" if head == "/" or _has_authority(prefix) else ""
        return prefix + leading + rest
    return prefix + head + "/" + rest


def parent_path(path: str) -> str:
    """The parent of ``path``, in the same form; a root (``/``, ``s3://bucket``) is its own parent.

    >>> parent_path("memory://t/snapshot/snapshot-1")
    'memory://t/snapshot'
    """
    prefix, rest = _split(path)
    rest = _clean(rest)
    if rest in ("", "/"):
        return prefix + rest
    slash = rest.rfind("/")
    if slash == -1:
        return prefix
    if slash == 0:
        return prefix if _has_authority(prefix) else prefix + "/"
    return prefix + rest[:slash]


def path_name(path: str) -> str:
    """The last component of ``path`` (``""`` for a root).

    >>> path_name("s3://bucket/t/snapshot/LATEST")
    'LATEST'
    """
    _, rest = _split(path)
    return _clean(rest).rsplit("/", 1)[-1]


def shown_path(path: str) -> str:
    """``path`` as error messages show it: a very long one (a partition value too long for a file name) by
    its two ends."""
    return path if len(path) <= 300 else f"{path[:150]}...{path[-100:]}"


def local_path(uri: str) -> str:
    """The operating-system path for a ``file`` URI or a plain path.

    ``file:///tmp/x``, ``file://localhost/tmp/x`` and ``file:/tmp/x`` (Hadoop's form) all give ``/tmp/x``.

    Raises:
        ValueError: ``uri`` has another scheme, or a ``file`` URI names a remote host.
    """
    if uri_scheme(uri) != "file":
        raise ValueError(f"not a local path: {uri!r}")
    match = _SCHEME.match(uri)
    if match is None or len(match.group(1)) == 1:
        return uri
    rest = uri[match.end() :]
    if rest.startswith("//"):
        slash = rest.find("/", 2)
        host, rest = (rest[2:], "/") if slash == -1 else (rest[2:slash], rest[slash:])
        if host not in ("", "localhost"):
            raise ValueError(f"file URI names a remote host {host!r}: {uri!r}")
    if os.name == "nt" and re.match(r"^/[A-Za-z]:", rest):
        rest = rest[1:]  # file:///C:/x
    return rest
