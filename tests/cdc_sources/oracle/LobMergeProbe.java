// Feeds a transaction's LogMiner rows through Debezium 3.6.3's own parsers (LogMinerDmlParser,
// SelectLobParser, LobWriteParser) and its TransactionCommitConsumer with lob.enabled, so
// test_lob_merge.py can compare cdc_sources.oracle.lob_merge with the events it dispatches.
//
// Each input line is one case: TAB-separated hex-encoded UTF-8 fields:
//   <columns> <key> <rows>
//   <columns>: "name:jdbcType:length" records joined by '\n' (table "ORCLCDB"."DEBEZIUM"."T");
//   <key>: key column names joined by ','; <rows>: "<operation code>\u001f<row id>\u001f<sql>" records
//   joined by '\u001e'.
// Each output line answers one case: one field per dispatched event, "<EventType>" then the old
// and the new values, each "\u001f"-separated: "\0N" null, "\0U" the unavailable value, "\0B<hex>"
// a byte array, else the value's text; or the single field "ERR:<exception class>: <message>".
import io.debezium.config.Configuration;
import io.debezium.connector.common.CdcSourceTaskContext;
import io.debezium.connector.oracle.OracleConnectorConfig;
import io.debezium.connector.oracle.OracleDatabaseSchema;
import io.debezium.connector.oracle.OracleDefaultValueConverter;
import io.debezium.connector.oracle.OracleValueConverters;
import io.debezium.connector.oracle.Scn;
import io.debezium.connector.oracle.StreamingAdapter;
import io.debezium.connector.oracle.logminer.TransactionCommitConsumer;
import io.debezium.connector.oracle.logminer.events.DmlEvent;
import io.debezium.connector.oracle.logminer.events.EventType;
import io.debezium.connector.oracle.logminer.events.LobEraseEvent;
import io.debezium.connector.oracle.logminer.events.LobWriteEvent;
import io.debezium.connector.oracle.logminer.events.LogMinerEvent;
import io.debezium.connector.oracle.logminer.events.SelectLobLocatorEvent;
import io.debezium.connector.oracle.logminer.parser.LobWriteParser;
import io.debezium.connector.oracle.logminer.parser.LogMinerDmlEntry;
import io.debezium.connector.oracle.logminer.parser.LogMinerDmlParser;
import io.debezium.connector.oracle.logminer.parser.SelectLobParser;
import io.debezium.jdbc.JdbcConfiguration;
import io.debezium.relational.Column;
import io.debezium.relational.CustomConverterRegistry;
import io.debezium.relational.Table;
import io.debezium.relational.TableEditor;
import io.debezium.relational.TableId;
import io.debezium.schema.SchemaNameAdjuster;
import io.debezium.schema.SchemaTopicNamingStrategy;
import io.debezium.spi.topic.TopicNamingStrategy;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

public class LobMergeProbe {
    static final HexFormat HEX = HexFormat.of();
    static final TableId ID = new TableId("ORCLCDB", "DEBEZIUM", "T");

    static class Schema extends OracleDatabaseSchema {
        Schema(Configuration raw, OracleConnectorConfig cfg, OracleValueConverters converters) {
            super(cfg, converters, new OracleDefaultValueConverter(converters, null), SchemaNameAdjuster.NO_OP,
                    naming(cfg), StreamingAdapter.TableNameCaseSensitivity.INSENSITIVE, false,
                    new CustomConverterRegistry(null), new CdcSourceTaskContext<>(raw, cfg, Map.of()));
        }

        @SuppressWarnings({"unchecked", "rawtypes"})
        static TopicNamingStrategy<TableId> naming(OracleConnectorConfig cfg) {
            return (TopicNamingStrategy) SchemaTopicNamingStrategy.create(cfg);
        }

        void register(Table table) {
            tables().overwriteTable(table);
            buildAndRegisterSchema(table);
        }
    }

