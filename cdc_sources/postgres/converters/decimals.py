"""NUMERIC/DECIMAL and MONEY under ``decimal.handling.mode``.

``precise``: ``org.apache.kafka.connect.data.Decimal`` (the unscaled value as big-endian two's
complement bytes) for constrained NUMERIC and for MONEY (scale ``money.fraction.digits``), and
``io.debezium.data.VariableScaleDecimal`` ``{scale, value}`` (trailing zeros stripped) for NUMERIC
without precision. NaN and the infinities cannot be represented there: Debezium fails, and so
does this converter. ``double``: a JSON number (``"NaN"``, ``"Infinity"`` for the specials).
``string``: the plain decimal text; the specials become ``NAN``, ``POSITIVE_INFINITY``,
``NEGATIVE_INFINITY`` (Debezium prints the Java enum names).
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from cdc_sources.common import kschema as ks
from cdc_sources.common.javacompat import b64, bigint_bytes
from cdc_sources.postgres.converters.column_meta import VARIABLE_SCALE_DECIMAL_LENGTH
from cdc_sources.postgres.converters.model import ColumnType, Convert, TypeMapping, ValueConversionError
from cdc_sources.postgres.converters.numeric import FLOAT_SPECIALS
from cdc_sources.postgres.converters.settings import ConverterSettings

NUMERIC_SPECIALS = {"NaN": "NAN", "Infinity": "POSITIVE_INFINITY", "-Infinity": "NEGATIVE_INFINITY"}
VARIABLE_SCALE_DECIMAL = ks.struct(
    "io.debezium.data.VariableScaleDecimal",
    [("scale", ks.primitive("int32"), False), ("value", ks.primitive("bytes"), False)],
    doc="Variable scaled decimal",
)
_ZERO_BYTES = b64(b"\x00")


def is_variable_scale(col: ColumnType) -> bool:
    """Debezium's test for NUMERIC without precision (as the catalog or a Relation reports it)."""
    return col.length in (0, VARIABLE_SCALE_DECIMAL_LENGTH) and (col.scale or 0) == 0


def _special(text: str, what: str) -> ValueConversionError:
    return ValueConversionError(
        f"the {what} value {text!r} cannot be represented with decimal.handling.mode=precise "
        "(Debezium fails the same way); set decimal.handling.mode to 'string' or 'double'",
        value=text)


def unscaled(text: str, scale: int) -> int:
    """The unscaled integer of a decimal text at ``scale`` (must not need rounding)."""
    dot = text.find(".")
    fraction = 0 if dot < 0 else len(text) - dot - 1
    digits = int(text) if dot < 0 else int(text[:dot] + text[dot + 1:])
    factor: int = 10 ** abs(scale - fraction)
    if fraction <= scale:
        return digits * factor
    value, rest = divmod(digits, factor)
    if rest:
        raise ValueConversionError(f"{text!r} has more than {scale} fraction digits", value=text)
    return value


def _fixed_precise(scale: int) -> Convert:
    factor = 10**scale

    def convert(text: str) -> str:
        try:
            dot = text.find(".")
            if dot < 0:
                value = int(text) * factor
            elif len(text) - dot - 1 == scale:  # PostgreSQL prints exactly the column's scale
                value = int(text[:dot] + text[dot + 1:])
            else:
                value = unscaled(text, scale)
        except ValueError:
            if text in NUMERIC_SPECIALS:
                raise _special(text, "NUMERIC") from None
            raise
        bits = value.bit_length() if value >= 0 else (~value).bit_length()
        return b64(value.to_bytes(bits // 8 + 1, "big", signed=True))
    return convert


def variable_precise(text: str) -> dict[str, Any]:
    """``VariableScaleDecimal`` of a NUMERIC text: trailing zeros stripped, scale never negative."""
    if text in NUMERIC_SPECIALS:
        raise _special(text, "NUMERIC")
    dot = text.find(".")
    if dot < 0:
        return {"scale": 0, "value": b64(bigint_bytes(int(text)))}
    fraction = text[dot + 1:].rstrip("0")
    return {"scale": len(fraction), "value": b64(bigint_bytes(int(text[:dot] + fraction)))}


def _double(text: str) -> float | str:
    special = FLOAT_SPECIALS.get(text)
    return float(text) if special is None else special


def _string(text: str) -> str:
    return NUMERIC_SPECIALS.get(text, text)


def numeric_mapping(col: ColumnType, settings: ConverterSettings) -> TypeMapping:
    """NUMERIC/DECIMAL."""
    mode = settings.decimal_handling_mode
    if mode == "double":
        return TypeMapping(ks.primitive("double"), _double, 0.0)
    rescale = col.scale is not None and col.length != VARIABLE_SCALE_DECIMAL_LENGTH
    scale = col.scale or 0
    if mode == "string":
        return TypeMapping(ks.primitive("string"), _string, "0." + "0" * scale if rescale and scale else "0")
    if is_variable_scale(col):
        return TypeMapping(VARIABLE_SCALE_DECIMAL, variable_precise, {"scale": 0, "value": _ZERO_BYTES})
    schema = ks.logical("bytes", ks.DECIMAL, params={"scale": str(scale), ks.PRECISION_PARAM: str(col.length)})
    return TypeMapping(schema, _fixed_precise(scale), _ZERO_BYTES)


def parse_money(text: str) -> Decimal:
    """Debezium's ``PostgresMoney.parse``: ``$1,234.56``, ``-$1,234.56`` or ``($1,234.56)``."""
    negative = text[:1] in ("-", "(")
    value = text[1:] if text[:1] == "-" else text
    if value[:1] == "(" and value[-1:] == ")":
        value = value[1:-1]
    if value and not value[0].isdigit() and value[0] != ".":
        value = value[1:]
    try:
        return Decimal(("-" if negative else "") + value.replace(",", ""))
    except InvalidOperation:
        raise ValueConversionError(f"cannot parse {text!r} as a MONEY value; the capture sessions "
                                   "must use lc_monetary=C", value=text) from None


def money_mapping(col: ColumnType, settings: ConverterSettings) -> TypeMapping:
    """MONEY: ``Decimal`` with scale ``money.fraction.digits`` (rounded half up), double or string."""
    digits = settings.money_fraction_digits
    zero = Decimal(0).scaleb(-digits)
    mode = settings.decimal_handling_mode
    if mode == "double":
        return TypeMapping(ks.primitive("double"), lambda text: float(parse_money(text)), 0.0)
    if mode == "string":
        return TypeMapping(ks.primitive("string"), lambda text: format(parse_money(text), "f"), str(zero))
    quantum = Decimal(1).scaleb(-digits)

    def precise(text: str) -> str:
        if digits == 2 and text[-3:-2] == ".":  # lc_monetary=C: "-$1,234.56", already at scale 2
            raw = text.replace("$", "").replace(",", "").replace(".", "")
            if raw.lstrip("-").isdigit():
                return b64(bigint_bytes(int(raw)))
        value = parse_money(text).quantize(quantum, rounding=ROUND_HALF_UP)
        return b64(bigint_bytes(int(value.scaleb(digits))))
    schema = ks.logical("bytes", ks.DECIMAL, params={"scale": str(digits)})
    return TypeMapping(schema, precise, _ZERO_BYTES)
