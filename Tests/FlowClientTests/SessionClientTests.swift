import Clone
@testable import FlowClient
import FlowProtocol
import Foundation
import Synchronization
import Testing

@Suite("Session client over a real broker and Clone server")
struct SessionClientTests {
    static let signin = BusFixture.stack([BusFixture.screen("signin", owner: "auth", actions: ["register"])], version: 1)

    @Test func theViewFollowsNavigationStatesAndTheRecord() async throws {
        let bus = try await BusFixture()
        try await bus.serveApp(session: "s1", navigation: Self.signin)
        let client = try await SessionClient.open(bus.endpoints, options: BusFixture.options, logger: quietLogger)
        defer { client.stop() }
        #expect(client.session == "s1")
        try await client.waitUntil { $0.screen == "signin" }

        try bus.publishState("s1", kind: "signin", phase: .error, version: 2, message: "Invalid e-mail or password.", notice: "unverified")
        let failed = try await client.waitUntil { $0.phase == .error }
        #expect(failed.topState?.message == "Invalid e-mail or password.")
        #expect(failed.topState?.notice == "unverified")
        #expect(failed.topState?.writer == "vm-signin")

        let home = BusFixture.screen("home", owner: "home")
        let details = BusFixture.screen("details", owner: "home", id: "details-1")
        try bus.publish(BusFixture.tabs([("home", [home, details]), ("likes", [BusFixture.screen("likes", owner: "main")])],
                                        selected: "home", version: 2), at: "/s/s1/nav", keyVersion: 2)
        var record = Flowbus_V1_SessionRecord()
        record.session = "s1"
        record.user = "demo@flowbus.dev"
        record.flow = "main"
        record.open = true
        try bus.publish(record, at: "/s/s1/meta")
        let signedIn = try await client.waitUntil { $0.screen == "details" && $0.record?.user == "demo@flowbus.dev" }
        #expect(signedIn.tab == "home")
        #expect(signedIn.tabs == ["home", "likes"])
        #expect(signedIn.stack == ["home", "details"])
        #expect(signedIn.navigationVersion == 2)

        #expect(signedIn.closedReason == nil)
        // The owner closes a session by writing its record once more, then deleting its keys.
        record.open = false
        record.closedReason = "idle for 60 s"
        try bus.publish(record, at: "/s/s1/meta")
        try await client.waitUntil { $0.record?.open == false }
        #expect(client.view.closedReason == "idle for 60 s")
        try bus.writer.delete(key: "/s/s1/nav")
        try await client.waitUntil { $0.navigation == nil }
        #expect(client.view.closedReason == "idle for 60 s")

        // The log holds every navigation value and state, in the order the bus sequenced them.
        let events = client.events()
        let sequences = events.map(\.sequence).filter { $0 > 0 }
        #expect(sequences == sequences.sorted())
        #expect(events.map(\.index) == Array(1...events.count))
        let kinds = events.compactMap { event -> String? in
            switch event.kind {
            case .navigation(let version, let top, _, _, _): "nav v\(version) \(top)"
            case .state(let screen, let phase, _, _, _): "\(screen) \(phase.rawValue)"
            case .record: "meta"
            case .deleted(let key): "deleted \(key)"
            default: nil
            }
        }
        #expect(kinds == ["nav v1 signin", "signin error", "nav v2 details", "meta", "meta", "deleted /s/s1/nav"])
    }

