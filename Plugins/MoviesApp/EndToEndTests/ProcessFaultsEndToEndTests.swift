import FlowbusTesting
import FlowClient
import FlowHost
import FlowProtocol
import Foundation
import Testing

/// Faults aimed at the movies app's processes themselves, through `flowbus fault` on the real
/// host: a skewed clock (an e-mail code expires early; every session's idle time jumps), a cut
/// of what the host sends a view model, and a kill of "the one serving session X".
@Suite("Process faults end to end", .serialized)
struct ProcessFaultsEndToEndTests {
    static func fault(_ arguments: [String], on host: HostFixture) async throws -> String {
        let outcome = try await host.run(["fault"] + arguments)
        try #require(outcome.status == 0, "flowbus fault \(arguments.joined(separator: " ")): \(outcome.output)")
        return outcome.output
    }

    @Test("services' clock 11 min ahead: a code sent a moment ago has expired; put right, the same code verifies",
          .timeLimit(.minutes(3)))
    func skewedServicesClockExpiresCodes() async throws {
        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        let journey = try AppJourneysEndToEndTests.journey(on: host)
        defer { journey.stop() }
        let client = try await journey.open()
        try await journey.send("register")
        try await journey.expect(Expectation(screen: "signup", phase: .success))
        let email = "clock-\(UUID().uuidString.prefix(8).lowercased())@flowbus.dev"
        try await journey.send("signUp", fields: [
            "name": "Rita Lee", "nickname": "rita", "email": email, "password": "Secret123", "passwordConfirmation": "Secret123", "genres": "drama",
        ])
        try await journey.expect(Expectation(screen: "emailverification"), timeout: .seconds(10))
        try await journey.call("svc.mail", method: "outbox", args: ["email": email], save: ["token": "token"])
        let token = try #require(journey.variables["token"])

        // The code's lifetime is 10 minutes by the services' clock, now 11 minutes ahead.
        let said = try await Self.fault(["clock", "--plugin", "services", "--offset", "11m"], on: host)
        #expect(said.contains("clock of services +11m"), "\(said)")
        try await journey.send("verify", fields: ["token": token])
        let refused = try await journey.expect(Expectation(screen: "emailverification", phase: .error))
        let message = refused.topState?.message ?? ""
        #expect(message.contains("expired"), "\(message)")

        // Put right, the same code is a few seconds old again.
        _ = try await Self.fault(["clear"], on: host)
        try await journey.send("verify", fields: ["token": token])
        try await journey.expect(Expectation(screen: "home", phase: .success, user: email), timeout: .seconds(10))
        let decisions = try await Self.fault(["decisions"], on: host)
        #expect(decisions.contains("clock #1 process services/0 clock +11m"), "\(decisions)")
        #expect(decisions.contains("clock put right"), "\(decisions)")
        _ = client
    }

    @Test("the navigation owner's clock 2 h ahead: every session has been idle past its hour and is closed, saying so",
          .timeLimit(.minutes(3)))
    func skewedOwnerClockExpiresSessions() async throws {
        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        let journey = try AppJourneysEndToEndTests.journey(on: host)
        defer { journey.stop() }
        let client = try await AppJourneysEndToEndTests.openSignedIn(journey)
        // Seconds later, with the true clock, nothing expires (the limit is an hour).
        try await Task.sleep(for: .seconds(2))
        #expect(client.view.closedReason == nil)

        _ = try await Self.fault(["clock", "--plugin", "coord-app", "--offset", "2h", "--for", "30s"], on: host)
        let closed = try await client.waitUntil(timeout: .seconds(15)) { $0.closedReason != nil }
        #expect(closed.closedReason?.hasPrefix("idle for") == true, "\(closed.closedReason ?? "")")
    }

    @Test("vm-details cut off from the host for 3 s: what it is sent is lost until the cut heals, then the screen loads",
          .timeLimit(.minutes(3)))
    func cutFromTheHostDelaysUntilItHeals() async throws {
        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        let journey = try AppJourneysEndToEndTests.journey(on: host)
        defer { journey.stop() }
        _ = try await AppJourneysEndToEndTests.openSignedIn(journey)

        let said = try await Self.fault(["partition", "--plugin", "vm-details", "--direction", "from-host", "--for", "3s"], on: host)
        #expect(said.contains("partition vm-details from-host"), "\(said)")
        let cutAt = ContinuousClock.now
        // coord.home pushes Details at once; vm.details hears nothing of it until the cut heals.
        try await journey.send("select", fields: ["item": "movie:19"], timeout: .seconds(20))
        do {
            try await journey.expect(Expectation(screen: "details", phase: .success), timeout: .seconds(20))
        } catch {
            Issue.record("the session's timeline:\n\(try await host.run(["trace", journey.client?.session ?? ""]).output)")
            throw error
        }
        let loaded = ContinuousClock.now - cutAt
        #expect(loaded >= .milliseconds(2500), "Details loaded \(loaded) into a 3 s cut: the cut did not hold")
        let decisions = try await Self.fault(["decisions"], on: host)
        #expect(decisions.contains("process vm-details/0 cut from the host for 3s"), "\(decisions)")
        #expect(decisions.contains("process vm-details/0 cut from the host healed"), "\(decisions)")
    }

    @Test("kill --serving vm.details --session: the host finds the process from the session's history, and it is restarted",
          .timeLimit(.minutes(3)))
    func killTheOneServingASession() async throws {
        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        let journey = try AppJourneysEndToEndTests.journey(on: host)
        defer { journey.stop() }
        let client = try await AppJourneysEndToEndTests.openSignedIn(journey)

        // Nothing has served vm.details in this session yet: said plainly, nothing killed.
        let early = try await host.run(["fault", "kill", "--serving", "vm.details", "--session", client.session])
        #expect(early.status != 0)
        #expect(early.output.contains("no worker has answered a request to vm.details"), "\(early.output)")

        try await journey.send("select", fields: ["item": "movie:19"])
        try await journey.expect(Expectation(screen: "details", phase: .success))
        let details = try #require(try await AppJourneysEndToEndTests.pid(of: "vm-details", on: host))
        let said = try await Self.fault(["kill", "--serving", "vm.details", "--session", client.session], on: host)
        #expect(said.contains("kill vm-details/0"), "\(said)")
        try await AppJourneysEndToEndTests.restarted("vm-details", was: details, on: host)
        // The session goes on with the new process.
        try await journey.send("like")
        var liked = Expectation(screen: "details", phase: .success)
        liked.data = ["details.liked": "true"]
        try await journey.expect(liked, timeout: .seconds(20))
    }
}
