import Clone
import FlowProtocol
import Foundation
import Majordomo
import MessagePath
import SwiftProtobuf
import Testing
@testable import FlowHost

/// The recorder fed the way the broker and the Clone server feed it: real Envelopes in
/// observations, decoded on the history's queue, paired, bounded.
@Suite struct SessionHistoryTests {
    static let client: [UInt8] = [0, 1, 2, 3, 4]

    static func body(_ payload: some SwiftProtobuf.Message, session: String = "", key: String = "", writer: String) throws -> [UInt8] {
        try Envelope.wrapping(payload, session: session, idempotencyKey: key, writer: writer, incarnation: 7).encoded()
    }

    static func intent(_ action: String, screen: String, version: UInt64) -> Flowbus_V1_Intent {
        var intent = Flowbus_V1_Intent()
        intent.action = action
        intent.screen = screen
        intent.screenVersion = version
        return intent
    }

    static func observe(_ history: SessionHistory, _ kind: BrokerObservation.Kind, service: String, worker: String = "", body: [UInt8], at: Int64) {
        history.brokerObserver.observe(BrokerObservation(
            kind: kind, service: Array(service.utf8), client: client, worker: Array(worker.utf8), body: body, atUnixNanos: at))
    }

    static func state(_ phase: Flowbus_V1_ViewState.Phase, version: UInt64, message: String = "") -> Flowbus_V1_ViewState {
        var state = Flowbus_V1_ViewState()
        state.phase = phase
        state.screenVersion = version
        state.message = message
        return state
    }

    @Test func anIntentItsReplyAndTheStatesItCausedComeBackInOrder() throws {
        let history = SessionHistory()
        let key = "test/1/1"
        Self.observe(history, .request, service: "vm.signin",
                     body: try Self.body(Self.intent("logIn", screen: "signin", version: 1), session: "S1", key: key, writer: "test/1"), at: 1_000)
        history.cloneObserver(CloneSessionUpdate(
            key: Array("/s/S1/vm/signin".utf8), sequence: 41, sessionPrevious: 0,
            value: try Self.body(Self.state(.loading, version: 2), session: "S1", writer: "vm-signin"), expired: false, atUnixNanos: 2_000))
        var reply = Flowbus_V1_IntentReply()
        reply.applied = true
        reply.screenVersion = 2
        Self.observe(history, .reply, service: "vm.signin", worker: "vm-signin/4242/0",
                     body: try Self.body(reply, session: "S1", key: key, writer: "vm-signin"), at: 3_000)
        history.cloneObserver(CloneSessionUpdate(
            key: Array("/s/S1/vm/signin".utf8), sequence: 42, sessionPrevious: 41,
            value: try Self.body(Self.state(.error, version: 3, message: "Invalid e-mail or password."), session: "S1", writer: "vm-signin"),
            expired: false, atUnixNanos: 4_000))

        let trace = try #require(history.trace(session: "S1"))
        #expect(trace.events.map(\.kind) == [.intent, .state, .reply, .state])
        let sent = trace.events[0]
        #expect(sent.from == "test/1" && sent.service == "vm.signin" && sent.action == "logIn" && sent.version == 1 && sent.idempotencyKey == key)
        let answer = trace.events[2]
        #expect(answer.from == "vm-signin" && answer.worker == "vm-signin/4242/0" && answer.to == "test/1")
        #expect(answer.action == "logIn" && answer.applied == true && answer.version == 2)
        #expect(trace.events[1].sequence == 41 && trace.events[1].phase == "loading" && trace.events[1].from == "vm-signin")
        #expect(trace.events[3].message == "Invalid e-mail or password." && trace.events[3].incarnation == 7)
        #expect(history.trace(session: "nope") == nil)
    }

    @Test func openSessionIsRecordedUnderTheSessionItsReplyNames() throws {
        let history = SessionHistory()
        var call = Flowbus_V1_CoordinatorCall()
        call.method = "openSession"
        Self.observe(history, .request, service: "coord.app", body: try Self.body(call, key: "k1", writer: "test/2"), at: 10)
        var reply = Flowbus_V1_CoordinatorReply()
        reply.ok = true
        reply.result["session"] = "S2"
        Self.observe(history, .reply, service: "coord.app", worker: "coord-app/99/0", body: try Self.body(reply, key: "k1", writer: "coord-app"), at: 20)
        let trace = try #require(history.trace(session: "S2"))
        #expect(trace.events.map(\.kind) == [.call, .reply])
        #expect(trace.events[0].action == "openSession" && trace.events[0].session == "S2")
        #expect(trace.events[1].applied == true && trace.events[1].from == "coord-app")
    }

