"""Snapshots (``snapshot/snapshot-<id>``): the JSON model, hints and the snapshot manager.

A snapshot is the entry point to a table version (docs/format.md#snapshots). Snapshots are published with the storage
backend's atomic ``write_if_absent``; the ``LATEST`` and ``EARLIEST`` hints are plain overwrites that may be
stale or missing, so every lookup double-checks them against the directory.
"""

from __future__ import annotations

import json
import uuid as uuid_module
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from paimon_core.errors import CorruptMetadataError, SnapshotExpiredError, SnapshotNotFoundError
from paimon_core.redaction import get_logger

if TYPE_CHECKING:
    from paimon_core.storage import StorageBackend

logger = get_logger(__name__)

__all__ = [
    "BATCH_COMMIT_IDENTIFIER",
    "CommitKind",
    "Snapshot",
    "SnapshotManager",
    "to_pretty_json",
]

#: ``commitIdentifier`` of batch commits (Java ``Long.MAX_VALUE``).
BATCH_COMMIT_IDENTIFIER = 2**63 - 1

SNAPSHOT_VERSION = 3
SNAPSHOT_PREFIX = "snapshot-"
LATEST_HINT = "LATEST"
EARLIEST_HINT = "EARLIEST"
_HINT_WRITE_ATTEMPTS = 3


def to_pretty_json(value: Any) -> str:
    """Serialize like Jackson's default pretty printer, which Java Paimon uses for its JSON metadata.

    Objects put one ``"key" : value`` per line with two-space indents; arrays stay inline (``[ 1, 2 ]``,
    objects inside arrays open on the same line); empty containers print as ``{ }`` and ``[ ]``. Non-ASCII
    text is written as is (UTF-8). Byte equality with Java is not needed, only a familiar shape.
    """
    out: list[str] = []
    _write_pretty(value, 0, out)
    return "".join(out)


def _write_pretty(value: Any, level: int, out: list[str]) -> None:
    if isinstance(value, Mapping):
        if not value:
            out.append("{ }")
            return
        out.append("{")
        for i, (key, item) in enumerate(value.items()):
            out.append("\n" if i == 0 else ",\n")
            out.append("  " * (level + 1))
            out.append(json.dumps(str(key), ensure_ascii=False))
            out.append(" : ")
            _write_pretty(item, level + 1, out)
        out.append("\n" + "  " * level + "}")
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[ ]")
            return
        # Jackson's array indenter is inline: it does not add a nesting level.
        out.append("[ ")
        for i, item in enumerate(value):
            if i:
                out.append(", ")
            _write_pretty(item, level, out)
        out.append(" ]")
    else:
        out.append(json.dumps(value, ensure_ascii=False))


class CommitKind(str, Enum):
    """What a snapshot did (docs/format.md#snapshots)."""

    APPEND = "APPEND"
    COMPACT = "COMPACT"
    OVERWRITE = "OVERWRITE"
    ANALYZE = "ANALYZE"


