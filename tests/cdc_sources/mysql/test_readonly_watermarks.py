"""MariaDB's read-only watermarks: a chunk's rows land between the transactions before its snapshot's
binlog position and those after it; a chunk read while the stream has already passed on a change
its snapshot does not hold yet (MariaDB sends a transaction to the binlog reader before InnoDB makes
it visible) is read again, so its older row never follows that change. The driver runs over an
in-memory table whose visible state moves to a given binlog position on the second read (pure)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import orjson

from cdc_sources.common.incremental_snapshot import Chunk, Key, emission_order
from cdc_sources.common.incremental_state import SnapshotCollection
from cdc_sources.common.readonly_watermarks import ReadOnlyIncrementalSnapshotter
from cdc_sources.common.signal_options import signal_settings
from cdc_sources.mysql.offset import MySqlOffset
from cdc_sources.mysql.readonly_watermarks import MariaDbWatermarks, binlog_mark, binlog_name
from cdc_sources.spi import ChangeRecord, Checkpoint, StreamItem

FILE = "mysql-bin.000007"
TOPIC = "my.d.items"


def test_positions_encode_and_name_binlog_files() -> None:
    assert binlog_mark(FILE, 1234) == (7 << 32) + 1234
    assert binlog_name("mysql-bin.000007", 12) == "mysql-bin.000012"
    marks = MariaDbWatermarks(source=None, binlog_file=FILE)  # type: ignore[arg-type]
    assert orjson.loads(marks.close_position(binlog_mark("mysql-bin.000009", 40), None)) == {
        "file": "mysql-bin.000009", "pos": 40}


def test_a_chunk_follows_the_transactions_before_its_position_and_precedes_the_others() -> None:
    marks = MariaDbWatermarks(source=None, binlog_file=FILE)  # type: ignore[arg-type]
    high = binlog_mark(FILE, 5000)
    # a record's order key: (file number, row event position, row, n); its transaction starts before the event
    before, after, next_file = (7, 4900, 3, 0), (7, 5060, 0, 0), (8, 300, 0, 0)
    rows = [(*marks.close_order_key(high, seq), h) for seq in (10, 11) for h in (0, 2**62)]
    assert before < min(rows) and max(rows) < after < next_file
    assert rows == sorted(rows)
    assert not marks.passed(high, before) and marks.passed(high, after) and marks.passed(high, next_file)
    assert marks.opens(high, orjson.dumps({"file": FILE, "pos": 5000}).decode())
    assert not marks.opens(high, orjson.dumps({"file": FILE, "pos": 4800, "row": 2}).decode())
    assert marks.checkpoint_passed(high, {"file": FILE, "pos": 5000})
    assert not marks.checkpoint_passed(high, {"file": FILE, "pos": 4999})


class _Server(MariaDbWatermarks):
    """The server's side of the watermarks: each read sees ``items`` as of the next scripted position."""

    def __init__(self, script: list[tuple[int, dict[int, str]]]) -> None:
        super().__init__(source=None, binlog_file=FILE)  # type: ignore[arg-type]
        self.script = script
        self.visible: dict[int, str] = {}
        self.reads = 0

    def low(self) -> int:
        pos, self.visible = self.script[min(self.reads, len(self.script) - 1)]
        self.reads += 1
        return binlog_mark(FILE, pos)

    def high(self) -> int:
        return binlog_mark(FILE, self.script[min(self.reads, len(self.script)) - 1][0])


class _Items:
    """A `ChunkSource` over the server's visible ``items`` (id -> name); it never writes."""

    def __init__(self, server: _Server) -> None:
        self.server = server

    def chunk_key(self, c: SnapshotCollection) -> tuple[str, ...] | str:
        return ("id",)

    def max_key(self, c: SnapshotCollection, key: Sequence[str]) -> Key | None:
        return (str(max(self.server.visible)),) if self.server.visible else None

    def read_chunk(self, c: SnapshotCollection, key: Sequence[str], after: Key | None, upto: Key | None,
                   size: int | None) -> Chunk:
        ids = sorted(i for i in self.server.visible if (after is None or i > int(str(after[0])))
                     and (upto is None or i <= int(str(upto[0]))))
        taken = ids if size is None else ids[:size]
        return Chunk(TOPIC, {_key(i): _after(i, self.server.visible[i]) for i in taken},
                     (str(taken[-1]),) if taken else None, size is not None and len(ids) > size)

    def insert_watermark(self, window_id: str, *, opens: bool, data: str | None = None) -> None:
        raise AssertionError("read.only: nothing may be written to the source")

    def open_watermark(self, window_id: str) -> dict[str, str | None]:
        raise AssertionError("read.only: nothing may be written to the source")

    def read_events(self, c: SnapshotCollection, chunk: Chunk, order_key: tuple[int, ...],
                    position: str) -> list[StreamItem]:
        return [[ChangeRecord(TOPIC, key, orjson.dumps({"op": "r", "after": orjson.loads(after)}).decode(), "r",
                              position, (*order_key, h)) for h, key, after in emission_order(chunk.rows)]]


def _key(i: int) -> str:
    return orjson.dumps({"id": i}).decode()


def _after(i: int, name: str) -> str:
    return orjson.dumps({"id": i, "name": name}).decode()


def _checkpoint(pos: int) -> Checkpoint:
    return Checkpoint(MySqlOffset(FILE, pos))


def test_a_chunk_read_behind_a_change_the_stream_passed_on_is_read_again(tmp_path: Path) -> None:
    # the transaction at 1000..1200 renames item 1; the stream passes it on while InnoDB has not yet
    # made it visible, so the first read's snapshot is still at 1000
    server = _Server([(1000, {1: "a", 2: "b"}), (1200, {1: "a2", 2: "b"})])
    snap = ReadOnlyIncrementalSnapshotter(
        watermarks=server, source=_Items(server), tables=[("d", "items")], prefix="my", chunk_size=10, state=None,
        signals=signal_settings({"signal.enabled.channels": "file", "signal.file": str(tmp_path / "signals")}))
    update = ChangeRecord(TOPIC, _key(1), orjson.dumps({"op": "u", "after": orjson.loads(_after(1, "a2"))}).decode(),
                          "u", orjson.dumps({"file": FILE, "pos": 1000, "row": 1}).decode(), (7, 1080, 0, 0))

    def stream() -> Iterator[StreamItem]:
        yield _checkpoint(1000)
        yield update
        snap.snapshot_tables([("d", "items")], "ro-1")  # the chunk is read now, after the update went out
        yield _checkpoint(1200)
        yield _checkpoint(1200)

    out: list[ChangeRecord] = []
    for item in snap.wrap(stream()):
        out.extend(r for r in (item if isinstance(item, list) else [item]) if isinstance(r, ChangeRecord))
    state: dict[int, str] = {}
    for r in out:  # bronze's order
        after = orjson.loads(r.value or "null")["after"]
        state[after["id"]] = after["name"]
    assert state == {1: "a2", 2: "b"}, "the chunk's older row followed the streamed change"
    assert server.reads == 2
    assert [r.op for r in out] == ["u", "r", "r"]
