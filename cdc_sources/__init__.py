"""Capture connectors: each database's change stream turned into Debezium change events.

`cdc_sources.spi` holds the contracts every connector implements; `cdc_sources.common`
holds behaviour shared by connectors (filters, masks, transaction metadata, snapshot
planning); `cdc_sources.<db>` holds one connector each. Importing this package opens no
connection and imports no database driver.
"""
