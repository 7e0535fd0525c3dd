import FlowClient
import FlowProtocol
import Foundation
import Synchronization
import Testing

@Suite("Drive scripts")
struct DriveScriptTests {
    @Test func aScriptParsesIntoItsSteps() throws {
        let script = try DriveScript.parse("""
        - open: {}
        - expect: {screen: signin}
        - send: {action: logIn, fields: {email: demo@flowbus.dev, password: flowbus123}}
        - expect: {screen: signin, phase: error, message: "Invalid e-mail or password.", timeout: 2}
        - call: {service: svc.mail, method: outbox, args: {email: new@x.dev}, save: {token: token}}
        - send: {action: signUp, fields: {genres: [g1, g2], age: 12}, screen: signup, refused: staleIntent}
        - expect: {screen: home, tab: home, stack: [home, details], modal: none}
        - expect: {coordinators: [app, main, home, settings, expenses], timeout: 250ms}
        - attach: abc
        - wait: 0.1
        - close
        """, name: "demo.yaml")
        #expect(script.steps.map(\.step.name) == ["open", "expect", "send", "expect", "call", "send", "expect", "expect", "attach", "wait", "close"])
        #expect(script.steps[0].step == .open(session: nil))
        #expect(script.steps[2].step == .send(action: "logIn", fields: ["email": "demo@flowbus.dev", "password": "flowbus123"], screen: nil, refused: nil))
        #expect(script.steps[3].step == .expect(Expectation(screen: "signin", phase: .error, message: "Invalid e-mail or password.")))
        #expect(script.steps[3].timeout == .seconds(2))
        #expect(script.steps[3].line == 4)
        #expect(script.steps[4].step == .call(service: "svc.mail", method: "outbox", args: ["email": "new@x.dev"], save: ["token": "token"]))
        #expect(script.steps[5].step == .send(action: "signUp", fields: ["genres": "g1,g2", "age": "12"], screen: "signup", refused: "staleIntent"))
        #expect(script.steps[6].step == .expect(Expectation(screen: "home", tab: "home", stack: ["home", "details"], modal: "none")))
        #expect(script.steps[7].timeout == .milliseconds(250))
        #expect(script.steps[8].step == .attach(session: "abc", observe: false))
        #expect(script.steps[9].step == .wait(.milliseconds(100)))
    }

    @Test(arguments: [
        ("- open: {}\n- expct: {screen: signin}\n", "step 2 (line 2)", "\"expct\" is not a step"),
        ("- open: {}\n- expect: {screne: signin}\n", "step 2 (line 2)", "expect has no option \"screne\""),
        ("- open: {}\n- expect: {screen: signin, phase: done}\n", "step 2 (line 2)", "phase \"done\" is not a phase"),
        ("- open: {}\n- expect: {timeout: 3}\n", "step 2", "expect names at least one of"),
        ("- open: {}\n\n- send: {fields: {a: b}}\n", "step 2 (line 3)", "send needs an action"),
        ("- open: {}\n- send: {action: x, fields: [a]}\n", "step 2", "fields are a mapping"),
        ("- expect: {screen: a, timeout: soon}\n", "step 1", "\"soon\" is not a duration"),
        ("- expect: {stack: home}\n", "step 1", "stack must be a list"),
        ("- call: {method: outbox}\n", "step 1", "call needs a service and a method"),
        ("- attach: {observe: true}\n", "step 1", "attach needs the session id"),
        ("- open: {}\n  expect: {screen: a}\n", "step 1", "a step is one key"),
        ("open: {}\n", "demo.yaml", "a drive script is a YAML list of steps"),
        ("- open: [\n", "demo.yaml", "not valid YAML"),
    ])
    func aBadScriptIsRefusedNamingTheStep(yaml: String, location: String, problem: String) {
        #expect {
            try DriveScript.parse(yaml, name: "demo.yaml")
        } throws: { error in
            let text = "\(error)"
            return text.hasPrefix("demo.yaml") && text.contains(location) && text.contains(problem)
        }
    }
}

