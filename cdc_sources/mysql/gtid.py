"""GTIDs and GTID sets of both binlog dialects, as Debezium 3.6.3 reads and writes them.

MySQL (``MySqlGtidSet``): a set is ``uuid:interval[:interval...]`` items separated by commas,
e.g. ``3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7,24bc7850-2c16-11e6-a073-0242ac110002:1-3``.
MySQL 8.4 adds tags: ``uuid:tag:1-3`` (intervals after a tag belong to that tag). Debezium's
canonical text (``io.debezium.connector.mysql.gtid.MySqlGtidSet.toString``, checked against the
3.6.3 jar by ``tests/cdc_sources/mysql/test_gtid.py``) is: UUIDs lower-cased and sorted, the
untagged intervals of a UUID first, then its tags in order, every interval written ``a-b`` (also
``7-7``), adjacent intervals merged. A single GTID is ``uuid:n`` or ``uuid:tag:n``.

MariaDB (``MariaGtidPosition``): a GTID is ``domain-server-sequence`` (``0-1-42``); a *position*
(``@@gtid_binlog_pos``, ``@@gtid_current_pos``, the ``@slave_connect_state`` a replica resumes
from, and the offset ``gtids`` the Debezium MariaDB connector writes while streaming) holds one
GTID per replication domain, the last one seen, written sorted by domain. Sequence numbers grow
within a domain, so "contains" and "contained within" compare sequences per domain.
``gtid.source.includes``/``excludes`` match ``domain-server`` there (Debezium's
``MariaDbGtidStreamId.asSourceFilterValue``) and the UUID for MySQL.

Everything here is a pure value type except the two trackers, which keep the growing set of a
stream cheaply (``add`` per transaction, ``text`` per offset).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

from cdc_sources.spi import CdcError, Fatal

__all__ = [
    "GtidError",
    "GtidTracker",
    "Interval",
    "MariaGtid",
    "MariaGtidPosition",
    "MariaGtidTracker",
    "MySqlGtid",
    "MySqlGtidSet",
    "MySqlGtidTracker",
    "SourcePredicate",
    "UuidSet",
    "new_gtid_tracker",
]

SourcePredicate = Callable[[str], bool]
"""A ``gtid.source.includes``/``excludes`` decision on a GTID source (a UUID or ``domain-server``)."""

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_TAG = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,31}")
_NUMBER = re.compile(r"[0-9]+")
_MAX_TXN = 2**63 - 1


class GtidError(CdcError, Fatal, ValueError):
    """A GTID or GTID set text cannot be parsed.

    Attributes:
        text: the offending text.
        reason: what is wrong with it.
    """

    def __init__(self, text: str, reason: str) -> None:
        super().__init__(f"invalid GTID text {text!r}: {reason}", text=text, reason=reason)


# -- MySQL ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, order=True)
class Interval:
    """Transaction numbers ``start`` to ``end``, both included (``start <= end``)."""

    start: int
    end: int

    def __str__(self) -> str:
        return f"{self.start}-{self.end}"

    def __contains__(self, number: object) -> bool:
        return isinstance(number, int) and self.start <= number <= self.end


def _normalise(intervals: Iterable[Interval]) -> tuple[Interval, ...]:
    """Sort and merge overlapping or adjacent intervals."""
    out: list[Interval] = []
    for iv in sorted(intervals):
        if out and iv.start <= out[-1].end + 1:
            if iv.end > out[-1].end:
                out[-1] = Interval(out[-1].start, iv.end)
        else:
            out.append(iv)
    return tuple(out)


def _subtract(mine: tuple[Interval, ...], theirs: tuple[Interval, ...]) -> tuple[Interval, ...]:
    out: list[Interval] = []
    for iv in mine:
        pieces = [iv]
        for cut in theirs:
            next_pieces: list[Interval] = []
            for p in pieces:
                if cut.end < p.start or cut.start > p.end:
                    next_pieces.append(p)
                    continue
                if p.start < cut.start:
                    next_pieces.append(Interval(p.start, cut.start - 1))
                if cut.end < p.end:
                    next_pieces.append(Interval(cut.end + 1, p.end))
            pieces = next_pieces
        out.extend(pieces)
    return tuple(out)


def _within(mine: tuple[Interval, ...], theirs: tuple[Interval, ...]) -> bool:
    """Every interval of ``mine`` lies inside one interval of ``theirs`` (both normalised)."""
    return all(any(o.start <= iv.start and iv.end <= o.end for o in theirs) for iv in mine)


@dataclass(frozen=True, slots=True)
class UuidSet:
    """The transactions of one source: a server UUID and an optional tag (MySQL 8.4).

    Attributes:
        uuid: the source server's UUID, lower-case.
        tag: the GTID tag, lower-case, or None for untagged GTIDs.
        intervals: sorted, merged transaction intervals.
    """

    uuid: str
    tag: str | None
    intervals: tuple[Interval, ...]

    @property
    def key(self) -> tuple[str, str]:
        """The sort key Debezium uses (UUID, then tag with untagged first)."""
        return (self.uuid, self.tag or "")

    def contains(self, number: int) -> bool:
        return any(number in iv for iv in self.intervals)


@dataclass(frozen=True, slots=True)
class MySqlGtid:
    """One MySQL GTID: ``uuid:number`` or ``uuid:tag:number``."""

    uuid: str
    number: int
    tag: str | None = None

    @classmethod
    def parse(cls, text: str) -> MySqlGtid:
        """Parse ``uuid:n`` / ``uuid:tag:n``.

        Raises:
            GtidError: the text is not a single MySQL GTID.
        """
        parts = text.strip().split(":")
        if len(parts) not in (2, 3):
            raise GtidError(text, "expected <uuid>:<number> or <uuid>:<tag>:<number>")
        uuid = _parse_uuid(parts[0], text)
        tag = _parse_tag(parts[1], text) if len(parts) == 3 else None
        number = _parse_number(parts[-1], text)
        return cls(uuid, number, tag)

    def __str__(self) -> str:
        middle = f"{self.tag}:" if self.tag else ""
        return f"{self.uuid}:{middle}{self.number}"


def _parse_uuid(text: str, whole: str) -> str:
    text = text.strip()
    if not _UUID.fullmatch(text):
        raise GtidError(whole, f"{text!r} is not a server UUID (8-4-4-4-12 hex digits)")
    return text.lower()


def _parse_tag(text: str, whole: str) -> str:
    text = text.strip()
    if not _TAG.fullmatch(text):
        raise GtidError(whole, f"{text!r} is not a GTID tag (a letter or _, then up to 31 letters, digits, _)")
    return text.lower()


def _parse_number(text: str, whole: str) -> int:
    text = text.strip()
    if not _NUMBER.fullmatch(text):
        raise GtidError(whole, f"{text!r} is not a transaction number")
    number = int(text)
    if not 1 <= number <= _MAX_TXN:
        raise GtidError(whole, f"transaction number {number} is outside 1..{_MAX_TXN}")
    return number


def _parse_uuid_item(item: str, whole: str) -> list[UuidSet]:
    """``uuid:1-5:7`` or ``uuid:1-5:tag:1-3`` (intervals after a tag belong to it)."""
    uuid, *parts = item.split(":")
    uuid = _parse_uuid(uuid, whole)
    groups: list[UuidSet] = []
    tag: str | None = None
    intervals: list[Interval] = []
    for part in parts:
        stripped = part.strip()
        if stripped[:1].isdigit():
            intervals.append(_parse_interval(stripped, whole))
            continue
        if intervals:
            groups.append(UuidSet(uuid, tag, tuple(intervals)))
        elif tag is not None:
            raise GtidError(whole, f"tag {tag!r} has no transaction intervals")
        tag, intervals = _parse_tag(stripped, whole), []
    if not intervals:
        raise GtidError(whole, f"{item.strip()!r} ends without transaction intervals")
    groups.append(UuidSet(uuid, tag, tuple(intervals)))
    return groups


def _parse_interval(text: str, whole: str) -> Interval:
    start, sep, end = text.partition("-")
    first = _parse_number(start, whole)
    last = _parse_number(end, whole) if sep else first
    if last < first:
        raise GtidError(whole, f"interval {text.strip()!r} ends before it starts")
    return Interval(first, last)


class MySqlGtidSet:
    """An immutable MySQL GTID set.

    Equal sets compare equal and hash alike whatever text they were parsed from.
    """

    __slots__ = ("_sets",)

    def __init__(self, sets: Iterable[UuidSet] = ()) -> None:
        """Build from per-source sets; sources given twice are merged."""
        merged: dict[tuple[str, str], list[Interval]] = {}
        for s in sets:
            merged.setdefault((s.uuid.lower(), (s.tag or "").lower()), []).extend(s.intervals)
        self._sets: tuple[UuidSet, ...] = tuple(
            UuidSet(uuid, tag or None, _normalise(ivs))
            for (uuid, tag), ivs in sorted(merged.items())
            if ivs
        )

    @classmethod
    def parse(cls, text: str | None) -> MySqlGtidSet:
        """Parse a GTID set as MySQL prints it (``Executed_Gtid_Set``, ``@@gtid_purged``) or as
        Debezium writes it; newlines and blanks around items are ignored, None or "" is empty.

        Raises:
            GtidError: the text is not a MySQL GTID set.
        """
        if text is None:
            return cls()
        cleaned = text.replace("\n", "").replace("\r", "")
        if not cleaned.strip():
            return cls()
        sets: list[UuidSet] = []
        for item in cleaned.split(","):
            if not item.strip():
                raise GtidError(text, "empty item between commas")
            sets.extend(_parse_uuid_item(item, text))
        return cls(sets)

    # -- views --

    @property
    def sets(self) -> tuple[UuidSet, ...]:
        """The per-source sets in Debezium's order."""
        return self._sets

    @property
    def uuids(self) -> tuple[str, ...]:
        """The source UUIDs, sorted, each once."""
        return tuple(dict.fromkeys(s.uuid for s in self._sets))

    def source(self, uuid: str, tag: str | None = None) -> UuidSet | None:
        """The transactions of one source, or None."""
        key = (uuid.lower(), (tag or "").lower())
        return next((s for s in self._sets if s.key == key), None)

    def is_empty(self) -> bool:
        return not self._sets

    def __bool__(self) -> bool:
        return bool(self._sets)

    def __iter__(self) -> Iterator[UuidSet]:
        return iter(self._sets)

    def __str__(self) -> str:
        """Debezium's canonical text."""
        out: list[str] = []
        for s in self._sets:
            body = ":".join(str(iv) for iv in s.intervals)
            if s.tag:
                body = f"{s.tag}:{body}"
            if out and out[-1].split(":", 1)[0] == s.uuid:
                out[-1] = f"{out[-1]}:{body}"
            else:
                out.append(f"{s.uuid}:{body}")
        return ",".join(out)

    def __repr__(self) -> str:
        return f"MySqlGtidSet({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MySqlGtidSet) and self._sets == other._sets

    def __hash__(self) -> int:
        return hash(self._sets)

    # -- arithmetic --

    def contains(self, gtid: MySqlGtid | str) -> bool:
        """Whether one transaction is in the set."""
        g = MySqlGtid.parse(gtid) if isinstance(gtid, str) else gtid
        s = self.source(g.uuid, g.tag)
        return s is not None and s.contains(g.number)

    def add(self, gtid: MySqlGtid | str) -> MySqlGtidSet:
        """The set with one more transaction."""
        g = MySqlGtid.parse(gtid) if isinstance(gtid, str) else gtid
        return MySqlGtidSet([*self._sets, UuidSet(g.uuid, g.tag, (Interval(g.number, g.number),))])

    def is_contained_within(self, other: MySqlGtidSet) -> bool:
        """Whether every transaction of this set is in ``other`` (Debezium's ``isContainedWithin``)."""
        for s in self._sets:
            theirs = other.source(s.uuid, s.tag)
            if theirs is None or not _within(s.intervals, theirs.intervals):
                return False
        return True

    def union(self, other: MySqlGtidSet) -> MySqlGtidSet:
        """Every transaction in either set."""
        return MySqlGtidSet([*self._sets, *other._sets])

    def with_sources_of(self, other: MySqlGtidSet) -> MySqlGtidSet:
        """Debezium's ``with``: this set, with each source ``other`` has replaced by ``other``'s
        intervals for it (not a union per source)."""
        replaced = {s.key for s in other._sets}
        return MySqlGtidSet([*(s for s in self._sets if s.key not in replaced), *other._sets])

    def subtract(self, other: MySqlGtidSet) -> MySqlGtidSet:
        """The transactions of this set that are not in ``other``."""
        out: list[UuidSet] = []
        for s in self._sets:
            theirs = other.source(s.uuid, s.tag)
            rest = s.intervals if theirs is None else _subtract(s.intervals, theirs.intervals)
            if rest:
                out.append(UuidSet(s.uuid, s.tag, rest))
        return MySqlGtidSet(out)

    def intersects(self, other: MySqlGtidSet) -> bool:
        """Whether some transaction is in both sets."""
        return not self.subtract(self.subtract(other)).is_empty()

    def retain(self, predicate: SourcePredicate | None) -> MySqlGtidSet:
        """Only the sources whose UUID passes ``predicate`` (``gtid.source.includes``/``excludes``);
        None keeps everything."""
        if predicate is None:
            return self
        return MySqlGtidSet(s for s in self._sets if predicate(s.uuid))

    def retain_known_sources(self, known: MySqlGtidSet) -> MySqlGtidSet:
        """Only the sources (UUID and tag) that also appear in ``known``."""
        keys = {s.key for s in known._sets}
        return MySqlGtidSet(s for s in self._sets if s.key in keys)


