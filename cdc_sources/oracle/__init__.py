"""The Oracle connector's core (LogMiner): the SQL_REDO parser and the pure parts built on it.

Reproduces the pieces of Debezium 3.6.3's Oracle connector that need no server, each proved
against Debezium's own classes (see docs/oracle.md for what is built and what is not yet).
"""
