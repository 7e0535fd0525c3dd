import FlowClient
import FlowHost
import FlowProtocol
import Foundation
import Logging
import Synchronization

/// `app-journey`: the whole app of APP.md (`flowbus up --detach`, default manifest, release build)
/// driven over its real sockets by a FlowClient `SessionClient`, one journey after the other in one
/// session: sign in with the demo account → Home → Details of actor:1 → Details of movie:19 → like
/// → Likes tab → Settings tab → log out → SignIn. Times the whole journey, and each intent from
/// just before it is sent until the client's view shows the screen it leads to in `success` with a
/// version newer than the one the client saw before sending.
struct AppJourney {
    let options: Options
    let logger: Logger
    static let name = BenchmarkName.appJourney.rawValue

    var journeys: Int { options.quick ? 20 : 200 }
    var warmup: Int { options.quick ? 2 : 10 }

    static let email = "demo@flowbus.dev"
    static let password = "flowbus123"

    /// A point an intent leads to: a label for the table and the expectation that says it was
    /// reached, built from the view just before the intent is sent.
    struct Milestone: Sendable {
        var label: String
        /// This screen kind's state must be newer than the one seen before sending.
        var fresh: String?
        var expectation: @Sendable (SessionView) -> Expectation
    }

    /// One intent of the journey: sent on `screen`, done when every milestone was reached.
    struct Step: Sendable {
        var screen: String
        var action: String
        var fields: [String: String] = [:]
        var milestones: [Milestone]
    }

    static let steps: [Step] = [
        Step(screen: "signin", action: "logIn", fields: ["email": email, "password": password], milestones: [
            Milestone(label: "logIn → SignIn success", fresh: "signin") { _ in Expectation(phase: .success, stateOf: "signin") },
            Milestone(label: "logIn → Home success", fresh: "home") { _ in
                Expectation(screen: "home", tab: "home", phase: .success, user: email)
            },
        ]),
        Step(screen: "home", action: "select", fields: ["item": "actor:1"], milestones: [
            Milestone(label: "select actor:1 → Details success", fresh: "details") { _ in
                details(stack: ["home", "details"], ["details.item.id": "actor:1"])
            },
        ]),
        Step(screen: "details", action: "select", fields: ["item": "movie:19"], milestones: [
            Milestone(label: "select movie:19 → Details success", fresh: "details") { _ in
                details(stack: ["home", "details", "details"], ["details.item.id": "movie:19"])
            },
        ]),
        // `like` toggles: the demo account's like of movie:19 flips on every journey.
        Step(screen: "details", action: "like", milestones: [
            Milestone(label: "like → Details success", fresh: "details") { before in
                let liked = DataPath.values(of: "details.liked", in: before.payload(of: before.topState)) == ["true"]
                return details(stack: ["home", "details", "details"], ["details.item.id": "movie:19", "details.liked": liked ? "false" : "true"])
            },
        ]),
        Step(screen: "details", action: "selectTab", fields: ["tab": "likes"], milestones: [
            Milestone(label: "selectTab likes → Likes success", fresh: "likes") { _ in Expectation(screen: "likes", tab: "likes", phase: .success) },
        ]),
        Step(screen: "likes", action: "selectTab", fields: ["tab": "settings"], milestones: [
            Milestone(label: "selectTab settings → Settings success", fresh: "settings") { _ in
                Expectation(screen: "settings", tab: "settings", phase: .success)
            },
        ]),
        Step(screen: "settings", action: "logOut", milestones: [
            Milestone(label: "logOut → SignIn shown, signed out", fresh: nil) { _ in Expectation(screen: "signin", user: "") },
        ]),
    ]

    static func details(stack: [String], _ data: [String: String]) -> Expectation {
        var expectation = Expectation(screen: "details", tab: "home", stack: stack, phase: .success)
        expectation.data = data
        return expectation
    }

    /// What the measured journeys produced, in nanoseconds.
    struct Samples: Sendable {
        var journeys: [UInt64] = []
        /// Per milestone label, in journey order.
        var milestones: [String: [UInt64]] = [:]
        /// Send → reply of every intent (the MDP request through the broker to the worker and back).
        var replies: [UInt64] = []
        /// Per journey, the time outside its intents (each from sending it until its reply and
        /// every milestone came): the client's own turn from one intent to the next.
        var between: [UInt64] = []
        /// Navigation intents refused and sent again, by "action → service: code", with one message each.
        var refusals: [String: (count: Int, example: String)] = [:]
        var session = ""
        /// CPU per measured journey by process, µs, largest first.
        var cpu: [(label: String, microseconds: Double)] = []
        /// Times a thread of the app or the client was scheduled in per measured journey (about
        /// one a wake-up), all processes.
        var wakeUps: Double = 0
        /// Each measured milestone's send and reach on the wall clock, to split by the host's trace.
        var edges: [JourneyEdges.Sample] = []
    }

