# PostgreSQL servers for the tests and benchmarks: installed with apt-get when missing, each in a folder of its own on
# a loopback port, stopped afterwards. Sourced by scripts/test and scripts/postgres-server (after prerequisites.sh).
#
# PostgreSQL refuses to run as root: as root, the server runs as the `postgres` user (created by the package).

postgres_bin_dir() {
  local dir
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4 -n -r); do
    if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then echo "$dir"; return 0; fi
  done
  dir=$(command -v initdb 2>/dev/null || true)
  if [ -n "$dir" ]; then dirname "$dir"; return 0; fi
  return 1
}

# Installs the PostgreSQL server when no initdb is found, without creating or starting Debian's default cluster.
ensure_postgres() {
  if postgres_bin_dir >/dev/null; then return 0; fi
  as_root mkdir -p /etc/postgresql-common
  if [ ! -e /etc/postgresql-common/createcluster.conf ]; then
    echo "create_main_cluster = false" | as_root tee /etc/postgresql-common/createcluster.conf >/dev/null
  fi
  apt_install postgresql
  postgres_bin_dir >/dev/null || { echo "error: PostgreSQL was installed but initdb is not found under /usr/lib/postgresql/*/bin" >&2; return 1; }
}

# Runs a command as the user the server runs as: `postgres` when we are root, else ourselves.
as_postgres_user() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# postgres_start DIR PORT [SETTINGS...]: initialises DIR when empty, then starts a server on 127.0.0.1:PORT with its
# socket in DIR, and waits until it accepts connections. Extra arguments are `-c name=value` server settings.
postgres_start() {
  local dir=$1 port=$2 bin
  shift 2
  bin=$(postgres_bin_dir)
  mkdir -p "$dir"
  if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; chmod 700 "$dir"; fi
  if [ ! -e "$dir/PG_VERSION" ]; then
    as_postgres_user "$bin/initdb" -D "$dir" -A trust -U postgres -E UTF8 --locale=C --no-sync >"$dir.initdb.log" 2>&1 || {
      cat "$dir.initdb.log" >&2
      echo "error: initdb failed in $dir" >&2
      return 1
    }
  fi
  # The server outlives this script: it must not inherit descriptors of whoever started the script (a parent
  # waiting for a pipe or a process-exit descriptor to close would wait for the server's end).
  (
    for fd in /proc/self/fd/*; do
      fd=${fd##*/}
      if [ "$fd" -gt 2 ] && [ "$fd" != 255 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
    done
    as_postgres_user "$bin/pg_ctl" -D "$dir" -l "$dir/log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $dir $*" start >/dev/null </dev/null
  ) || {
    tail -n 20 "$dir/log" >&2 || true
    echo "error: PostgreSQL did not start in $dir on port $port" >&2
    return 1
  }
}

# postgres_stop DIR [MODE]: stops the server of DIR (MODE fast by default, or immediate); quiet when none runs.
postgres_stop() {
  local dir=$1 mode=${2:-fast} bin
  bin=$(postgres_bin_dir) || return 0
  if [ -e "$dir/postmaster.pid" ]; then
    as_postgres_user "$bin/pg_ctl" -D "$dir" -m "$mode" -w -t 60 stop >/dev/null 2>&1 || true
  fi
}

# Settings of test servers: fsync off (a test server's data is thrown away; flagsd's own durability is tested on
# SQLite with kill -9), room for the connection pools of parallel tests.
POSTGRES_TEST_SETTINGS="-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=400"

# Starts the test server under a new temporary root and exports SWITCHYARD_TEST_POSTGRES_URL (the server's
# `postgres` database; tests create a database each) and SWITCHYARD_TEST_POSTGRES_ROOT (where tests start private
# servers, e.g. to stop and restart one). Stops every server under the root, and removes it, on exit.
start_test_postgres() {
  local root port
  root=$(mktemp -d "${TMPDIR:-/tmp}/switchyard-pg.XXXXXX")
  chmod 755 "$root"
  if [ "$(id -u)" = 0 ]; then chown postgres "$root"; fi
  export SWITCHYARD_TEST_POSTGRES_ROOT=$root
  trap stop_test_postgres EXIT
  port=$(free_port)
  echo "==> starting PostgreSQL for the tests on 127.0.0.1:$port ($root)"
  # shellcheck disable=SC2086
  postgres_start "$root/main" "$port" $POSTGRES_TEST_SETTINGS
  export SWITCHYARD_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
}

stop_test_postgres() {
  local root=${SWITCHYARD_TEST_POSTGRES_ROOT:-} dir
  [ -n "$root" ] && [ -d "$root" ] || return 0
  for dir in "$root"/*/; do
    [ -e "$dir/PG_VERSION" ] && postgres_stop "${dir%/}" immediate
  done
  rm -rf "$root"
}
