"""The one error hierarchy of the project.

Every error raised on purpose derives from :class:`PaimonError`. Errors that callers may expect as builtins
also derive from them (a bad option is a ``ValueError``, a missing table is a ``LookupError``).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence


class PaimonError(Exception):
    """Root of all errors raised by the Paimon packages."""


def error_line(error: BaseException) -> str:
    """An error's message on one line, as command lines print it."""
    return " ".join(line.strip() for line in str(error).splitlines() if line.strip()) or type(error).__name__


class PaimonWarning(UserWarning):
    """Root of all warnings issued by the Paimon packages."""


# --- configuration and schema -------------------------------------------------------------------------------


class ConfigError(PaimonError, ValueError):
    """An option is unknown, malformed or not allowed here."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class UnsupportedTableFeatureError(PaimonError, NotImplementedError):
    """The table uses a feature of Java Paimon that this implementation does not implement (row tracking, data
    evolution, BLOB columns, an unknown file format...): refused when the table is opened rather than read
    wrongly. ``feature`` names it; ``key`` is the option that turns it on, when one does."""

    def __init__(self, identifier: str, feature: str, key: str | None = None, detail: str = "") -> None:
        where = f" ({detail})" if detail else ""
        super().__init__(
            f"table {identifier} uses {feature}{where}, which paimon-core does not implement: it cannot "
            "read or write this table"
        )
        self.identifier = identifier
        self.feature = feature
        self.key = key


class SchemaError(PaimonError, ValueError):
    """A schema is invalid, or data does not fit the table's schema."""


class MergeError(PaimonError, ValueError):
    """Records cannot be merged by the table's merge engine (e.g. a retraction it does not accept)."""


class UnsupportedTypeError(SchemaError, TypeError):
    """A data type has no Paimon or Arrow equivalent."""


class MissingDependencyError(PaimonError, ImportError):
    """An optional library a call needs is not installed; the message says what to install."""


# --- catalog ----------------------------------------------------------------------------------------------


class CatalogError(PaimonError):
    """A catalog operation failed."""


class CatalogUnavailableError(CatalogError):
    """The catalog's metadata database (``metastore = jdbc``) could not be reached or failed; the operation
    changed nothing in it (its transaction was rolled back). ``uri`` is the database's URI, credentials
    masked; the driver's error, masked, is the cause."""

    def __init__(self, message: str, uri: str) -> None:
        super().__init__(message)
        self.uri = uri