    func run() -> [ResultRow] {
        if let reason = AppHost.prepare(options: options, label: Self.name) { return [.unavailable(Self.name, reason)] }
        // Shared named outright: the targets' figures stay the kernel's placement's, whatever
        // FLOWBUS_PLACEMENT says and whatever `flowbus up`'s default (auto) picks on this machine;
        // the pinned pass after it is that default on a host that may use two CPUs.
        let host: AppHost
        let samples: Samples
        do throws(BenchError) {
            (host, samples) = try measure(upOptions: ["--placement", "shared"])
        } catch {
            return [.failed(Self.name, error.description)]
        }
        defer { host.stop() }
        // Where each milestone's time went: to the host, at the host, back to the view.
        let edges: Swift.Result<[String: JourneyEdges.Split], BenchError>
        do throws(BenchError) {
            let events = try JourneyEdges.trace(
                flowbus: host.flowbus, runDirectory: host.runDirectory, session: samples.session, in: host.repository)
            edges = .success(JourneyEdges.split(samples.edges, events: events))
        } catch {
            progress("\(Self.name): the split by the host's trace FAILED: \(error)")
            edges = .failure(error)
        }
        host.stop()
        // Issue 16: the same journeys on a host started with `--placement pinned`, right after.
        let pinned: Swift.Result<Samples, BenchError>
        do throws(BenchError) {
            let (pinnedHost, pinnedSamples) = try measure(upOptions: ["--placement", "pinned"])
            pinnedHost.stop()
            pinned = .success(pinnedSamples)
        } catch {
            progress("\(Self.name): the pass with --placement pinned FAILED: \(error)")
            pinned = .failure(error)
        }
        // The like's raw floor, with the app stopped so the two never share the machine.
        var floors: [LikeFloor.Result] = []
        var floorFailures: [String] = []
        let floor = LikeFloor(quick: options.quick)
        for layout in LikeFloor.Layout.allCases {
            progress("\(Self.name): the like's raw floor, layout \(layout.rawValue): \(floor.warmup) warm-up + \(floor.likes) likes")
            do {
                let result = try floor.run(layout)
                progress("\(Self.name): raw floor (\(layout.rawValue)): \(Self.text(result.latency)), CPU \(format(result.cpuPerLike)) µs and \(format(result.wakeUpsPerLike)) wake-ups per like")
                for thread in result.threads where thread.cpu >= 5 || thread.runs >= 0.5 {
                    progress("\(Self.name):   \(thread.thread.padding(toLength: 28, withPad: " ", startingAt: 0)) \(format(thread.cpu)) µs, \(format(thread.runs)) wake-ups per like")
                }
                floors.append(result)
            } catch {
                progress("\(Self.name): raw floor (\(layout.rawValue)) FAILED: \(error)")
                floorFailures.append("\(layout.rawValue): \(error)")
            }
        }
        // The like's floor with its parties on one CPU each, as the pinned app's processes are.
        var pinnedFloor: LikeFloor.Result?
        progress("\(Self.name): the like's raw floor, layout app, pinned as --placement pinned places the app: \(floor.warmup) warm-up + \(floor.likes) likes")
        do {
            let result = try floor.run(.app, pinned: true)
            progress("\(Self.name): raw floor (app, pinned): \(Self.text(result.latency)), CPU \(format(result.cpuPerLike)) µs and \(format(result.wakeUpsPerLike)) wake-ups per like")
            pinnedFloor = result
        } catch {
            progress("\(Self.name): raw floor (app, pinned) FAILED: \(error)")
        }
        // The journey's raw floor: its six intents after logIn, their processes, hops and writes.
        let journeyFloor: Swift.Result<JourneyFloor.Result, BenchError>
        let floorOptions = JourneyFloor.Options(quick: options.quick)
        progress("\(Self.name): the journey's raw floor: \(floorOptions.warmup) warm-up + \(floorOptions.journeys) journeys of six intents")
        do throws(BenchError) {
            let result = try JourneyFloor.run(floorOptions)
            progress("\(Self.name): journey floor: \(Self.text(result.journey)), CPU \(format(result.cpuPerJourney / 1000, decimals: 2)) ms and "
                + "\(format(result.wakeUpsPerJourney)) wake-ups per journey (\(result.hops.sends) messages through the broker, \(result.hops.writes) Clone writes)")
            progress("\(Self.name):   floor CPU per journey by process (ms): "
                + result.processes.map { "\($0.name) \(format($0.cpu / 1000, decimals: 2))" }.joined(separator: ", "))
            for (label, summary) in result.milestones.sorted(by: { $0.key < $1.key }) {
                progress("\(Self.name):   floor \(label): \(Self.text(summary))")
            }
            journeyFloor = .success(result)
        } catch {
            progress("\(Self.name): journey floor FAILED: \(error)")
            journeyFloor = .failure(error)
        }
        var result = rows(samples, floors: floors, floorFailures: floorFailures, journeyFloor: journeyFloor)
        result += placementRows(shared: samples, pinned: pinned, pinnedFloor: pinnedFloor)
        switch edges {
        case .success(let splits):
            let labels = Self.steps.flatMap(\.milestones).filter { $0.fresh != nil }.map(\.label)
            let whole = samples.milestones.mapValues { LatencySummary(nanoseconds: $0).p50 }
            result += JourneyEdges.rows(splits, labels: labels, whole: whole, benchmark: Self.name)
        case .failure(let error):
            result.append(ResultRow(Self.name, "split by the host's trace", unit: "ms", flowbus: nil, target: "", verdict: .failed,
                                    note: "app-journey's split by the host's trace failed: \(error)"))
        }
        return result
    }

