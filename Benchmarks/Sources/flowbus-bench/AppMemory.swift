import FlowClient
import FlowHost
import Foundation
import Logging

/// `app-memory`: resident memory of the whole app of APP.md (host + every plugin process of the
/// default manifest), idle, and again after opening many sessions with coord.app's `openSession`
/// (the call `SessionClient.open` makes, without a Clone agent per session), then once more after
/// opening as many again twice over. The sessions stay open on the host; the one client connection
/// that opened them is closed before measuring.
///
/// Some of what the first sessions cost is bounded by count, not by sessions: each coordinator
/// remembers its last 1,024 answers for retries, the Clone server the ids of its last 65,536
/// confirmed writes. The first readings amortize those over the first sessions; the growth from
/// the first loaded reading to the second is what one more open session costs (the trace history
/// keeps 4,096 sessions by default, so it still counts there).
struct AppMemory {
    let options: Options
    let logger: Logger
    static let name = BenchmarkName.appMemory.rawValue

    var sessions: Int { options.quick ? 100 : 1000 }
    /// Sessions opened after the first reading, before the second: the marginal cost's span.
    var moreSessions: Int { 2 * sessions }
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
            let idle = try read(host)
            progress("\(Self.name): idle: VmRSS \(format(mib(idle.residentKiB))) MiB, PSS \(format(mib(idle.proportionalKiB))) MiB over host + \(idle.plugins.count) plugins")

