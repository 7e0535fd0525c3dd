import Testing
@testable import FlowHost

/// The text timeline and the Mermaid diagram of a hand-made sign-in trace.
@Suite struct TraceRenderingTests {
    static func event(_ kind: TraceEvent.Kind, at milliseconds: Int64, from: String, _ fill: (inout TraceEvent) -> Void = { _ in }) -> TraceEvent {
        var event = TraceEvent(kind: kind, session: "S1", atUnixNanos: 1_700_000_000_000_000_000 + milliseconds * 1_000_000, from: from)
        fill(&event)
        return event
    }

    static let signIn = SessionTrace(session: "S1", events: [
        event(.intent, at: 0, from: "test/ab") { $0.service = "vm.signin"; $0.action = "logIn"; $0.screen = "signin"; $0.version = 1; $0.idempotencyKey = "test/ab/1" },
        event(.state, at: 3, from: "vm-signin") { $0.sequence = 41; $0.key = "/s/S1/vm/signin"; $0.screen = "signin"; $0.phase = "loading"; $0.version = 2 },
        event(.reply, at: 4, from: "vm-signin") {
            $0.service = "vm.signin"; $0.worker = "vm-signin/4242/0"; $0.to = "test/ab"; $0.action = "logIn"; $0.applied = true; $0.version = 2
            $0.idempotencyKey = "test/ab/1"
        },
        event(.state, at: 180, from: "vm-signin") { $0.sequence = 42; $0.key = "/s/S1/vm/signin"; $0.screen = "signin"; $0.phase = "success"; $0.version = 3 },
        event(.call, at: 181, from: "coord-auth") { $0.service = "coord.app"; $0.action = "navigate"; $0.message = "setTabs [home,settings]" },
        event(.reply, at: 183, from: "coord-app") { $0.service = "coord.app"; $0.to = "coord-auth"; $0.action = "navigate"; $0.applied = true; $0.version = 4 },
        event(.navigation, at: 182, from: "coord-app") { $0.sequence = 43; $0.key = "/s/S1/nav"; $0.version = 4; $0.top = "home"; $0.tab = "home"; $0.stack = ["home"] },
        event(.intent, at: 1_500, from: "test/ab") { $0.service = "vm.home"; $0.action = "select"; $0.screen = "home"; $0.version = 5 },
        event(.reply, at: 1_501, from: "vm-home") { $0.service = "vm.home"; $0.to = "test/ab"; $0.action = "select"; $0.applied = false; $0.error = "STALE_INTENT: made on v5; now v6" },
        event(.deleted, at: 2_000, from: "") { $0.sequence = 44; $0.key = "/s/S1/meta" },
    ], droppedEvents: 0, closed: true, limits: SessionHistoryLimits())

    @Test func theTimelineHasOneLinePerEventWithOffsetSequenceWhoAndWhat() {
        let lines = TraceTimeline.lines(Self.signIn)
        #expect(lines.count == 1 + Self.signIn.events.count)
        #expect(lines[0] == "session S1: 10 events, closed")
        #expect(lines[1].hasPrefix("   +0.000s"))
        #expect(lines[1].contains("test/ab → vm.signin") && lines[1].contains("intent logIn on v1  key test/ab/1"))
        #expect(lines[2].contains("+0.003s  seq 41") && lines[2].contains("vm-signin ⇒ vm/signin") && lines[2].contains("state loading v2"))
        #expect(lines[3].contains("vm-signin ⇠ vm.signin") && lines[3].contains("reply logIn applied v2  (vm-signin/4242/0 → test/ab)"))
        #expect(lines[7].contains("nav v4 top home tab home [home]"))
        #expect(lines[8].contains("+1.500s"))
        #expect(lines[9].contains("reply select refused, STALE_INTENT: made on v5; now v6"))
        #expect(lines[10].contains("deleted"))
    }

    @Test func theDiagramHasClientsProcessesAndCloneWithArrowsForEachEvent() {
        let diagram = MermaidSequence.diagram(Self.signIn)
        let lines = diagram.split(separator: "\n").map(String.init)
        #expect(lines[1] == "sequenceDiagram")
        let participants = lines.filter { $0.hasPrefix("    participant ") }
        #expect(participants == [
            "    participant P1 as test/ab",
            "    participant P2 as coord-auth",
            "    participant P3 as vm-signin",
            "    participant P4 as coord-app",
            "    participant P5 as vm-home",
            "    participant Clone as Clone /s/S1/",
        ])
        #expect(lines.contains("    P1->>P3: logIn (vm.signin on v1)"))
        #expect(lines.contains("    P3->>Clone: #35;41 signin loading v2"))
        #expect(lines.contains("    P3-->>P1: logIn applied v2"))
        #expect(lines.contains("    P2->>P4: navigate (coord.app): setTabs [home,settings]"))
        #expect(lines.contains("    P4->>Clone: #35;43 nav v4 [home] tab home"))
        #expect(lines.contains("    P5-->>P1: select refused: STALE_INTENT: made on v5#59; now v6"))
        #expect(lines.contains("    Note over Clone: #35;44 deleted meta"))
        #expect(diagram.hasSuffix("\n"))
    }

    @Test func anUnansweredRequestPointsAtItsService() {
        let trace = SessionTrace(session: "S", events: [
            Self.event(.intent, at: 0, from: "c") { $0.service = "vm.details"; $0.action = "like" },
        ], droppedEvents: 0, closed: false, limits: SessionHistoryLimits())
        let diagram = MermaidSequence.diagram(trace)
        #expect(diagram.contains("participant P2 as vm.details"))
        #expect(diagram.contains("P1->>P2: like (vm.details on v0)"))
    }

    @Test(arguments: [
        ("plain text", "plain text"),
        ("a;b", "a#59;b"),
        ("#1", "#35;1"),
        ("<b>x</b>", "#lt;b#gt;x#lt;/b#gt;"),
        ("two\nlines\r\nhere", "two lines here"),
        ("100% & \"quoted\"", "100#37; #amp; #quot;quoted#quot;"),
        ("tab\there", "tab here"),
        ("ação → ok", "ação → ok"),
    ])
    func mermaidTextIsEscaped(raw: String, escaped: String) {
        #expect(MermaidSequence.escape(raw) == escaped)
    }

    @Test func aMessageWithMermaidSyntaxCannotBreakTheDiagram() {
        let trace = SessionTrace(session: "S", events: [
            Self.event(.state, at: 0, from: "vm-x") { $0.screen = "x"; $0.phase = "error"; $0.version = 1; $0.message = "end\nparticipant Evil; A->>B: hi %% <script>" },
        ], droppedEvents: 0, closed: false, limits: SessionHistoryLimits())
        let lines = MermaidSequence.diagram(trace).split(separator: "\n")
        #expect(lines.count == 5, "a comment, the header, two participants and one arrow: \(lines)")
        let arrow = String(lines.last ?? "")
        #expect(arrow.hasPrefix("    P1->>Clone: x error v1"))
        #expect(arrow.contains("end participant Evil#59; A-#gt;#gt;B: hi #37;#37; #lt;script#gt;"))
        #expect(!arrow.contains("%%"))
    }
}
