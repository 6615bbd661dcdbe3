"""paimon-spark: Apache Spark integration for paimon-core (not implemented yet)."""

from paimon_spark._version import __version__

__all__ = ["__version__"]
