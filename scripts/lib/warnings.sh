# The project's own targets build without a single compiler warning. Sourced by scripts/test.

# fail_on_own_warnings LOG: fails when the build output in LOG has a warning from the project's own Sources/ or
# Tests/ (or one SwiftPM gives about the package itself). Warnings from dependencies (.build/checkouts) are not
# ours to fix. A clean build (CI's fresh clone) compiles every file and so shows every warning; an incremental one
# shows only those of the files it recompiled.
fail_on_own_warnings() {
  local log=$1 root package own
  root=$(pwd -P)
  package=$(basename "$root")
  own=$(grep -E "^($root|$(pwd))/(Sources|Tests)/[^:]+:[0-9]+:[0-9]+: warning:|^warning: '$package':" "$log" | sort -u || true)
  if [ -n "$own" ]; then
    echo
    echo "error: the build printed $(echo "$own" | wc -l) warning(s) from the project's own targets; fix them (warnings nobody reads hide the one that matters):" >&2
    echo "$own" >&2
    return 1
  fi
}
