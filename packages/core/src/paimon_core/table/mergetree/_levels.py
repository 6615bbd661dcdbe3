"""The levels of one bucket's merge tree, key-range sections, and the universal compaction picker.

See docs/primary-key-tables.md ("Levels and compaction"). Level 0 holds flushed files, each its own sorted
run, newest first; every level above is one sorted run of non-overlapping files. The picker follows
Paimon's universal compaction: size amplification, then size ratio, then file number.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from paimon_core.manifest import DataFileMeta

__all__ = [
    "CompactPlan",
    "CompactUnit",
    "Levels",
    "RewriteGroup",
    "SortedRun",
    "UniversalCompaction",
    "Upgrade",
    "interval_partition",
    "key_range_sections",
    "pick_full_compaction",
    "plan_unit",
]

KeyOf = Callable[[bytes], Any]


@dataclass(frozen=True)
class SortedRun:
    """Files whose key ranges do not overlap, sorted by min key."""

    files: tuple[DataFileMeta, ...]

    @property
    def total_size(self) -> int:
        return sum(f.file_size for f in self.files)

    @property
    def level(self) -> int:
        return self.files[0].level if self.files else 0


def _level0_order(file: DataFileMeta) -> tuple[int, int, int, str]:
    # Newest first: Java's Levels orders level 0 by max sequence desc, then min sequence, creation, name.
    return (-file.max_sequence_number, file.min_sequence_number, file.creation_time or 0, file.file_name)


class Levels:
    """The files of one bucket's merge tree.

    Raises:
        ValueError: fewer than two levels.
    """

    def __init__(self, files: Iterable[DataFileMeta], num_levels: int, key_of: KeyOf) -> None:
        files = list(files)
        highest = max((f.level for f in files), default=0)
        self.num_levels = max(num_levels, highest + 1)
        if self.num_levels < 2:
            raise ValueError("a merge tree needs at least two levels")
        self.key_of = key_of
        self.level0: list[DataFileMeta] = []
        self._levels: list[list[DataFileMeta]] = [[] for _ in range(self.num_levels)]
        self.update((), files)

    @property
    def max_level(self) -> int:
        return self.num_levels - 1

    def run_of_level(self, level: int) -> SortedRun:
        return SortedRun(tuple(self._levels[level]))

    def sorted_runs(self) -> list[SortedRun]:
        runs = [SortedRun((f,)) for f in self.level0]
        runs += [SortedRun(tuple(files)) for files in self._levels[1:] if files]
        return runs

    def number_of_sorted_runs(self) -> int:
        return len(self.level0) + sum(1 for files in self._levels[1:] if files)

    def non_empty_highest_level(self) -> int:
        for level in range(self.max_level, 0, -1):
            if self._levels[level]:
                return level
        return 0 if self.level0 else -1

    def all_files(self) -> list[DataFileMeta]:
        return [*self.level0, *(f for files in self._levels[1:] for f in files)]

    def add_level0_file(self, file: DataFileMeta) -> None:
        self.update((), (file,))

    def update(self, before: Sequence[DataFileMeta], after: Sequence[DataFileMeta]) -> None:
        """Remove ``before`` (by name and level) and add ``after`` into their levels."""
        gone = {(f.file_name, f.level) for f in before}
        self.level0 = [f for f in self.level0 if (f.file_name, f.level) not in gone]
        for level in range(1, self.num_levels):
            self._levels[level] = [f for f in self._levels[level] if (f.file_name, f.level) not in gone]
        for file in after:
            if file.level == 0:
                self.level0.append(file)
            else:
                self._levels[file.level].append(file)
        self.level0.sort(key=_level0_order)
        for level in range(1, self.num_levels):
            self._levels[level].sort(key=lambda f: self.key_of(f.min_key))


@dataclass(frozen=True)
class CompactUnit:
    """Files to compact into ``output_level``."""

    output_level: int
    files: tuple[DataFileMeta, ...]
    full: bool = False


def _unit(runs: Sequence[SortedRun], output_level: int, full: bool = False) -> CompactUnit:
    return CompactUnit(output_level, tuple(f for run in runs for f in run.files), full)


class UniversalCompaction:
    """Paimon's universal compaction picker (``UniversalCompaction`` and ``ForceUpLevel0Compaction``)."""

    def __init__(
        self,
        max_size_amplification_percent: int,
        size_ratio: int,
        num_run_compaction_trigger: int,
        force_up_level0: bool = False,
    ) -> None:
        self.max_size_amp = max_size_amplification_percent
        self.size_ratio = size_ratio
        self.trigger = num_run_compaction_trigger
        self.force_up_level0 = force_up_level0

    def pick(self, num_levels: int, runs: Sequence[SortedRun]) -> CompactUnit | None:
        max_level = num_levels - 1
        unit = self._pick_universal(max_level, runs)
        if unit is None and self.force_up_level0:
            unit = self._force_pick_level0(num_levels, runs)
        return unit

    def _pick_universal(self, max_level: int, runs: Sequence[SortedRun]) -> CompactUnit | None:
        count = len(runs)
        if count < self.trigger:
            return None
        # 1. size amplification: everything newer than the oldest run is too large compared to it
        newer = sum(r.total_size for r in runs[:-1])
        if newer * 100 > self.max_size_amp * runs[-1].total_size:
            return _unit(runs, max_level, full=True)
        # 2. size ratio: the newest runs of similar size
        unit = self._pick_by_size_ratio(max_level, runs, 1)
        if unit is not None:
            return unit
        # 3. file number: enough of the newest runs to get back under the trigger
        if count > self.trigger:
            return self._pick_by_size_ratio(max_level, runs, count - self.trigger + 1, force=True)
        return None

    def _pick_by_size_ratio(
        self, max_level: int, runs: Sequence[SortedRun], candidates: int, force: bool = False
    ) -> CompactUnit | None:
        size = sum(r.total_size for r in runs[:candidates])
        index = candidates
        while index < len(runs):
            following = runs[index]
            if size * (100 + self.size_ratio) / 100 < following.total_size:
                break
            size += following.total_size
            index += 1
        if force or index > 1:
            return self._create_unit(max_level, runs, index)
        return None

    @staticmethod
    def _create_unit(max_level: int, runs: Sequence[SortedRun], count: int) -> CompactUnit | None:
        if count == len(runs):
            return _unit(runs, max_level, full=True)
        output = max(0, runs[count].level - 1)
        if output == 0:
            # level 0 cannot take a merged run: extend to the first run above level 0 and use its level
            while count < len(runs):
                run = runs[count]
                count += 1
                if run.level != 0:
                    output = run.level
                    break
        if count == len(runs):
            return _unit(runs, max_level, full=True)
        return _unit(runs[:count], output)

    def _force_pick_level0(self, num_levels: int, runs: Sequence[SortedRun]) -> CompactUnit | None:
        """Every level-0 run, extended by size ratio as Java's ``ForceUpLevel0Compaction`` does."""
        level0 = 0
        while level0 < len(runs) and runs[level0].level == 0:
            level0 += 1
        if level0 == 0:
            return None
        return self._pick_by_size_ratio(num_levels - 1, runs, level0, force=True)