@dataclass(frozen=True)
class Snapshot:
    """One table version. Python names are the snake_case forms of the JSON keys in docs/format.md#snapshots."""

    id: int
    schema_id: int
    base_manifest_list: str
    delta_manifest_list: str
    commit_user: str
    commit_identifier: int
    commit_kind: CommitKind
    time_millis: int
    total_record_count: int = 0
    delta_record_count: int = 0
    base_manifest_list_size: int | None = None
    delta_manifest_list_size: int | None = None
    changelog_manifest_list: str | None = None
    changelog_manifest_list_size: int | None = None
    index_manifest: str | None = None
    writer_version: str | None = None
    changelog_record_count: int | None = None
    watermark: int | None = None
    statistics: str | None = None
    properties: dict[str, str] | None = None
    next_row_id: int | None = None
    operation: str | None = None
    uuid: str | None = field(default_factory=lambda: str(uuid_module.uuid4()))
    version: int = SNAPSHOT_VERSION

    def to_json(self) -> str:
        """The snapshot file content: Jackson-style pretty JSON, null optional keys left out."""
        items: list[tuple[str, Any]] = [
            ("version", self.version),
            ("uuid", self.uuid),
            ("id", self.id),
            ("schemaId", self.schema_id),
            ("baseManifestList", self.base_manifest_list),
            ("baseManifestListSize", self.base_manifest_list_size),
            ("deltaManifestList", self.delta_manifest_list),
            ("deltaManifestListSize", self.delta_manifest_list_size),
            ("changelogManifestList", self.changelog_manifest_list),
            ("changelogManifestListSize", self.changelog_manifest_list_size),
            ("indexManifest", self.index_manifest),
            ("commitUser", self.commit_user),
            ("writerVersion", self.writer_version),
            ("commitIdentifier", self.commit_identifier),
            ("commitKind", self.commit_kind.value),
            ("timeMillis", self.time_millis),
            ("totalRecordCount", self.total_record_count),
            ("deltaRecordCount", self.delta_record_count),
            ("changelogRecordCount", self.changelog_record_count),
            ("watermark", self.watermark),
            ("statistics", self.statistics),
            # Java writes null (left out) rather than an empty map.
            ("properties", dict(self.properties) if self.properties else None),
            ("nextRowId", self.next_row_id),
            ("operation", self.operation),
        ]
        return to_pretty_json({key: value for key, value in items if value is not None})

    @classmethod
    def from_json(cls, text: str | bytes, path: str | None = None) -> Snapshot:
        """Parse a snapshot file. Unknown keys are ignored (newer writers add some).

        Raises:
            CorruptMetadataError: the text is not JSON, or a required key is missing or has a wrong type.
        """
        where = f" {path}" if path else ""
        try:
            data = json.loads(text)
        except (ValueError, UnicodeDecodeError) as exc:
            raise CorruptMetadataError(f"snapshot file{where} is not valid JSON: {exc}", path) from None
        if not isinstance(data, dict):
            raise CorruptMetadataError(f"snapshot file{where} does not hold a JSON object", path)
        reader = JsonObjectReader(data, f"snapshot file{where}", path)
        kind_name = reader.req_str("commitKind")
        try:
            kind = CommitKind(kind_name)
        except ValueError:
            raise CorruptMetadataError(
                f"snapshot file{where} has unknown commitKind {kind_name!r}", path
            ) from None
        properties = reader.opt_str_map("properties")
        return cls(
            version=reader.opt_int("version") or 1,
            id=reader.req_int("id"),
            schema_id=reader.req_int("schemaId"),
            base_manifest_list=reader.req_str("baseManifestList"),
            delta_manifest_list=reader.req_str("deltaManifestList"),
            commit_user=reader.req_str("commitUser"),
            commit_identifier=reader.req_int("commitIdentifier"),
            commit_kind=kind,
            time_millis=reader.req_int("timeMillis"),
            # Java holds these as primitive longs, so a missing or null value reads as 0.
            total_record_count=reader.opt_int("totalRecordCount") or 0,
            delta_record_count=reader.opt_int("deltaRecordCount") or 0,
            base_manifest_list_size=reader.opt_int("baseManifestListSize"),
            delta_manifest_list_size=reader.opt_int("deltaManifestListSize"),
            changelog_manifest_list=reader.opt_str("changelogManifestList"),
            changelog_manifest_list_size=reader.opt_int("changelogManifestListSize"),
            index_manifest=reader.opt_str("indexManifest"),
            writer_version=reader.opt_str("writerVersion"),
            changelog_record_count=reader.opt_int("changelogRecordCount"),
            watermark=reader.opt_int("watermark"),
            statistics=reader.opt_str("statistics"),
            properties=properties or None,
            next_row_id=reader.opt_int("nextRowId"),
            operation=reader.opt_str("operation"),
            uuid=reader.opt_str("uuid"),
        )


