"""`cdc-lakehouse verify`: proves each silver table equals its source table, while capture and
silver keep running.

Per silver table:

1. note bronze's highest ``seq`` (every row up to it was committed in the source before step 2);
2. open a consistent read of the source at a known position (`ReadPoint`) and plan the
   columns (`pipelines.verify.plan`); the source computes per-bucket row counts and checksums;
3. wait until capture has committed an offset at or past the read point, then find the read
   point's ``seq`` in the bronze table: the highest ``seq`` of a row whose transaction was in
   the read (bronze rows are in source commit order);
4. wait until silver's progress has reached that ``seq``;
5. read silver (delta-rs), compute the same bucket sums, and for the buckets that differ fetch
   the source rows of those buckets and compare key by key;
6. a differing key that silver or bronze shows changed after the read point is not a
   difference yet: it is compared again at a fresh read point (up to ``rounds`` reads); one
   that changes before every read is reported as unsettled.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from cdc_sources.common.column_rules import ColumnRules, parse_column_rules
from cdc_sources.spi import ConfigError, ConfigProblem, Connector
from pipelines.config import PipelineConfig, SourceSpec
from pipelines.verify import compare, lakehouse
from pipelines.verify.canonical import bucket_of
from pipelines.verify.model import ColumnPlan, DiffKind, KeyDiff, ReadPoint, SourceColumn, TableReport, VerifyError
from pipelines.verify.plan import KindOf, plan_columns
from silver.declarations import SilverTable

__all__ = ["VerifySettings", "exit_code", "run_verify"]

Say = Callable[[str], None]
_POLL_S = 0.5
_PROGRESS_EVERY_S = 5.0


class SourceReader(Protocol):
    """A consistent read of one source (`PostgresReader`, `MySqlReader`)."""

    @property
    def kind_of(self) -> KindOf: ...
    def open(self) -> ReadPoint: ...
    def close(self) -> None: ...
    def columns(self, container: str, table: str) -> tuple[list[SourceColumn], list[str]]: ...
    def bucket_sums(self, plan: ColumnPlan, buckets: int) -> dict[int, tuple[int, int]]: ...
    def rows(self, plan: ColumnPlan, *, buckets: int, in_buckets: Sequence[int] = (),
             keys: Sequence[str] = ()) -> list[tuple[str | None, ...]]: ...


@dataclass(frozen=True)
class VerifySettings:
    """How `run_verify` works.

    Attributes:
        buckets: key ranges (hash buckets of the key) compared per table.
        timeout_s: the longest to wait for capture, then silver, to reach a read point.
        rounds: source reads at most per table (later ones only for keys that moved).
    """

    buckets: int = 64
    timeout_s: float = 120.0
    rounds: int = 5


def run_verify(config: PipelineConfig, connectors: Mapping[str, Connector], *, tables: Sequence[str] | None,
               settings: VerifySettings, say: Say) -> list[TableReport]:
    """Verify the pipeline's silver tables (``tables``: only these); one report per table.

    Raises:
        ConfigError: ``tables`` names a table the pipeline does not declare.
    """
    declared = {t.table: t for t in config.silver}
    unknown = [t for t in tables or () if t not in declared]
    if unknown:
        raise ConfigError([ConfigProblem("--table", f"no silver table {t!r} in the pipeline; declared: "
                                                    f"{', '.join(declared) or 'none'}") for t in unknown])
    if not declared:
        raise ConfigError([ConfigProblem("silver", "the pipeline declares no silver tables to verify")])
    chosen = [declared[t] for t in tables] if tables else list(config.silver)
    prefixes = config.topic_prefixes()
    reports = []
    for decl in chosen:
        source = _source_of(decl.source, prefixes)
        spec = config.source(source)
        reader = _reader(spec, connectors[source])
        try:
            report = _Table(config, spec, prefixes[source], decl, reader, settings, say).verify()
        finally:
            reader.close()
        reports.append(report)
    return reports


def _source_of(topic: str, prefixes: Mapping[str, str]) -> str:
    """The source whose topic prefix starts ``topic`` (the longest wins), as silver finds it.

    Raises:
        ConfigError: no source produces the topic.
    """
    matches = [name for name, prefix in prefixes.items() if topic.startswith(prefix + ".")]
    if not matches:
        raise ConfigError([ConfigProblem("silver", f"topic {topic!r} does not start with the topic prefix of any "
                                                   "source")])
    return max(matches, key=lambda n: len(prefixes[n]))


def _reader(spec: SourceSpec, connector: Connector) -> SourceReader:
    config: Any = getattr(connector, "config")  # noqa: B009 - both connectors keep their config there
    if spec.connector == "postgres":
        from pipelines.verify.postgres_source import PostgresReader

        return PostgresReader(config)
    from pipelines.verify.mysql_source import MySqlReader

    return MySqlReader(config)


class _Table:
    """One table's verification (see module doc)."""

    def __init__(self, config: PipelineConfig, spec: SourceSpec, prefix: str, decl: SilverTable,
                 reader: SourceReader, settings: VerifySettings, say: Say) -> None:
        self.config, self.spec, self.decl, self.reader, self.settings = config, spec, decl, reader, settings
        self.say = say
        self.root = config.lakehouse.root
        self.storage = config.lakehouse.storage_options or config.silver_options.storage_options or None
        rest = decl.source[len(prefix) + 1:]
        self.container, _, self.source_table = rest.partition(".")
        self.state = config.silver_state_location()
        default = None if decl.catalog_table else f"{self.root.rstrip('/')}/silver/{decl.table}"
        self.location = decl.location or default
        self.report = TableReport(decl.table)

    def verify(self) -> TableReport:
        try:
            self._verify()
        except VerifyError as exc:
            self.report.error, self.report.config_error = str(exc), exc.config
        return self.report

    def _verify(self) -> None:
        if self.location is None:
            raise VerifyError(f"the silver table is addressed only by its catalog name {self.decl.catalog_table!r}; "
                              "verify reads silver by path: declare its location", config=True)
        self._wait_for_table()
        floor = lakehouse.bronze_max_seq(self.root, self.decl.source, self.storage)
        point = self.reader.open()
        plan = self._plan()
        buckets = self.settings.buckets
        source_sums = self.reader.bucket_sums(plan, buckets)
        upto = self._wait(point, floor)
        silver = self._silver(plan)
        silver_sums = compare.bucket_sums(silver.rows, buckets)
        r = self.report
        r.source_rows = sum(n for n, _ in source_sums.values())
        r.silver_rows = len(silver.rows) + len(silver.duplicates)
        r.silver_ahead = sum(1 for key in silver.rows if silver.seqs.get(key, -1) > upto)
        r.buckets, r.rounds = buckets, 1
        differing = compare.differing_buckets(source_sums, silver_sums)
        r.buckets_differing = len(differing)
        if not differing and not silver.duplicates:
            return
        source_rows = compare.source_side(plan, self.reader.rows(plan, buckets=buckets, in_buckets=differing))
        chosen = set(differing)
        silver_rows = {k: v for k, v in silver.rows.items() if bucket_of(k, buckets) in chosen}
        diffs = compare.diff_rows(plan, source_rows, silver_rows)
        found: dict[str, KeyDiff] = {}
        for key in silver.duplicates:
            found[key] = KeyDiff(compare.key_label(plan, silver.rows[key][:len(plan.keys)]), DiffKind.DUPLICATE)
        # silver has applied everything up to the read and maybe more: a key silver holds at a
        # later seq moved on after the read, and is compared again at a fresh read
        events = self._key_events(plan, upto)
        pending = {}
        for key, diff in diffs.items():
            if _silver_matches_read(silver, key, upto, events):
                found[key] = diff
            else:
                pending[key] = diff
        while pending and r.rounds < self.settings.rounds:
            r.rounds += 1
            self.say(f"verify {self.decl.table}: {len(pending)} key(s) changed after the read point; reading again")
            pending = self._reread(plan, pending, found)
        for key, diff in pending.items():
            found[key] = KeyDiff(diff.key, DiffKind.UNSETTLED, diff.columns)
        r.diffs = [found[k] for k in sorted(found)]

    def _wait_for_table(self) -> None:
        """Wait (up to the timeout) until silver has created the table."""
        assert self.location is not None
        started = time.monotonic()
        last_said = started
        while not lakehouse.exists(self.location, self.storage):
            now = time.monotonic()
            if now - started >= self.settings.timeout_s:
                raise VerifyError(f"silver table {self.decl.table!r} does not exist at {self.location} after "
                                  f"{self.settings.timeout_s:g}s: is 'cdc-lakehouse silver' (or 'run') running?")
            if now - last_said >= _PROGRESS_EVERY_S:
                last_said = now
                self.say(f"verify {self.decl.table}: waiting for silver to create the table at {self.location}")
            time.sleep(_POLL_S)

    def _plan(self) -> ColumnPlan:
        columns, primary_key = self.reader.columns(self.container, self.source_table)
        silver = lakehouse.silver_schema(self.location or "", self.storage)
        options = {str(k): str(v) for k, v in self.spec.options.items()}
        rules: ColumnRules = parse_column_rules(options)[0]
        plan = plan_columns(self.decl, container=self.container, table=self.source_table, source=columns,
                            primary_key=primary_key, silver=silver, rules=rules, kind_of=self.reader.kind_of)
        self.report.compared = tuple(c.source for c in plan.compared)
        self.report.skipped = plan.skipped
        return plan

    def _silver(self, plan: ColumnPlan) -> compare.SilverSide:
        """Silver's rows now: only the compared columns and the bookkeeping ones `silver_side` reads."""
        wanted = [c.silver for c in plan.compared] + compare.bookkeeping_columns(self.decl)
        names = set(lakehouse.silver_schema(self.location or "", self.storage).names)
        table = lakehouse.silver_rows(self.location or "", self.storage, [c for c in wanted if c in names])
        return compare.silver_side(plan, self.decl, table)

    def _key_events(self, plan: ColumnPlan, after_seq: int) -> dict[str | None, list[int]]:
        """Key text -> its bronze ``seq`` values above ``after_seq``, ascending; None stands for
        keys that cannot be told from the bronze key (`compare.key_text_of_json`), any key."""
        out: dict[str | None, list[int]] = {}
        for row in lakehouse.bronze_tail(self.root, self.decl.source, after_seq, self.storage):
            out.setdefault(compare.key_text_of_json(plan, row.key), []).append(row.seq)
        return out

    def _reread(self, plan: ColumnPlan, pending: Mapping[str, KeyDiff],
                found: dict[str, KeyDiff]) -> dict[str, KeyDiff]:
        """Compare the keys that moved once more, at a fresh read, against one of two silver states:

        * silver read just *before* the source read: its row of a key is the key's state as of
          the row's ``seq`` (a key it does not hold: as of its progress, read before it), which is
          the read's state if bronze has no change of the key between that ``seq`` and the read;
        * silver read once it has applied the read: the read's state if silver's row is not from
          after the read (`_silver_matches_read`).

        A busy key changes between silver and the source often enough to fail one of them, rarely
        both. Returns the keys neither state settles."""
        applied = lakehouse.progress_seq(self.state, self.decl.table, self.storage) or 0
        before = self._silver(plan)
        floor = lakehouse.bronze_max_seq(self.root, self.decl.source, self.storage)
        point = self.reader.open()
        upto = self._wait_capture(point, floor)
        source = compare.source_side(plan, self.reader.rows(plan, buckets=self.settings.buckets, keys=sorted(pending)))
        self._wait_silver(upto, time.monotonic() + self.settings.timeout_s)
        after = self._silver(plan)
        as_of = {key: before.seqs.get(key, applied) for key in pending}
        events = self._key_events(plan, min([upto, *as_of.values()]))
        still = {}
        for key, diff in pending.items():
            seqs = events.get(key, []) + events.get(None, [])
            if as_of[key] <= upto and not any(as_of[key] < seq <= upto for seq in seqs):
                state = before
            elif _silver_matches_read(after, key, upto, events):
                state = after
            else:
                still[key] = diff
                continue
            found_diff = compare.diff_rows(plan, {key: source[key]} if key in source else {},
                                           {key: state.rows[key]} if key in state.rows else {})
            found.update(found_diff)
        return still

    def _wait(self, point: ReadPoint, floor: int) -> int:
        """Wait for capture, then silver, to reach ``point``; its ``seq`` in the bronze table."""
        upto = self._wait_capture(point, floor)
        self._wait_silver(upto, time.monotonic() + self.settings.timeout_s)
        return upto

    def _wait_capture(self, point: ReadPoint, floor: int) -> int:
        """Wait for capture to reach ``point``; its ``seq`` in the bronze table."""
        self.report.read_point = point.describe()
        source = self.spec.name
        started = time.monotonic()
        deadline = started + self.settings.timeout_s
        last_said = started
        while True:
            committed = lakehouse.committed_offset(self.root, source, self.storage)
            if committed is not None and committed.snapshot_completed and point.capture_reached(committed.offset):
                break
            now = time.monotonic()
            state = ("nothing committed yet" if committed is None else
                     f"last committed batch {committed.batch} at {committed.committed_at}"
                     + ("" if committed.snapshot_completed else ", initial snapshot not completed"))
            if now >= deadline:
                raise VerifyError(f"capture of source {source!r} has not reached the read point "
                                  f"({point.describe()}) within {self.settings.timeout_s:g}s ({state}): is "
                                  "'cdc-lakehouse capture' (or 'run') running for it?")
            if now - last_said >= _PROGRESS_EVERY_S:
                last_said = now
                self.say(f"verify {self.decl.table}: waiting for capture to reach {point.describe()} ({state})")
            time.sleep(_POLL_S)
        upto = self._upto(point, floor)
        self.report.upto_seq = upto
        return upto

    def _wait_silver(self, upto: int, deadline: float) -> None:
        """Wait for silver's progress to reach bronze ``upto``."""
        last_said = time.monotonic()
        while True:
            applied = lakehouse.progress_seq(self.state, self.decl.table, self.storage)
            if upto == 0 or (applied is not None and applied >= upto):
                return
            now = time.monotonic()
            state = "nothing applied yet" if applied is None else f"applied up to seq {applied}"
            if now >= deadline:
                raise VerifyError(f"silver table {self.decl.table!r} has not reached the read point (bronze seq "
                                  f"{upto}) within {self.settings.timeout_s:g}s ({state}): is 'cdc-lakehouse "
                                  "silver' (or 'run') running?")
            if now - last_said >= _PROGRESS_EVERY_S:
                last_said = now
                self.say(f"verify {self.decl.table}: waiting for silver to apply bronze seq {upto} ({state})")
            time.sleep(_POLL_S)

    def _upto(self, point: ReadPoint, floor: int) -> int:
        """The highest bronze ``seq`` of the read (rows up to ``floor`` were all committed before it)."""
        upto, first_after = floor, None
        for row in lakehouse.bronze_tail(self.root, self.decl.source, floor, self.storage):
            if point.includes(row.position):
                if first_after is not None:
                    raise VerifyError(f"bronze seq {row.seq} belongs to the read but seq {first_after} before it "
                                      "does not: bronze is not in source commit order")
                upto = row.seq
            elif first_after is None:
                first_after = row.seq
        return upto


def _silver_matches_read(silver: compare.SilverSide, key: str, upto: int,
                         events: Mapping[str | None, list[int]]) -> bool:
    """Whether silver, read after applying bronze up to ``upto``, holds ``key`` as of ``upto``:
    its row of the key is from ``upto`` or before; a key it does not hold had no change after
    ``upto`` (``events``: bronze seqs per key above at most ``upto``)."""
    seq = silver.seqs.get(key)
    if seq is not None:
        return seq <= upto
    return not any(s > upto for s in events.get(key, []) + events.get(None, []))


def exit_code(reports: Sequence[TableReport]) -> int:
    """0 every table equal, 2 a table could not be verified for its configuration, else 1."""
    if any(r.config_error for r in reports):
        return 2
    return 0 if all(r.equal for r in reports) else 1


