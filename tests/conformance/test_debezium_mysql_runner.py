"""The harness that runs Debezium's MySQL connector against MariaDB (`debezium_mysql_runner`)."""

from __future__ import annotations

import pytest

from tests.conformance.debezium_mysql_runner import run_debezium_mariadb
from tests.conformance.debezium_runner import DebeziumRunError

pytestmark = [pytest.mark.integration, pytest.mark.mariadb, pytest.mark.conformance]


def test_without_the_adjustment_the_mysql_connector_cannot_start_on_mariadb(mariadb_db):
    # Debezium 3.6.3 asks MariaDB 10.x for SHOW BINARY LOG STATUS (it reads "10.11" as a MySQL
    # version after 8.2) and stops; this is why the harness answers with SHOW MASTER STATUS
    with pytest.raises(DebeziumRunError, match="should support SHOW BINARY LOG STATUS but it failed"):
        run_debezium_mariadb(host="127.0.0.1", port=int(mariadb_db["port"]), user="root", password="",
                             properties={"topic.prefix": "x", "database.include.list": mariadb_db["database"]},
                             adjust_binlog_status=False, max_runtime_s=60)

