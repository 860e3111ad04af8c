// Applies DDL statements with Debezium 3.6.3's Oracle DDL parser (OracleDdlParser, the Antlr
// PL/SQL grammar) and prints the tables it leaves, so test_ddl_debezium.py can compare
// cdc_sources.oracle.ddl with it.
//
// Each input line is one case: TAB-separated hex-encoded UTF-8 fields: the database name, the
// current schema, then the statements, applied in order to one table model. Each output line is
// one hex-encoded field per table left (sorted by id): "<schema>.<table>", the primary key
// columns joined by ",", then one line per column "name|typeName|length|scale|optional", all
// joined by newlines; or a single "ERR:<class>: <message>" field.
import io.debezium.connector.oracle.antlr.OracleDdlParser;
import io.debezium.relational.Column;
import io.debezium.relational.Table;
import io.debezium.relational.TableId;
import io.debezium.relational.Tables;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

public class OracleDdlProbe {
    public static void main(String[] args) throws Exception {
        HexFormat hex = HexFormat.of();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null;) {
            String[] raw = line.split("\t", -1);
            String[] f = new String[raw.length];
            for (int i = 0; i < raw.length; i++) {
                f[i] = new String(hex.parseHex(raw[i]), StandardCharsets.UTF_8);
            }
            List<String> fields = new ArrayList<>();
            try {
                OracleDdlParser parser = new OracleDdlParser();
                parser.setCurrentDatabase(f[0]);
                parser.setCurrentSchema(f[1]);
                Tables tables = new Tables();
                for (int i = 2; i < f.length; i++) {
                    parser.parse(f[i], tables);
                }
                List<TableId> ids = new ArrayList<>(tables.tableIds());
                ids.sort(null);
                for (TableId id : ids) {
                    Table t = tables.forTable(id);
                    StringBuilder s = new StringBuilder(id.schema() + "." + id.table());
                    s.append('\n').append(String.join(",", t.primaryKeyColumnNames()));
                    for (Column c : t.columns()) {
                        s.append('\n').append(c.name()).append('|').append(c.typeName()).append('|').append(c.length())
                                .append('|').append(c.scale().map(String::valueOf).orElse("null")).append('|')
                                .append(c.isOptional());
                    }
                    fields.add(s.toString());
                }
            }
            catch (Throwable e) {
                fields.clear();
                fields.add("ERR:" + e.getClass().getSimpleName() + ": " + e.getMessage());
            }
            List<String> hexed = new ArrayList<>();
            for (String field : fields) {
                hexed.add(hex.formatHex(field.getBytes(StandardCharsets.UTF_8)));
            }
            out.append(String.join("\t", hexed)).append('\n');
        }
        System.out.print(out);
        System.out.flush();
    }
}