def pick_full_compaction(num_levels: int, runs: Sequence[SortedRun]) -> CompactUnit | None:
    """Every run into the top level; None when the bucket is a single top-level run already."""
    max_level = num_levels - 1
    if not runs or (len(runs) == 1 and runs[0].level == max_level):
        return None
    return _unit(runs, max_level, full=True)


def interval_partition(files: Sequence[DataFileMeta], key_of: KeyOf) -> list[list[SortedRun]]:
    """Cut files into sections of overlapping key ranges; each section packed into the fewest sorted runs."""
    return [_pack_runs(section, key_of) for section in key_range_sections(files, key_of)]


def key_range_sections(files: Sequence[DataFileMeta], key_of: KeyOf) -> list[list[DataFileMeta]]:
    """Files sorted by key range and cut where no earlier file's range reaches the next file's min key."""
    ordered = sorted(files, key=lambda f: (key_of(f.min_key), key_of(f.max_key)))
    sections: list[list[DataFileMeta]] = []
    bound: Any = None
    for file in ordered:
        if sections and key_of(file.min_key) <= bound:
            sections[-1].append(file)
            bound = max(bound, key_of(file.max_key))
        else:
            sections.append([file])
            bound = key_of(file.max_key)
    return sections


def _pack_runs(section: Sequence[DataFileMeta], key_of: KeyOf) -> list[SortedRun]:
    # Greedy: each file joins the run whose last max key is smallest, if it starts after it.
    heap: list[tuple[Any, int]] = []
    runs: list[list[DataFileMeta]] = []
    for file in section:
        if heap and heap[0][0] < key_of(file.min_key):
            _, index = heapq.heappop(heap)
            runs[index].append(file)
        else:
            index = len(runs)
            runs.append([file])
        heapq.heappush(heap, (key_of(file.max_key), index))
    return [SortedRun(tuple(run)) for run in runs]


