@_spi(Fuzzing) import Clone
import FlowChaos
import FlowHost
import Foundation
import FlowProtocol

/// The inputs a fuzzer starts from: the golden vectors of `Protocols/vectors`, the apps'
/// manifests under `Plugins/`, and a few written here, each shaped as its target reads input.
public enum FuzzSeeds {
    /// The seeds of `target`, found under the project's `root`.
    public static func seeds(for target: FuzzTarget, root: URL) -> [[UInt8]] {
        let vectors = root.appendingPathComponent("Protocols/vectors")
        switch target {
        case .mdp:
            // Typed step by step: as one literal the type checker took 1.4 s over it.
            return frameVectors(in: vectors, prefix: "mdp-").flatMap { (frames: [[UInt8]]) -> [[UInt8]] in
                let joined: [UInt8] = FuzzFrames.join(frames)
                let routed: [UInt8] = FuzzFrames.join([Array("peer-1".utf8)] + frames)
                return [[UInt8(0)] + joined, [UInt8(1)] + joined, [UInt8(2)] + routed]
            }
        case .chp:
            // Every channel, strict and liberal, with and without the small value limit.
            return frameVectors(in: vectors, prefix: "chp-").flatMap { frames in
                (0..<16).map { [UInt8($0)] + FuzzFrames.join(frames) }
            }
        case .envelope:
            return files(in: vectors, suffix: ".pb").map { Array($0) }
        case .manifest:
            let plugins = root.appendingPathComponent("Plugins")
            let apps = (try? FileManager.default.contentsOfDirectory(atPath: plugins.path)) ?? []
            let found = apps.sorted().compactMap { FileManager.default.contents(atPath: plugins.appendingPathComponent("\($0)/manifest.yaml").path) }
            return found.map { Array($0) } + builtInManifests.map { Array($0.utf8) }
        case .journal:
            return [CloneJournalCodec.sample(), []]
        case .kvsets:
            let writes: [[(key: String, properties: String, value: String)]] = [
                [("/s/abc/vm/details", "wseq=0123456789abcdef:7\nwgen=vm-details/0:1\n", "state")],
                [("/a", "", "1"), ("/b", "ttl=5\n", ""), ("/c/d", "ack=0123456789abcdef\n", String(repeating: "v", count: 300))],
            ]
            let packed = writes.map(batch)
            return packed + [Array(packed[1].dropLast(3)), []]
        case .runjson:
            return runJSONSeeds()
        }
    }

    /// Writes packed as a Flowbus agent packs a KVSETS batch, each with a UUID of its own.
    static func batch(_ writes: [(key: String, properties: String, value: String)]) -> [UInt8] {
        KVSetBatch.packed(writes.enumerated().map { index, write in
            (Array(write.key.utf8), [UInt8(index)] + Array(1...15), Array(write.properties.utf8), Array(write.value.utf8))
        })
    }

    /// Manifests that use every field, so the core has seeds when no app is present.
    static let builtInManifests = [
        """
        app: { name: sample, title: Sample }
        supervisor:
          intensity: 3
          period: 5s
          backoff: { initial: 100ms, max: 1s }
        plugins:
          - name: echo
            command: flowbus-echo
            args: ["--lanes", "2"]
            replicas: 2
            restart: permanent
          - name: probe
            command: ./probe
            restart: transient
        """,
        "plugins:\n  - name: one\n    command: /bin/true\n",
    ]

    private static func files(in folder: URL, suffix: String) -> [Data] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter { $0.hasSuffix(suffix) }.sorted().compactMap { FileManager.default.contents(atPath: folder.appendingPathComponent($0).path) }
    }

    private static func frameVectors(in folder: URL, prefix: String) -> [[[UInt8]]] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter { $0.hasPrefix(prefix) && $0.hasSuffix(".frames") }.sorted().compactMap { name in
            guard let data = FileManager.default.contents(atPath: folder.appendingPathComponent(name).path) else { return nil }
            return try? FrameVectors.parse(String(decoding: data, as: UTF8.self), file: name).frames
        }
    }
}