    /// Starts the app with `upOptions` and plays the warm-up and measured journeys; returns the
    /// host, still running (the caller stops it), and what the journeys measured.
    private func measure(upOptions: [String]) throws(BenchError) -> (AppHost, Samples) {
        let host = try AppHost.start(options: options, label: Self.name, upOptions: upOptions)
        do throws(BenchError) {
            let endpoints = try host.endpoints()
            progress("\(Self.name): \(warmup) warm-up + \(journeys) journeys of \(Self.steps.count) intents, one session, \(Self.email) (\(upOptions.joined(separator: " ")))")
            // Every process of the app, to say what CPU a journey costs and where.
            let members = [ProcessTreeCPU.Member(label: "host (broker, Clone server, supervisor)", pid: host.hostPID)]
                + (try host.plugins()).compactMap { plugin in plugin.pid.map { ProcessTreeCPU.Member(label: plugin.name, pid: $0) } }
                + [ProcessTreeCPU.Member(label: "client (this process's SessionClient)", pid: nil)]
            let cpu = ProcessTreeCPU(members: members)
            let samples = try blocking { [journeys, warmup, logger] in
                try await Self.play(endpoints: endpoints, warmup: warmup, journeys: journeys, cpu: cpu, logger: logger)
            }
            _ = try host.checkNoRestarts()
            return (host, samples)
        } catch {
            let log = host.hostLogTail
            host.stop()
            throw BenchError(error.description + "; host log: \(log)")
        }
    }

    /// Each journey's time less its logIn → Home success (the password hash); nil without them.
    static func withoutLogIn(_ samples: Samples) -> LatencySummary? {
        guard let logIns = samples.milestones["logIn → Home success"], logIns.count == samples.journeys.count, !logIns.isEmpty else { return nil }
        return LatencySummary(nanoseconds: zip(samples.journeys, logIns).map { $0 > $1 ? $0 - $1 : 0 })
    }