            let endpoints: BusEndpoints
            do {
                endpoints = try BusEndpoints.announced(by: RunDirectory(path: host.runDirectory))
            } catch {
                throw BenchError("cannot read the host's endpoints from \(host.runDirectory)/host.json: \(error)")
            }
            progress("\(Self.name): opening \(sessions) sessions (coord.app openSession, one at a time)")
            let (opened, openTimes) = try blocking { [sessions, logger] in
                try await Self.openSessions(sessions, endpoints: endpoints, logger: logger)
            }
            let live = try liveSessions(host, among: Set(opened))
            guard live == opened.count else {
                throw BenchError("`flowbus ps --sessions --json` lists coordinator instances for \(live) of the \(opened.count) sessions opened; the host did not keep them open")
            }
            progress("\(Self.name): \(live) sessions open on the host (flowbus ps --sessions); idling \(Int(Self.settle)) s")
            Thread.sleep(forTimeInterval: Self.settle)
            let loaded = try read(host)
            progress("\(Self.name): opening \(moreSessions) sessions more, for the cost of one more session")
            let (more, _) = try blocking { [moreSessions, logger] in
                try await Self.openSessions(moreSessions, endpoints: endpoints, logger: logger)
            }
            let all = Set(opened).union(more)
            guard all.count == opened.count + more.count else {
                throw BenchError("coord.app returned a session id twice over \(opened.count + more.count) openSession calls; sessions were reused")
            }
            let liveAll = try liveSessions(host, among: all)
            guard liveAll == all.count else {
                throw BenchError("`flowbus ps --sessions --json` lists coordinator instances for \(liveAll) of the \(all.count) sessions opened; the host did not keep them open")
            }
            progress("\(Self.name): \(liveAll) sessions open on the host; idling \(Int(Self.settle)) s")
            Thread.sleep(forTimeInterval: Self.settle)
            let fuller = try read(host)
            _ = try host.checkNoRestarts()
            return rows(idle: idle, loaded: loaded, sessions: opened.count, fuller: fuller, moreSessions: more.count, openTimes: openTimes)
        } catch {
            return [.failed(Self.name, error.description + "; host log: \(host.hostLogTail)")]
        }
    }

    /// VmRSS and PSS of the host and of every plugin `flowbus ps --json` lists (all must be running,
    /// none restarted).
    private func read(_ host: AppHost) throws(BenchError) -> Reading {
        let plugins = try host.checkNoRestarts()
        guard let hostPID = host.hostPID, let hostMemory = IdleMemory.Memory(pid: hostPID) else {
            throw BenchError("cannot read /proc/<pid>/status and smaps_rollup of the host (pid \(host.hostPID.map(String.init) ?? "unknown")); is /proc mounted and readable?")
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

    private func rows(idle: Reading, loaded: Reading, sessions: Int, fuller: Reading, moreSessions: Int, openTimes: [UInt64]) -> [ResultRow] {
        let processes = "host + \(idle.plugins.count) plugins"
        let perSession = { (before: Int, after: Int) in Double(after - before) / Double(sessions) }
        let perMoreSession = { (before: Int, after: Int) in Double(after - before) / Double(moreSessions) }
        let listed = { (growth: [(String, Int)], divisor: Int) in
            growth.prefix(6).map { "\($0.0) \($0.1 >= 0 ? "+" : "")\(format(Double($0.1) / Double(divisor), decimals: 2))" }.joined(separator: ", ")
        }
        let first = perSession(idle.proportionalKiB, loaded.proportionalKiB)
        let marginal = perMoreSession(loaded.proportionalKiB, fuller.proportionalKiB)
        // What the first sessions cost beyond `marginal` each: tables bounded by count, filled by them.
        let bounded = Double(loaded.proportionalKiB - idle.proportionalKiB) - marginal * Double(sessions)
        let open = LatencySummary(nanoseconds: openTimes)
        let total = sessions + moreSessions
        return [
            ResultRow(Self.name, "idle, total VmRSS (\(processes))", unit: "MiB", flowbus: mib(idle.residentKiB),
                      note: "app-memory idle: host VmRSS \(format(mib(idle.host.residentKiB))) MiB; plugins VmRSS \(format(mib(idle.residentKiB - idle.host.residentKiB))) MiB in all "
                        + "(\(idle.plugins.count) processes); private anonymous memory \(format(mib(idle.anonymousKiB))) MiB of the total"),
            ResultRow(Self.name, "idle, total PSS (\(processes))", unit: "MiB", flowbus: mib(idle.proportionalKiB)),
            ResultRow(Self.name, "\(sessions) sessions open, total PSS", unit: "MiB", flowbus: mib(loaded.proportionalKiB),
                      note: "app-memory growth by process over the first \(sessions) sessions (PSS, KiB per session): " + listed(growth(from: idle, to: loaded), sessions)),
            ResultRow(Self.name, "\(total) sessions open, total PSS", unit: "MiB", flowbus: mib(fuller.proportionalKiB),
                      note: "app-memory growth by process over sessions \(sessions + 1)–\(total) (PSS, KiB per session): " + listed(growth(from: loaded, to: fuller), moreSessions)),
            ResultRow(Self.name, "first \(sessions) sessions, PSS each", unit: "KiB", flowbus: first,
                      note: "app-memory first sessions: (total after − total idle) ÷ \(sessions) sessions opened by coord.app openSession "
                        + "(each: a session record, a navigation, the App and Auth coordinator instances), closed by nobody; VmRSS "
                        + "+\(format(perSession(idle.residentKiB, loaded.residentKiB), decimals: 2)) KiB, private anonymous memory "
                        + "+\(format(perSession(idle.anonymousKiB, loaded.anonymousKiB), decimals: 2)) KiB each. Of it, about "
                        + "\(format(bounded / 1024, decimals: 1)) MiB in all is tables bounded by count that these sessions filled "
                        + "(each coordinator's last 1,024 answers for retries, and the like): the total less \(sessions) × the cost of one more session"),
            // Issue 16: at most 6 KiB of PSS per open session, the host's trace history on (its
            // default, 4,096 sessions kept: all of these are in it).
            ResultRow(Self.name, "one more session (\(sessions + 1)–\(total)), PSS", unit: "KiB", flowbus: marginal,
                      target: "≤ 6 KiB", verdict: marginal <= 6 ? .pass : .miss,
                      note: "app-memory one more session: (total at \(total) sessions − total at \(sessions)) ÷ \(moreSessions), the trace history on; VmRSS "
                        + "+\(format(perMoreSession(loaded.residentKiB, fuller.residentKiB), decimals: 2)) KiB each"),
            ResultRow(Self.name, "openSession call, p50", unit: "ms", flowbus: open.p50 / 1000,
                      note: "app-memory openSession: the first \(open.count) calls one at a time; p99 \(format(open.p99 / 1000, decimals: 2)) ms, "
                        + "max \(format(open.max / 1000, decimals: 2)) ms (as sessions accumulate)"),
        ]
    }

    private func mib(_ kib: Int) -> Double { Double(kib) / 1024 }
}
