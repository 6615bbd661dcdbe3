"""paimon-storage: object-store backends for paimon-core (none implemented yet)."""

from paimon_storage._version import __version__

__all__ = ["__version__"]
