"""PostgreSQL column values rendered exactly as Debezium 3.6's PostgreSQL connector renders them.

Input is PostgreSQL's text representation of a value (pgoutput text tuples, ``COPY`` text
output) from sessions set up with ``DateStyle=ISO, MDY``, ``IntervalStyle=iso_8601``,
``TimeZone=UTC``, ``bytea_output=hex``, ``extra_float_digits=1``, ``lc_monetary=C`` and UTF-8.
Output is the value as Kafka Connect's JsonConverter writes it with ``schemas.enable=false``
(bytes as base64, ``Decimal`` as base64 of the unscaled integer...), and the field schema as it
writes it with ``schemas.enable=true``.

`converter_for` picks a specialised converter once per column; the converters themselves do
no type dispatch. One module per type family; `registry` maps types to them.
"""

from cdc_sources.postgres.converters.converter import converter_for
from cdc_sources.postgres.converters.model import ColumnConverter, ValueConversionError
from cdc_sources.postgres.converters.settings import ConverterSettings

__all__ = ["ColumnConverter", "ConverterSettings", "ValueConversionError", "converter_for"]
