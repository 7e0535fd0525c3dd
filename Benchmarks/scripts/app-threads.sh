# Sourced by per-like and idle-app: starts the movies app from release binaries and reads its
# threads' schedstat. After `app_start BIN_DIR NAME`: $bin (the binaries), $work (a scratch
# directory, removed with the app on exit) and $pids (the host's and every plugin's); `threads`
# prints one line per thread: task, process/thread names, CPU ns, times scheduled in.
app_start() {
  bin=$(cd "${1:-Benchmarks/.build-flowbus/release}" && pwd)
  [ -x "$bin/flowbus" ] || { echo "no flowbus in $bin: build it first (swift build -c release --scratch-path Benchmarks/.build-flowbus)" >&2; exit 1; }
  work=$(mktemp -d "/tmp/flowbus-$2.XXXXXX")
  export FLOWBUS_RUN_DIR=$work/run
  trap '"$bin/flowbus" down > /dev/null 2>&1 || true; rm -rf "$work"' EXIT
  "$bin/flowbus" up --detach > "$work/up.log" 2>&1 || { cat "$work/up.log" >&2; exit 1; }
}

# The host's pid and every plugin's, from `flowbus ps`; call once the app has started.
app_pids() {
  pids=$("$bin/flowbus" ps | awk '/^flowbus host/ {gsub(",", "", $3); print $3} /^[a-z-]+\[[0-9]+\]/ {print $2}')
}

threads() {
  for p in $pids; do
    for t in /proc/"$p"/task/*; do
      [ -r "$t/schedstat" ] || continue
      printf '%s %s/%s %s\n' "${t#/proc/}" "$(tr ' ' _ < /proc/"$p"/comm)" "$(tr ' ' _ < "$t"/comm)" "$(cut -d' ' -f1,3 "$t"/schedstat)"
    done
  done 2> /dev/null | sort
}
