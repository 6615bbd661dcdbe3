"""Catalogs: which databases and tables a warehouse holds, and the door to its tables.

``Catalog.open(warehouse, **options)`` and ``Catalog.load(options)`` pick the metastore from the
``metastore`` option: ``filesystem`` (the default: databases are ``<warehouse>/<db>.db`` directories) or
``jdbc`` (rows of a SQLite or PostgreSQL database shared with Java Paimon and pypaimon). Docs:
docs/catalogs.md.
"""

from paimon_core.catalog._filesystem import (
    DB_SUFFIX,
    DEFAULT_DATABASE,
    Catalog,
    check_option_key,
    split_identifier,
)
from paimon_core.catalog._jdbc import LOCK_TYPE, JdbcCatalog

__all__ = [
    "DB_SUFFIX",
    "DEFAULT_DATABASE",
    "LOCK_TYPE",
    "Catalog",
    "JdbcCatalog",
    "check_option_key",
    "split_identifier",
]
