import AppStore
import FlowbusTesting
import Foundation
import Synchronization
import Testing

/// `RecordStore` on PostgreSQL (a server of the test process's own, FlowbusTesting's
/// PostgresServer): the same promises as the SQLite file, and those replicas need — each call
/// sees what every replica committed before it, a retry reaching another replica gets the first
/// reply, and calls from several replicas run one at a time.
@Suite(.serialized) struct PostgresRecordStoreTests {
    let address: String
    let schema = "t_" + UUID().uuidString.prefix(8).lowercased().replacingOccurrences(of: "-", with: "")

    init() throws {
        address = try PostgresServer.shared().address()
    }

    /// A replica's memory of the `thing` records, kept up by following them.
    final class Memory: Sendable {
        let things = Mutex<[String: String]>([:])
        let store: RecordStore

        init(_ store: RecordStore) throws {
            self.store = store
            store.follow("thing") { [weak self] key, value in
                self?.things.withLock { $0[key] = value.map { String(decoding: $0, as: UTF8.self) } }
            }
            try store.load()
        }

        var snapshot: [String: String] { things.withLock { $0 } }
    }

    @Test func recordsAndRepliesAreKeptAsInTheFile() throws {
        let store = try RecordStore(postgres: address, schema: schema)
        try store.put("thing", "one", Data("1".utf8))
        try store.apply([.put(kind: "thing", key: "two", value: Data("2".utf8)), .put(kind: "other", key: "x", value: Data())])
        try store.delete("thing", "one")
        #expect(try store.all("thing") == ["two": Data("2".utf8)])
        #expect(try store.all("other") == ["x": Data()])

        var applied = 0
        let reply = try store.answer("svc.a k1") {
            try? store.put("thing", "three", Data("3".utf8))
            applied += 1
            return [42]
        }
        let reopened = try RecordStore(postgres: address, schema: schema)
        let retry = try reopened.answer("svc.a k1") { applied += 1; return [0] }
        #expect(reply == [42] && retry == [42] && applied == 1)
        #expect(try reopened.all("thing").keys.sorted() == ["three", "two"])
        #expect(try reopened.reply(for: "svc.a k1") == [42])
        #expect(try reopened.reply(for: "svc.a other") == nil)
    }

    @Test func aCallThatFailsToCommitLeavesNoWriteAndNoReply() throws {
        let store = try RecordStore(postgres: address, schema: schema)
        // A value PostgreSQL refuses (a kind with a NUL byte is not valid text) fails the
        // transaction: the earlier write of the same call must not be there afterwards.
        #expect(throws: RecordStoreError.self) {
            _ = try store.answer("svc.a k2") {
                try? store.put("thing", "kept?", Data("no".utf8))
                try? store.put("bad\u{0}kind", "k", Data())
                return [1]
            }
        }
        #expect(try store.all("thing")["kept?"] == nil)
        #expect(try store.reply(for: "svc.a k2") == nil)
        // The connection is usable again after the rollback.
        #expect(try store.answer("svc.a k3") { [3] } == [3])
    }

    @Test func eachCallFirstSeesWhatOtherReplicasCommitted() throws {
        let first = try Memory(RecordStore(postgres: address, schema: schema))
        let second = try Memory(RecordStore(postgres: address, schema: schema))
        _ = try first.store.answer("") {
            try? first.store.put("thing", "a", Data("from first".utf8))
            first.things.withLock { $0["a"] = "from first" }
            return []
        }
        #expect(second.snapshot["a"] == nil, "nothing is pushed: a replica catches up when it is called")
        var seen: String?
        _ = try second.store.answer("") {
            seen = second.snapshot["a"]
            try? second.store.delete("thing", "a")
            second.things.withLock { $0["a"] = nil }
            return []
        }
        #expect(seen == "from first")
        _ = try first.store.answer("") { [] }
        #expect(first.snapshot["a"] == nil, "a delete reaches the other replica too")

        // A replica started later loads everything, deletes included.
        let third = try Memory(RecordStore(postgres: address, schema: schema))
        #expect(third.snapshot == [:])
    }

    @Test func aRetryReachingAnotherReplicaGetsTheFirstReply() throws {
        let first = try RecordStore(postgres: address, schema: schema)
        let second = try RecordStore(postgres: address, schema: schema)
        let applied = Atomic<Int>(0)
        // A like writes a record: its reply is kept in the store, where every replica finds it.
        let reply = try first.answer("svc.movies like-1") {
            try? first.put("likes", "u1", Data("m1".utf8))
            applied.add(1, ordering: .relaxed)
            return [7, 7]
        }
        let retry = try second.answer("svc.movies like-1") { applied.add(1, ordering: .relaxed); return [0] }
        #expect(reply == [7, 7] && retry == [7, 7])
        #expect(applied.load(ordering: .relaxed) == 1)
    }

    /// Two replicas on two threads each add one to a counter 150 times, reading it from their
    /// memory: 300 only if every call saw every earlier one (no lost update).
    @Test func callsFromSeveralReplicasRunOneAtATimeAndLoseNoUpdate() async throws {
        let replicas = try (0..<2).map { _ in try Memory(RecordStore(postgres: address, schema: schema)) }
        let rounds = 150
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, replica) in replicas.enumerated() {
                group.addTask {
                    try await onThread {
                        for round in 0..<rounds {
                            _ = try replica.store.answer("add \(index)-\(round)") {
                                let next = String((Int(replica.snapshot["counter"] ?? "0") ?? 0) + 1)
                                try? replica.store.put("thing", "counter", Data(next.utf8))
                                replica.things.withLock { $0["counter"] = next }
                                return Array(next.utf8)
                            }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let stored = try RecordStore(postgres: address, schema: schema).all("thing")["counter"]
        #expect(stored.map { String(decoding: $0, as: UTF8.self) } == "\(2 * rounds)")
    }

    @Test func aWrongAddressOrSchemaIsRefusedWithWhatToDo() throws {
        let unreachable = "postgresql://nobody:secret@127.0.0.1:1/none?connect_timeout=2"
        let error = try #require(throws: RecordStoreError.self) { try RecordStore(postgres: unreachable, schema: "movies") }
        #expect(error.description.contains("cannot connect"))
        #expect(!error.description.contains("secret"), "the password is never printed: \(error)")
        #expect(error.description.contains("nobody:***@127.0.0.1"))
        let badSchema = try #require(throws: RecordStoreError.self) { try RecordStore(postgres: address, schema: "Movies; DROP") }
        #expect(badSchema.description.contains("schema name"))
    }

    @Test func replicasAreRefusedDataOfTheirOwn() throws {
        #expect(try AppData(option: nil, defaultFile: "/run/x/movies.sqlite", app: "movies", replica: 0) == .file("/run/x/movies.sqlite"))
        #expect(try AppData(option: "memory", defaultFile: nil, app: "movies", replica: 0) == .memory)
        #expect(try AppData(option: address, defaultFile: nil, app: "movies", replica: 3) == .postgres(address: address, schema: "movies"))
        let refused = try #require(throws: AppDataError.self) {
            try AppData(option: nil, defaultFile: "/run/x/movies.sqlite", app: "movies", replica: 1)
        }
        #expect(refused.description.contains("--data postgresql://"))
        #expect(throws: AppDataError.self) { try AppData(option: "memory", defaultFile: nil, app: "photos", replica: 2) }
    }
}
