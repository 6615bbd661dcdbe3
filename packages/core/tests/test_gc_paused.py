"""The cyclic garbage collector is paused while metadata is decoded or merged in bulk (``paimon_core._gc``)."""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core._gc import gc_paused
from paimon_core.manifest import _merge
from paimon_core.table import _entries, _scan

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64())])


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generations collected while the test runs, with a threshold that collects at every allocation."""
    seen: list[int] = []

    def callback(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    thresholds = gc.get_threshold()
    enabled = gc.isenabled()
    gc.enable()
    gc.callbacks.append(callback)
    try:
        yield seen
    finally:
        gc.callbacks.remove(callback)
        gc.set_threshold(*thresholds)
        if not enabled:
            gc.disable()


def test_pauses_and_resumes_the_collector() -> None:
    enabled = gc.isenabled()
    gc.enable()
    try:
        with gc_paused():
            assert not gc.isenabled()
            with gc_paused():
                assert not gc.isenabled()
            assert not gc.isenabled()  # the outer pause still holds
        assert gc.isenabled()
        gc.disable()  # a collector the application turned off stays off
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        if enabled:
            gc.enable()


def test_overlapping_pauses_in_threads_resume_once_the_last_ends() -> None:
    gc.enable()
    inside, release = threading.Event(), threading.Event()

    def hold() -> None:
        with gc_paused():
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    inside.wait(10)
    with gc_paused():
        pass
    assert not gc.isenabled()  # this thread's pause ended, the other thread's has not
    release.set()
    thread.join()
    assert gc.isenabled()


def _table_of_many_manifests(catalog: Catalog, commits: int) -> Any:
    table = catalog.create_table(
        "db.t",
        SCHEMA,
        partition_keys=["dt"],
        options={"write-only": "true", "manifest.merge-min-count": "1000"},  # no merge: many manifests
    )
    for i in range(commits):
        table.append(pa.table({"dt": [f"d{i % 5}"], "id": [i]}, schema=SCHEMA))
    return table


def _collections_while(work: Callable[[], object], collections: list[int]) -> int:
    gc.set_threshold(1)  # every allocation starts a collection unless the collector is paused
    collections.clear()
    try:
        work()
        return len(collections)
    finally:
        gc.set_threshold(700)


def test_planning_runs_without_collections(
    catalog: Catalog, collections: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _table_of_many_manifests(catalog, 30)
    scan = table.scan()
    assert sum(len(s.files) for s in scan.plan()) == 30
    # A few collections start before the pause does; without it, the decoding starts thousands.
    assert _collections_while(scan.plan, collections) <= 10
    monkeypatch.setattr(_scan, "gc_paused", contextlib.nullcontext)
    monkeypatch.setattr(_entries, "gc_paused", contextlib.nullcontext)  # listing the entries pauses too
    assert _collections_while(scan.plan, collections) > 100


def test_manifest_merges_run_with_the_collector_paused(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _table_of_many_manifests(catalog, 12)
    catalog.alter_options("db.t", {"manifest.merge-min-count": "3"})
    table = catalog.get_table("db.t")
    enabled_during_merge: list[bool] = []
    run = _merge._Merge.run

    def watched(self: Any) -> Any:
        enabled_during_merge.append(gc.isenabled())
        return run(self)

    monkeypatch.setattr(_merge._Merge, "run", watched)
    gc.enable()
    table.append(pa.table({"dt": ["d0"], "id": [99]}, schema=SCHEMA))
    assert enabled_during_merge == [False]
    assert gc.isenabled()
    assert len(table.live_entries()) == 13
