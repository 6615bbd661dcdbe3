"""Consumers: named streaming readers recording their progress in the table (``consumer/consumer-<id>``).

A consumer file holds ``{"nextSnapshot" : N}``, the next snapshot the reader will read. Java overwrites it
in place (no atomic create), so a reader may see a half-written file: parsing is retried a few times. The
smallest ``nextSnapshot`` over all consumers bounds snapshot expiration.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from dataclasses import dataclass

from paimon_core.errors import ConfigError, CorruptMetadataError, SnapshotNotFoundError
from paimon_core.redaction import get_logger
from paimon_core.snapshot import SnapshotManager, to_pretty_json
from paimon_core.storage import StorageBackend, join_path

__all__ = ["CONSUMER_PREFIX", "Consumer", "ConsumerManager"]

logger = get_logger(__name__)

CONSUMER_PREFIX = "consumer-"
_READ_ATTEMPTS = 10
_RETRY_SLEEP_S = 0.05


@dataclass(frozen=True)
class Consumer:
    """The recorded progress of one consumer: the next snapshot it will read."""

    next_snapshot: int

    def to_json(self) -> str:
        return to_pretty_json({"nextSnapshot": self.next_snapshot})

    @classmethod
    def from_json(cls, text: str | bytes, path: str | None = None) -> Consumer:
        try:
            data = json.loads(text)
            value = data["nextSnapshot"]
        except (ValueError, KeyError, TypeError) as exc:
            raise CorruptMetadataError(f"cannot parse consumer file {path}: {exc}", path) from None
        if not isinstance(value, int) or isinstance(value, bool):
            raise CorruptMetadataError(f"consumer file {path}: nextSnapshot is not an integer", path)
        return cls(value)


def _check_id(consumer_id: str) -> str:
    if not consumer_id or any(c in consumer_id for c in "/\\\x00") or consumer_id in (".", ".."):
        raise ConfigError(f"invalid consumer id {consumer_id!r}", "consumer-id")
    return consumer_id


class ConsumerManager:
    """Reads and writes the consumer files of one table (or branch) directory."""

    def __init__(self, storage: StorageBackend, table_path: str) -> None:
        self.storage = storage
        self.table_path = table_path.rstrip("/")
        self.consumer_dir = join_path(self.table_path, "consumer")

    def consumer_path(self, consumer_id: str) -> str:
        return join_path(self.consumer_dir, CONSUMER_PREFIX + _check_id(consumer_id))

    def consumer(self, consumer_id: str) -> Consumer | None:
        """The consumer's progress, or None when it has none.

        Raises:
            CorruptMetadataError: the file stayed unparseable over every retry.
        """
        path = self.consumer_path(consumer_id)
        last_error: CorruptMetadataError | None = None
        for attempt in range(_READ_ATTEMPTS):
            try:
                data = self.storage.read_bytes(path)
            except FileNotFoundError:
                return None
            try:
                return Consumer.from_json(data, path)
            except CorruptMetadataError as exc:  # a writer may be overwriting it right now
                last_error = exc
                logger.debug("consumer file %s unparseable (attempt %s)", path, attempt + 1)
                time.sleep(_RETRY_SLEEP_S)
        assert last_error is not None
        raise last_error

    def reset_consumer(self, consumer_id: str, consumer: Consumer) -> None:
        """Record ``consumer`` (plain overwrite, as Java does)."""
        if consumer.next_snapshot < 1:
            raise ConfigError(f"nextSnapshot must be positive, got {consumer.next_snapshot}", "consumer-id")
        self.storage.mkdirs(self.consumer_dir)
        data = consumer.to_json().encode("utf-8")
        self.storage.write_bytes(self.consumer_path(consumer_id), data, overwrite=True)

    def reset_to(self, consumer_id: str, next_snapshot: int | None) -> None:
        """Paimon's ``reset_consumer`` procedure: ``next_snapshot`` must exist; None deletes the consumer.

        Raises:
            SnapshotNotFoundError: no snapshot ``next_snapshot``.
        """
        if next_snapshot is None:
            self.delete_consumer(consumer_id)
            return
        if not SnapshotManager(self.storage, self.table_path).snapshot_exists(next_snapshot):
            raise SnapshotNotFoundError(
                next_snapshot, f"cannot reset consumer to missing snapshot {next_snapshot}"
            )
        self.reset_consumer(consumer_id, Consumer(next_snapshot))

    def delete_consumer(self, consumer_id: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.storage.delete(self.consumer_path(consumer_id))

    def _consumer_files(self) -> list[tuple[str, int]]:
        """(consumer id, file modification time in epoch millis, 0 when unknown) of every consumer file."""
        try:
            infos = self.storage.list_dir(self.consumer_dir)
        except FileNotFoundError:
            return []
        return [
            (info.name[len(CONSUMER_PREFIX) :], info.mtime_ms)
            for info in infos
            if not info.is_dir
            and info.name.startswith(CONSUMER_PREFIX)
            and len(info.name) > len(CONSUMER_PREFIX)
        ]

    def expire(self, older_than_ms: int) -> list[str]:
        """Delete the consumers whose file was last written before ``older_than_ms`` (epoch millis), as
        Java's ``ConsumerManager.expire`` does; a file whose time the store does not know is kept.

        Returns:
            The ids of the consumers deleted.
        """
        expired = [cid for cid, mtime in self._consumer_files() if 0 < mtime < older_than_ms]
        for consumer_id in expired:
            self.delete_consumer(consumer_id)
        if expired:
            logger.info("expired idle consumers %s of %s", ", ".join(sorted(expired)), self.table_path)
        return expired

    def clear(self, including: str | None = None, excluding: str | None = None) -> list[str]:
        """Paimon's ``clear_consumers``: delete the consumers whose id matches the ``including`` regular
        expression (all when None or blank) and not the ``excluding`` one; whole ids must match, as Java's
        ``Matcher.matches``.

        Returns:
            The ids of the consumers deleted.

        Raises:
            ConfigError: a pattern is not a valid regular expression.
        """
        include = _pattern(including, "including_consumers") or re.compile(".*", re.DOTALL)
        exclude = _pattern(excluding, "excluding_consumers")
        cleared = [
            cid
            for cid, _ in self._consumer_files()
            if include.fullmatch(cid) and not (exclude is not None and exclude.fullmatch(cid))
        ]
        for consumer_id in cleared:
            self.delete_consumer(consumer_id)
        return cleared

    def consumers(self) -> dict[str, int]:
        """Every consumer id with its next snapshot."""
        try:
            infos = self.storage.list_dir(self.consumer_dir)
        except FileNotFoundError:
            return {}
        result = {}
        for info in infos:
            if info.is_dir or not info.name.startswith(CONSUMER_PREFIX):
                continue
            consumer_id = info.name[len(CONSUMER_PREFIX) :]
            consumer = self.consumer(consumer_id)
            if consumer is not None:
                result[consumer_id] = consumer.next_snapshot
        return result

    def min_next_snapshot(self) -> int | None:
        """The smallest ``nextSnapshot`` over all consumers (expiration must keep it), or None."""
        values = self.consumers().values()
        return min(values) if values else None


def _pattern(text: str | None, name: str) -> re.Pattern[str] | None:
    if text is None or not text.strip():
        return None
    try:
        return re.compile(text)
    except re.error as exc:
        raise ConfigError(f"{name} is not a valid regular expression: {text!r} ({exc})", name) from None
