"""paimon-storage: object-store backends for paimon-core, and a commit lock held in PostgreSQL.

Backends (found by paimon-core through the ``paimon.storage`` entry points; install the extra you need):

- ``s3://``, ``s3a://`` — :mod:`paimon_storage.s3` (``pip install 'paimon-storage[s3]'``);
- ``gs://``, ``gcs://`` — :mod:`paimon_storage.gcs` (``pip install 'paimon-storage[gcs]'``);
- ``abfs://``, ``abfss://``, ``az://`` — :mod:`paimon_storage.azure` (``pip install 'paimon-storage[azure]'``).

Each publishes snapshots with the store's own create-only write, so commits need no lock service. For stores
without one, :mod:`paimon_storage.jdbc_lock` provides ``lock.type = jdbc``, a lock row in PostgreSQL
(``pip install 'paimon-storage[postgres]'``). :mod:`paimon_storage.emulators` starts local servers for tests.
"""

from paimon_storage._base import FsspecBackend, ObjectOutputStream
from paimon_storage._version import __version__
from paimon_storage.azure import AzureBackend
from paimon_storage.gcs import GcsBackend
from paimon_storage.s3 import S3Backend

__all__ = ["AzureBackend", "FsspecBackend", "GcsBackend", "ObjectOutputStream", "S3Backend", "__version__"]
