"""Fault injection for storage backends: failures before or after a write reaches the store, ambiguous
timeouts, latency, and crashes between the data files and the snapshot.

:class:`FaultyStorage` wraps any :class:`~paimon_core.storage.StorageBackend` and asks a :class:`FaultPlan`
what to do on every call. A plan holds :class:`FaultRule` objects (which calls, which paths, how likely, how
many times) and a seeded random generator, so a single-threaded run injects the same faults every time::

    plan = FaultPlan([FaultRule(Fault.TIMEOUT_AFTER, ops={"write_if_absent"}, path_contains=SNAPSHOT,
                                probability=0.2)], seed=7)
    base = open_table(path)
    table = base.with_storage(FaultyStorage(base.storage, plan))

``plan.arm(...)`` adds a one-shot rule: the next matching call fails (the state machine drives faults this
way, so that Hypothesis chooses and shrinks them). Every injected fault is recorded in ``plan.injected``.

Through the plugin registry, :func:`paimon_storage_wrap` wraps backends whose options hold
``storage.faults`` (a JSON list of rule objects, e.g. ``[{"fault": "latency", "latency_ms": 5}]``) and
``storage.faults.seed``; register this module as a plugin to use it.
"""

from __future__ import annotations

import enum
import json
import random
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, BinaryIO

from paimon_core.storage import BackendSpec, Capability, FileInfo, StorageBackend, hookimpl

__all__ = [
    "ANY_OP",
    "DATA",
    "MANIFEST",
    "READ_OPS",
    "SNAPSHOT",
    "WRITE_OPS",
    "Fault",
    "FaultPlan",
    "FaultRule",
    "FaultyStorage",
    "InjectedFault",
    "SimulatedCrash",
    "paimon_storage_wrap",
]

SNAPSHOT = "/snapshot/snapshot-"
"""``path_contains`` for snapshot files: a fault here hits the commit primitive itself."""
MANIFEST = "/manifest/"
"""``path_contains`` for manifests and manifest lists (written before the snapshot)."""
DATA = "/bucket-"
"""``path_contains`` for data files (they live in ``.../bucket-N/``)."""

WRITE_OPS = frozenset({"write_if_absent", "write_bytes", "open_output", "delete", "delete_dir", "mkdirs"})
READ_OPS = frozenset({"open_input", "read_bytes", "exists", "size", "info", "list_dir", "list_prefix"})
ANY_OP = WRITE_OPS | READ_OPS


class SimulatedCrash(BaseException):
    """The process "dies" here: raised instead of the storage call, and deliberately not an ``Exception``,
    so that no ``except Exception`` in the code under test can swallow it."""


class Fault(enum.Enum):
    """What happens to a call a rule matches."""

    FAIL_BEFORE = "fail-before"
    """Raise ``ConnectionError`` before the call reaches the store: nothing happened."""
    FAIL_AFTER = "fail-after"
    """Perform the call, then raise ``ConnectionResetError``: it happened, but the caller is told it failed."""
    TIMEOUT_AFTER = "timeout-after"
    """Perform the call, then raise ``TimeoutError``: the ambiguous outcome of a request that timed out."""
    LATENCY = "latency"
    """Sleep ``latency_ms``, then perform the call (widens race windows between processes)."""
    CRASH = "crash"
    """Raise :class:`SimulatedCrash` before the call: e.g. on the snapshot, the data files and manifests are
    written and the snapshot never is."""
    CALLBACK = "callback"
    """Run ``rule.callback()`` before the call (e.g. another writer's commit, at an exact point of this one)."""


@dataclass(frozen=True)
class FaultRule:
    """Which calls to disturb and how.

    Attributes:
        fault: what to do.
        ops: storage method names the rule applies to (see :data:`WRITE_OPS`, :data:`READ_OPS`).
        path_contains: only paths containing this text (:data:`SNAPSHOT`, :data:`MANIFEST`, :data:`DATA`).
        probability: chance that a matching call is disturbed (drawn from the plan's seeded generator).
        times: disturb at most this many calls; ``None`` for no limit.
        latency_ms: the sleep of :attr:`Fault.LATENCY`.
        callback: for :attr:`Fault.CALLBACK`, what runs before the call; for :attr:`Fault.FAIL_AFTER` and
            :attr:`Fault.TIMEOUT_AFTER`, what runs after the call landed and before the error is raised
            (e.g. arming the next fault, so that the caller's recovery fails too).
    """

    fault: Fault
    ops: Collection[str] = WRITE_OPS
    path_contains: str | None = None
    probability: float = 1.0
    times: int | None = None
    latency_ms: float = 0.0
    callback: Callable[[], None] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        unknown = set(self.ops) - ANY_OP
        if unknown:
            raise ValueError(f"unknown storage operations {sorted(unknown)}; known: {sorted(ANY_OP)}")
        if not 0.0 <= self.probability <= 1.0:
            raise ValueError(f"probability {self.probability} is not within [0, 1]")
        if self.fault is Fault.CALLBACK and self.callback is None:
            raise ValueError("a CALLBACK rule needs a callback")

    def matches(self, op: str, path: str) -> bool:
        return op in self.ops and (self.path_contains is None or self.path_contains in path)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FaultRule:
        """A rule from JSON-like data: ``{"fault": "timeout-after", "ops": ["write_if_absent"], ...}``."""
        values = dict(data)
        fault = Fault(values.pop("fault"))
        if "ops" in values:
            values["ops"] = frozenset(values["ops"])
        return cls(fault, **values)


