import FlowClient
import FlowHost
import Foundation
import Logging

/// `app-memory`: resident memory of the whole app of APP.md (host + every plugin process of the
/// default manifest), idle, and again after opening many sessions with coord.app's `openSession`
/// (the call `SessionClient.open` makes, without a Clone agent per session), and again at twice
/// and four times as many. The sessions stay open on the host; the one client connection
/// that opened them is closed before measuring.
///
/// Some of what the first sessions cost is bounded by count, not by sessions: each coordinator
/// remembers its last 1,024 answers for retries, the Clone server the ids of its last 65,536
/// confirmed writes. The first reading amortizes those over the first sessions; the growth from
/// the second loaded reading to the third is what one more open session costs (the trace history
/// keeps 4,096 sessions by default, so it still counts there).
struct AppMemory {
    let options: Options
    let logger: Logger
    static let name = BenchmarkName.appMemory.rawValue

    /// Sessions opened before the first loaded reading; the second comes at twice as many, the
    /// third at four times: the cost of one more session is taken from the second to the third,
    /// where every table that grows with the sessions (doubling its room) is at the same point
    /// of its growth at both ends (a span ending elsewhere counts one doubling more or less,
    /// depending on where it began: the Clone server's map, six keys a session, doubles near
    /// 1,000 and 2,000 sessions), and past the tables bounded by count that fill with the first
    /// sessions.
    var sessions: Int { options.quick ? 100 : 1000 }
    /// How long the app idles before each reading, so start-up and the openings have settled.
    static let settle: TimeInterval = 3

    /// Memory of every process of the app at one moment.
    struct Reading {
        var host: IdleMemory.Memory
        var plugins: [(name: String, memory: IdleMemory.Memory)]

        var residentKiB: Int { host.residentKiB + plugins.map(\.memory.residentKiB).reduce(0, +) }
        var proportionalKiB: Int { host.proportionalKiB + plugins.map(\.memory.proportionalKiB).reduce(0, +) }
        var anonymousKiB: Int { host.anonymousKiB + plugins.map(\.memory.anonymousKiB).reduce(0, +) }
    }

    func run() -> [ResultRow] {
        if let reason = AppHost.prepare(options: options, label: Self.name) { return [.unavailable(Self.name, reason)] }
        let host: AppHost
        do { host = try AppHost.start(options: options, label: Self.name) } catch { return [.failed(Self.name, error.description)] }
        defer { host.stop() }
        do throws(BenchError) {
            progress("\(Self.name): every app service has a worker; idling \(Int(Self.settle)) s")
            Thread.sleep(forTimeInterval: Self.settle)
            let idle = try read(host, named: "idle")
            progress("\(Self.name): idle: VmRSS \(format(mib(idle.residentKiB))) MiB, PSS \(format(mib(idle.proportionalKiB))) MiB over host + \(idle.plugins.count) plugins")

            let endpoints = try host.endpoints()
            var opened: Set<String> = []
            var openTimes: [UInt64] = []
            /// Opens `count` sessions more, checks that the host keeps every one open, idles, reads.
            func open(_ count: Int) throws(BenchError) -> Reading {
                progress("\(Self.name): opening \(count) sessions more, \(opened.count + count) in all (coord.app openSession, one at a time)")
                let (sessions, times) = try blocking { [logger] in
                    try await Self.openSessions(count, endpoints: endpoints, logger: logger)
                }
                if openTimes.isEmpty { openTimes = times }
                let before = opened.count
                opened.formUnion(sessions)
                guard opened.count == before + count else {
                    throw BenchError("coord.app returned a session id it had returned before; sessions were reused")
                }
                let live = try liveSessions(host, among: opened)
                guard live == opened.count else {
                    throw BenchError("`flowbus ps --sessions --json` lists coordinator instances for \(live) of the \(opened.count) sessions opened; the host did not keep them open")
                }
                progress("\(Self.name): \(live) sessions open on the host (flowbus ps --sessions); idling \(Int(Self.settle)) s")
                Thread.sleep(forTimeInterval: Self.settle)
                return try read(host, named: "\(opened.count)")
            }
            let first = try open(sessions)
            let doubled = try open(sessions)
            if let pause = ProcessInfo.processInfo.environment["FLOWBUS_BENCH_MEMORY_PAUSE"].flatMap(Double.init), pause > 0 {
                // For a profiler attached by hand (e.g. `heaptrack -p`) to see only what the last
                // sessions add: where to find the processes, then a pause before they are opened.
                progress("\(Self.name): FLOWBUS_BENCH_MEMORY_PAUSE: pausing \(Int(pause)) s before the last \(2 * sessions) sessions; "
                    + "the host is pid \(host.hostPID.map(String.init) ?? "?"), the plugins' pids are in `flowbus ps --json --run-dir \(host.runDirectory)`")
                Thread.sleep(forTimeInterval: pause)
            }
            let quadrupled = try open(2 * sessions)
            _ = try host.checkNoRestarts()
            return rows(idle: idle, first: first, doubled: doubled, quadrupled: quadrupled, openTimes: openTimes)
        } catch {
            return [.failed(Self.name, error.description + "; host log: \(host.hostLogTail)")]
        }
    }

