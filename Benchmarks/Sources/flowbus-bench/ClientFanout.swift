import FlowClient
import FlowHost
import Foundation
import Logging
import Synchronization

/// `client-fanout`: issue 4's figure "every client of a session shows the same screen within
/// 100 ms of a change". The whole app runs as in app-journey (`AppHost`); one driver
/// `SessionClient` opens a session and signs in with the demo account, then N read-only followers
/// attach to the same session (`SessionClient.attach(announce: false)`, nothing sent). Each
/// change is one navigation intent of the driver (`selectTab` likes, then `selectTab` home,
/// alternately); it is timed from just before sending until each follower's view first shows the
/// navigation version the intent produced. A task per client reads that client's `views()` for
/// the whole run and takes the time when each new navigation version arrives, so the figures do
/// not depend on how the harness waits.
struct ClientFanout {
    let options: Options
    let logger: Logger
    static let name = BenchmarkName.clientFanout.rawValue

    var changes: Int { options.quick ? 30 : 300 }
    var warmup: Int { options.quick ? 5 : 20 }
    static let targetMilliseconds = 100.0
    static let timeout: Duration = .seconds(20)

    /// The tabs the driver alternates between, starting from Home.
    static let tabs = ["likes", "home"]

    /// What one configuration (N followers) produced, in nanoseconds.
    struct Samples: Sendable {
        var followers = 0
        /// t(follower's view shows the new navigation version) − t0, every (change, follower) pair.
        var pairs: [UInt64] = []
        /// The slowest follower of each change.
        var slowest: [UInt64] = []
        /// The driver's own view showing the new navigation version.
        var driverSees: [UInt64] = []
        /// The driver's send → reply.
        var replies: [UInt64] = []
        /// Pairs where the follower's first view at the new version showed another screen than the driver's target.
        var otherScreen = 0
        var otherScreenExample = ""
        /// Navigation intents refused and sent again (counted; the change is timed from the first try).
        var refused = 0
        var refusedExample = ""
    }

    func run() -> [ResultRow] {
        if let reason = AppHost.prepare(options: options, label: Self.name) { return [.unavailable(Self.name, reason)] }
        let host: AppHost
        do { host = try AppHost.start(options: options, label: Self.name) } catch { return [.failed(Self.name, error.description)] }
        defer { host.stop() }
        let results: [Samples]
        var session = ""
        do throws(BenchError) {
            let endpoints = try host.endpoints()
            let counts = options.clientCounts
            progress("\(Self.name): one driver signed in as \(AppJourney.email), followers \(counts.map(String.init).joined(separator: ", ")); "
                + "\(warmup) warm-up + \(changes) changes each")
            (results, session) = try blocking { [changes, warmup, logger] in
                try await Self.play(endpoints: endpoints, counts: counts, warmup: warmup, changes: changes, logger: logger)
            }
            _ = try host.checkNoRestarts()
        } catch {
            return [.failed(Self.name, error.description + "; host log: \(host.hostLogTail)")]
        }
        return results.flatMap { rows($0, session: session) }
    }

    private func rows(_ samples: Samples, session: String) -> [ResultRow] {
        let ms = { (microseconds: Double) in microseconds / 1000 }
        let n = samples.followers
        let label = "\(n) follower\(n == 1 ? "" : "s")"
        let pairs = LatencySummary(nanoseconds: samples.pairs)
        let slowest = LatencySummary(nanoseconds: samples.slowest)
        let driver = LatencySummary(nanoseconds: samples.driverSees)
        let replies = LatencySummary(nanoseconds: samples.replies)
        progress("\(Self.name): \(label): follower sees the change \(AppJourney.text(pairs))")
        progress("\(Self.name): \(label): slowest follower per change \(AppJourney.text(slowest))")
        progress("\(Self.name): \(label): driver's view \(AppJourney.text(driver)); send → reply \(AppJourney.text(replies))")
        let met = ms(slowest.p99) <= Self.targetMilliseconds
        var rows = [
            ResultRow(Self.name, "\(label): follower sees change, p50", unit: "ms", flowbus: ms(pairs.p50),
                      note: "client-fanout, \(label): \(samples.slowest.count) changes after \(warmup) warm-up, one driver (signed in) and \(label) "
                        + "attached read-only (announce: false) to one session (\(session)); a change is `selectTab` likes / home alternately, "
                        + "timed from just before the driver sends it until each follower's view shows the navigation version the reply names; "
                        + "\(pairs.count) (change, follower) pairs, mean \(format(ms(pairs.mean), decimals: 2)) ms, min \(format(ms(pairs.min), decimals: 2)) ms. "
                        + "No raw libzmq baseline is needed or run: the target is absolute (100 ms), and the path is end to end "
                        + "(driver → broker → coord.app → Clone server → each follower's agent and view), where a raw PUB→SUB hop would be tens of µs"),
            ResultRow(Self.name, "\(label): follower sees change, p99", unit: "ms", flowbus: ms(pairs.p99)),
            ResultRow(Self.name, "\(label): follower sees change, max", unit: "ms", flowbus: ms(pairs.max)),
            ResultRow(Self.name, "\(label): slowest follower per change, p50", unit: "ms", flowbus: ms(slowest.p50)),
            ResultRow(Self.name, "\(label): slowest follower per change, p99", unit: "ms", flowbus: ms(slowest.p99),
                      target: "every client ≤ 100 ms (p99)", verdict: met ? .pass : .miss),
            ResultRow(Self.name, "\(label): driver's own view shows it, p50", unit: "ms", flowbus: ms(driver.p50),
                      note: "client-fanout, \(label): the driver's view p99 \(format(ms(driver.p99), decimals: 2)) ms; "
                        + "send → reply p99 \(format(ms(replies.p99), decimals: 2)) ms, max \(format(ms(replies.max), decimals: 2)) ms"),
            ResultRow(Self.name, "\(label): driver send → reply, p50", unit: "ms", flowbus: ms(replies.p50)),
            ResultRow(Self.name, "\(label): driver send → reply, p99", unit: "ms", flowbus: ms(replies.p99)),
        ]
        if samples.otherScreen > 0 || samples.refused > 0 {
            rows.append(ResultRow(
                Self.name, "\(label): followers on another screen / intents refused", unit: "", flowbus: nil,
                note: "client-fanout, \(label): \(samples.otherScreen) pairs where the follower's first view at the new version showed another screen"
                    + (samples.otherScreenExample.isEmpty ? "" : " (e.g. \(samples.otherScreenExample))")
                    + "; \(samples.refused) navigation intents refused and sent again"
                    + (samples.refusedExample.isEmpty ? "" : " (e.g. \(samples.refusedExample))")))
        }
        return rows
    }