@dataclass(frozen=True)
class InjectedFault:
    """A record of one disturbed call."""

    fault: Fault
    op: str
    path: str


class FaultPlan:
    """The rules a :class:`FaultyStorage` follows, and the record of what it injected. Thread-safe.

    Args:
        rules: standing rules, tried in order (the first that matches and fires wins).
        seed: seed of the generator behind ``probability``; the same seed and the same sequence of calls
            give the same faults.
    """

    def __init__(self, rules: Iterable[FaultRule] = (), seed: int = 0) -> None:
        self._rules = list(rules)
        self._used: dict[int, int] = {}
        self._armed: list[FaultRule] = []
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.seed = seed
        self.injected: list[InjectedFault] = []

    def arm(
        self,
        fault: Fault,
        *,
        ops: Collection[str] = WRITE_OPS,
        path_contains: str | None = None,
        latency_ms: float = 0.0,
        callback: Callable[[], None] | None = None,
    ) -> FaultRule:
        """Disturb the next matching call once (armed rules are tried before standing ones)."""
        rule = FaultRule(fault, ops, path_contains, 1.0, 1, latency_ms, callback)
        with self._lock:
            self._armed.append(rule)
        return rule

    def disarm(self, rule: FaultRule | None = None) -> list[FaultRule]:
        """Drop ``rule`` (or every armed rule) if it has not fired yet; returns what was dropped."""
        with self._lock:
            dropped = [r for r in self._armed if rule is None or r is rule]
            self._armed = [r for r in self._armed if r not in dropped]
        return dropped

    @property
    def armed(self) -> list[FaultRule]:
        with self._lock:
            return list(self._armed)

    def decide(self, op: str, path: str) -> FaultRule | None:
        """The rule that disturbs this call, if any (recording it), else None."""
        with self._lock:
            for i, rule in enumerate(self._armed):
                if rule.matches(op, path):
                    del self._armed[i]
                    self.injected.append(InjectedFault(rule.fault, op, path))
                    return rule
            for index, rule in enumerate(self._rules):
                if not rule.matches(op, path):
                    continue
                if rule.times is not None and self._used.get(index, 0) >= rule.times:
                    continue
                if rule.probability < 1.0 and self._rng.random() >= rule.probability:
                    continue
                self._used[index] = self._used.get(index, 0) + 1
                self.injected.append(InjectedFault(rule.fault, op, path))
                return rule
        return None

    def counts(self) -> dict[Fault, int]:
        """How many calls each kind of fault disturbed so far."""
        with self._lock:
            result: dict[Fault, int] = {}
            for record in self.injected:
                result[record.fault] = result.get(record.fault, 0) + 1
            return result

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> FaultPlan | None:
        """The plan described by ``storage.faults`` (JSON rules) and ``storage.faults.seed``, if any."""
        text = options.get("storage.faults")
        if not text:
            return None
        rules = [FaultRule.from_dict(item) for item in json.loads(text)]
        return cls(rules, seed=int(options.get("storage.faults.seed", "0")))


def _before(rule: FaultRule | None, op: str, path: str) -> None:
    if rule is None:
        return
    if rule.fault is Fault.FAIL_BEFORE:
        raise ConnectionError(f"injected failure before {op} {path}")
    if rule.fault is Fault.CRASH:
        raise SimulatedCrash(f"injected crash before {op} {path}")
    if rule.fault is Fault.LATENCY:
        time.sleep(rule.latency_ms / 1000)
    elif rule.fault is Fault.CALLBACK and rule.callback is not None:
        rule.callback()


