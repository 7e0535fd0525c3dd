import FlowChaos
import FlowHost
import Foundation
import MessagePath
import Testing
@testable import FlowChaos

/// run.json read on every core (`ChaosRun.decode`): the sessions cut into slices at the scan's
/// element bounds, each decoded on its own thread, must give what one `JSONDecoder` pass gives.
@Suite("Chaos run decoding")
struct ChaosRunDecodingTests {
    /// Strings that a scan which got quotes, escapes or nesting wrong would cut in the wrong place.
    static let awkward = ["plain", "with \"quotes\" inside", "a backslash \\ and \\\" both", "brackets ] } [ { , : in text",
                          "ünïcödé ✓ and \u{1} a control", "ends with a backslash \\", ""]

    static func run(sessions count: Int) -> ChaosRun {
        let sessions = (0..<count).map { index in
            let text = awkward[index % awkward.count]
            var intent = ClientEvent(kind: .intent, key: "vm.home", version: UInt64(index), atUnixNanos: Int64(index) * 1_000)
            intent.idempotencyKey = "key/\(index)/\(text)"
            intent.action = text
            var reply = ClientEvent(kind: .reply, key: "vm.home", atUnixNanos: Int64(index) * 1_000 + 5)
            reply.applied = index % 3 != 0
            reply.error = index % 3 == 0 ? text : nil
            let client = ClientRecord(name: "c\(index)", events: [intent, reply], gaps: index % 2, finalNavigation: UInt64(index),
                                      finalScreen: text, finalStates: ["home": UInt64(index), text: 7])
            let history = SessionTrace(session: "s\(index)", events: [], droppedEvents: 0, closed: index % 2 == 0, limits: SessionHistoryLimits())
            return ChaosSessionRecord(session: "s\(index)", journey: "j.yaml", passed: index % 5 != 0,
                                      failure: index % 5 == 0 ? "step 3: \(text)" : nil, expectedScreen: "home",
                                      finalScreen: text, clients: [client], trace: index % 4 == 0 ? nil : history)
        }
        return ChaosRun(plan: FaultPlan(name: "plan \"x\" [1]", seed: 9, events: []), decisions: [], sessions: sessions,
                        processes: [ChaosProcess(name: "vm-home", replica: 0, running: true, restarts: 1)],
                        startedAtUnixNanos: 1, endedAtUnixNanos: 2)
    }

    @Test(arguments: [0, 1, 2, 3, 17, 64])
    func slicesGiveWhatOnePassGives(sessions: Int) throws {
        let original = Self.run(sessions: sessions)
        for formatting in [JSONEncoder.OutputFormatting(), [.prettyPrinted], [.sortedKeys, .prettyPrinted], [.withoutEscapingSlashes]] {
            let encoder = JSONEncoder()
            encoder.outputFormatting = formatting
            let data = try encoder.encode(original)
            for slices in [2, 3, 8] {
                let sliced = try #require(try ChaosRun.decodeInSlices(data, slices: slices), "the scan gave up on \(formatting)")
                #expect(sliced == original)
            }
            #expect(try ChaosRun.decode(from: data) == original)
        }
    }

    @Test func sessionsAnywhereInTheObjectAreFound() throws {
        let original = Self.run(sessions: 5)
        let sessions = String(decoding: try JSONEncoder().encode(original.sessions), as: UTF8.self)
        let plan = String(decoding: try JSONEncoder().encode(original.plan), as: UTF8.self)
        let processes = String(decoding: try JSONEncoder().encode(original.processes), as: UTF8.self)
        // `sessions` first, then last, with the spacing a person might leave.
        let first = "{ \"sessions\" : \(sessions) ,\n \"plan\": \(plan), \"decisions\": [], \"processes\": \(processes), \"startedAtUnixNanos\": 1, \"endedAtUnixNanos\": 2 }"
        let last = "{\"plan\":\(plan),\"decisions\":[],\"processes\":\(processes),\"startedAtUnixNanos\":1,\"endedAtUnixNanos\":2,\"sessions\":\(sessions)}"
        for text in [first, last] {
            #expect(try ChaosRun.decodeInSlices(Data(text.utf8), slices: 2) == original)
        }
    }

    @Test func whatTheScanDoesNotExpectFallsBackToOnePass() throws {
        // Not an object, no sessions, a session that does not decode: the whole-file decode
        // then says what is wrong, as it always did.
        #expect(try ChaosRun.decodeInSlices(Data("[1, 2]".utf8), slices: 2) == nil)
        #expect(throws: DecodingError.self) { try ChaosRun.decode(from: Data("{\"plan\": 1}".utf8)) }
        var text = String(decoding: try JSONEncoder().encode(Self.run(sessions: 4)), as: UTF8.self)
        text = text.replacingOccurrences(of: "\"journey\":\"j.yaml\"", with: "\"journey\":17")
        #expect(try ChaosRun.decodeInSlices(Data(text.utf8), slices: 2) == nil)
        #expect(throws: DecodingError.self) { try ChaosRun.decode(from: Data(text.utf8)) }
        #expect(throws: (any Error).self) { try ChaosRun.decode(from: Data("{\"sessions\": [{\"session\": \"unterminated".utf8)) }
    }
}