    /// The pinned pass beside the shared one: the journey, the like and the CPU a journey takes.
    /// Context: the targets are shared placement's (pinned, `flowbus up`'s default on two CPUs, is faster here).
    private func placementRows(shared: Samples, pinned: Swift.Result<Samples, BenchError>, pinnedFloor: LikeFloor.Result?) -> [ResultRow] {
        let measure = { (label: String) in "\(label), --placement pinned" }
        let pinnedSamples: Samples
        switch pinned {
        case .success(let samples): pinnedSamples = samples
        case .failure(let error):
            return [ResultRow(Self.name, measure("whole journey without logIn → Home, p50"), unit: "ms", flowbus: nil, verdict: .failed,
                              note: "app-journey with `flowbus up --placement pinned` failed: \(error)")]
        }
        let ms = { (microseconds: Double) in microseconds / 1000 }
        let sharedLabel = "the same journeys with --placement shared, this run"
        var rows: [ResultRow] = []
        if let before = Self.withoutLogIn(shared), let after = Self.withoutLogIn(pinnedSamples) {
            let like = { (samples: Samples) in samples.milestones["like → Details success"].map { LatencySummary(nanoseconds: $0) } }
            let cpu = { (samples: Samples) in samples.cpu.map(\.microseconds).reduce(0, +) / 1000 }
            progress("\(Self.name): --placement pinned: journey without logIn p50 \(format(ms(after.p50), decimals: 2)) ms (shared \(format(ms(before.p50), decimals: 2)))")
            rows.append(ResultRow(
                Self.name, measure("whole journey without logIn → Home, p50"), unit: "ms", flowbus: ms(after.p50),
                raw: ms(before.p50), rawLabel: sharedLabel,
                note: "app-journey on a host started with `flowbus up --placement pinned` (its threads on one CPU, each plugin process with "
                    + "every thread on one CPU, in turn), right after the shared pass: \(pinnedSamples.journeys.count) journeys after \(warmup) "
                    + "warm-up, p99 \(format(ms(after.p99), decimals: 2)) ms (shared \(format(ms(before.p99), decimals: 2))); "
                    + "the client (this process) runs where the kernel puts it; the targets above are --placement shared's, "
                    + "and pinned is flowbus up's default (auto) on a host that may use two CPUs"))
            if let likeBefore = like(shared), let likeAfter = like(pinnedSamples) {
                rows.append(ResultRow(Self.name, measure("like → Details success, p50"), unit: "ms", flowbus: ms(likeAfter.p50),
                                      raw: ms(likeBefore.p50), rawLabel: sharedLabel,
                                      note: "app-journey's like with --placement pinned: p99 \(format(ms(likeAfter.p99), decimals: 2)) ms "
                                        + "(shared \(format(ms(likeBefore.p99), decimals: 2))), max \(format(ms(likeAfter.max), decimals: 2)) ms "
                                        + "(shared \(format(ms(likeBefore.max), decimals: 2)))"))
                if let pinnedFloor {
                    rows.append(ResultRow(
                        Self.name, measure("like → Details success, p50") + ", vs its raw floor pinned alike", unit: "ms", flowbus: ms(likeAfter.p50),
                        raw: ms(pinnedFloor.latency.p50), rawLabel: "raw libzmq, the like's processes, threads and messages, pinned as the app's",
                        note: "like-floor's app layout with its parties pinned as --placement pinned places the app's processes on the like's way "
                            + "(the host, the view model and the navigation owner on one CPU, the services on the next; the client where the kernel puts it): "
                            + "p50 \(format(pinnedFloor.latency.p50, decimals: 1)) µs, p99 \(format(pinnedFloor.latency.p99, decimals: 1)) µs, "
                            + "CPU \(format(pinnedFloor.cpuPerLike)) µs and \(format(pinnedFloor.wakeUpsPerLike)) wake-ups per like"))
                }
            }
            if !shared.cpu.isEmpty, !pinnedSamples.cpu.isEmpty {
                rows.append(ResultRow(Self.name, measure("CPU per journey, all processes"), unit: "ms", flowbus: cpu(pinnedSamples),
                                      raw: cpu(shared), rawLabel: sharedLabel,
                                      note: "app-journey CPU per journey with --placement pinned: \(format(pinnedSamples.wakeUps)) thread wake-ups "
                                        + "(shared \(format(shared.wakeUps)))"))
            }
        }
        return rows
    }