    // MARK: Playing

    /// The navigation versions one client's view reached, each with the time its view arrived.
    final class VersionLog: Sendable {
        struct Entry: Sendable {
            var version: UInt64
            var time: UInt64
            var screen: String
        }

        private struct State {
            var entries: [Entry] = []
            var waiters: [(version: UInt64, continuation: CheckedContinuation<Entry?, Never>)] = []
            /// Set by `expire()` (a timeout) until `rearm()`: waits not met yet end with nil.
            var expired = false
        }

        private let state = Mutex(State())

        /// Called by the client's watcher task with the time it took as the view arrived.
        func record(_ view: SessionView, at time: UInt64) {
            let ready = state.withLock { state -> [(CheckedContinuation<Entry?, Never>, Entry)] in
                guard view.navigationVersion > (state.entries.last?.version ?? 0) else { return [] }
                let entry = Entry(version: view.navigationVersion, time: time, screen: view.screen ?? "-")
                state.entries.append(entry)
                var ready: [(CheckedContinuation<Entry?, Never>, Entry)] = []
                state.waiters.removeAll { waiter in
                    guard waiter.version <= entry.version else { return false }
                    ready.append((waiter.continuation, entry))
                    return true
                }
                return ready
            }
            for (continuation, entry) in ready { continuation.resume(returning: entry) }
        }

        /// The first view at or past `version`, waiting for it if need be; nil once `expire()` ran.
        func first(atLeast version: UInt64) async -> Entry? {
            await withCheckedContinuation { continuation in
                let found = state.withLock { state -> Entry?? in
                    if let entry = state.entries.first(where: { $0.version >= version }) { return .some(entry) }
                    if state.expired { return .some(nil) }
                    state.waiters.append((version, continuation))
                    return nil
                }
                if let found { continuation.resume(returning: found) }
            }
        }

        /// Ends every wait not met yet with nil (a timeout), until `rearm()`.
        func expire() {
            let waiters = state.withLock { state in
                state.expired = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.continuation.resume(returning: nil) }
        }

        /// A new wait (the next change) may take its time again.
        func rearm() { state.withLock { $0.expired = false } }
    }

    /// A client and the task that logs its navigation versions.
    struct Watched: Sendable {
        var client: SessionClient
        var log: VersionLog
        var watcher: Task<Void, Never>

        init(_ client: SessionClient) {
            self.client = client
            let log = VersionLog()
            self.log = log
            let views = client.views()
            watcher = Task {
                for await view in views { log.record(view, at: monotonicNanoseconds()) }
            }
        }

        func stop() {
            watcher.cancel()
            client.stop()
        }
    }

