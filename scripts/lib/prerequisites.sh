# Shared by the scripts: installs the system packages the build and tests need, when they are missing.

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

apt_install() {
  echo "==> installing $* (apt-get)"
  as_root apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get -o DPkg::Lock::Timeout=600 install -y -qq "$@" >/dev/null
}

# libsqlite3-dev: GRDB links the system SQLite. zlib1g-dev: flagsd gzips snapshots with the system zlib.
ensure_system_packages() {
  local missing=()
  [ -e /usr/include/sqlite3.h ] || missing+=(libsqlite3-dev)
  [ -e /usr/include/zlib.h ] || missing+=(zlib1g-dev)
  if [ ${#missing[@]} -gt 0 ]; then apt_install "${missing[@]}"; fi
}

# python3 with venv and pip: the OpenFeature client test (Tests/ofrep-python/run) and scripts/check-schemas make
# virtual environments and install from PyPI.
ensure_python() {
  if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    apt_install python3 python3-venv python3-pip
  fi
}

# chromium and chromium-driver: the web console's browser test (Tests/console-browser) drives Debian's chromium,
# headless, through Debian's chromedriver, both named by path; nothing is downloaded at run time.
ensure_browser() {
  local missing=()
  command -v chromium >/dev/null || missing+=(chromium)
  command -v chromedriver >/dev/null || missing+=(chromium-driver)
  if [ ${#missing[@]} -gt 0 ]; then apt_install "${missing[@]}"; fi
}

# promtool (Debian's prometheus package) checks and unit-tests Dashboards/alerts.yml; systemd-analyze (systemd)
# verifies deploy/systemd/flagsd.service; readelf (binutils) and dpkg name the libraries deploy/Dockerfile's runtime
# stage must install. No Prometheus or systemd service is started.
ensure_ops_tools() {
  local missing=()
  command -v promtool >/dev/null || missing+=(prometheus)
  command -v systemd-analyze >/dev/null || missing+=(systemd)
  command -v readelf >/dev/null || missing+=(binutils)
  if [ ${#missing[@]} -gt 0 ]; then apt_install "${missing[@]}"; fi
}