    private func rows(
        _ samples: Samples, floors: [LikeFloor.Result], floorFailures: [String], journeyFloor: Swift.Result<JourneyFloor.Result, BenchError>
    ) -> [ResultRow] {
        let journeyFloorResult = try? journeyFloor.get()
        let ms = { (microseconds: Double) in microseconds / 1000 }
        let whole = LatencySummary(nanoseconds: samples.journeys)
        let replies = LatencySummary(nanoseconds: samples.replies)
        progress("\(Self.name): whole journey \(Self.text(whole))")
        var rows = [
            ResultRow(Self.name, "whole journey (\(Self.steps.count) intents), p50", unit: "ms", flowbus: ms(whole.p50),
                      note: "app-journey: \(samples.journeys.count) journeys measured after \(warmup) warm-up, one after the other in one session "
                        + "(\(samples.session)), each \(Self.steps.count) intents and \(Self.steps.flatMap(\.milestones).count) timed milestones "
                        + "(each timed as the client applies the view that reaches it, on its Clone agent's thread, as the raw floors' clients "
                        + "time theirs as their receive returns); "
                        + "whole journey mean \(format(ms(whole.mean), decimals: 2)) ms, min \(format(ms(whole.min), decimals: 2)) ms, "
                        + "max \(format(ms(whole.max), decimals: 2)) ms"),
            ResultRow(Self.name, "whole journey (\(Self.steps.count) intents), p99", unit: "ms", flowbus: ms(whole.p99)),
        ]
        // Issue 16: the journey without its sign-in (the password hash), per journey.
        if let rest = Self.withoutLogIn(samples) {
            rows.append(ResultRow(
                Self.name, "whole journey without logIn → Home, p50", unit: "ms", flowbus: ms(rest.p50),
                raw: journeyFloorResult.map { ms($0.journey.p50) },
                rawLabel: journeyFloorResult.map { _ in "raw libzmq, the six intents' processes, hops and writes" },
                target: "≤ 8 ms", verdict: ms(rest.p50) <= 8 ? .pass : .miss,
                note: "app-journey without sign-in: each journey's time less its logIn → Home success (the password hash), p99 \(format(ms(rest.p99), decimals: 2)) ms; "
                    + Self.journeyFloorNote(journeyFloor)))
        }
        for milestone in Self.steps.flatMap(\.milestones) {
            guard let values = samples.milestones[milestone.label], !values.isEmpty else { continue }
            let summary = LatencySummary(nanoseconds: values)
            progress("\(Self.name): \(milestone.label): \(Self.text(summary))")
            // Issue 16: an intent that makes one service call (like: svc.users) shows in success within 0.5 ms.
            let oneCall = milestone.label == "like → Details success"
            let app = oneCall ? floors.first { $0.layout == .app } : nil
            // The other intents after logIn: their time in the journey's raw floor.
            let inJourney = oneCall ? nil : journeyFloorResult?.milestones[milestone.label]
            let raw = app.map { ms($0.latency.p50) } ?? inJourney.map { ms($0.p50) }
            let rawLabel = app.map { _ in "raw libzmq, the like's processes, threads and messages" }
                ?? inJourney.map { _ in "raw libzmq, in the journey's floor (one thread a process)" }
            rows.append(ResultRow(Self.name, "\(milestone.label), p50", unit: "ms", flowbus: ms(summary.p50),
                                  raw: raw, rawLabel: rawLabel,
                                  target: oneCall ? "≤ 0.5 ms" : "", verdict: oneCall ? (ms(summary.p50) <= 0.5 ? .pass : .miss) : .info,
                                  note: oneCall ? Self.floorNote(floors, failures: floorFailures) : nil))
            rows.append(ResultRow(Self.name, "\(milestone.label), p99", unit: "ms", flowbus: ms(summary.p99)))
        }
        if !samples.between.isEmpty {
            // Issue 16: the journey is its intents plus the client's own turns between them.
            let between = LatencySummary(nanoseconds: samples.between)
            rows.append(ResultRow(
                Self.name, "client's turns between intents, per journey, p50", unit: "ms", flowbus: ms(between.p50),
                note: "app-journey: each journey's time less the time inside its \(Self.steps.count) intents (each from sending it until its reply "
                    + "and every milestone came): the benchmark's SessionClient waiting for the next screen and its action to be offered, "
                    + "and the task that sends each intent resuming once its milestones came; p99 \(format(ms(between.p99), decimals: 2)) ms"))
        }
        rows.append(ResultRow(
            Self.name, "intent send → reply (all intents), p50", unit: "ms", flowbus: ms(replies.p50),
            note: "app-journey replies: \(replies.count) intents, every one applied in the end; p99 \(format(ms(replies.p99), decimals: 2)) ms "
                + "(the MDP request from the client through the broker to the view model or coordinator and back; "
                + "the screen's new state arrives separately over Clone)"))
        if !samples.cpu.isEmpty {
            // Issue 16: where the CPU of a journey goes. Summed over the processes it is more than
            // the journey's wall time on one core: the step times are bounded by this CPU.
            let total = samples.cpu.map(\.microseconds).reduce(0, +)
            let top = samples.cpu.prefix(6).map { "\($0.label) \(format(ms($0.microseconds), decimals: 2))" }
            let rest = samples.cpu.dropFirst(6).map(\.microseconds).reduce(0, +)
            progress("\(Self.name): CPU per journey \(format(ms(total), decimals: 2)) ms, \(format(samples.wakeUps)) thread wake-ups: " + samples.cpu.map { "\($0.label) \(format(ms($0.microseconds), decimals: 2))" }.joined(separator: ", "))
            rows.append(ResultRow(
                Self.name, "CPU per journey, all processes", unit: "ms", flowbus: ms(total),
                note: "app-journey CPU per journey (ms, scheduler run time of every thread, measured journeys only): "
                    + (top + (rest > 0 ? ["\(samples.cpu.count - 6) other processes \(format(ms(rest), decimals: 2))"] : [])).joined(separator: ", ")
                    + "; the journey's wall-clock mean was \(format(ms(whole.mean), decimals: 2)) ms on 2 cores; "
                    + "\(format(samples.wakeUps)) thread wake-ups per journey (times a thread was scheduled in, all processes)"))
        }
        let refused = samples.refusals.values.map(\.count).reduce(0, +)
        rows.append(ResultRow(
            Self.name, "navigation intents refused, then sent again", unit: "count", flowbus: Double(refused),
            note: refused == 0 ? nil : "app-journey refusals: " + samples.refusals.sorted { $0.key < $1.key }
                .map { "\($0.key) ×\($0.value.count) (\"\($0.value.example)\")" }.joined(separator: "; ")
                + "; each was sent again every \(Self.navigationRetryDelay) until applied, and its milestone's time runs from the first try"))
        return rows
    }