    /// VmRSS and PSS of the host and of every plugin `flowbus ps --json` lists (all must be running,
    /// none restarted).
    /// `name`: the reading's, for the smaps file FLOWBUS_BENCH_MEMORY_SMAPS asks for ("idle", or
    /// how many sessions are open).
    private func read(_ host: AppHost, named name: String) throws(BenchError) -> Reading {
        let plugins = try host.checkNoRestarts()
        guard let hostPID = host.hostPID, let hostMemory = IdleMemory.Memory(pid: hostPID) else {
            throw BenchError("cannot read /proc/<pid>/status and smaps_rollup of the host (pid \(host.hostPID.map(String.init) ?? "unknown")); is /proc mounted and readable?")
        }
        if let directory = ProcessInfo.processInfo.environment["FLOWBUS_BENCH_MEMORY_SMAPS"] {
            // For a person comparing readings mapping by mapping: the host's smaps at each reading.
            // Read to its end (a /proc file says it is empty: a read by its size stops at a page).
            let data = FileHandle(forReadingAtPath: "/proc/\(hostPID)/smaps")?.readDataToEndOfFile() ?? Data()
            FileManager.default.createFile(atPath: "\(directory)/host-\(hostPID)-\(name).smaps", contents: data)
        }
        var readings: [(name: String, memory: IdleMemory.Memory)] = []
        for plugin in plugins {
            guard let pid = plugin.pid, let memory = IdleMemory.Memory(pid: pid) else {
                throw BenchError("cannot read /proc/<pid>/status and smaps_rollup of plugin \(plugin.name) (pid \(plugin.pid.map(String.init) ?? "none"))")
            }
            readings.append((plugin.name, memory))
        }
        return Reading(host: hostMemory, plugins: readings)
    }

    /// How many of `sessions` have at least one live coordinator instance, per `flowbus ps --sessions --json`.
    private func liveSessions(_ host: AppHost, among sessions: Set<String>) throws(BenchError) -> Int {
        let (code, output) = IdleMemory.execute(host.flowbus, ["ps", "--sessions", "--json", "--run-dir", host.runDirectory], in: host.repository)
        guard code == 0, let start = output.firstIndex(of: "{"),
              let json = try? JSONSerialization.jsonObject(with: Data(output[start...].utf8)) as? [String: Any],
              let instances = json["coordinatorInstances"] as? [[String: Any]] else {
            throw BenchError("`flowbus ps --sessions --json` exited \(code) without a coordinatorInstances list: \(output.prefix(300))")
        }
        return Set(instances.compactMap { $0["session"] as? String }).intersection(sessions).count
    }

    /// Opens `count` sessions through one bus connection, one call at a time; returns their ids and
    /// the time of each call.
    static func openSessions(_ count: Int, endpoints: BusEndpoints, logger: Logger) async throws -> ([String], [UInt64]) {
        var options = SessionClientOptions()
        options.name = "flowbus-bench/\(getpid())"
        let connection: BusConnection
        do {
            connection = try BusConnection(endpoints: endpoints, options: options, logger: logger)
        } catch {
            throw BenchError("cannot connect to the app's broker: \(error)")
        }
        defer { connection.stop() }
        var sessions: [String] = []
        var times: [UInt64] = []
        sessions.reserveCapacity(count)
        times.reserveCapacity(count)
        for index in 0..<count {
            let start = monotonicNanoseconds()
            do {
                sessions.append(try await connection.openSession(requested: nil).session)
            } catch {
                throw BenchError("opening session \(index + 1) of \(count) failed: \(error)")
            }
            times.append(monotonicNanoseconds() - start)
            if (index + 1) % 100 == 0 {
                let recent = LatencySummary(nanoseconds: Array(times.suffix(100)))
                progress("\(name): \(index + 1) of \(count) sessions open (last 100: p50 \(format(recent.p50 / 1000, decimals: 2)) ms)")
            }
        }
        guard Set(sessions).count == count else {
            throw BenchError("coord.app returned \(Set(sessions).count) distinct session ids for \(count) openSession calls; sessions were reused")
        }
        return (sessions, times)
    }

    /// PSS growth from `from` to `to`, process by process, largest first (KiB).
    private func growth(from: Reading, to: Reading) -> [(String, Int)] {
        let before = Dictionary(from.plugins.map { ($0.name, $0.memory) }, uniquingKeysWith: { first, _ in first })
        var growth = to.plugins.compactMap { plugin -> (String, Int)? in
            before[plugin.name].map { (plugin.name, plugin.memory.proportionalKiB - $0.proportionalKiB) }
        }
        growth.append(("host", to.host.proportionalKiB - from.host.proportionalKiB))
        return growth.sorted { $0.1 > $1.1 }
    }