class JsonObjectReader:
    """Typed access to a parsed JSON object, raising :class:`CorruptMetadataError` on bad content."""

    def __init__(self, data: dict[str, Any], what: str, path: str | None) -> None:
        self.data = data
        self.what = what
        self.path = path

    def _fail(self, key: str, problem: str) -> CorruptMetadataError:
        return CorruptMetadataError(f"{self.what}: key {key!r} {problem}", self.path)

    def req_int(self, key: str) -> int:
        value = self.opt_int(key)
        if value is None:
            raise self._fail(key, "is missing")
        return value

    def opt_int(self, key: str) -> int | None:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._fail(key, f"is not an integer: {value!r}")
        return value

    def req_str(self, key: str) -> str:
        value = self.opt_str(key)
        if value is None:
            raise self._fail(key, "is missing")
        return value

    def opt_str(self, key: str) -> str | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise self._fail(key, f"is not a string: {value!r}")
        return value

    def opt_str_list(self, key: str) -> list[str] | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self._fail(key, f"is not a list of strings: {value!r}")
        return list(value)

    def opt_str_map(self, key: str) -> dict[str, str] | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self._fail(key, f"is not an object: {value!r}")
        # Jackson writes map values as JSON strings; accept scalars written by hand and keep them as text.
        result: dict[str, str] = {}
        for k, v in value.items():
            if isinstance(v, str):
                result[k] = v
            elif isinstance(v, bool):
                result[k] = "true" if v else "false"
            elif isinstance(v, (int, float)):
                result[k] = str(v)
            else:
                raise self._fail(key, f"has a non-string value for {k!r}: {v!r}")
        return result


