"""Registering the procedure UDTFs with a session: compaction (:mod:`._compact_procedures`) and
maintenance (:mod:`._maintenance`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from pyspark.sql import SparkSession
from pyspark.sql.functions import udtf
from pyspark.sql.udtf import UserDefinedTableFunction

from paimon_spark._procedures._branches import BRANCH_PROCEDURES
from paimon_spark._procedures._compact_procedures import (
    COMPACT_DATABASE_PROCEDURE,
    COMPACT_PROCEDURE,
    RESULT_SCHEMA,
    CompactDatabaseProcedure,
    CompactProcedure,
)
from paimon_spark._procedures._lifecycle import LIFECYCLE_PROCEDURES
from paimon_spark._procedures._maintenance import MAINTENANCE_PROCEDURES
from paimon_spark._procedures._manifest import MANIFEST_PROCEDURES
from paimon_spark._procedures._purge import PURGE_PROCEDURES
from paimon_spark._procedures._udtf import session_catalog_conf

__all__ = ["register_procedures"]


def register_procedures(
    spark: SparkSession, warehouse: str | None = None, catalog_conf: Mapping[str, Any] | None = None
) -> None:
    """Register the procedure UDTFs with ``spark``: ``paimon_compact``, ``paimon_compact_database`` and the
    maintenance procedures of :mod:`._maintenance` (tags, rollback, expiration, orphans, consumers).

    Args:
        spark: the session.
        warehouse: the default warehouse (else ``spark.sql.catalog.paimon.warehouse`` from the session conf,
            read now: register again after changing it).
        catalog_conf: default catalog (storage) options, on top of ``spark.sql.catalog.paimon.<key>`` conf.
    """
    conf_warehouse, conf = session_catalog_conf(spark)
    defaults = {
        "warehouse": warehouse or conf_warehouse,
        "catalog_conf": {**conf, **{str(k): str(v) for k, v in (catalog_conf or {}).items()}},
    }
    procedures: dict[str, tuple[type, str]] = {
        COMPACT_PROCEDURE: (CompactProcedure, RESULT_SCHEMA),
        COMPACT_DATABASE_PROCEDURE: (CompactDatabaseProcedure, RESULT_SCHEMA),
        **MAINTENANCE_PROCEDURES,
        **LIFECYCLE_PROCEDURES,
        **MANIFEST_PROCEDURES,
        **PURGE_PROCEDURES,
        **BRANCH_PROCEDURES,
    }
    for name, (base, schema) in procedures.items():
        # Built here, the class is pickled by value, so the defaults travel to the Python worker.
        procedure = type(
            base.__name__,
            (base,),
            {
                **defaults,
                "__module__": __name__,
                "__qualname__": f"register_procedures.<locals>.{base.__name__}",
            },
        )
        # Given a class, udtf wraps it at once (in Spark Connect's own wrapper over Spark Connect).
        function = cast(UserDefinedTableFunction, udtf(procedure, returnType=schema))
        spark.udtf.register(name, function)
