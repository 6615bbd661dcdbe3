"""paimon-core: Apache Paimon tables from Python."""

from paimon_core._version import __version__

__all__ = ["__version__"]