    /// What journey-floor measured, for the journey's row.
    static func journeyFloorNote(_ floor: Swift.Result<JourneyFloor.Result, BenchError>) -> String {
        switch floor {
        case .failure(let error):
            return "journey-floor failed: \(error)"
        case .success(let result):
            let intents = JourneyFloor.journey().intents.compactMap { intent in
                result.milestones[intent.label].map { "\(intent.label) \(format($0.p50 / 1000, decimals: 2))" }
            }
            return "journey-floor, raw libzmq: the six intents after logIn played by the app's processes (client, host with broker and Clone server, "
                + "the coordinators and view models on the way, services), one thread each, with the app's \(result.hops.sends) messages through the broker "
                + "and \(result.hops.writes) Clone writes in the app's order, each reply after its sender's writes are confirmed, and nothing else: "
                + "p50 \(format(result.journey.p50 / 1000, decimals: 2)) ms, p99 \(format(result.journey.p99 / 1000, decimals: 2)) ms, "
                + "CPU \(format(result.cpuPerJourney / 1000, decimals: 2)) ms and \(format(result.wakeUpsPerJourney)) thread wake-ups per journey "
                + "(\(result.journeys) journeys; by process: "
                + result.processes.prefix(6).map { "\($0.name) \(format($0.cpu / 1000, decimals: 2))" }.joined(separator: ", ")
                + "); to each milestone, p50 ms: " + intents.joined(separator: ", ")
        }
    }

    /// What like-floor measured, for the like's row.
    static func floorNote(_ floors: [LikeFloor.Result], failures: [String]) -> String {
        var parts = floors.map { floor in
            let what = floor.layout == .app
                ? "the app's layout (worker, lane and agent threads in the view model)"
                : "one thread per process (no hand-offs in the view model)"
            return "\(what): p50 \(format(floor.latency.p50)) µs, p99 \(format(floor.latency.p99)) µs, CPU \(format(floor.cpuPerLike)) µs and \(format(floor.wakeUpsPerLike)) thread wake-ups per like (\(floor.likes) likes)"
        }
        parts += failures.map { "failed: \($0)" }
        return "like-floor, raw libzmq: the like's processes (client, host with broker and Clone server, view model, services, "
            + "navigation owner) passing the same messages and doing nothing else; " + parts.joined(separator: "; ")
    }

    /// A summary in milliseconds, for the progress lines.
    static func text(_ summary: LatencySummary) -> String {
        "p50 \(format(summary.p50 / 1000, decimals: 2)) ms, p99 \(format(summary.p99 / 1000, decimals: 2)) ms, "
            + "mean \(format(summary.mean / 1000, decimals: 2)) ms, max \(format(summary.max / 1000, decimals: 2)) ms (n=\(summary.count))"
    }

    // MARK: Playing