extension FuzzSeeds {
    /// The project this file was built from.
    public static let projectRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// With FLOWBUS_FUZZ_SEEDS=DIR set, writes the seeds of `target` into DIR (`seed-N`) and
    /// exits; otherwise does nothing. Fuzzers call this before libFuzzer starts.
    public static func writeIfAsked(for target: FuzzTarget) {
        guard let folder = ProcessInfo.processInfo.environment["FLOWBUS_FUZZ_SEEDS"], !folder.isEmpty else { return }
        let directory = URL(fileURLWithPath: folder)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            for (index, seed) in seeds(for: target, root: projectRoot).enumerated() {
                try Data(seed).write(to: directory.appendingPathComponent("seed-\(index)"))
            }
        } catch {
            FileHandle.standardError.write(Data("cannot write the \(target) seeds into \(folder): \(error); check that the folder is writable\n".utf8))
            exit(1)
        }
        exit(0)
    }

    /// Sessions as a chaos run writes them: a client's log and a host's history, every member of
    /// each kind of event set once, compact and pretty.
    static func runJSONSeeds() -> [[UInt8]] {
        var intent = ClientEvent(kind: .intent, key: "vm.home", version: 3, atUnixNanos: 1_700_000_000_000_000_000)
        intent.action = "select"
        intent.idempotencyKey = "k-\u{e9}\"1\""
        var state = ClientEvent(kind: .state, key: "/s/abc/vm/home", sequence: 42, version: 4, atUnixNanos: -1)
        state.screen = "home"
        state.phase = "success"
        var reply = ClientEvent(kind: .reply, key: "vm.home", atUnixNanos: 5)
        reply.applied = false
        reply.error = "STALE_INTENT: \\ \n\t \u{1}"
        var navigation = TraceEvent(kind: .navigation, session: "abc", atUnixNanos: 9, from: "coord-app")
        navigation.sequence = 7
        navigation.stack = ["home", "details"]
        navigation.top = "details"
        navigation.tab = "home"
        navigation.modal = "\u{1F600}"
        navigation.open = true
        var answer = TraceEvent(kind: .reply, session: "abc", atUnixNanos: 10, from: "vm-home")
        answer.to = "client-1"
        answer.service = "vm.home"
        answer.worker = "vm-home/12/1"
        answer.version = UInt64.max
        answer.incarnation = 2
        answer.askedBy = 1
        answer.applied = true
        answer.phase = "loading"
        answer.message = "m"
        answer.user = "u"
        answer.flow = "main"
        answer.key = "/s/abc/nav"
        answer.action = "select"
        answer.screen = "home"
        answer.idempotencyKey = "k"
        answer.error = ""
        let client = ClientRecord(name: "c1", events: [intent, state, reply], gaps: 1, resyncs: 2, finalNavigation: 8,
                                  finalScreen: "home", finalStates: ["home": 4, "details": 0])
        let trace = SessionTrace(session: "abc", events: [navigation, answer], droppedEvents: 3, closed: true, limits: SessionHistoryLimits(),
                                 lostObservations: 1)
        let sessions = [
            ChaosSessionRecord(session: "abc", journey: "browse.yaml", passed: false, failure: "step 2", expectedScreen: "home",
                               finalScreen: "details", clients: [client], trace: trace),
            ChaosSessionRecord(session: "def", journey: "j", passed: true, clients: []),
        ]
        return sessions.flatMap { session in
            [JSONEncoder.OutputFormatting(), [.prettyPrinted, .sortedKeys]].compactMap { formatting -> [UInt8]? in
                let encoder = JSONEncoder()
                encoder.outputFormatting = formatting
                return (try? encoder.encode(session)).map { Array($0) }
            }
        }
    }
}