    @Test func aServiceCallMadeForASessionsActionIsInItsTimelineOneMadeForNoSessionIsNot() throws {
        let history = SessionHistory()
        var call = Flowbus_V1_ServiceCall()
        call.method = "like"
        Self.observe(history, .request, service: "svc.movies", body: try Self.body(call, session: "S4", key: "vm.details/S4/k/1", writer: "vm-details/0"), at: 10)
        var reply = Flowbus_V1_ServiceReply()
        reply.refusal = "notSignedIn"
        Self.observe(history, .reply, service: "svc.movies", worker: "services/7/0",
                     body: try Self.body(reply, session: "S4", key: "vm.details/S4/k/1", writer: "services"), at: 20)
        // A call made outside any action (at a plugin's start) carries no session: nothing to show it in.
        call.method = "genres"
        Self.observe(history, .request, service: "svc.genres", body: try Self.body(call, key: "x/1", writer: "vm-signup/0"), at: 30)
        Self.observe(history, .reply, service: "svc.genres", worker: "services/7/1",
                     body: try Self.body(Flowbus_V1_ServiceReply(), key: "x/1", writer: "services"), at: 40)

        let trace = try #require(history.trace(session: "S4"))
        #expect(trace.events.map(\.kind) == [.call, .reply])
        #expect(trace.events[0].action == "like" && trace.events[0].service == "svc.movies" && trace.events[0].from == "vm-details/0")
        #expect(trace.events[1].action == "like" && trace.events[1].applied == false && trace.events[1].error == "refused: notSignedIn")
        #expect(TraceTimeline.text(trace).contains("svc.movies"), "\(TraceTimeline.text(trace))")
        #expect(history.sessions() == ["S4"])
    }

    @Test func aFaultOnOneOfASessionsWritesIsInItsHistoryAndItsDiagram() throws {
        let history = SessionHistory()
        history.faultObserver(FaultDecision(rule: "slow", ordinal: 2, scope: .key, subject: "/s/abc/nav", session: "abc", effect: "delay 5.000ms", atUnixNanos: 1))
        // A request's fault comes with the broker's observation, which has the request itself.
        history.faultObserver(FaultDecision(rule: "slow", ordinal: 3, scope: .service, subject: "vm.x", session: "abc", effect: "drop", atUnixNanos: 2))
        let trace = try #require(history.trace(session: "abc"))
        #expect(trace.events.map(\.kind) == [.fault])
        #expect(trace.events.first?.message == "delay 5.000ms by fault rule slow (its message #2)")
        #expect(TraceTimeline.text(trace).contains("fault ⚡ nav  delay 5.000ms by fault rule slow"), "\(TraceTimeline.text(trace))")
        #expect(MermaidSequence.diagram(trace).contains("Note over Clone: ⚡ /s/abc/nav delay 5.000ms"), "\(MermaidSequence.diagram(trace))")
    }

    @Test func brokerRefusalsAndFaultDropsAreRecorded() throws {
        let history = SessionHistory()
        let request = try Self.body(Self.intent("select", screen: "home", version: 3), session: "S3", key: "k", writer: "test/3")
        Self.observe(history, .faulted(.drop(ruleID: "blackout")), service: "vm.home", body: request, at: 1)
        Self.observe(history, .request, service: "vm.home", body: request, at: 2)
        let refusal = ErrorReply.frame(.unknownService, message: "no worker for service vm.home registered in time", hint: "", writer: "broker")
        Self.observe(history, .rejected(reason: "expired"), service: "vm.home", body: refusal, at: 3)
        let trace = try #require(history.trace(session: "S3"))
        #expect(trace.events.map(\.kind) == [.dropped, .intent, .refused])
        #expect(trace.events[0].message?.contains("fault rule blackout") == true)
        #expect(trace.events[2].from == "broker" && trace.events[2].action == "select" && trace.events[2].to == "test/3")
        #expect(trace.events[2].error == "UNKNOWN_SERVICE: no worker for service vm.home registered in time")
    }

    @Test func bodiesThatAreNoEnvelopeAreCountedNotRecorded() {
        let history = SessionHistory()
        Self.observe(history, .request, service: "vm.signin", body: [0xFF, 0x00, 0x13], at: 1)
        #expect(history.statistics.undecodable == 1)
        #expect(history.sessions().isEmpty)
    }

    static func event(_ session: String, at: Int64, kind: TraceEvent.Kind = .state) -> TraceEvent {
        var event = TraceEvent(kind: kind, session: session, atUnixNanos: at, from: "vm-x")
        event.sequence = UInt64(at)
        return event
    }

    @Test func aSessionKeepsItsNewestEventsAndCountsTheOthers() throws {
        var limits = SessionHistoryLimits()
        limits.eventsPerSession = 5
        let history = SessionHistory(limits: limits)
        history.record((1...12).map { Self.event("S", at: Int64($0)) })
        let trace = try #require(history.trace(session: "S"))
        #expect(trace.events.map(\.atUnixNanos) == [8, 9, 10, 11, 12])
        #expect(trace.droppedEvents == 7)
        #expect(history.statistics.events == 5)
        #expect(TraceTimeline.text(trace).contains("the 7 oldest events were dropped"))
    }