def _after(rule: FaultRule | None, op: str, path: str) -> None:
    if rule is None:
        return
    if rule.fault in (Fault.FAIL_AFTER, Fault.TIMEOUT_AFTER) and rule.callback is not None:
        rule.callback()
    if rule.fault is Fault.FAIL_AFTER:
        raise ConnectionResetError(f"injected failure after {op} {path} reached the store")
    if rule.fault is Fault.TIMEOUT_AFTER:
        raise TimeoutError(f"injected timeout after {op} {path} reached the store")


class _FaultyOutput:
    """An output stream whose ``close`` (when the object becomes visible) may fail after it succeeded."""

    def __init__(self, inner: BinaryIO, rule: FaultRule | None, path: str) -> None:
        self._inner = inner
        self._rule = rule
        self._path = path

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def write(self, data: Any) -> int:
        return self._inner.write(data)

    def tell(self) -> int:
        return self._inner.tell()

    def flush(self) -> None:
        self._inner.flush()

    @property
    def closed(self) -> bool:
        return self._inner.closed

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        if self._inner.closed:
            return
        self._inner.close()
        _after(self._rule, "open_output", self._path)

    def __enter__(self) -> _FaultyOutput:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self._inner.__exit__(exc_type, exc, tb)


class FaultyStorage:
    """A storage backend that passes every call to ``inner`` unless ``plan`` says to disturb it.

    Args:
        inner: the real backend.
        plan: what to inject; an empty plan makes this a transparent wrapper.
    """

    def __init__(self, inner: StorageBackend, plan: FaultPlan | None = None) -> None:
        self.inner = inner
        self.plan = plan if plan is not None else FaultPlan()

    def __repr__(self) -> str:
        return f"FaultyStorage({self.inner!r}, seed={self.plan.seed})"

    @property
    def capabilities(self) -> frozenset[Capability]:
        return self.inner.capabilities

    def _call(self, op: str, path: str, action: Callable[[], Any]) -> Any:
        rule = self.plan.decide(op, path)
        _before(rule, op, path)
        result = action()
        _after(rule, op, path)
        return result

    # --- writes ------------------------------------------------------------------------------------------

    def write_if_absent(self, path: str, data: bytes) -> None:
        self._call("write_if_absent", path, lambda: self.inner.write_if_absent(path, data))

    def write_bytes(self, path: str, data: bytes, overwrite: bool = False) -> None:
        self._call("write_bytes", path, lambda: self.inner.write_bytes(path, data, overwrite))

    def open_output(self, path: str) -> BinaryIO:
        rule = self.plan.decide("open_output", path)
        _before(rule, "open_output", path)
        stream: Any = _FaultyOutput(self.inner.open_output(path), rule, path)
        return stream  # type: ignore[no-any-return]

    def delete(self, path: str) -> None:
        self._call("delete", path, lambda: self.inner.delete(path))

    def delete_dir(self, path: str) -> None:
        self._call("delete_dir", path, lambda: self.inner.delete_dir(path))

    def mkdirs(self, path: str) -> None:
        self._call("mkdirs", path, lambda: self.inner.mkdirs(path))

    # --- reads -------------------------------------------------------------------------------------------

    def open_input(self, path: str) -> BinaryIO:
        stream: BinaryIO = self._call("open_input", path, lambda: self.inner.open_input(path))
        return stream

    def read_bytes(self, path: str) -> bytes:
        data: bytes = self._call("read_bytes", path, lambda: self.inner.read_bytes(path))
        return data

    def exists(self, path: str) -> bool:
        return bool(self._call("exists", path, lambda: self.inner.exists(path)))

    def size(self, path: str) -> int:
        return int(self._call("size", path, lambda: self.inner.size(path)))

    def info(self, path: str) -> FileInfo:
        result: FileInfo = self._call("info", path, lambda: self.inner.info(path))
        return result

    def list_dir(self, path: str) -> list[FileInfo]:
        result: list[FileInfo] = self._call("list_dir", path, lambda: self.inner.list_dir(path))
        return result

    def list_prefix(self, path: str) -> Iterator[FileInfo]:
        result: list[FileInfo] = self._call("list_prefix", path, lambda: list(self.inner.list_prefix(path)))
        return iter(result)


@hookimpl
def paimon_storage_wrap(
    backend: StorageBackend, spec: BackendSpec, options: Mapping[str, str]
) -> StorageBackend | None:
    """Wrap backends in :class:`FaultyStorage` when their options hold ``storage.faults``."""
    plan = FaultPlan.from_options(options)
    return None if plan is None else FaultyStorage(backend, plan)