    @Test func aValueFromAnOlderIncarnationOfTheSameWriterIsFencedAndCounted() async throws {
        let bus = try await BusFixture()
        try await bus.serveApp(session: "f1", navigation: Self.signin)
        let client = try await SessionClient.open(bus.endpoints, options: BusFixture.options, logger: quietLogger)
        defer { client.stop() }
        try await client.waitUntil { $0.screen == "signin" }

        let signup = BusFixture.stack([BusFixture.screen("signin", owner: "auth"), BusFixture.screen("signup", owner: "signup")], version: 2)
        try bus.publish(signup, at: "/s/f1/nav", incarnation: 3, keyVersion: 2)
        try await client.waitUntil { $0.screen == "signup" }

        // The replaced process wakes up and writes: ignored, counted, logged.
        let stale = BusFixture.stack([BusFixture.screen("forgotpassword", owner: "auth")], version: 9)
        try bus.publish(stale, at: "/s/f1/nav", incarnation: 2, keyVersion: 9)
        let fenced = try await client.waitUntil { $0.fencedValues == 1 }
        #expect(fenced.screen == "signup")
        #expect(client.events().contains { if case .fenced(let key, let newest) = $0.kind { key == "/s/f1/nav" && newest == 3 } else { false } })

        // Another writer's incarnation numbers are its own; a newer incarnation of the same writer wins.
        let newer = BusFixture.stack([BusFixture.screen("signin", owner: "auth")], version: 3)
        try bus.publish(newer, at: "/s/f1/nav", incarnation: 4, keyVersion: 3)
        let after = try await client.waitUntil { $0.navigationVersion == 3 }
        #expect(after.screen == "signin")
        #expect(after.fencedValues == 1)
    }

    @Test func actionsGoWhereTheScreenSaysWithTheVersionSeenAndAKeyPerIntent() async throws {
        let bus = try await BusFixture()
        let app = try await bus.serveApp(session: "r1", navigation: Self.signin)
        let auth = try await bus.serve("coord.auth") { _ in BusFixture.applied() }
        let signin = try await bus.serve("vm.signin") { _ in BusFixture.applied(version: 8) }
        let client = try await SessionClient.open(bus.endpoints, options: BusFixture.options, logger: quietLogger)
        defer { client.stop() }
        try await client.waitUntil { $0.screen == "signin" }
        try bus.publishState("r1", kind: "signin", phase: .none, version: 7, actions: ["logIn"])
        try await client.waitUntil { $0.states["signin"]?.screenVersion == 7 }

        let logIn = try await client.send(action: "logIn", fields: ["email": "a@b.c", "password": "x"])
        #expect(logIn.applied)
        #expect(logIn.prepared.route == .viewModel(kind: "signin"))
        let register = try await client.send(action: "register")
        #expect(register.prepared.route == .coordinator(name: "auth"))
        let back = try await client.send(action: "back")
        #expect(back.prepared.route == .coordinator(name: "app"))

        let data = try #require(signin.intents.first)
        #expect(data.action == "logIn" && data.screen == "signin" && data.screenVersion == 7 && data.fields["email"] == "a@b.c")
        #expect(data.screenID == "signin")
        #expect(auth.intents.map(\.action) == ["register"])
        #expect(auth.intents.first?.screenVersion == 1)
        #expect(app.intents.map(\.action) == ["back"])

        // One key per intent; sending a prepared intent again (a retry) reuses its key.
        let prepared = try client.prepare(action: "logIn", fields: ["email": "a@b.c"])
        _ = try await client.send(prepared)
        _ = try await client.send(prepared)
        let keys = signin.received.withLock { $0.map(\.idempotencyKey) }
        #expect(keys.count == 3)
        #expect(keys[1] == keys[2])
        #expect(keys[0] != keys[1])
        let allKeys = [logIn, register, back].map(\.prepared.idempotencyKey)
        #expect(Set(allKeys).count == 3)
        #expect(signin.received.withLock { $0.allSatisfy { $0.session == "r1" && $0.writer == "test-client" } })

        // An action the screen does not offer is refused before anything is sent (after a short
        // wait for the offer).
        await #expect(throws: SessionClientError.self) { try await client.send(action: "logOut") }
        #expect(signin.received.withLock { $0.count } == 3)
    }