def _did_you_mean(name: str, candidates: Sequence[str]) -> str:
    """``; did you mean 'x'?`` for the candidate nearest ``name``, if any is near."""
    close = difflib.get_close_matches(name, candidates, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


class WarehouseNotFoundError(CatalogError, LookupError):
    """The warehouse of :meth:`~paimon_core.Catalog.open` does not exist (a new one needs ``create=True``);
    ``nearest`` is an existing sibling directory with a similar name, for a "did you mean"."""

    def __init__(self, warehouse: str, nearest: str | None = None) -> None:
        hint = f"; did you mean {nearest!r}?" if nearest else ""
        super().__init__(
            f"warehouse {warehouse!r} does not exist{hint} (Catalog.open(uri, create=True) creates a new one)"
        )
        self.warehouse = warehouse


class DatabaseNotFoundError(CatalogError, LookupError):
    def __init__(self, database: str, candidates: Sequence[str] = ()) -> None:
        super().__init__(f"database {database!r} does not exist{_did_you_mean(database, candidates)}")
        self.database = database


class DatabaseAlreadyExistsError(CatalogError, FileExistsError):
    def __init__(self, database: str) -> None:
        super().__init__(f"database {database!r} already exists")
        self.database = database


class DatabaseNotEmptyError(CatalogError):
    def __init__(self, database: str) -> None:
        super().__init__(f"database {database!r} is not empty (drop it with cascade=True)")
        self.database = database


class TableNotFoundError(CatalogError, LookupError):
    """No such table; ``candidates`` are the names near it, ``missing_database`` its database when that is
    what is missing (then the candidates are databases)."""

    def __init__(
        self,
        identifier: str,
        candidates: Sequence[str] = (),
        missing_database: str | None = None,
        *,
        hint: str = "",
    ) -> None:
        if missing_database is None:
            hint = _did_you_mean(identifier, candidates) + hint
        else:
            hint = f": no database {missing_database!r}{_did_you_mean(missing_database, candidates)}{hint}"
        super().__init__(f"table {identifier!r} does not exist{hint}")
        self.identifier = identifier


class TableAlreadyExistsError(CatalogError, FileExistsError):
    def __init__(self, identifier: str) -> None:
        super().__init__(f"table {identifier!r} already exists")
        self.identifier = identifier


# --- table contents ---------------------------------------------------------------------------------------


class ReadOnlyTableError(PaimonError, TypeError):
    """A write to a table that cannot be written (a system table such as ``t$snapshots``)."""


class CorruptMetadataError(PaimonError):
    """A metadata file (snapshot, schema, manifest) cannot be parsed or is missing."""

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class CorruptDeletionVectorError(CorruptMetadataError):
    """A deletion vector cannot be decoded: wrong magic number, checksum mismatch, truncated or malformed
    bitmap, or a size that disagrees with the index manifest's range.

    Attributes:
        path: the deletion-vector index file, when known.
        data_file: the data file the deletion vector belongs to, when known.
    """

    def __init__(self, message: str, path: str | None = None, data_file: str | None = None) -> None:
        super().__init__(message, path)
        self.data_file = data_file


class SnapshotNotFoundError(PaimonError, LookupError):
    def __init__(self, snapshot_id: int | None, message: str | None = None) -> None:
        super().__init__(message or f"snapshot {snapshot_id} does not exist")
        self.snapshot_id = snapshot_id


class SnapshotExpiredError(SnapshotNotFoundError):
    """A snapshot, or a file only it used, was removed by snapshot expiration (or a rollback) under a reader
    or writer. Writers retry on a fresh base; readers re-plan from the latest snapshot.

    Attributes:
        snapshot_id: the snapshot that is gone.
        earliest_id: the earliest snapshot when the error was raised, if any.
        retention: how the table keeps snapshots (``snapshot.num-retained.min/max``, ``snapshot.time-retained``).
    """

    def __init__(
        self, snapshot_id: int | None, earliest_id: int | None = None, retention: str = "", detail: str = ""
    ) -> None:
        message = f"snapshot {snapshot_id} has expired"
        if earliest_id is not None:
            message += f" (the earliest snapshot is now {earliest_id})"
        if retention:
            message += f"; the table retains {retention}"
        if detail:
            message += f": {detail}"
        super().__init__(snapshot_id, message)
        self.earliest_id = earliest_id
        self.retention = retention


class DataFileError(PaimonError, OSError):
    """A data file cannot be read or written (missing, truncated, not Parquet, a path the store refuses).

    Attributes:
        path: the file's path.
    """

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class TagNotFoundError(PaimonError, LookupError):
    def __init__(self, name: str, message: str | None = None) -> None:
        super().__init__(message or f"tag {name!r} does not exist")
        self.name = name


class TagAlreadyExistsError(PaimonError, FileExistsError):
    def __init__(self, name: str) -> None:
        super().__init__(f"tag {name!r} already exists")
        self.name = name


class BranchNotFoundError(PaimonError, LookupError):
    """No branch of this name (``branch/branch-<name>`` is missing)."""

    def __init__(self, name: str, existing: list[str] | None = None) -> None:
        known = f"; the table has {', '.join(existing)}" if existing else "; the table has no branch"
        super().__init__(f"branch {name!r} does not exist{known if existing is not None else ''}")
        self.name = name


class BranchAlreadyExistsError(PaimonError, FileExistsError):
    def __init__(self, name: str) -> None:
        super().__init__(f"branch {name!r} already exists")
        self.name = name


# --- storage ----------------------------------------------------------------------------------------------


class StorageError(PaimonError, OSError):
    """The storage layer failed. A backend's own failure arrives as this or a subclass matching the builtin
    it raised (:class:`StorageFileNotFoundError` is a ``FileNotFoundError``...), its message naming the call,
    the path and the cause, with no credentials; the cause, credentials removed too, is chained.

    Attributes:
        path: the path of the failed call, when known.
    """

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class StorageFileNotFoundError(StorageError, FileNotFoundError):
    """Nothing exists at the path."""


class StorageFileExistsError(StorageError, FileExistsError):
    """The object exists (from ``write_if_absent``: nothing was written)."""


class StoragePermissionError(StorageError, PermissionError):
    """The store refused access (credentials, permissions)."""


class StorageIsADirectoryError(StorageError, IsADirectoryError):
    """The path is a directory where an object was expected."""


class StorageNotADirectoryError(StorageError, NotADirectoryError):
    """The path, or a parent, is an object where a directory was expected."""


class StorageTimeoutError(StorageError, TimeoutError):
    """The store did not answer in time."""


class StorageConnectionError(StorageError, ConnectionError):
    """The store could not be reached or dropped the connection."""


class StorageBackendNotFound(StorageError):
    """No backend is registered for a URI scheme."""

    def __init__(self, scheme: str, known: Sequence[str]) -> None:
        message = f"no storage backend for scheme {scheme!r}; registered schemes: {', '.join(sorted(known)) or 'none'}"
        if scheme in PAIMON_STORAGE_SCHEMES:
            message += f" ({scheme}:// paths need the paimon-storage package: pip install paimon-storage)"
        super().__init__(message)
        self.scheme = scheme


#: The URI schemes the paimon-storage package's backends serve (S3, GCS, Azure).
PAIMON_STORAGE_SCHEMES = frozenset({"s3", "s3a", "gs", "gcs", "abfs", "abfss", "az"})


class StorageBackendUnavailable(StorageError):
    """A backend is registered but its dependencies are not installed."""

    def __init__(self, name: str, install_hint: str) -> None:
        super().__init__(f"storage backend {name!r} is not available: {install_hint}")
        self.name = name
        self.install_hint = install_hint


# --- commit -----------------------------------------------------------------------------------------------


class CommitError(PaimonError):
    """A commit did not land."""


class CommitConflictError(CommitError):
    """Another commit removed files this commit depends on (overwrite or compaction raced us).

    Attributes:
        winning_snapshot_id: the snapshot that made this commit impossible, when known.
        winning_commit_user: that snapshot's commit user.
        conflicting_files: names of the files in conflict.
    """

    def __init__(
        self,
        message: str,
        *,
        winning_snapshot_id: int | None = None,
        winning_commit_user: str | None = None,
        conflicting_files: Sequence[str] = (),
    ) -> None:
        details = []
        if winning_snapshot_id is not None:
            details.append(f"winning snapshot {winning_snapshot_id} by commit user {winning_commit_user!r}")
        if conflicting_files:
            shown = ", ".join(list(conflicting_files)[:10])
            more = len(conflicting_files) - 10
            details.append(f"files in conflict: {shown}" + (f" (+{more} more)" if more > 0 else ""))
        super().__init__(message + ("; " + "; ".join(details) if details else ""))
        self.winning_snapshot_id = winning_snapshot_id
        self.winning_commit_user = winning_commit_user
        self.conflicting_files = tuple(conflicting_files)


class CommitIdentifierError(CommitError, ValueError):
    """A commit user committed an identifier that is not newer than what it committed already, with other
    data than the commit of that identifier (exactly-once replays of the same commit are recognised instead).

    Attributes:
        commit_user: the commit user.
        identifier: the identifier given.
        last_identifier: the newest identifier this user committed.
    """

    def __init__(self, message: str, commit_user: str, identifier: int, last_identifier: int | None) -> None:
        super().__init__(message)
        self.commit_user = commit_user
        self.identifier = identifier
        self.last_identifier = last_identifier


class CommitFilesError(CommitError):
    """The files of a commit cannot be committed: already live in the table (the same messages committed
    twice) or gone from storage (deleted by an abort or by orphan removal). Nothing was committed.

    Attributes:
        files: the names of the offending files.
    """

    def __init__(self, message: str, files: Sequence[str] = ()) -> None:
        shown = ", ".join(list(files)[:10])
        more = len(files) - 10
        super().__init__(message + (f": {shown}" + (f" (+{more} more)" if more > 0 else "") if files else ""))
        self.files = tuple(files)


class CommitRetriesExhaustedError(CommitError):
    """Every attempt lost the race for the next snapshot id (``commit.max-retries`` / ``commit.timeout``)."""


class CommitStateUnknownError(CommitError):
    """The store may or may not hold the snapshot (e.g. a timeout after the request was sent).

    Never retried blindly: the committer looks for its (commit user, identifier) in newer snapshots.
    """


class CommitHistoryExpiredError(CommitStateUnknownError):
    """Whether a commit landed can no longer be told, by retrying or otherwise: the snapshots that would show
    it expired, and its files cannot show it either (compacted away and deleted since, or it adds none).

    A job that knows the commit never landed commits it again without an identifier; one that cannot know
    checks the table's content.
    """


class LockAcquisitionError(CommitError):
    """The commit lock was not acquired, so nothing was published: the commit's files are deleted, and the
    commit may simply be run again. Not an unknown outcome.

    Attributes:
        key: the lock's name (the table's path).
    """

    def __init__(self, message: str, key: str) -> None:
        super().__init__(message)
        self.key = key


class LockAcquireTimeoutError(LockAcquisitionError, TimeoutError):
    """Another writer held the commit lock for longer than ``lock-acquire-timeout``."""


class LockUnavailableError(LockAcquisitionError, ConnectionError):
    """The commit lock's service (the ``lock.type = jdbc`` database...) could not be reached or failed before
    the lock was held; the service's error is chained as the cause."""


class AtomicCommitUnsupportedError(CommitError):
    """The storage backend cannot create a file atomically and exclusively, and no lock is configured."""
