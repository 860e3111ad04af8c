// Asks Debezium 3.6.3's SqlServerDefaultValueConverter for the schema default of a column
// default expression, so test_defaults.py can compare cdc_sources.sqlserver.defaults with it.
//
// The probe sits in Debezium's package because the converter (and its ConnectionProvider) are
// package-private. It has no server: the connection provider fails, so the date and time types,
// which Debezium evaluates with SELECT PARSE(...) on the server, answer "no default" here.
//
// Each input line is one JSON request:
//   {"jdbcType": int, "typeName": str, "length": int, "scale": int|null, "decimal": "precise",
//    "time": "adaptive", "binary": "bytes", "expressions": [str, ...]}
// Each output line is "ANSWER " + {"answers": [{"default": <the field schema's default as
// JsonConverter writes it, absent when none>, "null": <a NULL value as JsonConverter writes it>}
// or "ERR:<exception>", ...]}.
package io.debezium.connector.sqlserver;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.debezium.config.CommonConnectorConfig.BinaryHandlingMode;
import io.debezium.jdbc.JdbcValueConverters.DecimalMode;
import io.debezium.jdbc.TemporalPrecisionMode;
import io.debezium.relational.Column;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.json.JsonConverter;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.util.Map;
import java.util.Optional;

public class SqlServerDefaultProbe {
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
        SqlServerDefaultValueConverter defaults = new SqlServerDefaultValueConverter(() -> {
            throw new SQLException("the probe has no server");
        }, converters);
        ObjectNode answer = JSON.createObjectNode();
        ArrayNode answers = answer.putArray("answers");
        for (JsonNode e : req.get("expressions")) {
            try {
                var editor = Column.editor().name("v").jdbcType(req.get("jdbcType").asInt())
                        .type(req.get("typeName").asText()).length(req.get("length").asInt()).optional(true)
                        .defaultValueExpression(e.asText());
                if (!req.get("scale").isNull()) {
                    editor.scale(req.get("scale").asInt());
                }
                Column column = editor.create();
                // as TableSchemaBuilder.addField: the parsed default, set when present
                Optional<Object> value = defaults.parseDefaultValue(column, e.asText());
                SchemaBuilder builder = converters.schemaBuilder(column).optional();
                if (column.hasDefaultValue() && value.isPresent()) {
                    builder.defaultValue(value.get());
                }
                Schema field = builder.build();
                Schema row = SchemaBuilder.struct().field("v", field).build();
                JsonNode written = JSON.readTree(json.fromConnectData("t", row, new Struct(row)));
                ObjectNode one = JSON.createObjectNode();
                JsonNode schema = written.get("schema").get("fields").get(0);
                if (schema.has("default")) {
                    one.set("default", schema.get("default"));
                }
                one.set("null", written.get("payload").get("v"));
                answers.add(one);
            }
            catch (Throwable t) {
                answers.add("ERR:" + t.getClass().getSimpleName() + ":" + t.getMessage());
            }
        }
        return answer;
    }
}
