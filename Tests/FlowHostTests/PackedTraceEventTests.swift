import Testing
@testable import FlowHost

/// The history's packed events: every field comes back as it went in, and a typical event takes
/// a fraction of `TraceEvent`'s own size.
@Suite struct PackedTraceEventTests {
    static func everyField() -> TraceEvent {
        var event = TraceEvent(kind: .reply, session: "S1", atUnixNanos: 1_795_691_430_982_840_512, from: "coord-app/0")
        event.sequence = 300
        event.to = "drive/4465"
        event.service = "coord.app"
        event.worker = "coord-app/3921/1000"
        event.key = "/s/S1/vm/signin"
        event.action = "openSession"
        event.screen = "signin"
        event.version = 0
        event.idempotencyKey = "8468D371-6F56-4B49-8E60-4803B27A20A2"
        event.incarnation = 1
        event.askedBy = 2
        event.applied = false
        event.error = "STALE_INTENT: made on v3, now v4 ✓"
        event.phase = "loading"
        event.message = "Invalid e-mail or password."
        event.top = "details"
        event.stack = ["home", "details", "details"]
        event.tab = "home"
        event.modal = "confirmation"
        event.user = "jô@example.com"
        event.flow = "main"
        event.open = true
        return event
    }

    @Test func everyFieldComesBack() {
        var words = TraceWords()
        let event = Self.everyField()
        let packed = PackedTraceEvent(event, words: &words)
        #expect(packed.event(session: "S1", words: words) == event)
        #expect(packed.kind == .reply && packed.atUnixNanos == event.atUnixNanos)
        // Absent fields stay absent; a key outside the session's subtree is kept whole.
        var bare = TraceEvent(kind: .value, session: "S2", atUnixNanos: -5, from: "")
        bare.key = "/c/app/S2"
        #expect(PackedTraceEvent(bare, words: &words).event(session: "S2", words: words) == bare)
        for kind in TraceEvent.Kind.allCases {
            let event = TraceEvent(kind: kind, session: "S3", atUnixNanos: 7, from: "x")
            #expect(PackedTraceEvent(event, words: &words).event(session: "S3", words: words) == event)
        }
    }

    @Test func repeatedWordsAreKeptOnceAndAFullTableSpellsThemOut() {
        var words = TraceWords()
        let first = PackedTraceEvent(Self.everyField(), words: &words)
        let count = words.count
        let second = PackedTraceEvent(Self.everyField(), words: &words)
        #expect(words.count == count, "the same words were added again")
        #expect(first.bytes == second.bytes)
        // Past the table's capacity, a new word is spelled out in the event, and still comes back.
        var full = TraceWords()
        for number in 0..<TraceWords.capacity { _ = full.number(for: "w\(number)") }
        var event = Self.everyField()
        event.worker = "a-worker-never-seen/1/2"
        let packed = PackedTraceEvent(event, words: &full)
        #expect(full.count == TraceWords.capacity)
        #expect(packed.event(session: "S1", words: full) == event)
    }

    @Test func aTypicalEventPacksIntoAFractionOfItsStride() {
        // A reply as openSession's: the fields a real one has (the words already known).
        var words = TraceWords()
        var event = TraceEvent(kind: .reply, session: "45d29dgeqt", atUnixNanos: 1_795_691_430_982_840_512, from: "coord-app/0")
        event.service = "coord.app"
        event.worker = "coord-app/3921/1000"
        event.to = "drive/4465"
        event.action = "openSession"
        event.idempotencyKey = "8468D371-6F56-4B49-8E60-4803B27A20A2"
        event.incarnation = 1
        event.applied = true
        _ = PackedTraceEvent(event, words: &words)
        let packed = PackedTraceEvent(event, words: &words)
        let stride = MemoryLayout<TraceEvent>.stride
        print("TraceEvent stride \(stride) bytes (before its strings); packed: \(packed.bytes.count) bytes")
        #expect(packed.bytes.count <= 44, "packed into \(packed.bytes.count) bytes")
        #expect(packed.bytes.count * 4 < stride)
    }

    @Test("idempotency keys come back exactly, those with a UUID or the session's id in under 20 bytes")
    func idempotencyKeys() {
        var words = TraceWords()
        let uuid = "3C8EEFB1-313D-437D-8792-3988407F7AC8"
        let cases: [(key: String, packedAtMost: Int)] = [
            (uuid, 19),
            ("coord-app/0/1/" + uuid, 19),
            ("appear/7c6yieufup/signin/1", 6),
            // Spelled out: a lowercase UUID (it would come back in capitals), a long prefix, a
            // session id with long words around it, no session id, and keys that look close.
            (uuid.lowercased(), 40),
            (String(repeating: "p", count: 49) + uuid, 90),
            ("appear/7c6yieufup/" + String(repeating: "s", count: 25), 50),
            ("plain-key-1", 14),
            ("7c6yieufup", 6),
            ("", 3),
            ("x" + uuid.dropFirst(), 40),
        ]
        for (key, most) in cases {
            var event = TraceEvent(kind: .intent, session: "7c6yieufup", atUnixNanos: 1, from: "coord-app/0")
            event.idempotencyKey = key
            _ = PackedTraceEvent(event, words: &words)
            let packed = PackedTraceEvent(event, words: &words)
            #expect(packed.event(session: "7c6yieufup", words: words) == event, "\(key)")
            // The kind and the time (9 bytes) and the sender's word (2) come before the key.
            #expect(packed.bytes.count - 11 <= most, "\(key): \(packed.bytes.count - 11) bytes")
        }
        // A session whose id is empty keeps its keys spelled out.
        var event = TraceEvent(kind: .intent, session: "", atUnixNanos: 1, from: "x")
        event.idempotencyKey = "appear//signin/1"
        #expect(PackedTraceEvent(event, words: &words).event(session: "", words: words) == event)
    }
}