    static func play(endpoints: BusEndpoints, warmup: Int, journeys: Int, cpu: ProcessTreeCPU, logger: Logger) async throws -> Samples {
        let client = try await AppHost.openSession(endpoints, name: "flowbus-bench/\(getpid())", timeout: .seconds(20), logger: logger)
        defer { client.stop() }
        var samples = Samples(session: client.session)
        var cpuStart = cpu.sample()
        let pids = cpu.members.map { $0.pid ?? getpid() }
        var threadsAtStart = LikeFloor.threads(of: pids)
        for index in 0..<(warmup + journeys) {
            if index == warmup {
                cpuStart = cpu.sample()
                threadsAtStart = LikeFloor.threads(of: pids)
                Instructions.start()
            }
            let start = monotonicNanoseconds()
            var times: [(String, UInt64)] = []
            var replies: [UInt64] = []
            var inIntents: UInt64 = 0
            var refused: [(String, String)] = []
            for step in steps {
                do {
                    let (milestones, reply, refusals, done, reached) = try await perform(step, on: client)
                    inIntents += done
                    times += milestones
                    if index >= warmup { samples.edges += reached }
                    replies.append(reply)
                    refused += refusals
                } catch {
                    throw BenchError("journey \(index + 1), \(step.action) on \(step.screen): \(error)")
                }
            }
            let total = monotonicNanoseconds() - start
            if index >= warmup {
                samples.journeys.append(total)
                samples.replies += replies
                samples.between.append(total > inIntents ? total - inIntents : 0)
                for (label, nanoseconds) in times { samples.milestones[label, default: []].append(nanoseconds) }
                for (kind, message) in refused {
                    samples.refusals[kind, default: (0, message)].count += 1
                    progress("\(name): journey \(index + 1 - warmup): \(kind) refused, sent again: \(message)")
                }
            }
            if index + 1 == warmup {
                progress("\(name): \(warmup) warm-up journeys done (last \(format(Double(total) / 1e6, decimals: 1)) ms)")
            } else if index >= warmup, (index + 1 - warmup) % 25 == 0 {
                progress("\(name): \(index + 1 - warmup) of \(journeys) journeys measured (last \(format(Double(total) / 1e6, decimals: 1)) ms)")
            }
        }
        samples.cpu = cpu.perOperation(from: cpuStart, to: cpu.sample(), operations: journeys)
        samples.wakeUps = LikeFloor.perLike(threadsAtStart, LikeFloor.threads(of: pids), likes: journeys).map(\.runs).reduce(0, +)
        Instructions.stop("app-journey client", operations: journeys)
        try? await client.close()
        return samples
    }

    /// How often, and how far apart, a refused navigation intent is sent again.
    static let navigationTries = 50
    static let navigationRetryDelay: Duration = .milliseconds(10)

    /// Sends one intent and waits until every milestone was reached; returns each one's time since
    /// sending, the time until the (last) reply, the refusals of navigation intents sent again,
    /// and the time until the reply and every milestone had come.
    /// Also, for the split by the host's trace, each milestone with a fresh state: when (wall clock)
    /// the intent went and the milestone was seen, and which state met it.
    static func perform(
        _ step: Step, on client: SessionClient
    ) async throws -> ([(String, UInt64)], UInt64, [(String, String)], UInt64, [JourneyEdges.Sample]) {
        let before: SessionView
        do {
            before = try await client.waitUntil(timeout: .seconds(20), "top screen \(step.screen)") { $0.screen == step.screen }
        } catch {
            throw BenchError("the session is not on \(step.screen), where the journey sends \(step.action): \(error)")
        }
        let expectations = step.milestones.map { milestone in
            var expectation = milestone.expectation(before)
            if let kind = milestone.fresh { expectation.newerThan[kind] = before.states[kind]?.screenVersion ?? 0 }
            return expectation
        }
        // The screen can show before its view model's actions arrive (the coordinator's come with
        // the navigation): wait until this one is offered, as a person waits for the button.
        var prepared = try await client.prepareWhenOffered(action: step.action, fields: step.fields, wait: .seconds(20))
        // Watch from before sending: a milestone may come and go (SignIn's success is reset once
        // Home shows) before the reply does. Each milestone's time is taken as the client applies
        // the view that reaches it, on its Clone agent's thread, where the raw floors' clients
        // take theirs (as their receive returns); no task wakes for the views on the way.
        let milestones = Milestones(expectations, kinds: step.milestones.map(\.fresh))
        let stopWatching = client.watch({ milestones.look($0) }, ended: { milestones.end() })
        // The intent's 20 s are kept by one watchdog for the whole run, not a task per intent.
        MilestoneWatchdog.shared.keep(milestones, for: .seconds(20))
        defer {
            MilestoneWatchdog.shared.drop(milestones)
            stopWatching()
        }
        let sent = monotonicNanoseconds()
        let sentWall = WallClock.nowUnixNanos()
        var outcome: IntentOutcome
        // A navigation intent may be refused while the flow that owns the screen is still starting
        // (a person would tap again): it is sent again, counted, and its time runs from the first try.
        var refusals: [(String, String)] = []
        do {
            outcome = try await client.send(prepared)
            while !outcome.applied, prepared.route.isNavigation, refusals.count < navigationTries {
                refusals.append(("\(step.action) → \(prepared.route.service): \(outcome.error.map { "\($0.code)" } ?? "?")",
                                 outcome.error?.message ?? "\(outcome)"))
                try await Task.sleep(for: navigationRetryDelay)
                prepared = try client.prepare(action: step.action, fields: step.fields)
                outcome = try await client.send(prepared)
            }
        }
        let replied = monotonicNanoseconds()
        guard outcome.applied else {
            throw BenchError("the intent was not applied\(refusals.isEmpty ? "" : " after \(refusals.count + 1) tries"): \(outcome); the session shows \(client.view.summary)")
        }
        let (reached, last, seen) = await milestones.reachedOrEnded()
        if let missing = reached.firstIndex(where: { $0 == nil }) {
            let view = last ?? client.view
            let failure = SessionWaitTimeout(
                expected: "\(step.milestones[missing].label) (\(expectations[missing]))", timeout: .seconds(20), view: view,
                events: client.events(last: 12), differences: expectations[missing].differences(from: view))
            throw BenchError("\(failure)\n(the app did not reach this point; run the journey by hand with `flowbus drive` to see where it stops)")
        }
        // An intent sent again runs from its first try; its trace has only the last try's key.
        let edges: [JourneyEdges.Sample] = refusals.isEmpty ? zip(step.milestones, seen).compactMap { milestone, seen in
            guard let kind = milestone.fresh, let (wall, version) = seen else { return nil }
            return JourneyEdges.Sample(label: milestone.label, intentKey: prepared.idempotencyKey, sentUnixNanos: sentWall,
                                       reachedUnixNanos: wall, screen: kind, version: version)
        } : []
        return (zip(step.milestones, reached).map { ($0.label, $1! - sent) }, replied - sent, refusals, monotonicNanoseconds() - sent, edges)
    }
}

