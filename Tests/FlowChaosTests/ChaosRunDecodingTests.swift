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
            let events = index % 3 == 0 ? [] : [fullTraceEvent(index, text), TraceEvent(kind: .intent, session: "s\(index)", atUnixNanos: -5, from: text)]
            let history = SessionTrace(session: "s\(index)", events: events, droppedEvents: index % 7, closed: index % 2 == 0,
                                       limits: SessionHistoryLimits(), lostObservations: index % 2)
            return ChaosSessionRecord(session: "s\(index)", journey: "j.yaml", passed: index % 5 != 0,
                                      failure: index % 5 == 0 ? "step 3: \(text)" : nil, expectedScreen: "home",
                                      finalScreen: text, clients: [client], trace: index % 4 == 0 ? nil : history)
        }
        return ChaosRun(plan: FaultPlan(name: "plan \"x\" [1]", seed: 9, events: []), decisions: [], sessions: sessions,
                        processes: [ChaosProcess(name: "vm-home", replica: 0, running: true, restarts: 1)],
                        startedAtUnixNanos: 1, endedAtUnixNanos: 2)
    }

    /// A trace event with every member set, so a member the reader forgot would differ.
    static func fullTraceEvent(_ index: Int, _ text: String) -> TraceEvent {
        var event = TraceEvent(kind: .navigation, session: "s\(index)", atUnixNanos: Int64(index) * 7, from: "coord-app")
        event.sequence = UInt64(index) + 1
        event.to = text
        event.service = "coord.app"
        event.worker = "coord-app/12/\(index)"
        event.key = "/s/s\(index)/nav"
        event.action = text
        event.screen = "home"
        event.version = UInt64.max - UInt64(index)
        event.idempotencyKey = "k\(index)"
        event.incarnation = 3
        event.askedBy = 2
        event.applied = index % 2 == 0
        event.error = text
        event.phase = "success"
        event.message = "a message: \(text)"
        event.top = "details"
        event.stack = ["home", text, ""]
        event.tab = "likes"
        event.modal = text
        event.user = "u\(index)"
        event.flow = "main"
        event.open = index % 2 == 1
        return event
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
        #expect(throws: ChaosRunDecodingError.self) { try ChaosRun.decode(from: Data(text.utf8)) }
        #expect(throws: (any Error).self) { try ChaosRun.decode(from: Data("{\"sessions\": [{\"session\": \"unterminated".utf8)) }
    }
    // MARK: - RunJSONReader

    /// The reader knows every stored property of the types it reads: one added to them without
    /// teaching the reader fails here, not as a member silently dropped from run.json.
    @Test func theReaderKnowsEveryStoredProperty() throws {
        func labels(_ value: Any) -> Set<String> { Set(Mirror(reflecting: value).children.compactMap(\.label)) }
        let record = Self.run(sessions: 2).sessions[1]
        #expect(labels(record) == ChaosSessionRecord.readerMembers)
        #expect(labels(record.clients[0]) == ClientRecord.readerMembers)
        #expect(labels(record.clients[0].events[0]) == ClientEvent.readerMembers)
        #expect(labels(try #require(record.trace)) == SessionTrace.readerMembers)
        #expect(labels(SessionHistoryLimits()) == SessionHistoryLimits.readerMembers)
        #expect(labels(Self.fullTraceEvent(1, "x")) == TraceEvent.readerMembers)
    }

    /// Reads one session's JSON with the reader alone (no fallback).
    static func readSession(_ text: String) throws -> ChaosSessionRecord {
        let bytes = Array(text.utf8)
        return try bytes.withUnsafeBufferPointer { buffer in try ChaosSessionRecord(readingAll: 0..<buffer.count, of: buffer) }
    }

    /// The reader alone gives what `JSONDecoder` gives, session by session, for every
    /// formatting `JSONEncoder` has and for the awkward strings.
    @Test func theReaderAloneGivesWhatJSONDecoderGives() throws {
        let sessions = Self.run(sessions: 40).sessions
        for formatting in [JSONEncoder.OutputFormatting(), [.prettyPrinted], [.sortedKeys, .prettyPrinted], [.withoutEscapingSlashes]] {
            let encoder = JSONEncoder()
            encoder.outputFormatting = formatting
            for session in sessions {
                let text = String(decoding: try encoder.encode(session), as: UTF8.self)
                #expect(try Self.readSession(text) == JSONDecoder().decode(ChaosSessionRecord.self, from: Data(text.utf8)))
                #expect(try Self.readSession(text) == session)
            }
        }
    }

    /// Escapes `JSONEncoder` does not write but JSON allows, written by hand: `\/`, `\b`, `\f`,
    /// `\u` escapes of every width (a surrogate pair among them), nulls for absent members, a
    /// member no type has, and a map's key written twice (the first counts, as with `JSONDecoder`).
    @Test func escapesAndNullsAsJSONAllowsThem() throws {
        let text = #"""
        {"session":"s\/1","journey":"\b\f\n\r\t\"\\","passed":true,"failure":null,"expectedScreen":null,
         "finalScreen":"caf\u00e9 \u2713 \ud83d\ude00 \u0041","trace":null,"unknown":{"a":[1,2.5e3,-0.0,"x",null,true,{}]},
         "clients":[{"name":"c","gaps":0,"resyncs":-2,"finalNavigation":18446744073709551615,"finalScreen":"",
                     "finalStates":{"\u00e9t\u00e9":1,"":0,"":5},
                     "events":[{"kind":"state","key":"/s/1/vm/home","sequence":0,"version":1,"screen":null,
                                "phase":"loading","action":null,"applied":null,"atUnixNanos":-9223372036854775808}]}]}
        """#
        let read = try Self.readSession(text)
        #expect(read == (try JSONDecoder().decode(ChaosSessionRecord.self, from: Data(text.utf8))))
        #expect(read.session == "s/1")
        #expect(read.journey == "\u{8}\u{c}\n\r\t\"\\")
        #expect(read.finalScreen == "café ✓ 😀 A")
        #expect(read.clients[0].finalNavigation == UInt64.max)
        #expect(read.clients[0].finalStates == ["été": 1, "": 0])
        #expect(read.clients[0].events[0].atUnixNanos == Int64.min)
    }

    /// Strings are checked as UTF-8 unless every byte is ASCII: bytes that are no UTF-8 are
    /// refused where their string starts, and text in other scripts is read as written.
    @Test func stringsThatAreNotUTF8AreRefusedWhereTheyStart() throws {
        func read(_ bytes: [UInt8]) -> Result<String, RunJSONReader.Unexpected> {
            bytes.withUnsafeBufferPointer { buffer in
                var reader = RunJSONReader(buffer, 0..<buffer.count)
                return Result { () throws(RunJSONReader.Unexpected) in try reader.string() }
            }
        }
        #expect(try read(Array("\"plain ascii\"".utf8)).get() == "plain ascii")
        #expect(try read(Array("\"ünïcödé ✓ 😀\"".utf8)).get() == "ünïcödé ✓ 😀")
        for bad: [UInt8] in [[0xFF], [0xC3], [0xE2, 0x9C], [0xED, 0xA0, 0x80], [0x61, 0x80, 0x62]] {
            let result = read([0x20, UInt8(ascii: "\"")] + bad + [UInt8(ascii: "\"")])
            guard case .failure(let refusal) = result else {
                Issue.record("\(bad) read as \(result)")
                continue
            }
            #expect(refusal.what == "a string that is not UTF-8" && refusal.offset == 1, "\(refusal)")
        }
    }

    /// What the reader does not expect it refuses; `ChaosRun.decode` then gives what
    /// `JSONDecoder` gives for the same text (a value, or an error).
    @Test(arguments: [
        (#""sequence":0"#, #""sequence":1.0"#),      // a fraction: JSONDecoder decides
        (#""sequence":0"#, #""sequence":1e2"#),      // an exponent
        (#""sequence":0"#, #""sequence":-1"#),       // a negative unsigned
        (#""sequence":0"#, #""sequence":01"#),       // a leading zero
        (#""key":"k""#, #""key":"\ud800""#),         // a lone surrogate
        (#""key":"k""#, #""key":7"#),                // the wrong type
        (#""key":"k","#, ""),                        // a required member missing
        (#""kind":"state""#, #""kind":"weather""#),  // an unknown kind
        (#""key":"k""#, #""key":"k","key":"other""#), // a member twice: JSONDecoder keeps the first
        (#""finalStates":{}"#, #""finalStates":{},"x":\#(String(repeating: "[", count: 300))\#(String(repeating: "]", count: 300))"#), // nested deep
    ])
    func whatTheReaderDoesNotExpectGoesToJSONDecoder(_ change: (String, String)) throws {
        let session = #"{"session":"s","journey":"j","passed":true,"clients":[{"name":"c","gaps":0,"resyncs":0,"finalNavigation":0,"finalScreen":"","finalStates":{},"events":[{"kind":"state","key":"k","sequence":0,"version":0,"atUnixNanos":1}]}]}"#
        #expect(try Self.readSession(session).clients[0].events[0].key == "k")
        let changed = session.replacingOccurrences(of: change.0, with: change.1)
        #expect(changed != session)
        #expect(throws: RunJSONReader.Unexpected.self) { try Self.readSession(changed) }
        let plan = String(decoding: try JSONEncoder().encode(FaultPlan(name: "p", seed: 1, events: [])), as: UTF8.self)
        let run = #"{"plan":\#(plan),"decisions":[],"processes":[],"startedAtUnixNanos":1,"endedAtUnixNanos":2,"sessions":[\#(session),\#(changed)]}"#
        let expected = Result { try JSONDecoder().decode(ChaosRun.self, from: Data(run.utf8)) }
        let decoded = Result { try ChaosRun.decode(from: Data(run.utf8), slices: 2) }
        switch (expected, decoded) {
        case (.success(let want), .success(let got)): #expect(got == want)
        case (.failure, .failure): break
        default: Issue.record("JSONDecoder gave \(expected), ChaosRun.decode \(decoded)")
        }
    }

    /// The reader's sessions and `JSONDecoder`'s slices give the same run, on one core or three.
    @Test func theReaderAndJSONDecoderSlicesAgree() throws {
        let data = try JSONEncoder().encode(Self.run(sessions: 33))
        let byReader = try #require(try ChaosRun.decodeInSlices(data, slices: 3, reader: true))
        let byDecoder = try #require(try ChaosRun.decodeInSlices(data, slices: 3, reader: false))
        #expect(byReader == byDecoder)
        #expect(try ChaosRun.decodeInSlices(data, slices: 1) == byDecoder)
    }

    /// JSONDecoder says only "not valid JSON" for a bad byte or number: the error says what the
    /// reader found and where (byte, line, column, session), so a person can look there.
    @Test func whatIsWrongWithARunJSONIsSaidWithItsPlace() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let text = String(decoding: try encoder.encode(Self.run(sessions: 3)), as: UTF8.self)
        func problem(_ changed: String) -> String {
            do {
                _ = try ChaosRun.decode(from: Data(changed.utf8))
                return "decoded"
            } catch {
                return "\(error)"
            }
        }
        let negative = try #require(text.range(of: "\"finalNavigation\" : 1"))
        let said = problem(text.replacingCharacters(in: negative, with: "\"finalNavigation\" : -1"))
        let line = text[..<negative.lowerBound].filter { $0 == "\n" }.count + 1
        #expect(said.hasPrefix("an unsigned integer expected at byte ") && said.contains("(line \(line), column ") && said.hasSuffix("in session 2 of 3"), "\(said)")
        #expect(problem(text + " trailing").hasPrefix("text after the run's object at byte \(text.utf8.count + 1) ("))
        #expect(problem(String(text.dropLast(2))).contains("',' or '}' expected") || problem(String(text.dropLast(2))).contains("ends early"))
        // What the reader accepts but the run lacks is JSONDecoder's to say, with its path.
        #expect(throws: DecodingError.self) { try ChaosRun.decode(from: Data(text.replacingOccurrences(of: "\"startedAtUnixNanos\"", with: "\"begun\"").utf8)) }
    }
}