    public static void main(String[] args) throws Exception {
        Configuration config = Configuration.create()
                .with("topic.prefix", "probe")
                .with("database.hostname", "localhost")
                .with("database.user", "u")
                .with("database.dbname", "ORCLCDB")
                .with("lob.enabled", "true")
                .with("schema.history.internal", "io.debezium.relational.history.MemorySchemaHistory")
                .build();
        OracleConnectorConfig cfg = new OracleConnectorConfig(config);
        OracleValueConverters converters = new OracleValueConverters(cfg, new OracleConverterProbe.OfflineConnection(
                JdbcConfiguration.adapt(config.subset("database.", true))));
        LogMinerDmlParser dmlParser = new LogMinerDmlParser(cfg);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        // one schema for every case (each registers metrics); each case registers its table again
        Schema schema = new Schema(config, cfg, converters);
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null;) {
            String[] raw = line.split("\t", -1);
            List<String> fields = new ArrayList<>();
            try {
                Table table = table(text(raw[0]), text(raw[1]));
                schema.register(table);
                TransactionCommitConsumer.Handler<LogMinerEvent> handler = (event, index, trx, seq, processed) -> {
                    DmlEvent dml = (DmlEvent) event;
                    List<String> parts = new ArrayList<>();
                    parts.add(dml.getEventType().name());
                    for (Object v : dml.getOldValues()) {
                        parts.add(value(v));
                    }
                    parts.add("|");
                    for (Object v : dml.getNewValues()) {
                        parts.add(value(v));
                    }
                    fields.add(String.join("\u001f", parts));
                };
                try (TransactionCommitConsumer consumer = new TransactionCommitConsumer(handler, cfg, schema)) {
                    long scn = 100;
                    for (String record : text(raw[2]).split("\u001e", -1)) {
                        String[] r = record.split("\u001f", -1);
                        int code = Integer.parseInt(r[0]);
                        String rowId = r[1];
                        String sql = r[2];
                        Scn at = Scn.valueOf(scn++);
                        Instant time = Instant.ofEpochSecond(1_700_000_000L);
                        LogMinerEvent event;
                        if (code == 9) {
                            SelectLobParser parser = new SelectLobParser();
                            LogMinerDmlEntry entry = parser.parse(sql, table);
                            event = new SelectLobLocatorEvent(EventType.SELECT_LOB_LOCATOR, at, ID, rowId, "rs", time,
                                    entry.getOldValues(), entry.getNewValues(), parser.getColumnName(), parser.isBinary());
                        }
                        else if (code == 10) {
                            LobWriteParser.LobWrite w = LobWriteParser.parse(sql);
                            if (w == null) {
                                continue;
                            }
                            event = new LobWriteEvent(EventType.LOB_WRITE, at, ID, rowId, "rs", time, w.data(), w.offset(),
                                    w.length());
                        }
                        else if (code == 29) {
                            event = new LobEraseEvent(EventType.LOB_ERASE, at, ID, rowId, "rs", time);
                        }
                        else {
                            LogMinerDmlEntry entry = dmlParser.parse(sql, table);
                            event = new DmlEvent(EventType.from(code), at, ID, rowId, "rs", time, entry.getOldValues(),
                                    entry.getNewValues());
                        }
                        consumer.accept(event, "tx", 0L);
                    }
                }
            }
            catch (Throwable e) {
                fields.clear();
                fields.add("ERR:" + e.getClass().getSimpleName() + ": " + e.getMessage());
                if (System.getenv("PROBE_TRACE") != null) { e.printStackTrace(); }
            }
            StringBuilder row = new StringBuilder();
            for (String f : fields) {
                if (row.length() > 0) {
                    row.append('\t');
                }
                row.append(HEX.formatHex(f.getBytes(StandardCharsets.UTF_8)));
            }
            out.append(row).append('\n');
        }
        System.out.print(out);
        System.out.flush();
    }

    static String value(Object v) {
        if (v == null) {
            return "\0N";
        }
        if (v == OracleValueConverters.UNAVAILABLE_VALUE) {
            return "\0U";
        }
        if (v instanceof byte[] b) {
            return "\0B" + HEX.formatHex(b);
        }
        return v.toString();
    }

    static String text(String hexed) {
        return new String(HEX.parseHex(hexed), StandardCharsets.UTF_8);
    }

    static Table table(String columns, String key) {
        TableEditor editor = Table.editor().tableId(ID);
        int position = 1;
        for (String record : columns.split("\n")) {
            String[] f = record.split(":", -1);
            String type = switch (Integer.parseInt(f[1])) {
                case 2005 -> "CLOB";
                case 2011 -> "NCLOB";
                case 2004 -> "BLOB";
                case 2 -> "NUMBER";
                default -> "VARCHAR2";
            };
            editor.addColumn(Column.editor().name(f[0]).jdbcType(Integer.parseInt(f[1])).type(type)
                    .length(Integer.parseInt(f[2])).position(position++).create());
        }
        if (!key.isEmpty()) {
            editor.setPrimaryKeyNames(Arrays.asList(key.split(",")));
        }
        return editor.create();
    }
}
