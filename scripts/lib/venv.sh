# Python virtual environments for the project's checkers and test drivers: one function, sourced by each script.
#
#   source scripts/lib/venv.sh
#   ensure_venv .build/check-venv scripts/lib/requirements.txt "jsonschema and an OpenAPI validator"
#   exec .build/check-venv/bin/python ...
#
# Creates the environment on first use and again whenever the requirements file changes (a copy is kept inside),
# one setup at a time (parallel tests may call it together: a lock file beside the environment). Exits with status 2
# and a message saying what to install when python3, venv or PyPI is missing.
ensure_venv() {
  local venv=$1 requirements=$2 what=$3
  local python="${PYTHON:-python3}"
  mkdir -p "$(dirname "$venv")"
  exec 9>"$venv.lock"
  command -v flock >/dev/null && flock 9
  if ! cmp -s "$requirements" "$venv/requirements.txt" 2>/dev/null; then
    echo "==> setting up $venv ($what)" >&2
    command -v "$python" >/dev/null || { echo "error: $python not found; install python3 (with venv and pip)" >&2; exit 2; }
    rm -rf "$venv"
    "$python" -m venv "$venv" \
      || { echo "error: '$python -m venv' failed; install the venv module (Debian: apt-get install python3-venv)" >&2; exit 2; }
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$requirements" >&2 \
      || { echo "error: pip could not install $requirements; check access to PyPI" >&2; rm -rf "$venv"; exit 2; }
    cp "$requirements" "$venv/requirements.txt"
  fi
  exec 9>&-
}
