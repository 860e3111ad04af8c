-- SQL Server's CDC surface emulated on PostgreSQL (test infrastructure, not a SQL Server).
-- The `sys` objects SQL Server always has: the sys.fn_cdc_* functions, the sys.sp_cdc_*
-- procedures, sys.columns / sys.types, DB_NAME(), OBJECT_ID(). sys.sp_cdc_enable_db creates the
-- `cdc` schema with cdc.change_tables, cdc.captured_columns, cdc.index_columns and
-- cdc.lsn_time_mapping, and the logical replication slot the capture-agent emulator reads.
--
-- LSNs are binary(10) as in SQL Server (bytea here): the first 8 bytes are a PostgreSQL WAL
-- position (big-endian) counted from where sys.sp_cdc_enable_db created the database's slot
-- (sys.lsn_origin) plus 00000020:00000000, the last 2 a slot number: each database has its own
-- LSN sequence, as each SQL Server database has its own log, and two databases' LSNs overlap.
-- A transaction's __$start_lsn is the end of its commit record, a change's __$seqval the WAL
-- position of the change: they order as SQL Server's do (commit order, then change order inside
-- a transaction; seqval < start_lsn).
CREATE SCHEMA sys;

-- MAX/MIN of binary values, which SQL Server has and PostgreSQL lacks (sys is on the search path)
CREATE FUNCTION sys.bytea_larger(a bytea, b bytea) RETURNS bytea LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT CASE WHEN a >= b THEN a ELSE b END $$;
CREATE FUNCTION sys.bytea_smaller(a bytea, b bytea) RETURNS bytea LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT CASE WHEN a <= b THEN a ELSE b END $$;
CREATE AGGREGATE sys.max(bytea) (SFUNC = sys.bytea_larger, STYPE = bytea);
CREATE AGGREGATE sys.min(bytea) (SFUNC = sys.bytea_smaller, STYPE = bytea);

CREATE FUNCTION sys.db_name() RETURNS text LANGUAGE sql STABLE AS $$ SELECT current_database()::text $$;

CREATE FUNCTION sys.version() RETURNS text LANGUAGE sql STABLE AS $$
  SELECT 'Microsoft SQL Server 2019 (RTM) - 15.0.2000.5 (X64) emulated on ' || version() $$;

