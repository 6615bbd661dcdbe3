"""Tags: named snapshots kept alive beyond snapshot expiration (``tag/tag-<name>``, docs/format.md#tags).

A tag file holds the snapshot's JSON. A tag with a time-to-live also holds ``tagCreateTime`` (a Jackson
LocalDateTime array ``[y, mo, d, h, mi, s, nanos]``) and ``tagTimeRetained`` (a Duration as decimal seconds);
without one those keys are left out, so old readers still parse the file as a snapshot.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass

from paimon_core import clock
from paimon_core.errors import ConfigError, CorruptMetadataError, TagAlreadyExistsError, TagNotFoundError
from paimon_core.snapshot import Snapshot, to_pretty_json
from paimon_core.storage import StorageBackend, join_path

__all__ = ["TAG_PREFIX", "Tag", "TagManager"]

TAG_PREFIX = "tag-"


@dataclass(frozen=True)
class Tag:
    """A tag: its name, the snapshot it keeps, and the optional time-to-live fields."""

    name: str
    snapshot: Snapshot
    create_time: dt.datetime | None = None
    time_retained: dt.timedelta | None = None

    def to_json(self) -> str:
        data = json.loads(self.snapshot.to_json())
        if self.create_time is not None and self.time_retained is not None:
            t = self.create_time
            data["tagCreateTime"] = [t.year, t.month, t.day, t.hour, t.minute, t.second, t.microsecond * 1000]
            data["tagTimeRetained"] = self.time_retained.total_seconds()
        return to_pretty_json(data)

    @classmethod
    def from_json(cls, name: str, text: str | bytes, path: str | None = None) -> Tag:
        snapshot = Snapshot.from_json(text, path)
        data = json.loads(text)
        create_time = _local_date_time(data.get("tagCreateTime"), path)
        retained = data.get("tagTimeRetained")
        if retained is not None and not isinstance(retained, (int, float)):
            raise CorruptMetadataError(f"tag file {path}: tagTimeRetained is not a number", path)
        time_retained = dt.timedelta(seconds=retained) if retained is not None else None
        return cls(name, snapshot, create_time, time_retained)

    def expired(self, now: dt.datetime) -> bool:
        """True when the tag has a time-to-live that has run out."""
        if self.create_time is None or self.time_retained is None:
            return False
        return now >= self.create_time + self.time_retained


def _local_date_time(value: object, path: str | None) -> dt.datetime | None:
    if value is None:
        return None
    if (
        not isinstance(value, list)
        or not 5 <= len(value) <= 7
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        raise CorruptMetadataError(f"tag file {path}: tagCreateTime is not a LocalDateTime array", path)
    year, month, day, hour, minute, *rest = value
    second = rest[0] if rest else 0
    nanos = rest[1] if len(rest) > 1 else 0
    try:
        return dt.datetime(year, month, day, hour, minute, second, nanos // 1000)
    except ValueError as exc:
        raise CorruptMetadataError(f"tag file {path}: bad tagCreateTime: {exc}", path) from None


def check_tag_name(name: str) -> str:
    if not name or not name.strip():
        raise ConfigError("a tag name must not be blank", "tag-name")
    if any(c in name for c in "/\\\x00") or name in (".", ".."):
        raise ConfigError(f"invalid tag name {name!r}", "tag-name")
    return name


def check_new_tag_name(name: str) -> str:
    """A name for a tag a user creates: never a number (Java's automatic daily, hourly and custom-period tags
    are numbers, ``20240101``, and are read by name like any tag)."""
    if check_tag_name(name).isdigit():
        # A numeric version is resolved as a snapshot id first: such a tag could not be reached by version.
        raise ConfigError(f"a tag name must not be a number: {name!r}", "tag-name")
    return name


def split_tag_names(names: str | Sequence[str]) -> list[str]:
    """Tag names from one name, a comma-separated list (Paimon's procedures take ``'a,b'``) or a list."""
    return [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)


class TagManager:
    """Reads and writes the tag files of one table (or branch) directory."""

    def __init__(self, storage: StorageBackend, table_path: str) -> None:
        self.storage = storage
        self.table_path = table_path.rstrip("/")
        self.tag_dir = join_path(self.table_path, "tag")

    def tag_path(self, name: str) -> str:
        return join_path(self.tag_dir, TAG_PREFIX + check_tag_name(name))

    def exists(self, name: str) -> bool:
        return self.storage.exists(self.tag_path(name))

    def tag(self, name: str) -> Tag:
        """Raises: TagNotFoundError, CorruptMetadataError."""
        path = self.tag_path(name)
        try:
            data = self.storage.read_bytes(path)
        except FileNotFoundError:
            raise TagNotFoundError(name) from None
        return Tag.from_json(name, data, path)

    def names(self) -> list[str]:
        try:
            infos = self.storage.list_dir(self.tag_dir)
        except FileNotFoundError:
            return []
        return sorted(
            i.name[len(TAG_PREFIX) :] for i in infos if not i.is_dir and i.name.startswith(TAG_PREFIX)
        )

    def tags(self) -> list[Tag]:
        """Every tag, ordered by snapshot id then name (tags deleted while listing are skipped)."""
        found = []
        for name in self.names():
            with contextlib.suppress(TagNotFoundError):
                found.append(self.tag(name))
        return sorted(found, key=lambda t: (t.snapshot.id, t.name))

    def tagged_snapshots(self) -> list[Snapshot]:
        """The distinct snapshots kept by tags, ascending by id."""
        by_id = {t.snapshot.id: t.snapshot for t in self.tags()}
        return [by_id[i] for i in sorted(by_id)]

    def create(
        self,
        name: str,
        snapshot: Snapshot,
        time_retained: dt.timedelta | None = None,
        *,
        ignore_if_exists: bool = False,
        now: dt.datetime | None = None,
        automatic: bool = False,
    ) -> Tag:
        """Write ``tag-<name>`` for ``snapshot``, with an atomic create: of writers creating the same tag at
        once (automatic tags after concurrent commits), exactly one writes it. Only ``automatic`` tags may
        be named by a number.

        Raises:
            ConfigError: the name is invalid.
            TagAlreadyExistsError: the tag exists and ``ignore_if_exists`` is false.
        """
        path = self.tag_path(name if automatic else check_new_tag_name(name))
        if self.storage.exists(path):
            if ignore_if_exists:
                return self.tag(name)
            raise TagAlreadyExistsError(name)
        tag = self._new(name, snapshot, time_retained, now)
        self.storage.mkdirs(self.tag_dir)
        try:
            self.storage.write_if_absent(path, tag.to_json().encode("utf-8"))
        except FileExistsError:
            if ignore_if_exists:
                return self.tag(name)
            raise TagAlreadyExistsError(name) from None
        return tag

    def replace(
        self,
        name: str,
        snapshot: Snapshot,
        time_retained: dt.timedelta | None = None,
        *,
        now: dt.datetime | None = None,
    ) -> Tag:
        """Point the existing tag ``name`` at ``snapshot`` (with a new time-to-live, or none), as Java's
        ``replaceTag``: the file is overwritten whole.

        Raises:
            TagNotFoundError: the tag does not exist.
        """
        path = self.tag_path(name)
        if not self.storage.exists(path):
            raise TagNotFoundError(name)
        tag = self._new(name, snapshot, time_retained, now)
        self.storage.write_bytes(path, tag.to_json().encode("utf-8"), overwrite=True)
        return tag

    @staticmethod
    def _new(
        name: str, snapshot: Snapshot, time_retained: dt.timedelta | None, now: dt.datetime | None
    ) -> Tag:
        # Java writes the creation time only with a time-to-live, so that readers <= 0.7 parse the file.
        create_time = (now or clock.local_now()) if time_retained is not None else None
        return Tag(name, snapshot, create_time, time_retained)

    def rename(self, name: str, target: str) -> Tag:
        """Give tag ``name`` the name ``target``, its file copied as it is (creation time and time-to-live
        kept), then the old name removed: a crash in between leaves both names on one snapshot.

        Raises:
            TagNotFoundError: ``name`` does not exist.
            TagAlreadyExistsError: ``target`` exists.
        """
        source = self.tag_path(name)
        destination = self.tag_path(check_new_tag_name(target))
        try:
            data = self.storage.read_bytes(source)
        except FileNotFoundError:
            raise TagNotFoundError(name) from None
        try:
            self.storage.write_if_absent(destination, data)
        except FileExistsError:
            raise TagAlreadyExistsError(target) from None
        with contextlib.suppress(FileNotFoundError):
            self.storage.delete(source)
        return Tag.from_json(target, data, destination)

    def delete(self, names: str | Sequence[str]) -> list[str]:
        """Remove tag files (``names``: one name, a comma-separated list, or a list); returns those removed.

        Only the tag files: ``paimon_core.maintenance.delete_tag`` also deletes the data files and manifests
        that only a deleted tag kept.
        """
        wanted = split_tag_names(names)
        removed = []
        for name in wanted:
            path = self.tag_path(name)
            if not self.storage.exists(path):
                continue
            with contextlib.suppress(FileNotFoundError):
                self.storage.delete(path)
                removed.append(name)
        return removed