    static func play(endpoints: BusEndpoints, counts: [Int], warmup: Int, changes: Int, logger: Logger) async throws -> ([Samples], String) {
        let client = try await AppHost.openSession(endpoints, name: "flowbus-bench/\(getpid())/driver", timeout: timeout, logger: logger)
        let driver = Watched(client)
        defer { driver.stop() }
        do {
            let outcome = try await client.send(action: "logIn", fields: ["email": AppJourney.email, "password": AppJourney.password])
            guard outcome.applied else { throw BenchError("logIn was not applied: \(outcome)") }
            try await client.expect(Expectation(screen: "home", tab: "home", phase: .success, user: AppJourney.email), timeout: timeout)
        } catch let error as BenchError {
            throw error
        } catch {
            throw BenchError("the demo sign-in did not reach Home in success: \(error)")
        }
        var results: [Samples] = []
        var change = 0
        for count in counts {
            var followers: [Watched] = []
            defer { for follower in followers { follower.stop() } }
            for index in 0..<count {
                var followerOptions = SessionClientOptions()
                followerOptions.name = "flowbus-bench/\(getpid())/follower-\(count)-\(index)"
                followerOptions.maxEvents = 200
                do {
                    let follower = try await SessionClient.attach(client.session, endpoints: endpoints, announce: false, options: followerOptions, logger: logger)
                    followers.append(Watched(follower))
                } catch {
                    throw BenchError("follower \(index + 1) of \(count) cannot attach to session \(client.session): \(error)")
                }
            }
            // Every follower starts from the driver's screen.
            let now = client.view.navigationVersion
            for (index, follower) in followers.enumerated() {
                let alarm = Task {
                    do { try await Task.sleep(for: timeout) } catch { return }
                    follower.log.expire()
                }
                let seen = await follower.log.first(atLeast: now)
                alarm.cancel()
                guard seen != nil else {
                    throw BenchError("follower \(index + 1) of \(count) never showed navigation version \(now); it shows \(follower.client.view.summary)")
                }
            }
            var samples = Samples(followers: count)
            for index in 0..<(warmup + changes) {
                let target = tabs[change % tabs.count]
                change += 1
                do {
                    try await measure(change: target, driver: driver, followers: followers, into: &samples, keep: index >= warmup)
                } catch let error as BenchError {
                    throw BenchError("\(count) followers, change \(index + 1) (selectTab \(target)): \(error)")
                }
                if index + 1 == warmup {
                    progress("\(name): \(count) followers: \(warmup) warm-up changes done")
                } else if index >= warmup, (index + 1 - warmup) % 100 == 0 {
                    progress("\(name): \(count) followers: \(index + 1 - warmup) of \(changes) changes measured "
                        + "(last slowest \(format(Double(samples.slowest.last ?? 0) / 1e6, decimals: 2)) ms)")
                }
            }
            results.append(samples)
        }
        try? await client.close()
        return (results, client.session)
    }

    /// One change: the driver's `selectTab target`, timed until every follower shows it; then
    /// waits for the driver's view to show the tab's screen loaded, so changes do not overlap.
    static func measure(change target: String, driver: Watched, followers: [Watched], into samples: inout Samples, keep: Bool) async throws {
        let client = driver.client
        let before = client.view
        guard before.screen != target else { throw BenchError("the driver already shows \(target) before selecting it") }
        var prepared = try client.prepare(action: "selectTab", fields: ["tab": target])
        let t0 = monotonicNanoseconds()
        var outcome = try await client.send(prepared)
        var refusals = 0
        while !outcome.applied, prepared.route.isNavigation, refusals < AppJourney.navigationTries {
            refusals += 1
            if keep {
                samples.refused += 1
                if samples.refusedExample.isEmpty { samples.refusedExample = outcome.error.map { "\($0.code): \($0.message)" } ?? "\(outcome)" }
            }
            try await Task.sleep(for: AppJourney.navigationRetryDelay)
            prepared = try client.prepare(action: "selectTab", fields: ["tab": target])
            outcome = try await client.send(prepared)
        }
        let replied = monotonicNanoseconds()
        guard outcome.applied else { throw BenchError("selectTab \(target) was not applied: \(outcome); the driver shows \(client.view.summary)") }
        // The reply names the navigation version after the intent; a client shows the change once its view reaches it.
        let version = max(outcome.reply.screenVersion, before.navigationVersion + 1)
        driver.log.rearm()
        for follower in followers { follower.log.rearm() }
        let alarm = Task {
            do { try await Task.sleep(for: timeout) } catch { return }
            driver.log.expire()
            for follower in followers { follower.log.expire() }
        }
        defer { alarm.cancel() }
        guard let mine = await driver.log.first(atLeast: version) else {
            throw BenchError("the driver's view never reached navigation version \(version); it shows \(client.view.summary)")
        }
        var times: [UInt64] = []
        for (index, follower) in followers.enumerated() {
            guard let seen = await follower.log.first(atLeast: version) else {
                throw BenchError("follower \(index + 1) never reached navigation version \(version) within \(timeout); "
                    + "it shows \(follower.client.view.summary), the driver \(client.view.summary)")
            }
            times.append(seen.time - t0)
            if keep, seen.screen != target {
                samples.otherScreen += 1
                if samples.otherScreenExample.isEmpty { samples.otherScreenExample = "\(seen.screen) at v\(seen.version), expected \(target)" }
            }
        }
        if keep {
            samples.pairs += times
            samples.slowest.append(times.max() ?? 0)
            samples.driverSees.append(mine.time - t0)
            samples.replies.append(replied - t0)
        }
        // Let the tab's appear-driven load finish before the next change.
        var loaded = Expectation(screen: target, tab: target, phase: .success)
        loaded.newerThan[target] = before.states[target]?.screenVersion ?? 0
        do {
            try await client.expect(loaded, timeout: timeout)
        } catch {
            throw BenchError("the driver's \(target) never showed success after selectTab: \(error)")
        }
    }
}