@Suite("Journeys over a real broker and Clone server")
struct JourneyTests {
    /// A tiny app: coord.app opens sessions on SignIn; vm.signin refuses a wrong password with an
    /// error state and, for the right one, goes to success while coord.app shows Home.
    static func app(_ bus: BusFixture, session: String) async throws {
        let signin = BusFixture.stack([BusFixture.screen("signin", owner: "auth")], version: 1)
        try await bus.serveApp(session: session, navigation: signin)
        try bus.publishState(session, kind: "signin", phase: .error, version: 1, message: "Invalid e-mail or password.", actions: ["logIn"])
        let version = Counter()
        try await bus.serve("vm.signin") { envelope in
            guard let intent = try? envelope.unwrap(Flowbus_V1_Intent.self) else { return BusFixture.applied() }
            let loading = version.next()
            try? bus.publishState(session, kind: "signin", phase: .loading, version: loading, actions: ["logIn"])
            if intent.fields["password"] == "flowbus123" {
                try? bus.publishState(session, kind: "signin", phase: .success, version: version.next(), actions: ["logIn"])
                let home = BusFixture.tabs([("home", [BusFixture.screen("home", owner: "home")])], selected: "home", version: 2)
                try? bus.publish(home, at: "/s/\(session)/nav", keyVersion: 2)
            } else {
                try? bus.publishState(session, kind: "signin", phase: .error, version: version.next(), message: "Invalid e-mail or password.", actions: ["logIn"])
            }
            return BusFixture.applied(version: loading)
        }
        try await bus.serve("svc.mail") { _ in
            var reply = Flowbus_V1_ServiceReply()
            reply.result = ["count": "1", "mail.0.to": "new@x.dev", "mail.0.subject": "Verify", "mail.0.body": "Your code is 424242.", "token": "424242"]
            return reply
        }
    }

    @Test func aScriptRunsStepByStepAndFreshStatesAreWaitedFor() async throws {
        let bus = try await BusFixture()
        try await Self.app(bus, session: "j1")
        let script = try DriveScript.parse("""
        - open: {}
        - expect: {screen: signin}
        - send: {action: logIn, fields: {email: demo@flowbus.dev, password: wrong}}
        - expect: {screen: signin, phase: error, message: "Invalid e-mail or password."}
        - call: {service: svc.mail, method: outbox, args: {email: new@x.dev}, save: {code: token}}
        - send: {action: logIn, fields: {email: "${session}@x.dev", password: "flowbus123"}}
        - expect: {screen: home, tab: home, stack: [home]}
        """)
        let journey = Journey(endpoints: bus.endpoints, options: BusFixture.options, logger: quietLogger)
        defer { journey.stop() }
        let report = await journey.run(script)
        #expect(report.passed, "\(report.steps.compactMap(\.failure))")
        #expect(report.steps.count == 7)
        #expect(report.session == "j1")
        #expect(report.variables["code"] == "424242")
        // The error expected after the send is the new one, not the error the screen already showed.
        let events = try #require(journey.client?.events())
        let errors = events.filter { if case .state(_, .error, _, _, _) = $0.kind { true } else { false } }
        #expect(errors.count == 2)
    }

    @Test func anExpectationAfterADataIntentIgnoresTheStateShownBeforeIt() async throws {
        let bus = try await BusFixture()
        let signin = BusFixture.stack([BusFixture.screen("signin", owner: "auth")], version: 1)
        try await bus.serveApp(session: "j3", navigation: signin)
        try bus.publishState("j3", kind: "signin", phase: .error, version: 4, message: "Invalid e-mail or password.", actions: ["logIn"])
        // The view model answers at once and publishes its new error only later.
        try await bus.serve("vm.signin") { _ in
            Thread { usleep(150_000); try? bus.publishState("j3", kind: "signin", phase: .error, version: 5, message: "Invalid e-mail or password.", actions: ["logIn"]) }.start()
            return BusFixture.applied()
        }
        let journey = Journey(endpoints: bus.endpoints, options: BusFixture.options, logger: quietLogger)
        defer { journey.stop() }
        try await journey.open()
        try await journey.expect(Expectation(screen: "signin", phase: .error))
        try await journey.send("logIn", fields: ["email": "a@b.c", "password": "wrong"])
        let view = try await journey.expect(Expectation(screen: "signin", phase: .error, message: "Invalid e-mail or password."))
        #expect(view.states["signin"]?.screenVersion == 5)
    }

    @Test func aFailingScriptStopsAtTheStepWithItsDiff() async throws {
        let bus = try await BusFixture()
        try await Self.app(bus, session: "j2")
        let script = try DriveScript.parse("""
        - open: {}
        - expect: {screen: home, timeout: 200ms}
        - send: {action: logIn}
        """, name: "fails.yaml")
        let journey = Journey(endpoints: bus.endpoints, options: BusFixture.options, logger: quietLogger)
        defer { journey.stop() }
        let report = await journey.run(script)
        #expect(!report.passed)
        #expect(report.steps.map(\.passed) == [true, false])
        let failure = try #require(report.steps.last?.failure)
        #expect(failure.hasPrefix("step 2 (line 2, expect) failed"))
        #expect(failure.contains("home | signin"))
        #expect(failure.contains("last events:"))

        let unknown = await journey.run(try DriveScript.parse("- send: {action: logIn, fields: {email: \"${nobody}\"}}"))
        #expect(unknown.steps.first?.failure?.contains("${nobody} is not set") == true)
    }
}

/// A counter a worker thread and the test share.
final class Counter: Sendable {
    private let value = Mutex(1)
    func next() -> UInt64 { value.withLock { $0 += 1; return UInt64($0) } }
}