    private func rows(idle: Reading, first: Reading, doubled: Reading, quadrupled: Reading, openTimes: [UInt64]) -> [ResultRow] {
        let processes = "host + \(idle.plugins.count) plugins"
        let (n, span) = (sessions, 2 * sessions)
        let each = { (before: Int, after: Int, count: Int) in Double(after - before) / Double(count) }
        let listed = { (growth: [(String, Int)], divisor: Int) in
            growth.prefix(6).map { "\($0.0) \($0.1 >= 0 ? "+" : "")\(format(Double($0.1) / Double(divisor), decimals: 2))" }.joined(separator: ", ")
        }
        let firstEach = each(idle.proportionalKiB, first.proportionalKiB, n)
        let marginal = each(doubled.proportionalKiB, quadrupled.proportionalKiB, span)
        // What the first sessions cost beyond `marginal` each: tables bounded by count, filled by them.
        let bounded = Double(first.proportionalKiB - idle.proportionalKiB) - marginal * Double(n)
        let open = LatencySummary(nanoseconds: openTimes)
        return [
            ResultRow(Self.name, "idle, total VmRSS (\(processes))", unit: "MiB", flowbus: mib(idle.residentKiB),
                      note: "app-memory idle: host VmRSS \(format(mib(idle.host.residentKiB))) MiB; plugins VmRSS \(format(mib(idle.residentKiB - idle.host.residentKiB))) MiB in all "
                        + "(\(idle.plugins.count) processes); private anonymous memory \(format(mib(idle.anonymousKiB))) MiB of the total"),
            ResultRow(Self.name, "idle, total PSS (\(processes))", unit: "MiB", flowbus: mib(idle.proportionalKiB)),
            ResultRow(Self.name, "\(n) sessions open, total PSS", unit: "MiB", flowbus: mib(first.proportionalKiB),
                      note: "app-memory growth by process over the first \(n) sessions (PSS, KiB per session): " + listed(growth(from: idle, to: first), n)),
            ResultRow(Self.name, "\(2 * n) / \(4 * n) sessions open, total PSS", unit: "MiB", flowbus: mib(quadrupled.proportionalKiB),
                      note: "app-memory growth by process over sessions \(2 * n + 1)–\(4 * n) (PSS, KiB per session): " + listed(growth(from: doubled, to: quadrupled), span)
                        + "; total PSS \(format(mib(doubled.proportionalKiB))) MiB at \(2 * n) sessions, \(format(mib(quadrupled.proportionalKiB))) MiB at \(4 * n)"),
            ResultRow(Self.name, "first \(n) sessions, PSS each", unit: "KiB", flowbus: firstEach,
                      note: "app-memory first sessions: (total after − total idle) ÷ \(n) sessions opened by coord.app openSession "
                        + "(each: a session record, a navigation, the App and Auth coordinator instances), closed by nobody; VmRSS "
                        + "+\(format(each(idle.residentKiB, first.residentKiB, n), decimals: 2)) KiB, private anonymous memory "
                        + "+\(format(each(idle.anonymousKiB, first.anonymousKiB, n), decimals: 2)) KiB each. Of it, about "
                        + "\(format(bounded / 1024, decimals: 1)) MiB in all is tables bounded by count that these sessions filled "
                        + "(each coordinator's last 1,024 answers for retries, and the like): the total less \(n) × the cost of one more session"),
            // Issue 16: at most 6 KiB of PSS per open session, the host's trace history on (its
            // default, 4,096 sessions kept: all of these are in it). A host started with other
            // options (FLOWBUS_BENCH_UP_OPTIONS) is not the target's: shown, not judged.
            ResultRow(Self.name, "one more session (\(2 * n + 1)–\(4 * n)), PSS", unit: "KiB", flowbus: marginal,
                      target: "≤ 6 KiB", verdict: !AppHost.extraUpOptions.isEmpty ? .info : marginal <= 6 ? .pass : .miss,
                      note: "app-memory one more session: (total at \(4 * n) sessions − total at \(2 * n)) ÷ \(span), "
                        + (AppHost.extraUpOptions.isEmpty ? "the trace history on"
                            : "on a host started with `\(AppHost.extraUpOptions.joined(separator: " "))` (FLOWBUS_BENCH_UP_OPTIONS), not judged against the target, which is the defaults'")
                        + "; VmRSS "
                        + "+\(format(each(doubled.residentKiB, quadrupled.residentKiB, span), decimals: 2)) KiB each"),
            ResultRow(Self.name, "openSession call, p50", unit: "ms", flowbus: open.p50 / 1000,
                      note: "app-memory openSession: the first \(open.count) calls one at a time; p99 \(format(open.p99 / 1000, decimals: 2)) ms, "
                        + "max \(format(open.max / 1000, decimals: 2)) ms (as sessions accumulate)"),
        ]
    }

    private func mib(_ kib: Int) -> Double { Double(kib) / 1024 }
}