# -- MariaDB ----------------------------------------------------------------------------------

_MARIA_GTID = re.compile(r"([0-9]+)-([0-9]+)-([0-9]+)")
_UINT32 = 2**32 - 1
_UINT64 = 2**64 - 1


@dataclass(frozen=True, slots=True, order=True)
class MariaGtid:
    """One MariaDB GTID ``domain-server-sequence``."""

    domain: int
    server: int
    sequence: int

    @classmethod
    def parse(cls, text: str) -> MariaGtid:
        """Parse ``0-1-42`` (blanks around it are ignored).

        Raises:
            GtidError: the text is not a MariaDB GTID.
        """
        m = _MARIA_GTID.fullmatch(text.strip())
        if m is None:
            raise GtidError(text, "expected a MariaDB GTID <domain>-<server>-<sequence>, e.g. 0-1-42")
        domain, server, sequence = (int(g) for g in m.groups())
        if domain > _UINT32 or server > _UINT32 or sequence > _UINT64:
            raise GtidError(text, "domain and server ids are 32-bit, sequence numbers 64-bit")
        return cls(domain, server, sequence)

    @property
    def source(self) -> str:
        """``domain-server``: what ``gtid.source.includes``/``excludes`` match."""
        return f"{self.domain}-{self.server}"

    def __str__(self) -> str:
        return f"{self.domain}-{self.server}-{self.sequence}"