    @Test func aSessionsEventsShareOneByteArrayThatDoesNotGrowPastItsLimit() {
        // Lengths across the one-byte varint boundary (127/128), many times round the ring.
        var ring = EventRing(capacity: 3)
        var dropped = 0
        for index in 0..<1_000 {
            let bytes = [UInt8](repeating: UInt8(index % 251), count: 1 + (index * 37) % 300)
            if ring.append(PackedTraceEvent(bytes: bytes)) { dropped += 1 }
        }
        #expect(ring.count == 3)
        #expect(dropped == 997)
        #expect(ring.elements.map(\.bytes) == (997..<1_000).map { [UInt8](repeating: UInt8($0 % 251), count: 1 + ($0 * 37) % 300) })
        // Dropped events' bytes are let go (1,000 events of these sizes are some 150 KB).
        #expect(ring.bytesHeld <= 4 * 3 * 302)
        // The history keeps one log per session, thousands of them: a slot of its table is the
        // session's id and this.
        #expect(MemoryLayout<HistoryStore.SessionLog>.stride <= 48)
    }

    @Test func pastTheSessionLimitClosedSessionsAreForgottenFirst() {
        var limits = SessionHistoryLimits()
        limits.sessions = 10
        let history = SessionHistory(limits: limits)
        for index in 0..<10 {
            history.record([Self.event("S\(index)", at: Int64(100 + index))])
        }
        // S7 closed (its record deleted) after everyone else was last active.
        var closed = Self.event("S7", at: 200, kind: .deleted)
        closed.key = "/s/S7/meta"
        history.record([closed])
        history.record([Self.event("new", at: 300)])
        let kept = Set(history.sessions())
        #expect(!kept.contains("S7"), "the closed session goes first")
        #expect(kept.contains("new") && kept.count == 10)
        // Then the longest idle open one.
        history.record([Self.event("newer", at: 400)])
        #expect(!Set(history.sessions()).contains("S0"))
        #expect(history.statistics.forgottenSessions == 2)
    }

    @Test func theTotalEventLimitForgetsWholeSessions() {
        var limits = SessionHistoryLimits()
        limits.eventsPerSession = 100
        limits.totalEvents = 250
        let history = SessionHistory(limits: limits)
        for session in 0..<10 {
            history.record((0..<50).map { Self.event("S\(session)", at: Int64(session * 1000 + $0)) })
        }
        let statistics = history.statistics
        #expect(statistics.events <= 250)
        #expect(statistics.sessions <= 5)
        #expect(Set(history.sessions()).contains("S9"), "the session being written is never the one forgotten")
    }

    @Test func fiftyThousandObservationsHandedOverInARowAreAllDecoded() throws {
        // What the broker thread pays per observed message (a lock and an append), and how fast
        // the decode queue turns intents and their replies into events: printed, not asserted (a
        // speed is a benchmark's to check, not a test's on a shared machine). Asserted: none of
        // them is lost while the decoder drains behind the hand-overs.
        var limits = SessionHistoryLimits()
        limits.queuedObservations = 1_000_000
        let history = SessionHistory(limits: limits)
        let observer = history.brokerObserver
        let count = 50_000
        var bodies: [[UInt8]] = []
        for index in 0..<count {
            bodies.append(try Self.body(Self.intent("logIn", screen: "signin", version: UInt64(index)),
                                        session: "S\(index % 500)", key: "k\(index)", writer: "sim/\(index % 500)"))
        }
        let service = Array("vm.signin".utf8)
        let clock = ContinuousClock()
        let handOver = clock.measure {
            for (index, body) in bodies.enumerated() {
                observer.observe(BrokerObservation(kind: .request, service: service, client: Self.client, body: body, atUnixNanos: Int64(index)))
            }
        }
        let decoded = clock.measure { _ = history.statistics }
        let perCall = handOver / count
        // The decoder runs while the observations arrive: count it from the first hand-over to the last event.
        let total = handOver + decoded
        let perSecond = Double(count) / (Double(total.components.attoseconds) / 1e18 + Double(total.components.seconds))
        print("SessionHistory: hand-over \(perCall) per observation; decoded \(Int(perSecond)) requests/s")
        #expect(history.statistics.events == count)
        #expect(history.statistics.lostObservations == 0)
    }

    @Test func observationsCloseTogetherAreDecodedInBatchesNotOneWakeUpEach() throws {
        // The broker hands a message over every few hundred microseconds in an app journey. Each
        // used to wake the decoder (a futex wake-up on the broker's thread); now a drain waits
        // `batchDelay` and takes everything that came meanwhile.
        let history = SessionHistory()
        let count = 200
        for index in 0..<count {
            Self.observe(history, .request, service: "vm.signin",
                         body: try Self.body(Self.intent("logIn", screen: "signin", version: UInt64(index)),
                                             session: "S1", key: "k\(index)", writer: "test/1"), at: Int64(index))
            Thread.sleep(forTimeInterval: 0.000_2)
        }
        Thread.sleep(forTimeInterval: 0.1)
        let batches = history.decodedBatches
        #expect(batches >= 1 && batches <= count / 2, "\(batches) batches for \(count) observations")
        #expect(history.statistics.events == count, "a batch loses nothing")
        // A reader never waits for the delay: what was handed over before it is decoded first.
        Self.observe(history, .request, service: "vm.signin",
                     body: try Self.body(Self.intent("logOut", screen: "home", version: 1), session: "S2", key: "k-last", writer: "test/1"), at: 1)
        #expect(history.trace(session: "S2")?.events.map(\.action) == ["logOut"])
    }
}
