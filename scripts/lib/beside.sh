# Sourced by scripts/test and scripts/check-core: two test processes side by side.
#
# Within one test process the tests run one at a time (--no-parallel): many suites start a host
# and its plugins, and check the timing of restarts and heartbeats. Suites that spend most of their
# time waiting (a fault plan played for seconds, a SIGSTOP held, a Python suite) can run in a
# second process beside the others without starving them, and the run is shorter by their length.

# beside_require ARGS -- SUITE...: fails, saying what to do, when a suite named to run beside is
# not among the tests (`swift test list` with ARGS); a renamed suite would otherwise run nowhere.
beside_require() {
    local args=() listed suite
    while [ "$1" != -- ]; do args+=("$1"); shift; done
    shift
    listed=$(swift test list --skip-build "${args[@]}" 2>/dev/null)
    for suite in "$@"; do
        grep -q "\\.$suite/" <<<"$listed" || {
            echo "== the suite $suite, named to run beside the others, is not among the tests (renamed or removed?); update the list in $0" >&2
            return 1
        }
    done
}

# beside_pattern SUITE...: the test filter that matches those suites' tests.
beside_pattern() {
    echo "\\.($(IFS='|'; echo "$*"))/"
}

# beside_binary_runs PID: whether the `swift test` process PID runs its test binary yet (a child
# of swift-test, which PID is or has started).
beside_binary_runs() {
    local process
    for process in "$1" $(pgrep -P "$1"); do
        pgrep -P "$process" -f 'PackageTests\.xctest' >/dev/null && return 0
    done
    return 1
}

# beside_run LOG ECHO PATTERNS ARGS...: `swift test --skip-build --no-parallel ARGS` without the
# suites matching any of PATTERNS (a space-separated list, one per group), and each group at the
# same time in a test process of its own (the build must be done). The first's output goes to
# LOG, and to stdout too when ECHO is 1; the groups' follow it, in order, once all have ended.
# Returns the first failing exit status.
beside_run() {
    local log=$1 echo=$2 patterns=()
    read -ra patterns <<<"$3"
    shift 3
    local others=() pids=() skips=() status=0 pattern other index
    # Ctrl-C, or a kill of the script, stops the processes beside too (a background process of a
    # script ignores the terminal's Ctrl-C); the caller's own traps are put back afterwards.
    local previous
    previous=$(trap -p INT TERM)
    trap 'kill "${pids[@]}" 2>/dev/null; rm -f "${others[@]}"; exit 130' INT TERM
    for pattern in "${patterns[@]}"; do
        skips+=(--skip "$pattern")
        other=$(mktemp -t flowbus-test-beside.XXXXXX)
        others+=("$other")
        # --ignore-lock, in every one: SwiftPM locks .build even when it builds nothing (the
        # build is done), and a process that takes the lock first makes the others wait for the
        # whole of its run.
        swift test --skip-build --ignore-lock --no-parallel "$@" --filter "$pattern" > "$other" 2>&1 &
        pids+=($!)
        # Each runs its test binary before the next opens the build database: two at once have
        # met "unable to attach DB: database is locked", and one then ran no tests at all. (Its
        # output is no sign: written to a file, it comes in blocks, and a wait for its first line
        # took the whole minute allowed in CI, twice a run.)
        local waited=0
        while [ "$waited" -lt 300 ] && kill -0 "${pids[-1]}" 2>/dev/null && ! beside_binary_runs "${pids[-1]}"; do
            sleep 0.2
            waited=$((waited + 1))
        done
    done
    if [ "$echo" = 1 ]; then
        swift test --skip-build --ignore-lock --no-parallel "$@" "${skips[@]}" 2>&1 | tee "$log" || status=$?
        local finished=0
        for other in "${others[@]}"; do
            grep -q '^[✔✘] Test run with' "$other" && finished=$((finished + 1))
        done
        if [ "$finished" -eq ${#others[@]} ]; then
            echo "== the suites beside have finished; their output:"
        else
            echo "== waiting for the suites beside ($(cat "${others[@]}" | grep -v '^✔ Test run with' | grep -c '^✔ Test .* passed after' || true) of their tests passed so far)"
        fi
    else
        swift test --skip-build --ignore-lock --no-parallel "$@" "${skips[@]}" > "$log" 2>&1 || status=$?
    fi
    for index in "${!pids[@]}"; do
        local other_status=0
        wait "${pids[$index]}" || other_status=$?
        [ "$status" -ne 0 ] || status=$other_status
        [ "$echo" != 1 ] || cat "${others[$index]}"
        cat "${others[$index]}" >> "$log"
    done
    trap - INT TERM
    [ -z "$previous" ] || eval "$previous"
    rm -f "${others[@]}"
    return "$status"
}

# repeat_failures LOG: the failed tests and expectations in a test run's LOG, to print again at the
# end of a long run, where a CI log's tail shows them.
# A test that runs a flowbus command shows the command's output in its failed expectation; the lines
# that say why are repeated too (a journey FAILED and where, a chaos or sim verdict, the first
# anomaly of a failed session, an error), since a CI log keeps only the start and the tail.
repeat_failures() {
    grep -E '✘|error:|Expectation failed|recorded an issue' "$1" | grep -v '^✘ Test run with' | head -60 || true
    grep -E 'FAILED \(session|(^|[^A-Za-z])FAIL: |First: \*\*|^ *Error: ' "$1" | sed 's/^/   why: /' | awk '!seen[$0]++' | head -30 || true
    grep -E '^✘ Test run with' "$1" || true
}