    /// A press made before the screen's actions arrived (its view model's state follows the
    /// navigation) goes out with the state that offers it, looked for in each view as it comes:
    /// not on a timer, which looked every 5 ms and sent it up to 5 ms late.
    @Test func aPressBeforeItsActionIsOfferedGoesOutWithTheStateThatOffersIt() async throws {
        let bus = try await BusFixture()
        try await bus.serveApp(session: "r2", navigation: Self.signin)
        let signin = try await bus.serve("vm.signin") { _ in BusFixture.applied(version: 8) }
        let client = try await SessionClient.open(bus.endpoints, options: BusFixture.options, logger: quietLogger)
        defer { client.stop() }
        try await client.waitUntil { $0.screen == "signin" }
        let looksBefore = client.offerLooks.load(ordering: .relaxed)
        let pressed = Task { try await client.prepareWhenOffered(action: "logIn", fields: ["email": "a@b.c"], wait: .seconds(20)) }
        // Time for a timer to have looked dozens of times; no view comes in it.
        try await Task.sleep(for: .milliseconds(300))
        try bus.publishState("r2", kind: "signin", phase: .none, version: 7, actions: ["logIn"])
        let prepared = try await pressed.value
        #expect(prepared.route == .viewModel(kind: "signin"))
        #expect(prepared.version == 7)
        let looks = client.offerLooks.load(ordering: .relaxed) - looksBefore
        #expect(looks <= 8, "looked \(looks) times for an action that one view brought, 300 ms after the press")
        let outcome = try await client.send(prepared)
        #expect(outcome.applied)
        #expect(signin.intents.map(\.action) == ["logIn"])
    }

    @Test func aStaleRefusalIsSurfacedWithItsReason() async throws {
        let bus = try await BusFixture()
        try await bus.serveApp(session: "st1", navigation: Self.signin)
        try await bus.serve("vm.signin") { _ in
            BusFixture.refused(.staleIntent, "the signin screen changed since this action was made; the action was not applied")
        }
        let client = try await SessionClient.open(bus.endpoints, options: BusFixture.options, logger: quietLogger)
        defer { client.stop() }
        try await client.waitUntil { $0.screen == "signin" }
        try bus.publishState("st1", kind: "signin", phase: .none, version: 1, actions: ["logIn"])
        let outcome = try await client.send(action: "logIn", fields: [:])
        #expect(!outcome.applied)
        #expect(outcome.isStale)
        #expect(outcome.description.contains("the signin screen changed"))
        #expect(client.events().contains { if case .reply(_, _, let applied, let error, _) = $0.kind { !applied && error.contains("changed") } else { false } })

        // A driver step fails on it, unless the script expects the refusal.
        let journey = Journey(endpoints: bus.endpoints, options: BusFixture.options, defaultTimeout: .seconds(5), logger: quietLogger)
        defer { journey.stop() }
        try await journey.attach("st1")
        await #expect { try await journey.send("logIn") } throws: { "\($0)".contains("refused") && "\($0)".contains("staleIntent") }
        try await journey.send("logIn", refused: "staleIntent")
        await #expect { try await journey.send("logIn", refused: "fenced") } throws: { "\($0)".contains("refused with staleIntent") }
    }

    /// A retry of an intent whose first try was applied (its answer lost) reaches a view model
    /// that was reset or restarted meanwhile and no longer knows its key: "stale". The session
    /// has gone on to another screen; the journey goes on too, and its next step checks where.
    @Test func aStaleRefusalAfterTheSessionWentOnLetsTheNextStepDecide() async throws {
        let bus = try await BusFixture()
        try await bus.serveApp(session: "mo1", navigation: Self.signin)
        try await bus.serve("vm.signin") { _ in
            // What the first try did: the session is on Home, the sign-in screen reset.
            try? bus.publish(BusFixture.stack([BusFixture.screen("home", owner: "home")], version: 2), at: "/s/mo1/nav")
            try? bus.publishState("mo1", kind: "signin", phase: .none, version: 4, actions: ["logIn"])
            var reply = BusFixture.refused(.staleIntent, "the signin screen changed since this action was made (it was at version 1, it is now at 4)")
            reply.screenVersion = 4
            return reply
        }
        try bus.publishState("mo1", kind: "signin", phase: .none, version: 1, actions: ["logIn"])
        let journey = Journey(endpoints: bus.endpoints, options: BusFixture.options, defaultTimeout: .seconds(5), logger: quietLogger)
        defer { journey.stop() }
        try await journey.attach("mo1")
        try await journey.expect(Expectation(screen: "signin"))
        let outcome = try await journey.send("logIn")
        #expect(outcome.isStale, "the refusal is what came back, and is reported as such")
        try await journey.expect(Expectation(screen: "home"))
    }

