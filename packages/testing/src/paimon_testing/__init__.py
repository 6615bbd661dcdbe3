"""paimon-testing: test utilities for Paimon code and for third-party storage backends.

Import the submodules you need; this package imports nothing heavy by itself:

- :mod:`paimon_testing.storage`: ``StorageBackendTests``, the conformance suite a backend author subclasses.
- :mod:`paimon_testing.strategies`: Hypothesis strategies for schemas, Arrow data and (hostile) partition values.
- :mod:`paimon_testing.faults`: ``FaultyStorage(inner, FaultPlan(...))``, a storage wrapper injecting failures,
  ambiguous timeouts, latency and crashes.
- :mod:`paimon_testing.stateful`: ``ConcurrentCommits``, a Hypothesis state machine of several writers on one
  table checked against a model after every step.
- :mod:`paimon_testing.torture`: ``run_torture``, many processes committing through faults, then verified.
- :mod:`paimon_testing.plugin`: an opt-in pytest plugin (``-p paimon_testing.plugin``) with Hypothesis profiles.
"""

from __future__ import annotations

from paimon_testing._version import __version__

__all__ = ["__version__"]
