"""Writing Paimon tables on Spark: the data source's batch and streaming writers, :func:`write` and
:func:`write_stream` (one writer per bucket), row-kind writes into primary-key tables, and the driver's
one commit of the tasks' files."""

from __future__ import annotations

from paimon_spark._write._bucketed import write, write_stream
from paimon_spark._write._commit import abort_uncommitted, commit_tasks
from paimon_spark._write._consolidate import SplitKeyError
from paimon_spark._write._prepare import WriteInput, ensure_table
from paimon_spark._write._sink import (
    PaimonBatchWriter,
    PaimonCommitMessage,
    PaimonStreamWriter,
    commit_user_for_query,
)
from paimon_spark._write._task import write_in_place
from paimon_spark._write._upsert import KIND_COLUMN, check_row_level, write_records

__all__ = [
    "KIND_COLUMN",
    "PaimonBatchWriter",
    "PaimonCommitMessage",
    "PaimonStreamWriter",
    "SplitKeyError",
    "WriteInput",
    "abort_uncommitted",
    "check_row_level",
    "commit_tasks",
    "commit_user_for_query",
    "ensure_table",
    "write",
    "write_in_place",
    "write_records",
    "write_stream",
]