class MariaGtidPosition:
    """An immutable MariaDB GTID position: the last GTID of each replication domain.

    Parsing a list with several GTIDs of one domain (``@@gtid_binlog_state`` lists one per
    domain and server) keeps the last one of each domain, as MariaDB and the binlog client
    do: MariaDB lists the most recent GTID of a domain last.
    """

    __slots__ = ("_by_domain",)

    def __init__(self, gtids: Iterable[MariaGtid] = ()) -> None:
        by_domain: dict[int, MariaGtid] = {}
        for g in gtids:
            by_domain[g.domain] = g
        self._by_domain: Mapping[int, MariaGtid] = dict(sorted(by_domain.items()))

    @classmethod
    def parse(cls, text: str | None) -> MariaGtidPosition:
        """Parse a comma-separated GTID list; None or "" is the empty position.

        Raises:
            GtidError: an item is not a MariaDB GTID.
        """
        if text is None or not text.strip():
            return cls()
        items = text.replace("\n", "").replace("\r", "").split(",")
        if any(not i.strip() for i in items):
            raise GtidError(text, "empty item between commas")
        return cls(MariaGtid.parse(i) for i in items)

    @property
    def gtids(self) -> tuple[MariaGtid, ...]:
        """One GTID per domain, by domain."""
        return tuple(self._by_domain.values())

    @property
    def domains(self) -> tuple[int, ...]:
        return tuple(self._by_domain)

    def for_domain(self, domain: int) -> MariaGtid | None:
        return self._by_domain.get(domain)

    def is_empty(self) -> bool:
        return not self._by_domain

    def __bool__(self) -> bool:
        return bool(self._by_domain)

    def __str__(self) -> str:
        """The position as MariaDB prints it and ``@slave_connect_state`` takes it."""
        return ",".join(str(g) for g in self._by_domain.values())

    def __repr__(self) -> str:
        return f"MariaGtidPosition({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MariaGtidPosition) and self.gtids == other.gtids

    def __hash__(self) -> int:
        return hash(self.gtids)

    def add(self, gtid: MariaGtid | str) -> MariaGtidPosition:
        """The position after ``gtid`` (it replaces its domain's GTID)."""
        g = MariaGtid.parse(gtid) if isinstance(gtid, str) else gtid
        return MariaGtidPosition([*self._by_domain.values(), g])

    def contains(self, gtid: MariaGtid | str) -> bool:
        """Whether ``gtid`` is at or before this position in its domain."""
        g = MariaGtid.parse(gtid) if isinstance(gtid, str) else gtid
        mine = self._by_domain.get(g.domain)
        return mine is not None and g.sequence <= mine.sequence

    def is_contained_within(self, other: MariaGtidPosition) -> bool:
        """Whether ``other`` is at or after this position in every domain of this one."""
        return all(other.contains(g) for g in self._by_domain.values())

    def behind(self, other: MariaGtidPosition) -> tuple[int, ...]:
        """The domains where this position is strictly before ``other``'s."""
        return tuple(d for d, g in self._by_domain.items()
                     if (o := other.for_domain(d)) is not None and g.sequence < o.sequence)

    def with_domains_of(self, other: MariaGtidPosition) -> MariaGtidPosition:
        """This position with each domain ``other`` has taken from ``other``."""
        return MariaGtidPosition([*self._by_domain.values(), *other.gtids])

    def retain(self, predicate: SourcePredicate | None) -> MariaGtidPosition:
        """Only the GTIDs whose ``domain-server`` passes ``predicate``; None keeps everything."""
        if predicate is None:
            return self
        return MariaGtidPosition(g for g in self._by_domain.values() if predicate(g.source))


