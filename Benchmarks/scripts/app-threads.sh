# Sourced by per-like, per-journey, journey-profile and idle-app: starts the movies app from
# release binaries and reads its threads' schedstat. After `app_start BIN_DIR NAME`: $bin (the
# binaries), $work (a scratch directory, removed with the app on exit) and $pids (the host's and
# every running plugin's); `threads` prints one line per thread: task, process/thread names, CPU
# ns, times scheduled in. FLOWBUS_UP_ARGS goes to `flowbus up` (e.g. `--placement shared`; on two
# CPUs its default is pinned).
app_start() {
  bin=$(cd "${1:-Benchmarks/.build-flowbus/release}" && pwd)
  [ -x "$bin/flowbus" ] || { echo "no flowbus in $bin: build it first (swift build -c release --scratch-path Benchmarks/.build-flowbus)" >&2; exit 1; }
  work=$(mktemp -d "/tmp/flowbus-$2.XXXXXX")
  export FLOWBUS_RUN_DIR=$work/run
  trap '"$bin/flowbus" down > /dev/null 2>&1 || true; rm -rf "$work"' EXIT
  "$bin/flowbus" up --detach ${FLOWBUS_UP_ARGS:-} > "$work/up.log" 2>&1 || { cat "$work/up.log" >&2; exit 1; }
}

# One line per process of the app, from `flowbus ps`: its pid, then `host` or the plugin
# instance's name (`vm-details[0]`).
app_names() {
  "$bin/flowbus" ps | awk '/^flowbus host/ {gsub(",", "", $3); print $3, "host"} /^[a-z-]+\[[0-9]+\]/ {print $2, $1}'
}

# The host's pid and every plugin's; call once the app has started.
app_pids() {
  # A plugin not started yet shows no pid in `flowbus ps`.
  pids=$(app_names | cut -d' ' -f1 | grep -E '^[0-9]+$')
}

threads() {
  for p in $pids; do
    for t in /proc/"$p"/task/*; do
      [ -r "$t/schedstat" ] || continue
      printf '%s %s/%s %s\n' "${t#/proc/}" "$(tr ' ' _ < /proc/"$p"/comm)" "$(tr ' ' _ < "$t"/comm)" "$(cut -d' ' -f1,3 "$t"/schedstat)"
    done
  done 2> /dev/null | sort
}

# `by_kind PER SCALE CPU_OVER RUNS_OVER FORMAT`: `join before after` on stdin, summed by kind of
# thread (process/thread, the thread's trailing -N dropped): CPU ns ÷ PER ÷ SCALE, times scheduled
# in ÷ PER; the kinds over either bound, costliest first, their two figures printed with FORMAT.
by_kind() {
  awk -v n="$1" -v s="$2" -v cmin="$3" -v rmin="$4" -v f="$5" '{ k = $2; sub(/-[0-9]+$/, "", k); c[k] += ($6 - $3) / n / s; r[k] += ($7 - $4) / n }
    END { for (k in c) if (c[k] > cmin || r[k] > rmin) printf "  %-40s " f "\n", k, c[k], r[k] }' | sort -k2 -n -r
}

# `journey_script N FILE [signin]`: a `flowbus drive` script that opens one session and plays
# app-journey's seven intents in it N times (logIn, an actor, a movie, like, the Likes tab, the
# Settings tab, logOut, each after the screen it is pressed on shows); with `signin`, only logIn,
# the Settings tab and logOut (what the sign-in and sign-out flows cost, to set beside the whole).
journey_script() {
  {
    echo '- open: {}'
    for _ in $(seq "$1"); do
      echo '- send: {action: logIn, fields: {email: demo@flowbus.dev, password: flowbus123}}'
      echo '- expect: {screen: home, phase: success}'
      if [ "${3:-}" = signin ]; then
        echo '- send: {action: selectTab, fields: {tab: settings}}'
        echo '- expect: {screen: settings, tab: settings, phase: success}'
        echo '- send: {action: logOut}'
        echo '- expect: {screen: signin, user: ""}'
        continue
      fi
      echo '- send: {action: select, fields: {item: "actor:1"}}'
      echo '- expect: {screen: details, phase: success, stack: [home, details]}'
      echo '- send: {action: select, fields: {item: "movie:19"}}'
      echo '- expect: {screen: details, phase: success, stack: [home, details, details]}'
      echo '- send: {action: like}'
      echo '- send: {action: selectTab, fields: {tab: likes}}'
      echo '- expect: {screen: likes, tab: likes, phase: success}'
      echo '- send: {action: selectTab, fields: {tab: settings}}'
      echo '- expect: {screen: settings, tab: settings, phase: success}'
      echo '- send: {action: logOut}'
      echo '- expect: {screen: signin, user: ""}'
    done
  } > "$2"
}
