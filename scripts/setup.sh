#!/usr/bin/env bash
# Sets a checkout up on a fresh machine, idempotently and quietly:
#  1. the database servers the tests and the demo start privately (PostgreSQL 15 with
#     pg_recvlogical, MariaDB), from Debian's packages when they are missing; their system
#     services are neither enabled nor started; unixODBC and the PostgreSQL ODBC driver, which
#     the SQL Server connector's tests reach their CDC emulator through (pyodbc);
#  2. .venv with cdc-lakehouse and its development extras (pins in constraints.txt);
#  3. the Delta Lake jars for classic Spark (maven/pom.xml) in .cache/spark-jars, once;
#  4. Azurite, the Azure Storage emulator the tests start (azurite/package-lock.json), in
#     .cache/azurite, reinstalled only when the lock file changes;
#  5. the tests' local GCS server (gcs-server/, Go, its modules pinned in go.sum), built into
#     .cache/gcs-server, rebuilt only when its sources change.
set -euo pipefail
cd "$(dirname "$0")/.."

need_debs=()
[ -x /usr/lib/postgresql/15/bin/postgres ] || need_debs+=(postgresql-15)
[ -x /usr/lib/postgresql/15/bin/pg_recvlogical ] || need_debs+=(postgresql-client-15)
command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || need_debs+=(mariadb-server)
command -v mariadb-install-db >/dev/null 2>&1 || need_debs+=(mariadb-server)
command -v mvn >/dev/null 2>&1 || need_debs+=(maven)
command -v java >/dev/null 2>&1 || need_debs+=(openjdk-17-jre-headless)
command -v odbcinst >/dev/null 2>&1 || need_debs+=(unixodbc)
odbcinst -q -d -n PostgreSQL\ Unicode >/dev/null 2>&1 || need_debs+=(odbc-postgresql)
if [ ${#need_debs[@]} -gt 0 ]; then
  mapfile -t need_debs < <(printf '%s\n' "${need_debs[@]}" | sort -u)
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "setup: missing ${need_debs[*]}; install them (Debian: apt-get install ${need_debs[*]}) and run again" >&2
    exit 1
  fi
  echo "installing Debian packages: ${need_debs[*]}"
  # No service of these packages is started or enabled: the tests start private servers.
  policy=/usr/sbin/policy-rc.d
  created_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && created_policy=1
  fi
  trap '[ "$created_policy" = 1 ] && rm -f "$policy"' EXIT
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${need_debs[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "creating .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
pip_log=$(mktemp)
if ! { .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip &&
       .venv/bin/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e ".[dev]"; } \
     >"$pip_log" 2>&1; then
  cat "$pip_log" >&2
  echo "setup: pip install failed (output above)" >&2
  exit 1
fi
rm -f "$pip_log"

jars=$(.venv/bin/python -c 'from pipelines.spark_jars import local_jar_dir; print(local_jar_dir())')
if [ ! -f "$jars/.complete" ]; then
  echo "fetching the Delta Lake jars into $jars (maven/pom.xml)"
  rm -rf "$jars" && mkdir -p "$jars"
  mvn_log=$(mktemp)
  if ! mvn -q -B -Dstyle.color=never -f maven/pom.xml dependency:copy-dependencies -DoutputDirectory="$jars" \
       >"$mvn_log" 2>&1; then
    cat "$mvn_log" >&2
    echo "setup: fetching the Delta Lake jars failed (Maven output above)" >&2
    exit 1
  fi
  rm -f "$mvn_log"
  touch "$jars/.complete"
fi
azurite=.cache/azurite
if ! cmp -s azurite/package-lock.json "$azurite/package-lock.json" || [ ! -f "$azurite/.complete" ]; then
  command -v npm >/dev/null 2>&1 || { echo "setup: npm is missing (Node.js 20 or later); install it and run again" >&2; exit 1; }
  echo "installing Azurite into $azurite (azurite/package-lock.json)"
  rm -rf "$azurite" && mkdir -p "$azurite"
  cp azurite/package.json azurite/package-lock.json "$azurite/"
  npm_log=$(mktemp)
  if ! npm ci --prefix "$azurite" --no-audit --no-fund --ignore-scripts --loglevel=error >"$npm_log" 2>&1; then
    cat "$npm_log" >&2
    echo "setup: installing Azurite failed (npm output above)" >&2
    exit 1
  fi
  rm -f "$npm_log"
  touch "$azurite/.complete"
fi
gcs=.cache/gcs-server
gcs_stamp=$(cat gcs-server/go.mod gcs-server/go.sum gcs-server/*.go | sha256sum | cut -d' ' -f1)
if [ ! -x "$gcs/cdc-fake-gcs" ] || [ "$(cat "$gcs/.complete" 2>/dev/null)" != "$gcs_stamp" ]; then
  go=$(command -v go || echo /usr/local/go/bin/go)
  [ -x "$go" ] || { echo "setup: Go is missing (1.26 or later); install it and run again" >&2; exit 1; }
  echo "building the local GCS server into $gcs (gcs-server/)"
  mkdir -p "$gcs"
  go_log=$(mktemp)
  if ! (cd gcs-server && GOFLAGS=-mod=readonly "$go" build -trimpath -o "../$gcs/cdc-fake-gcs" .) >"$go_log" 2>&1; then
    cat "$go_log" >&2
    echo "setup: building the local GCS server failed (Go output above)" >&2
    exit 1
  fi
  rm -f "$go_log"
  echo "$gcs_stamp" > "$gcs/.complete"
fi
echo "installed: $(.venv/bin/cdc-lakehouse --help | head -1)"