class Upgrade(Enum):
    """How a file moves up a level without overlapping others (Java's ``UpgradeStrategy``)."""

    PLAIN = "plain"  # change its level
    CHANGELOG = "changelog"  # change its level and produce the changelog of its records
    REWRITE = "rewrite"  # rewrite it with the changelog (its records merge with higher levels)


@dataclass(frozen=True)
class RewriteGroup:
    """Sorted runs merged into new files at the unit's output level.

    Attributes:
        drop_delete: retractions are dropped from the output.
        upgrade: a single file rewritten as its upgrade (:attr:`Upgrade.REWRITE`): always produces the
            changelog, whatever the producer's rule for rewrites.
    """

    runs: tuple[SortedRun, ...]
    drop_delete: bool
    upgrade: bool = False

    @property
    def files(self) -> list[DataFileMeta]:
        return [f for run in self.runs for f in run.files]


@dataclass(frozen=True)
class CompactPlan:
    """What executing a unit does: files moved up without rewriting (with or without producing their
    changelog) and groups of runs merged."""

    upgrades: tuple[DataFileMeta, ...]
    changelog_upgrades: tuple[DataFileMeta, ...]
    rewrites: tuple[RewriteGroup, ...]


UpgradeStrategy = Callable[[DataFileMeta, int], Upgrade]


def plain_upgrade(file: DataFileMeta, output_level: int) -> Upgrade:
    return Upgrade.PLAIN


def plan_unit(
    unit: CompactUnit,
    levels: Levels,
    key_of: KeyOf,
    compaction_file_size: int,
    upgrade_strategy: UpgradeStrategy = plain_upgrade,
    deletion_vectors: bool = False,
) -> CompactPlan:
    """Plan a unit as Paimon's ``MergeTreeCompactTask`` does: overlapping sections are merged; in a
    single-run section, large files are upgraded and runs of small files are merged.

    ``upgrade_strategy`` decides how a file moves up (the changelog producers and lookup compaction
    rewrite some). With ``deletion_vectors`` every output above level 0 drops retractions: the rows they
    retract are deleted by vector, and reads do not merge."""
    output = unit.output_level
    drop_delete = output != 0 and (output >= levels.non_empty_highest_level() or deletion_vectors)
    upgrades: list[DataFileMeta] = []
    changelog_upgrades: list[DataFileMeta] = []
    rewrite: list[RewriteGroup] = []
    candidate: list[SortedRun] = []

    def flush_candidate() -> None:
        if not candidate:
            return
        if len(candidate) == 1 and len(candidate[0].files) == 1:
            _upgrade(candidate[0].files[0])
        else:
            rewrite.append(RewriteGroup(tuple(candidate), drop_delete))
        candidate.clear()

    def _upgrade(file: DataFileMeta) -> None:
        if file.level == output:
            return
        if output == levels.max_level and file.delete_row_count != 0:
            rewrite.append(RewriteGroup((SortedRun((file,)),), drop_delete))  # no deletes on the top level
            return
        strategy = upgrade_strategy(file, output)
        if strategy is Upgrade.REWRITE:
            rewrite.append(RewriteGroup((SortedRun((file,)),), deletion_vectors, upgrade=True))
        elif strategy is Upgrade.CHANGELOG:
            changelog_upgrades.append(file)
        else:
            upgrades.append(file)

    for section in interval_partition(unit.files, key_of):
        if len(section) > 1:
            candidate.extend(section)
            continue
        for file in section[0].files:
            if file.file_size < compaction_file_size:
                candidate.append(SortedRun((file,)))
            else:
                flush_candidate()
                _upgrade(file)
    flush_candidate()
    return CompactPlan(tuple(upgrades), tuple(changelog_upgrades), tuple(rewrite))