# -- trackers ---------------------------------------------------------------------------------


class GtidTracker(Protocol):
    """The growing GTID set of a stream: one ``add`` per transaction, ``text`` for offsets."""

    def add(self, gtid: str) -> None: ...

    def text(self) -> str: ...


class MySqlGtidTracker:
    """A mutable MySQL GTID set, fast for the usual case (the next number of a known source).

    Not thread-safe.
    """

    __slots__ = ("_intervals", "_text")

    def __init__(self, initial: str | MySqlGtidSet | None = None) -> None:
        start = initial if isinstance(initial, MySqlGtidSet) else MySqlGtidSet.parse(initial)
        self._intervals: dict[tuple[str, str], list[Interval]] = {s.key: list(s.intervals) for s in start}
        self._text: str | None = str(start)

    def add(self, gtid: str) -> None:
        g = MySqlGtid.parse(gtid)
        ivs = self._intervals.setdefault((g.uuid, g.tag or ""), [])
        self._text = None
        if ivs and ivs[-1].end + 1 == g.number:
            ivs[-1] = Interval(ivs[-1].start, g.number)
        elif not any(g.number in iv for iv in ivs):
            ivs[:] = _normalise([*ivs, Interval(g.number, g.number)])

    def value(self) -> MySqlGtidSet:
        return MySqlGtidSet(UuidSet(u, t or None, tuple(ivs)) for (u, t), ivs in self._intervals.items())

    def text(self) -> str:
        if self._text is None:
            self._text = str(self.value())
        return self._text


class MariaGtidTracker:
    """A mutable MariaDB GTID position. Not thread-safe."""

    __slots__ = ("_by_domain", "_text")

    def __init__(self, initial: str | MariaGtidPosition | None = None) -> None:
        start = initial if isinstance(initial, MariaGtidPosition) else MariaGtidPosition.parse(initial)
        self._by_domain: dict[int, MariaGtid] = {g.domain: g for g in start.gtids}
        self._text: str | None = str(start)

    def add(self, gtid: str) -> None:
        g = MariaGtid.parse(gtid)
        self._by_domain[g.domain] = g
        self._text = None

    def value(self) -> MariaGtidPosition:
        return MariaGtidPosition(self._by_domain.values())

    def text(self) -> str:
        if self._text is None:
            self._text = str(self.value())
        return self._text


def new_gtid_tracker(flavor: Literal["mysql", "mariadb"], initial: str | None) -> MySqlGtidTracker | MariaGtidTracker:
    """A tracker for the server's GTID dialect, starting at ``initial`` (offset ``gtids``)."""
    return MariaGtidTracker(initial) if flavor == "mariadb" else MySqlGtidTracker(initial)
