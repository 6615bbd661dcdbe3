"""Procedures on Spark: compaction on executors (:func:`compact`, :func:`compact_database`), and the procedure
UDTFs (``paimon_compact``, tags, rollback, expiration, orphan files, consumers) that ``CALL sys.*`` and
Spark SQL users reach."""

from __future__ import annotations

from paimon_spark._procedures._compact import SparkRunner, compact, compact_database
from paimon_spark._procedures._register import register_procedures

__all__ = ["SparkRunner", "compact", "compact_database", "register_procedures"]
