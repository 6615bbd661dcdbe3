"""What one commit attempt came to: values the attempt loop (:mod:`._attempt`) matches on.

Every stage of an attempt (replay recognition, conflict detection, the publish) tells the loop what happened by
returning one of these, never by raising: errors raised are for the user. docs/commit-protocol.md has the
argument behind each case.
"""

from __future__ import annotations

from dataclasses import dataclass

from paimon_core.manifest import ManifestEntry
from paimon_core.snapshot import Snapshot


@dataclass(frozen=True)
class Published:
    """A snapshot one attempt tried to publish, with what it was built from."""

    snapshot: Snapshot
    base: Snapshot | None
    entries: list[ManifestEntry]


@dataclass(frozen=True)
class Landed:
    """This commit landed: the attempt just made, or an earlier one whose outcome was unknown."""

    published: Published


@dataclass(frozen=True)
class LostRace:
    """Nothing landed: another commit took the id, the publish landed in an id freed by expiration (and was
    withdrawn), or expiration took the base meanwhile. The loop retries on the latest snapshot."""


@dataclass(frozen=True)
class Unknown:
    """The store's answer to the publish is unknown: the snapshot may be there or not. The loop looks for it
    before anything else."""

    published: Published


@dataclass(frozen=True)
class AlreadyLive:
    """Every file the attempt adds is live already (or was replaced since): these messages were committed
    before, and nothing is published."""


@dataclass(frozen=True)
class LandedUnseen:
    """An attempt whose outcome was unknown landed, and its snapshot expired before the committer looked
    again: the commit progress record of a later snapshot names it. Its id is not known."""


Outcome = Landed | LostRace | Unknown | AlreadyLive | LandedUnseen
"""What one attempt came to."""

Final = Landed | AlreadyLive | LandedUnseen
"""An outcome that ends the commit call: the loop stops retrying."""
