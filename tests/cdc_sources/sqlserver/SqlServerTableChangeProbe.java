// Asks Debezium 3.6.3 how a SQL Server table change is written in a schema change event, so
// test_schema_changes.py can compare cdc_sources.sqlserver.schema_changes with it.
//
// Each input line is one JSON request, each output line "ANSWER " + one JSON answer:
//   {"type": "CREATE"|"ALTER", "db", "schema", "table", "pk": [names],
//    "columns": [{"name", "jdbcType", "typeName", "length" (or null), "scale" (or null), "position", "optional",
//                 "default" (the default constraint's text, or null)}]}
//       -> {"change": the ConnectTableChangeSerializer struct as the JSON converter writes it}
// The columns are built as Debezium's SqlServerConnection builds them from getColumns (type name
// and expression the type name, no charset, not auto-incremented, not generated, COLUMN_DEF as
// the default value expression).
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.debezium.relational.Column;
import io.debezium.relational.ColumnEditor;
import io.debezium.relational.Table;
import io.debezium.relational.TableEditor;
import io.debezium.relational.TableId;
import io.debezium.relational.history.ConnectTableChangeSerializer;
import io.debezium.relational.history.TableChanges;
import io.debezium.schema.SchemaNameAdjuster;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.json.JsonConverter;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

public class SqlServerTableChangeProbe {
    static final ObjectMapper JSON = new ObjectMapper();
    static final ConnectTableChangeSerializer CONNECT = new ConnectTableChangeSerializer(SchemaNameAdjuster.NO_OP);

    public static void main(String[] args) throws Exception {
        JsonConverter converter = new JsonConverter();
        converter.configure(Map.of("schemas.enable", "false", "converter.type", "value"));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null;) {
            JsonNode req = JSON.readTree(line);
            TableEditor editor = Table.editor().tableId(new TableId(req.get("db").asText(), req.get("schema").asText(),
                    req.get("table").asText()));
            for (JsonNode c : req.get("columns")) {
                ColumnEditor column = Column.editor().name(c.get("name").asText()).jdbcType(c.get("jdbcType").asInt())
                        .type(c.get("typeName").asText(), c.get("typeName").asText())
                        .position(c.get("position").asInt()).optional(c.get("optional").asBoolean());
                if (!c.get("length").isNull()) {
                    column.length(c.get("length").asInt());
                }
                if (!c.get("scale").isNull()) {
                    column.scale(c.get("scale").asInt());
                }
                if (!c.get("default").isNull()) {
                    column.defaultValueExpression(c.get("default").asText());
                }
                editor.addColumn(column.create());
            }
            List<String> pk = new ArrayList<>();
            req.get("pk").forEach(n -> pk.add(n.asText()));
            editor.setPrimaryKeyNames(pk);
            Table table = editor.create();
            TableChanges changes = new TableChanges();
            if (req.get("type").asText().equals("CREATE")) {
                changes.create(table);
            }
            else {
                changes.alter(table);
            }
            List<Struct> structs = CONNECT.serialize(changes);
            byte[] json = converter.fromConnectData("t", CONNECT.getChangeSchema(), structs.get(0));
            ObjectNode answer = JSON.createObjectNode();
            answer.set("change", JSON.readTree(json));
            out.append("ANSWER ").append(JSON.writeValueAsString(answer)).append('\n');
        }
        System.out.print(out);
        System.out.flush();
    }
}