-- SQL Server's two-part name ([dbo].[t], dbo.t, t) -> PostgreSQL's ("dbo"."t").
CREATE FUNCTION sys.pg_name(name text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  out text := ''; part text := ''; ch text; i int := 1; n int := length(name); bracket bool := false;
BEGIN
  WHILE i <= n LOOP
    ch := substr(name, i, 1);
    IF bracket THEN
      IF ch = ']' AND substr(name, i + 1, 1) = ']' THEN part := part || ']'; i := i + 1;
      ELSIF ch = ']' THEN bracket := false;
      ELSE part := part || ch; END IF;
    ELSIF ch = '[' THEN bracket := true;
    ELSIF ch = '.' THEN out := out || quote_ident(part) || '.'; part := '';
    ELSE part := part || ch; END IF;
    i := i + 1;
  END LOOP;
  RETURN out || quote_ident(part);
END $$;

CREATE FUNCTION sys.object_id(name text) RETURNS integer LANGUAGE plpgsql STABLE AS $$
DECLARE
  q text := sys.pg_name(name);
BEGIN
  IF strpos(q, '.') = 0 THEN q := 'dbo.' || q; END IF;
  RETURN to_regclass(q)::oid::bigint::int;
END $$;

CREATE VIEW sys.types AS
SELECT t.oid::bigint::int AS user_type_id, t.oid::bigint::int AS system_type_id,
       (CASE t.typname
          WHEN 'int2' THEN 'smallint' WHEN 'int4' THEN 'int' WHEN 'int8' THEN 'bigint'
          WHEN 'bool' THEN 'bit' WHEN 'numeric' THEN 'decimal' WHEN 'float4' THEN 'real'
          WHEN 'float8' THEN 'float' WHEN 'varchar' THEN 'nvarchar' WHEN 'text' THEN 'nvarchar'
          WHEN 'bpchar' THEN 'nchar' WHEN 'bytea' THEN 'varbinary' WHEN 'date' THEN 'date'
          WHEN 'time' THEN 'time' WHEN 'timestamp' THEN 'datetime2' WHEN 'timestamptz' THEN 'datetimeoffset'
          WHEN 'uuid' THEN 'uniqueidentifier' WHEN 'xml' THEN 'xml' ELSE t.typname::text END) AS name
FROM pg_type AS t;

CREATE VIEW sys.columns AS
SELECT a.attrelid::bigint::int AS object_id, a.attname::text AS name, a.attnum::int AS column_id,
       a.atttypid::bigint::int AS user_type_id, a.atttypid::bigint::int AS system_type_id,
       (CASE WHEN t.typname IN ('varchar', 'bpchar') AND a.atttypmod > 0 THEN (a.atttypmod - 4) * 2
             WHEN t.typname IN ('text', 'bytea', 'xml', 'varchar') THEN -1
             WHEN t.typname = 'numeric' THEN 17
             WHEN t.typlen > 0 THEN t.typlen ELSE -1 END)::smallint AS max_length,
       (CASE WHEN t.typname = 'numeric' AND a.atttypmod > 0 THEN ((a.atttypmod - 4) >> 16) & 65535
             WHEN t.typname = 'numeric' THEN 38
             WHEN t.typname = 'int2' THEN 5 WHEN t.typname = 'int4' THEN 10 WHEN t.typname = 'int8' THEN 19
             WHEN t.typname = 'float4' THEN 24 WHEN t.typname = 'float8' THEN 53 WHEN t.typname = 'bool' THEN 1
             WHEN t.typname = 'date' THEN 10 WHEN t.typname IN ('time', 'timestamp', 'timestamptz') THEN 26
             ELSE 0 END)::smallint AS precision,
       (CASE WHEN t.typname = 'numeric' AND a.atttypmod > 0 THEN (a.atttypmod - 4) & 65535
             WHEN t.typname IN ('time', 'timestamp', 'timestamptz') THEN
               CASE WHEN a.atttypmod >= 0 THEN a.atttypmod ELSE 6 END
             ELSE 0 END)::smallint AS scale,
       NOT a.attnotnull AS is_nullable,
       coalesce((SELECT d.oid::bigint::int FROM pg_attrdef AS d
                 WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum AND a.attgenerated = ''), 0) AS default_object_id
FROM pg_attribute AS a JOIN pg_type AS t ON t.oid = a.atttypid
WHERE a.attnum > 0 AND NOT a.attisdropped;

-- A column DEFAULT as SQL Server stores its default constraint's text: numbers ((0)), ((-1.5));
-- bool ((1))/((0)); strings, dates and uuids ('abc') (quotes kept doubled); bytea (0x0102);
-- NULL (NULL); now()/CURRENT_TIMESTAMP (getdate()); gen_random_uuid() (newid()); any other
-- expression as PostgreSQL prints it, in parentheses.
CREATE FUNCTION sys.default_definition(expr text, typname text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE lit text;
BEGIN
  IF expr IS NULL THEN RETURN NULL; END IF;
  IF expr ~* '^NULL(::.*)?$' THEN RETURN '(NULL)'; END IF;
  IF expr ~* '^(now\(\)|CURRENT_TIMESTAMP|LOCALTIMESTAMP)' THEN RETURN '(getdate())'; END IF;
  IF expr = 'gen_random_uuid()' THEN RETURN '(newid())'; END IF;
  IF expr ~ '^''' THEN
    lit := substring(expr from '^''((?:[^'']|'''')*)''');
  ELSIF expr ~ '^\(?-?[0-9.]+(e[+-]?[0-9]+)?\)?$' OR expr IN ('true', 'false') THEN
    lit := btrim(expr, '()');
  ELSE
    RETURN '(' || expr || ')';
  END IF;
  IF typname IN ('int2', 'int4', 'int8', 'numeric', 'float4', 'float8') THEN RETURN '((' || lit || '))'; END IF;
  IF typname = 'bool' THEN RETURN CASE WHEN lit IN ('true', 't', '1') THEN '((1))' ELSE '((0))' END; END IF;
  IF typname = 'bytea' THEN RETURN '(0x' || substr(lit, 3) || ')'; END IF;
  RETURN '(''' || lit || ''')';
END $$;

CREATE VIEW sys.default_constraints AS
SELECT d.oid::bigint::int AS object_id, d.adrelid::bigint::int AS parent_object_id, d.adnum::int AS parent_column_id,
       sys.default_definition(pg_get_expr(d.adbin, d.adrelid), t.typname::text) AS definition
FROM pg_attrdef AS d
JOIN pg_attribute AS a ON a.attrelid = d.adrelid AND a.attnum = d.adnum AND a.attgenerated = ''
JOIN pg_type AS t ON t.oid = a.atttypid;

-- USE [db]: the emulator serves one database per connection; another name is SQL Server's error 911.
CREATE FUNCTION sys.use_database(name text) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  IF name <> current_database() THEN
    RAISE EXCEPTION 'Database ''%'' does not exist. Make sure that the name is entered correctly.', name;
  END IF;
  RETURN 1;
END $$;

-- sys.lsn_origin: the WAL position the database's LSNs count from (one row, set by sys.sp_cdc_enable_db)
CREATE TABLE sys.lsn_origin (origin pg_lsn NOT NULL);

CREATE FUNCTION sys.lsn_of(wal pg_lsn, slot int DEFAULT 0) RETURNS bytea LANGUAGE sql STABLE AS $$
  SELECT decode(lpad(to_hex((($1 - o.origin)::numeric + 137438953472)::bigint), 16, '0') || lpad(to_hex($2), 4, '0'),
                'hex') FROM sys.lsn_origin AS o $$;

CREATE FUNCTION sys.cdc_enabled() RETURNS bool LANGUAGE sql STABLE AS $$
  SELECT to_regclass('cdc.change_tables') IS NOT NULL $$;

-- sys.databases: the emulator serves one database per connection, the current one.
CREATE VIEW sys.databases AS SELECT current_database()::text AS name, sys.cdc_enabled() AS is_cdc_enabled;

CREATE FUNCTION sys.fn_cdc_get_max_lsn() RETURNS bytea LANGUAGE plpgsql STABLE AS $$
DECLARE result bytea;
BEGIN
  IF NOT sys.cdc_enabled() THEN RETURN NULL; END IF;
  EXECUTE 'SELECT sys.max(start_lsn) FROM cdc.lsn_time_mapping' INTO result;
  RETURN result;
END $$;

CREATE FUNCTION sys.fn_cdc_get_min_lsn(capture_instance text) RETURNS bytea LANGUAGE plpgsql STABLE AS $$
DECLARE result bytea;
BEGIN
  IF sys.cdc_enabled() THEN
    EXECUTE 'SELECT start_lsn FROM cdc.change_tables WHERE capture_instance = $1' INTO result USING capture_instance;
  END IF;
  RETURN coalesce(result, '\x00000000000000000000'::bytea);
END $$;

CREATE FUNCTION sys.fn_cdc_increment_lsn(lsn bytea) RETURNS bytea LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE result bytea := lsn; i int; b int;
BEGIN
  IF lsn IS NULL THEN RETURN NULL; END IF;
  i := length(lsn) - 1;
  WHILE i >= 0 LOOP
    b := get_byte(result, i);
    IF b < 255 THEN RETURN set_byte(result, i, b + 1); END IF;
    result := set_byte(result, i, 0);
    i := i - 1;
  END LOOP;
  RETURN result;
END $$;

CREATE FUNCTION sys.fn_cdc_decrement_lsn(lsn bytea) RETURNS bytea LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE result bytea := lsn; i int; b int;
BEGIN
  IF lsn IS NULL THEN RETURN NULL; END IF;
  i := length(lsn) - 1;
  WHILE i >= 0 LOOP
    b := get_byte(result, i);
    IF b > 0 THEN RETURN set_byte(result, i, b - 1); END IF;
    result := set_byte(result, i, 255);
    i := i - 1;
  END LOOP;
  RETURN result;
END $$;

-- The commit time (tran_end_time) of the highest mapped LSN not above `lsn`.
CREATE FUNCTION sys.fn_cdc_map_lsn_to_time(lsn bytea) RETURNS timestamp LANGUAGE plpgsql STABLE AS $$
DECLARE result timestamp;
BEGIN
  IF NOT sys.cdc_enabled() THEN RETURN NULL; END IF;
  EXECUTE 'SELECT tran_end_time FROM cdc.lsn_time_mapping WHERE start_lsn <= $1 ORDER BY start_lsn DESC LIMIT 1'
    INTO result USING lsn;
  RETURN result;
END $$;

CREATE FUNCTION sys.slot_name() RETURNS text LANGUAGE sql STABLE AS $$
  SELECT left('sqlserver_cdc_' || regexp_replace(lower(current_database()), '[^a-z0-9_]', '_', 'g'), 63) $$;

CREATE PROCEDURE sys.sp_cdc_enable_db() LANGUAGE plpgsql AS $$
BEGIN
  IF sys.cdc_enabled() THEN RETURN; END IF;
  -- first: a slot cannot be created in a transaction that has written
  INSERT INTO sys.lsn_origin SELECT lsn FROM pg_create_logical_replication_slot(sys.slot_name(), 'test_decoding');
  CREATE SCHEMA cdc;
  CREATE TABLE cdc.change_tables (
    object_id int PRIMARY KEY, version int NOT NULL DEFAULT 0, source_object_id int NOT NULL,
    capture_instance text NOT NULL UNIQUE, start_lsn bytea NOT NULL, end_lsn bytea,
    supports_net_changes bool NOT NULL DEFAULT false, has_drop_pending bool, role_name text,
    index_name text, filegroup_name text, create_date timestamp NOT NULL DEFAULT (now() AT TIME ZONE 'UTC'),
    partition_switch bool NOT NULL DEFAULT false);
  CREATE TABLE cdc.captured_columns (
    object_id int NOT NULL, column_name text NOT NULL, column_id int, column_type text NOT NULL,
    column_ordinal int NOT NULL, is_computed bool NOT NULL DEFAULT false,
    PRIMARY KEY (object_id, column_ordinal));
  CREATE TABLE cdc.index_columns (
    object_id int NOT NULL, column_name text NOT NULL, index_ordinal int NOT NULL, column_id int NOT NULL,
    PRIMARY KEY (object_id, index_ordinal));
  CREATE TABLE cdc.lsn_time_mapping (
    start_lsn bytea PRIMARY KEY, tran_begin_time timestamp, tran_end_time timestamp,
    tran_id bytea NOT NULL, tran_begin_lsn bytea);
END $$;

CREATE FUNCTION sys.sp_cdc_help_change_data_capture()
RETURNS TABLE (source_schema text, source_table text, capture_instance text, object_id int,
               source_object_id int, start_lsn bytea, end_lsn bytea, supports_net_changes bool,
               has_drop_pending bool, role_name text, index_name text, filegroup_name text,
               create_date timestamp, index_column_list text, captured_column_list text)
LANGUAGE plpgsql STABLE AS $$
BEGIN
  IF NOT sys.cdc_enabled() THEN RETURN; END IF;
  RETURN QUERY EXECUTE $q$
    SELECT n.nspname::text, c.relname::text, ct.capture_instance, ct.object_id, ct.source_object_id,
           ct.start_lsn, ct.end_lsn, ct.supports_net_changes, ct.has_drop_pending, ct.role_name,
           ct.index_name, ct.filegroup_name, ct.create_date,
           (SELECT string_agg('[' || replace(ic.column_name, ']', ']]') || ']', ', ' ORDER BY ic.index_ordinal)
              FROM cdc.index_columns AS ic WHERE ic.object_id = ct.object_id),
           (SELECT string_agg('[' || replace(cc.column_name, ']', ']]') || ']', ', ' ORDER BY cc.column_ordinal)
              FROM cdc.captured_columns AS cc WHERE cc.object_id = ct.object_id)
    FROM cdc.change_tables AS ct
    JOIN pg_class AS c ON c.oid = ct.source_object_id::bigint::oid
    JOIN pg_namespace AS n ON n.oid = c.relnamespace
    ORDER BY n.nspname, c.relname, ct.start_lsn $q$;
END $$;

CREATE PROCEDURE sys.sp_cdc_enable_table(source_schema text, source_name text, role_name text,
                                         capture_instance text DEFAULT NULL, index_name text DEFAULT NULL,
                                         supports_net_changes bool DEFAULT false)
LANGUAGE plpgsql AS $$
DECLARE
  source oid; instance text := coalesce(capture_instance, source_schema || '_' || source_name);
  ct_name text := instance || '_CT'; ct oid; columns text; ct_cols text; start bytea;
  existing int; idx oid; has_key bool;
BEGIN
  IF NOT sys.cdc_enabled() THEN
    RAISE EXCEPTION 'The database ''%'' is not enabled for Change Data Capture. Ensure that the correct database context is set and retry the operation. To report on the databases enabled for Change Data Capture, query the is_cdc_enabled column in the sys.databases catalog view.',
      current_database();
  END IF;
  source := to_regclass(quote_ident(source_schema) || '.' || quote_ident(source_name));
  IF source IS NULL THEN
    RAISE EXCEPTION 'Source table ''%.%'' does not exist in the current database. Ensure that the correct database context is set. Specify a valid schema and table name for the database.',
      source_schema, source_name;
  END IF;
  IF EXISTS (SELECT 1 FROM cdc.change_tables AS t WHERE t.capture_instance = instance) THEN
    RAISE EXCEPTION 'Could not create a capture instance because the capture instance name ''%'' already exists in the current database. Specify an explicit unique name for the parameter @capture_instance.',
      instance;
  END IF;
  SELECT count(*) INTO existing FROM cdc.change_tables AS t WHERE t.source_object_id = source::bigint::int;
  IF existing >= 2 THEN
    RAISE EXCEPTION 'Could not create a capture instance because a table can have at most two capture instances, and source table ''%.%'' already has two. Disable one of them and retry.',
      source_schema, source_name;
  END IF;
  IF index_name IS NULL THEN
    SELECT i.indexrelid INTO idx FROM pg_index AS i WHERE i.indrelid = source AND i.indisprimary;
  ELSE
    idx := to_regclass(quote_ident(source_schema) || '.' || quote_ident(index_name));
    IF idx IS NULL THEN
      RAISE EXCEPTION 'The specified @index_name ''%'' is not a unique index for the source table.', index_name;
    END IF;
  END IF;
  IF supports_net_changes AND idx IS NULL THEN
    RAISE EXCEPTION 'Source table ''%.%'' does not have a primary key, but @supports_net_changes is set to 1. Either set @supports_net_changes to 0 or specify a unique index with @index_name.',
      source_schema, source_name;
  END IF;
  -- before images of updates and deletes come from logical decoding: log whole old rows
  EXECUTE format('ALTER TABLE %s REPLICA IDENTITY FULL', source::regclass);
  SELECT string_agg(format('%I %s', a.attname, format_type(a.atttypid, a.atttypmod)), ', ' ORDER BY a.attnum)
    INTO ct_cols FROM pg_attribute AS a WHERE a.attrelid = source AND a.attnum > 0 AND NOT a.attisdropped;
  EXECUTE format('CREATE TABLE cdc.%I ("__$start_lsn" bytea NOT NULL, "__$end_lsn" bytea, "__$seqval" bytea NOT NULL, '
                 '"__$operation" int NOT NULL, "__$update_mask" bytea, %s, "__$command_id" int, '
                 'PRIMARY KEY ("__$start_lsn", "__$seqval", "__$operation"))', ct_name, ct_cols);
  ct := to_regclass(format('cdc.%I', ct_name));
  start := sys.lsn_of(pg_current_wal_insert_lsn());
  INSERT INTO cdc.change_tables (object_id, source_object_id, capture_instance, start_lsn, supports_net_changes,
                                 has_drop_pending, role_name, index_name)
    VALUES (ct::bigint::int, source::bigint::int, instance, start, supports_net_changes, NULL, role_name,
            (SELECT relname::text FROM pg_class WHERE oid = idx));
  INSERT INTO cdc.captured_columns (object_id, column_name, column_id, column_type, column_ordinal)
    SELECT ct::bigint::int, a.attname::text, a.attnum, t.name, row_number() OVER (ORDER BY a.attnum)
    FROM pg_attribute AS a JOIN sys.types AS t ON t.user_type_id = a.atttypid::bigint::int
    WHERE a.attrelid = source AND a.attnum > 0 AND NOT a.attisdropped;
  IF idx IS NOT NULL THEN
    INSERT INTO cdc.index_columns (object_id, column_name, index_ordinal, column_id)
      SELECT ct::bigint::int, a.attname::text, k.ordinality, a.attnum
      FROM pg_index AS i, unnest(i.indkey) WITH ORDINALITY AS k(attnum, ordinality)
      JOIN pg_attribute AS a ON a.attnum = k.attnum
      WHERE i.indexrelid = idx AND a.attrelid = source;
  END IF;
  SELECT string_agg(format('%I', a.attname), ', ' ORDER BY a.attnum)
    INTO columns FROM pg_attribute AS a WHERE a.attrelid = source AND a.attnum > 0 AND NOT a.attisdropped;
  -- cdc.fn_cdc_get_all_changes_<instance>(from_lsn, to_lsn, row_filter_option): both bounds
  -- inclusive; outside [min LSN, max LSN] or with another row filter it fails as SQL Server does
  -- (error 313, whose text names the wrong thing).
  EXECUTE format($f$
    CREATE FUNCTION cdc.%I(from_lsn bytea, to_lsn bytea, row_filter_option text)
    RETURNS TABLE ("__$start_lsn" bytea, "__$seqval" bytea, "__$operation" int, "__$update_mask" bytea, %s)
    LANGUAGE plpgsql STABLE AS $body$
    BEGIN
      IF from_lsn IS NULL OR to_lsn IS NULL OR from_lsn < sys.fn_cdc_get_min_lsn(%L)
         OR to_lsn > sys.fn_cdc_get_max_lsn() OR from_lsn > to_lsn
         OR lower(row_filter_option) NOT IN ('all', 'all update old') THEN
        RAISE EXCEPTION 'An insufficient number of arguments were supplied for the procedure or function cdc.fn_cdc_get_all_changes_ ... .';
      END IF;
      RETURN QUERY EXECUTE 'SELECT "__$start_lsn", "__$seqval", "__$operation", "__$update_mask", %s FROM cdc.%I '
        'WHERE "__$start_lsn" BETWEEN $1 AND $2 AND ($3 = ''all update old'' OR "__$operation" <> 3) '
        'ORDER BY "__$start_lsn", "__$seqval", "__$operation"' USING from_lsn, to_lsn, lower(row_filter_option);
    END $body$ $f$, 'fn_cdc_get_all_changes_' || instance, ct_cols, instance, replace(columns, '''', ''''''), ct_name);
END $$;

CREATE PROCEDURE sys.sp_cdc_disable_table(source_schema text, source_name text, capture_instance text)
LANGUAGE plpgsql AS $$
DECLARE ct int;
BEGIN
  IF NOT sys.cdc_enabled() THEN
    RAISE EXCEPTION 'The database ''%'' is not enabled for Change Data Capture. Ensure that the correct database context is set and retry the operation. To report on the databases enabled for Change Data Capture, query the is_cdc_enabled column in the sys.databases catalog view.',
      current_database();
  END IF;
  SELECT t.object_id INTO ct FROM cdc.change_tables AS t WHERE t.capture_instance = sp_cdc_disable_table.capture_instance
    AND t.source_object_id = to_regclass(quote_ident(source_schema) || '.' || quote_ident(source_name))::bigint::int;
  IF ct IS NULL THEN
    RAISE EXCEPTION 'Could not update the metadata that indicates table [%].[%] is enabled for Change Data Capture. The capture instance ''%'' does not exist for this table.',
      source_schema, source_name, capture_instance;
  END IF;
  EXECUTE format('DROP FUNCTION cdc.%I', 'fn_cdc_get_all_changes_' || capture_instance);
  EXECUTE format('DROP TABLE cdc.%I', capture_instance || '_CT');
  DELETE FROM cdc.captured_columns WHERE object_id = ct;
  DELETE FROM cdc.index_columns WHERE object_id = ct;
  DELETE FROM cdc.change_tables WHERE object_id = ct;
END $$;
