"""The commit, in stages, each its own module (docs/commit-protocol.md, "Where the code lives"):

* :mod:`._api`: :class:`TableCommit`, the public methods; messages become changes (:mod:`._changes`);
* :mod:`._replay`: whether a commit (or an attempt whose outcome was unknown) landed before;
* :mod:`._attempt`: the attempt loop (retries, back-off, timeout), matching on the :mod:`._outcome` of each
  attempt;
* :mod:`._conflicts`: the files and index files of an attempt checked against its base;
* :mod:`._snapshot_builder`: the manifests, manifest lists, index manifest and snapshot record;
* :mod:`._publish`: the atomic create (under the commit lock), the chain check, the withdrawal.
"""

from paimon_core.table.commit._api import TableCommit

__all__ = ["TableCommit"]
