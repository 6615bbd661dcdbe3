"""paimon-testing: test utilities for Paimon code and for third-party storage backends.

Import the submodules you need; this package imports nothing heavy by itself:

- :mod:`paimon_testing.storage`: ``StorageBackendTests``, the conformance suite a backend author subclasses.
- :mod:`paimon_testing.plugin`: an opt-in pytest plugin (``-p paimon_testing.plugin``) with Hypothesis profiles.
"""

from __future__ import annotations

from paimon_testing._version import __version__

__all__ = ["__version__"]
