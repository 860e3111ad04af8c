"""The shared transaction tracker against the examples of Debezium's connector documentation
(``Transaction metadata`` of the MySQL, PostgreSQL and SQL Server connectors), written out by
hand as the records Debezium puts on the wire.

Two things of the wire are not in the documentation's examples: the documents list ``ts_ms``
second and print the counters of the ``transaction`` block as strings, while Debezium's value
schema puts ``ts_ms`` last and the counters are int64 (as the conformance tests against the
Debezium engine show); the expected texts below follow the wire. Every record's ``ts_ms`` is the
commit time the connector passes to ``begin``.
"""

from __future__ import annotations

import pytest

from cdc_sources.common.envelope import dumps
from cdc_sources.common.transactions import TransactionBlock, TransactionTracker
from cdc_sources.spi import ChangeRecord

TOPIC = "fulfillment.transaction"
POSITION = '{"file":"mysql-bin.000003","pos":154}'


def _block(tx_id: str, total_order: int, data_collection_order: int) -> TransactionBlock:
    return {"id": tx_id, "total_order": total_order, "data_collection_order": data_collection_order}


def test_the_mysql_example_one_event_in_each_of_two_tables() -> None:
    gtid = "0e4d5dcd-a33b-11ea-80f1-02010a22a99e:10"
    tracker = TransactionTracker(topic=TOPIC)
    tracker.begin(gtid, 1486500577125)
    assert tracker.needs_begin()
    begin = tracker.begin_record((3, 154, 0, 0), POSITION)
    assert not tracker.needs_begin()
    first, second = tracker.block("s1.a"), tracker.block("s2.a")
    end = tracker.end_record((3, 154, 0, 9), POSITION)

    assert begin == ChangeRecord(
        TOPIC, '{"id":"0e4d5dcd-a33b-11ea-80f1-02010a22a99e:10"}',
        '{"status":"BEGIN","id":"0e4d5dcd-a33b-11ea-80f1-02010a22a99e:10","event_count":null,'
        '"data_collections":null,"ts_ms":1486500577125}',
        None, POSITION, (3, 154, 0, 0))
    assert dumps(first) == '{"id":"0e4d5dcd-a33b-11ea-80f1-02010a22a99e:10","total_order":1,"data_collection_order":1}'
    assert dumps(second) == '{"id":"0e4d5dcd-a33b-11ea-80f1-02010a22a99e:10","total_order":2,"data_collection_order":1}'
    assert end == ChangeRecord(
        TOPIC, '{"id":"0e4d5dcd-a33b-11ea-80f1-02010a22a99e:10"}',
        '{"status":"END","id":"0e4d5dcd-a33b-11ea-80f1-02010a22a99e:10","event_count":2,'
        '"data_collections":[{"data_collection":"s1.a","event_count":1},{"data_collection":"s2.a","event_count":1}],'
        '"ts_ms":1486500577125}',
        None, POSITION, (3, 154, 0, 9))


def test_the_postgres_example_each_record_carries_its_own_id() -> None:
    # the example's BEGIN is 571:53195829 and its END 571:53195832: xid and the LSN of the message
    # carrying the id; each event carries its own LSN
    tracker = TransactionTracker(topic="fulfillment.transaction")
    tracker.begin("571:53195829", 1486500577125)
    begin = tracker.begin_record((53195832, 53195829, 1), "{}")
    block = tracker.block("s1.a", tx_id="571:53195830")
    tracker.block("s2.a", tx_id="571:53195831")
    end = tracker.end_record((53195832, 53195832, 4), "{}", tx_id="571:53195832")

    assert (begin.key, begin.value) == (
        '{"id":"571:53195829"}',
        '{"status":"BEGIN","id":"571:53195829","event_count":null,"data_collections":null,"ts_ms":1486500577125}')
    assert block == _block("571:53195830", 1, 1)
    assert dumps(block) == '{"id":"571:53195830","total_order":1,"data_collection_order":1}'
    assert end is not None
    assert (end.key, end.value) == (
        '{"id":"571:53195832"}',
        '{"status":"END","id":"571:53195832","event_count":2,"data_collections":'
        '[{"data_collection":"s1.a","event_count":1},{"data_collection":"s2.a","event_count":1}],'
        '"ts_ms":1486500577125}')