/// One intent's milestones as the client applies its views: the monotonic time each was first
/// reached, and for a fresh state the wall-clock time and the state's version (for the split by
/// the host's trace). `look` runs on the client's Clone agent thread; `reachedOrEnded` returns once
/// every milestone is reached, or the watch ended (the client stopped, or the intent's 20 s ran out).
final class Milestones: Sendable {
    struct State {
        var reached: [UInt64?]
        var seen: [(Int64, UInt64)?]
        var last: SessionView?
        var over = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    let expectations: [Expectation]
    let kinds: [String?]
    let state: Mutex<State>

    init(_ expectations: [Expectation], kinds: [String?]) {
        self.expectations = expectations
        self.kinds = kinds
        state = Mutex(State(reached: Array(repeating: nil, count: expectations.count), seen: Array(repeating: nil, count: expectations.count)))
    }

    /// Notes the milestones `view` reaches first; true once all are reached (the watch then ends).
    func look(_ view: SessionView) -> Bool {
        let now = monotonicNanoseconds()
        let wall = WallClock.nowUnixNanos()
        let (done, waiter) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
            state.last = view
            for index in expectations.indices where state.reached[index] == nil && expectations[index].isMet(by: view) {
                state.reached[index] = now
                if let kind = kinds[index], let version = view.states[kind]?.screenVersion { state.seen[index] = (wall, version) }
            }
            guard !state.over, state.reached.allSatisfy({ $0 != nil }) else { return (false, nil) }
            state.over = true
            defer { state.waiter = nil }
            return (true, state.waiter)
        }
        waiter?.resume()
        return done
    }

    /// Ends the watch with what was reached so far.
    func end() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.over = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    func reachedOrEnded() async -> (reached: [UInt64?], last: SessionView?, seen: [(Int64, UInt64)?]) {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let over = state.withLock { state in
                if !state.over { state.waiter = continuation }
                return state.over
            }
            if over { continuation.resume() }
        }
        return state.withLock { ($0.reached, $0.last, $0.seen) }
    }
}

/// Ends the `Milestones` kept longer than their time, looking once a second from one task.
final class MilestoneWatchdog: Sendable {
    static let shared = MilestoneWatchdog()
    private let kept = Mutex<[ObjectIdentifier: (deadline: ContinuousClock.Instant, milestones: Milestones)]>([:])

    private init() {
        Task.detached { [self] in
            while true {
                try? await Task.sleep(for: .seconds(1))
                let now = ContinuousClock.now
                let late = self.kept.withLock { kept in
                    let late = kept.filter { $0.value.deadline <= now }
                    for key in late.keys { kept[key] = nil }
                    return late.values.map(\.milestones)
                }
                for milestones in late { milestones.end() }
            }
        }
    }

    func keep(_ milestones: Milestones, for limit: Duration) {
        kept.withLock { $0[ObjectIdentifier(milestones)] = (ContinuousClock.now + limit, milestones) }
    }

    func drop(_ milestones: Milestones) {
        kept.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(milestones)) }
    }
}
