"""Decimal decoding benchmark (not a test): the cost of exact decimals in silver, per engine.

Run ``python -m bench.decimal_decode_bench`` (``--rows N``, ``--repeat N``, ``--engine sail|spark``:
classic Spark needs the Delta jars' session, see bench/README.md). Decodes ``N``
base64 two's-complement unscaled values (Kafka Connect ``Decimal`` / ``VariableScaleDecimal``
bytes) to decimal text three ways, each the best of ``--repeat`` runs over a cached frame:

* ``chunked``: the DECIMAL(38,0) path (`silver.types.numeric.unscaled`), exact up to 38 digits;
* ``exact``: `silver.types.numeric.digits_text`, what silver uses where a value may exceed
  38 digits (NUMERIC without precision, DECIMAL above 38 digits): ``chunked`` up to 15 bytes,
  the limb fold beyond;
* ``limb fold``: `silver.types.numeric.long_digits_text` alone, on every value;
* for the 12-digit values, a ``DECIMAL(12,2)`` column two ways: ``decimal text`` (the general
  path: `unscaled`, the point inserted as text, a cast) and ``bigint`` (what silver uses up to 18
  digits, `silver.types.short_decimal`).

Values are small (12 digits, the common case) or wide (60 digits). Prints a markdown table.
"""

from __future__ import annotations

import argparse
import base64
import random
import time

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf

from pipelines.engine import EngineSpec, create_session, stop_session
from silver.types.numeric import digits_text, long_digits_text, scale_digits, unscaled
from silver.types.short_decimal import short_decimal


def _b64(v: int) -> str:
    length = (v.bit_length() if v >= 0 else (~v).bit_length()) // 8 + 1
    return base64.b64encode(v.to_bytes(length, "big", signed=True)).decode()


def _best(frame: DataFrame, expr: Column, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        frame.select(sf.max(expr)).collect()
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--engine", choices=("sail", "spark"), default="sail")
    args = parser.parse_args(argv)
    conf = {"spark.sql.shuffle.partitions": "4"}
    if args.engine == "spark":
        conf |= {"spark.master": "local[2]", "spark.driver.memory": "4g", "spark.ui.enabled": "false",
                 "spark.ui.showConsoleProgress": "false"}
    spark = create_session(EngineSpec(kind=args.engine, conf=conf))
    rng = random.Random(1)
    try:
        print(f"| values ({args.rows:,}, {args.engine}) | path | seconds (best of {args.repeat}) | values/s |")
        print("| --- | --- | ---: | ---: |")
        for label, digits in (("12 digits", 12), ("60 digits", 60)):
            rows = [(_b64(rng.randrange(-(10**digits), 10**digits)),) for _ in range(args.rows)]
            frame = spark.createDataFrame(rows, "b string").cache()
            frame.count()
            b = sf.col("b")
            paths = [("exact", sf.length(digits_text(b))), ("limb fold", sf.length(long_digits_text(b)))]
            if digits <= 38:
                paths.insert(0, ("chunked", sf.length(unscaled(b, 3).cast("string"))))
            if digits <= 16:
                paths += [("DECIMAL(12,2): decimal text", scale_digits(unscaled(b, 1), 2).try_cast("decimal(12,2)")),
                          ("DECIMAL(12,2): bigint", short_decimal(b, 12, 2))]
            for name, expr in paths:
                seconds = _best(frame, expr, args.repeat)
                print(f"| {label} | {name} | {seconds:.2f} | {args.rows / seconds:,.0f} |")
            frame.unpersist()
    finally:
        stop_session(spark)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