def test_the_sqlserver_example_lists_the_tables_in_java_hashmap_order_not_event_order() -> None:
    # the example's END lists tablea before tableb; here tableb's event comes first. Java's
    # "testDB.dbo.tablea".hashCode() is -542983346 (bucket 12 of 16), tableb's one more (bucket 13)
    tracker = TransactionTracker(topic="server1.transaction")
    tracker.begin("00000025:00000d08:0025", 1559729468470)
    tracker.begin_record((1,), "{}")
    assert tracker.block("testDB.dbo.tableb") == _block("00000025:00000d08:0025", 1, 1)
    assert tracker.block("testDB.dbo.tablea") == _block("00000025:00000d08:0025", 2, 1)
    end = tracker.end_record((2,), "{}")

    assert end is not None
    assert end.value == ('{"status":"END","id":"00000025:00000d08:0025","event_count":2,"data_collections":'
                         '[{"data_collection":"testDB.dbo.tablea","event_count":1},'
                         '{"data_collection":"testDB.dbo.tableb","event_count":1}],"ts_ms":1559729468470}')


def test_a_table_whose_hash_comes_first_is_listed_first() -> None:
    # "inventory.customers".hashCode() = 1886774851: bucket 6; "inventory.orders" = 1845227447: bucket 12
    tracker = TransactionTracker(topic=TOPIC)
    tracker.begin("t1", 5)
    tracker.begin_record((1,), "{}")
    for table in ("inventory.orders", "inventory.orders", "inventory.customers"):
        tracker.block(table)
    end = tracker.end_record((2,), "{}")

    assert end is not None
    assert end.value == ('{"status":"END","id":"t1","event_count":3,"data_collections":'
                         '[{"data_collection":"inventory.customers","event_count":1},'
                         '{"data_collection":"inventory.orders","event_count":2}],"ts_ms":5}')


def test_a_transaction_without_an_emitted_event_writes_neither_begin_nor_end() -> None:
    tracker = TransactionTracker(topic=TOPIC)
    tracker.begin("file=mysql-bin.000003,pos=154", 1)
    assert tracker.end_record((1,), "{}") is None
    assert tracker.needs_begin()


def test_a_second_begin_record_of_one_transaction_is_refused() -> None:
    tracker = TransactionTracker(topic=TOPIC)
    tracker.begin("t1", 1)
    tracker.begin_record((1,), "{}")
    with pytest.raises(RuntimeError, match="BEGIN record of transaction t1 was already written"):
        tracker.begin_record((2,), "{}")


def test_events_counted_in_bulk_continue_the_numbering_of_single_events() -> None:
    tracker = TransactionTracker(topic=TOPIC)
    tracker.begin("t1", 1)
    tracker.begin_record((1,), "{}")
    assert tracker.block("public.a") == _block("t1", 1, 1)
    # a columnar run of three events of public.a numbers them 2..4 overall and 2..4 in the table
    assert tracker.next_orders("public.a") == (2, 2)
    tracker.count("public.a", 3)
    assert tracker.next_orders("public.b") == (5, 1)
    assert tracker.block("public.b") == _block("t1", 5, 1)
    assert tracker.block("public.a") == _block("t1", 6, 5)
    end = tracker.end_record((2,), "{}")

    assert end is not None
    assert end.value == ('{"status":"END","id":"t1","event_count":6,"data_collections":'
                         '[{"data_collection":"public.a","event_count":5},'
                         '{"data_collection":"public.b","event_count":1}],"ts_ms":1}')


def test_the_next_transaction_counts_from_one_again() -> None:
    tracker = TransactionTracker(topic=TOPIC)
    tracker.begin("t1", 1)
    tracker.begin_record((1,), "{}")
    tracker.block("public.a")
    tracker.block("public.a")
    tracker.end_record((2,), "{}")

    tracker.begin("t2", 2)
    assert tracker.needs_begin()
    begin = tracker.begin_record((3,), "{}")
    assert begin.value == '{"status":"BEGIN","id":"t2","event_count":null,"data_collections":null,"ts_ms":2}'
    assert tracker.block("public.a") == _block("t2", 1, 1)
    end = tracker.end_record((4,), "{}")
    assert end is not None
    assert end.value == ('{"status":"END","id":"t2","event_count":1,"data_collections":'
                         '[{"data_collection":"public.a","event_count":1}],"ts_ms":2}')