def _parse_hint(data: bytes) -> int | None:
    try:
        value = int(data.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        return None
    return value if value > 0 else None


class SnapshotManager:
    """Reads and publishes the snapshots of one table (or branch) directory.

    Args:
        storage: the table's storage backend.
        table_path: the table root (``<warehouse>/<db>.db/<table>``, or a branch directory).
    """

    def __init__(self, storage: StorageBackend, table_path: str) -> None:
        from paimon_core.storage import join_path

        self.storage = storage
        self.table_path = table_path
        self.snapshot_dir = join_path(table_path, "snapshot")
        self._join = join_path
        self._stale_earliest_logged: int | None = None

    # --- paths -------------------------------------------------------------------------------------------

    def snapshot_path(self, snapshot_id: int) -> str:
        return self._join(self.snapshot_dir, f"{SNAPSHOT_PREFIX}{snapshot_id}")

    def hint_path(self, name: str) -> str:
        return self._join(self.snapshot_dir, name)

    # --- ids ---------------------------------------------------------------------------------------------

    def list_ids(self) -> list[int]:
        """All snapshot ids present in the directory, ascending (no hints involved)."""
        try:
            infos = self.storage.list_dir(self.snapshot_dir)
        except FileNotFoundError:
            return []
        ids = []
        for info in infos:
            if info.is_dir or not info.name.startswith(SNAPSHOT_PREFIX):
                continue
            suffix = info.name[len(SNAPSHOT_PREFIX) :]
            if suffix.isdigit():
                ids.append(int(suffix))
        ids.sort()
        return ids

    def _read_hint(self, name: str) -> int | None:
        try:
            data = self.storage.read_bytes(self.hint_path(name))
        except FileNotFoundError:
            return None
        except OSError as exc:
            logger.debug("cannot read snapshot hint %s: %s", self.hint_path(name), exc)
            return None
        return _parse_hint(data)

    def snapshot_exists(self, snapshot_id: int) -> bool:
        return self.storage.exists(self.snapshot_path(snapshot_id))

    def latest_id(self) -> int | None:
        """The newest snapshot id, or None for a table without snapshots.

        The LATEST hint L is trusted when ``snapshot-L`` exists, ``snapshot-(L+1)`` does not (Java's rule) and
        L is not below EARLIEST; otherwise, or when the hint is missing or unreadable, the directory listing
        decides. (A hint naming a missing id, left by a hand edit or a rollback, is never the answer.)
        """
        hint = self._latest_hint_candidate()
        if hint is not None and self.snapshot_exists(hint):
            return hint
        ids = self.list_ids()
        return ids[-1] if ids else None

    def _latest_hint_candidate(self) -> int | None:
        """The LATEST hint if Java's rule and EARLIEST let it stand (its own file is not checked here)."""
        hint = self._read_hint(LATEST_HINT)
        if hint is None or self.snapshot_exists(hint + 1):
            return None
        # Below EARLIEST the hint names an expired id, whose successor is missing because it expired too (or
        # a file a stale publish left there): only the listing knows the latest then.
        earliest = self._read_hint(EARLIEST_HINT)
        return hint if earliest is None or hint >= earliest else None

    def earliest_id(self) -> int | None:
        """The oldest snapshot id, or None. EARLIEST is trusted while ``snapshot-E`` exists.

        Otherwise the listing decides, ignoring files below the hint: those are expired snapshots not yet
        deleted, or stale publishes that lost to expiration (see docs/commit-protocol.md).
        """
        hint = self._read_hint(EARLIEST_HINT)
        if hint is not None and self.snapshot_exists(hint):
            return hint
        ids = self.list_ids()
        kept = [i for i in ids if hint is None or i >= hint]
        if kept:
            return kept[0]
        return ids[0] if ids else None

    def earliest_hint(self) -> int | None:
        """The EARLIEST hint, or None when there is none or it is stale.

        Expiration moves EARLIEST only to a snapshot it keeps and never deletes the latest one, so a real
        hint has some snapshot at or above it. One above every snapshot file (a hand edit, or a rollback
        that died before this project wrote the restored snapshot first) says nothing about expiration:
        it is ignored with a warning, never taken for a race lost to an expiration, and
        ``expire_snapshots`` rewrites it.
        """
        hint = self._read_hint(EARLIEST_HINT)
        if hint is None or self.snapshot_exists(hint) or any(i >= hint for i in self.list_ids()):
            return hint
        if self._stale_earliest_logged != hint:  # once per handle and value: commits ask on every attempt
            self._stale_earliest_logged = hint
            logger.warning(
                "ignoring %s=%s: no snapshot at or above it exists (a stale hint; expire_snapshots rewrites "
                "it)", self.hint_path(EARLIEST_HINT), hint,
            )  # fmt: skip
        return None

    def earliest_hint_is_stale(self) -> bool:
        """Whether an EARLIEST hint is written that :meth:`earliest_hint` ignores (see there)."""
        return self._read_hint(EARLIEST_HINT) is not None and self.earliest_hint() is None

    # --- snapshots ---------------------------------------------------------------------------------------

    def snapshot(self, snapshot_id: int) -> Snapshot:
        """Read one snapshot.

        Raises:
            SnapshotExpiredError: the snapshot is older than the earliest one (expired).
            SnapshotNotFoundError: no such snapshot file.
            CorruptMetadataError: the file cannot be parsed.
        """
        snapshot = self.try_snapshot(snapshot_id)
        if snapshot is not None:
            return snapshot
        earliest = self.earliest_id()
        if earliest is not None and snapshot_id < earliest:
            raise SnapshotExpiredError(snapshot_id, earliest)
        raise SnapshotNotFoundError(snapshot_id)

    def try_snapshot(self, snapshot_id: int) -> Snapshot | None:
        """Like :meth:`snapshot` but None when the file does not exist."""
        path = self.snapshot_path(snapshot_id)
        try:
            data = self.storage.read_bytes(path)
        except FileNotFoundError:
            return None
        snapshot = Snapshot.from_json(data, path)
        if snapshot.id != snapshot_id:
            raise CorruptMetadataError(f"snapshot file {path} holds snapshot id {snapshot.id}", path)
        return snapshot

    def latest(self) -> Snapshot | None:
        """The newest snapshot, or None for an empty table."""
        hint = self._latest_hint_candidate()
        snapshot = self.try_snapshot(hint) if hint is not None else None
        if snapshot is not None:
            return snapshot
        # No hint, or it named a snapshot that a rollback removed (or a hand edit made up): the listing.
        for snapshot_id in reversed(self.list_ids()):
            snapshot = self.try_snapshot(snapshot_id)
            if snapshot is not None:
                return snapshot
        return None

    def earliest(self) -> Snapshot | None:
        """The oldest snapshot, or None. Retries E+1, E+2… while expiration deletes snapshots under us."""
        earliest_id = self.earliest_id()
        if earliest_id is None:
            return None
        latest_id = self.latest_id()
        candidate = earliest_id
        while latest_id is not None and candidate <= latest_id:
            snapshot = self.try_snapshot(candidate)
            if snapshot is not None:
                return snapshot
            candidate += 1
        return self.latest()

    def snapshots(self) -> Iterator[Snapshot]:
        """All snapshots, ascending by id. Snapshots expired while iterating are skipped."""
        for snapshot_id in self.list_ids():
            snapshot = self.try_snapshot(snapshot_id)
            if snapshot is not None:
                yield snapshot

    def snapshot_at_or_before_time(self, time_millis: int) -> Snapshot | None:
        """The newest snapshot with ``timeMillis <= time_millis`` (time travel), or None if all are newer.

        Binary search over the id range; commit times are assumed to grow with ids, as Java assumes.
        """
        low = self.earliest_id()
        high = self.latest_id()
        if low is None or high is None:
            return None
        found: Snapshot | None = None
        while low <= high:
            mid = (low + high) // 2
            snapshot = self.try_snapshot(mid)
            if snapshot is None:
                # Expired while we searched: everything at or below mid is gone.
                low = mid + 1
                continue
            if snapshot.time_millis <= time_millis:
                found = snapshot
                low = mid + 1
            else:
                high = mid - 1
        return found

    # --- publishing --------------------------------------------------------------------------------------

    def try_publish(self, snapshot: Snapshot) -> bool:
        """Atomically create ``snapshot-<id>``; True if this call created it, False if the id was taken.

        Any other exception leaves the outcome unknown and propagates for the committer to classify. The
        LATEST hint is not touched: the committer advances it once it has verified that the new snapshot
        follows the chain (:meth:`advance_latest_hint`).
        """
        data = snapshot.to_json().encode("utf-8")
        try:
            self.storage.write_if_absent(self.snapshot_path(snapshot.id), data)
        except FileExistsError:
            return False
        return True

    def write_latest_hint(self, snapshot_id: int) -> bool:
        """Set LATEST, also backwards (a rollback); committers use :meth:`advance_latest_hint`. False when
        the write failed (logged)."""
        return self._write_hint(LATEST_HINT, snapshot_id)

    def write_earliest_hint(self, snapshot_id: int) -> bool:
        """Set EARLIEST, also backwards (a rollback to an expired tag, a stale hint's repair); expiration
        uses :meth:`advance_earliest_hint`. False when the write failed (logged)."""
        return self._write_hint(EARLIEST_HINT, snapshot_id)

    def advance_latest_hint(self, snapshot_id: int) -> None:
        """Move LATEST forward to ``snapshot_id``, never backwards (best effort: two writers may race)."""
        self._advance_hint(LATEST_HINT, snapshot_id)

    def advance_earliest_hint(self, snapshot_id: int) -> None:
        """Move EARLIEST forward to ``snapshot_id``, never backwards (best effort: two expirations may race)."""
        self._advance_hint(EARLIEST_HINT, snapshot_id)

    def _advance_hint(self, name: str, snapshot_id: int) -> None:
        # Read, compare, write, and check again: a writer that read an older value may have overwritten a
        # newer one meanwhile. Not atomic, so readers still verify hints; this keeps the window small.
        for _ in range(_HINT_WRITE_ATTEMPTS):
            current = self._read_hint(name)
            if (current is not None and current >= snapshot_id) or not self._write_hint(name, snapshot_id):
                return

    def expired_error(
        self, snapshot_id: int, detail: str = "", retention: str = ""
    ) -> SnapshotExpiredError | None:
        """A :class:`SnapshotExpiredError` if ``snapshot_id`` is gone from the table, else None.

        Used when a file of the snapshot turned out missing: if the snapshot itself is gone (expired or rolled
        back meanwhile), the missing file is explained and the reader or writer should start over.
        """
        try:
            if self.snapshot_exists(snapshot_id):
                earliest = self.earliest_hint()
                if earliest is None or snapshot_id >= earliest:
                    return None  # still a live snapshot: the missing file is a real problem
        except OSError:
            return None
        return SnapshotExpiredError(snapshot_id, self.earliest_id(), retention, detail)

    def _write_hint(self, name: str, snapshot_id: int) -> bool:
        """Overwrite a hint file (decimal id, no newline); failures are logged, never raised."""
        path = self.hint_path(name)
        for attempt in range(1, _HINT_WRITE_ATTEMPTS + 1):
            try:
                self.storage.write_bytes(path, str(snapshot_id).encode("ascii"), overwrite=True)
                return True
            except Exception as exc:  # a hint is an optimization; readers verify it
                if attempt == _HINT_WRITE_ATTEMPTS:
                    logger.warning("could not write snapshot hint %s=%s: %s", path, snapshot_id, exc)
        return False