    /// `waitUntil` asks its predicate where each view is applied and returns the first view it
    /// held for; `waitUntilInTask` asks in the waiting task, so its predicate may keep the
    /// caller's own state (here a plain counter), and sees the views on the way.
    @Test func bothWaitsReturnTheFirstViewTheirPredicateHoldsFor() async throws {
        let bus = try await BusFixture()
        try await bus.serveApp(session: "w2", navigation: Self.signin)
        let client = try await SessionClient.open(bus.endpoints, options: BusFixture.options, logger: quietLogger)
        defer { client.stop() }
        try await client.waitUntil { $0.screen == "signin" }
        // Asked once by the waiting task, then once more as it starts listening: it listens.
        let asked = Atomic<Int>(0)
        async let error = client.waitUntil { view in
            asked.add(1, ordering: .relaxed)
            return view.topState?.screenVersion == 3
        }
        let deadline = ContinuousClock.now + .seconds(5)
        while asked.load(ordering: .relaxed) < 2 {
            guard ContinuousClock.now < deadline else {
                Issue.record("waitUntil did not ask its predicate as it started listening")
                return
            }
            try await Task.sleep(for: .milliseconds(1))
        }
        let started = Atomic<Bool>(false)
        let inTask = Task {
            var looked = 0
            let view = try await client.waitUntilInTask { view in
                looked += 1
                started.store(true, ordering: .releasing)
                return view.topState?.screenVersion == 3
            }
            return (view, looked)
        }
        // Published once the in-task wait has looked at the view it started on.
        while !started.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(1)) }
        for version in UInt64(1)...3 {
            try bus.publishState("w2", kind: "signin", phase: version == 3 ? .error : .loading, version: version, message: "", actions: ["logIn"])
        }
        let shown = try await error
        #expect(shown.topState?.screenVersion == 3)
        #expect(shown.phase == .error)
        #expect(asked.load(ordering: .relaxed) >= 3, "asked again of the views applied after it listened")
        let (seen, looked) = try await inTask.value
        #expect(seen.topState?.screenVersion == 3)
        #expect(looked >= 2, "the view it started on and the one it held for, at least: \(looked)")
    }

    @Test func aWaitThatRunsOutShowsExpectedAgainstActualAndTheLastEvents() async throws {
        let bus = try await BusFixture()
        try await bus.serveApp(session: "w1", navigation: Self.signin)
        let client = try await SessionClient.open(bus.endpoints, options: BusFixture.options, logger: quietLogger)
        defer { client.stop() }
        try await client.waitUntil { $0.screen == "signin" }
        try bus.publishState("w1", kind: "signin", phase: .error, version: 3, message: "Invalid e-mail or password.", actions: ["logIn"])
        try await client.waitUntil { $0.phase == .error }

        do {
            try await client.expect(Expectation(screen: "home", tab: "home", phase: .success), timeout: .milliseconds(200))
            Issue.record("the expectation cannot be met")
        } catch let timeout as SessionWaitTimeout {
            let text = timeout.description
            #expect(text.contains("session w1: waited"))
            #expect(text.contains("✗ screen"))
            #expect(text.contains("home | signin"))
            #expect(text.contains("✗ tab"))
            #expect(text.contains("success | error"))
            #expect(text.contains("\"Invalid e-mail or password.\""))
            #expect(text.contains("last events:"))
            #expect(text.contains("nav v1 top signin"))
            #expect(!text.contains("✗ stack"))
        }
        await #expect { try await client.waitUntil(timeout: .milliseconds(100), "a modal") { $0.modal != nil } } throws: { error in
            "\(error)".contains("waited") && "\(error)".contains("for a modal") && "\(error)".contains("actual: screen signin")
        }
    }
}
