// A MySQL Connector/J query interceptor that lets Debezium's MySQL connector read a MariaDB
// server: the connector asks "SHOW BINARY LOG STATUS" of every server whose VERSION() is 8.2 or
// later (MariaDB 10.x/11.x included), a statement MariaDB does not have; MariaDB answers the
// same question, with the same columns, to "SHOW MASTER STATUS". Nothing else is changed.
// Debezium drops a "queryInterceptors" driver property on purpose, so the harness installs the
// class as the driver's "propertiesTransform" (driver.propertiesTransform), which then adds it
// as the query interceptor of the connection. Loaded by the conformance harness only.

import com.mysql.cj.MysqlConnection;
import com.mysql.cj.Query;
import com.mysql.cj.conf.ConnectionPropertiesTransform;
import com.mysql.cj.interceptors.QueryInterceptor;
import com.mysql.cj.log.Log;
import com.mysql.cj.protocol.Resultset;
import com.mysql.cj.protocol.ServerSession;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Properties;
import java.util.function.Supplier;

public class MariaDbBinlogStatus implements QueryInterceptor, ConnectionPropertiesTransform {
    private MysqlConnection connection;

    @Override
    public Properties transformProperties(Properties props) {
        props.setProperty("queryInterceptors", MariaDbBinlogStatus.class.getName());
        return props;
    }

    @Override
    public QueryInterceptor init(MysqlConnection conn, Properties props, Log log) {
        this.connection = conn;
        return this;
    }

    @Override
    @SuppressWarnings("unchecked")
    public <T extends Resultset> T preProcess(Supplier<String> sql, Query interceptedQuery) {
        String text = sql == null ? null : sql.get();
        if (text == null || !text.trim().equalsIgnoreCase("SHOW BINARY LOG STATUS")) {
            return null;
        }
        try {
            return (T) ((Connection) connection).createStatement().executeQuery("SHOW MASTER STATUS");
        } catch (SQLException e) {
            throw new IllegalStateException("SHOW MASTER STATUS failed: " + e.getMessage(), e);
        }
    }

    @Override
    public boolean executeTopLevelOnly() {
        return true;
    }

    @Override
    public void destroy() {
        this.connection = null;
    }

    @Override
    public <T extends Resultset> T postProcess(Supplier<String> sql, Query interceptedQuery, T originalResultSet,
                                               ServerSession serverSession) {
        return null;
    }
}
