import AppStore
import FlowKit
import Foundation
import GRDB
import Testing

/// `RecordStore` as the services' `ServiceReplyStore`: replies kept in the file beside the data.
@Suite struct RecordStoreRepliesTests {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("replies-\(UUID().uuidString)")
    var path: String { folder.appendingPathComponent("app.sqlite").path }

    @Test func repliesAreKeptInTheFileTheFirstOneStaysAndAKeylessCallIsNotKept() throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try RecordStore(path: path)
        try store.remember("svc.a k1", reply: [1, 2, 3])
        try store.remember("svc.a k1", reply: [9])
        try store.remember("", reply: [7])
        let reopened = try RecordStore(path: path)
        #expect(try reopened.reply(for: "svc.a k1") == [1, 2, 3])
        #expect(try reopened.reply(for: "svc.a k2") == nil)
        #expect(try reopened.reply(for: "") == nil)
    }

    @Test func onlyTheNewestRepliesAreKept() throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try RecordStore(path: path, replyCapacity: 3)
        for index in 1...5 { try store.remember("k\(index)", reply: [UInt8(index)]) }
        let reopened = try RecordStore(path: path, replyCapacity: 3)
        #expect(try ["k1", "k2"].map { try reopened.reply(for: $0) } == [nil, nil])
        #expect(try ["k3", "k4", "k5"].map { try reopened.reply(for: $0) } == [[3], [4], [5]])
    }

    /// Replies beyond the newest `capacity` go a batch at a time (a sixteenth of it): with 32,
    /// every second reply prunes, so 32 or 33 are kept and never fewer than the newest 32.
    @Test func oldRepliesArePrunedABatchAtATime() throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try RecordStore(path: path, replyCapacity: 32)
        for index in 1...41 { try store.remember("k\(index)", reply: [UInt8(index)]) }
        var reopened = try RecordStore(path: path, replyCapacity: 32)
        #expect(try (1...8).allSatisfy { try reopened.reply(for: "k\($0)") == nil })
        #expect(try (10...41).allSatisfy { try reopened.reply(for: "k\($0)") == [UInt8($0)] })
        #expect(try reopened.reply(for: "k9") == [9], "the 41st reply pruned: pruning is not batched")
        // The 42nd is even: its pruning leaves the newest 32 exactly.
        try store.remember("k42", reply: [42])
        reopened = try RecordStore(path: path, replyCapacity: 32)
        #expect(try (1...10).allSatisfy { try reopened.reply(for: "k\($0)") == nil })
        #expect(try (11...42).allSatisfy { try reopened.reply(for: "k\($0)") == [UInt8($0)] })
        // The store that pruned them forgets them too (its keys in memory follow the file).
        #expect(try store.reply(for: "k9") == nil && store.reply(for: "k42") == [42])
    }

    /// The transaction begins and commits through statements of its own: when keeping the reply
    /// fails, the call's writes are rolled back with it, no reply is kept, and the store goes on.
    @Test func aCallWhoseReplyCannotBeKeptLeavesNoWriteAndTheStoreGoesOn() throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try RecordStore(path: path)
        let refusing = try DatabaseQueue(path: path)
        try refusing.write { db in
            try db.execute(sql: "CREATE TRIGGER refuse BEFORE INSERT ON replies WHEN NEW.key = 'svc.a bad' BEGIN SELECT RAISE(ABORT, 'refused'); END")
        }
        #expect(throws: RecordStoreError.self) {
            _ = try store.answer("svc.a bad") {
                try? store.put("thing", "kept?", Data("no".utf8))
                return [1]
            }
        }
        #expect(try store.all("thing")["kept?"] == nil)
        #expect(try store.reply(for: "svc.a bad") == nil)
        #expect(try store.answer("svc.a good") {
            try? store.put("thing", "kept", Data("yes".utf8))
            return [2]
        } == [2])
        let reopened = try RecordStore(path: path)
        #expect(try reopened.all("thing") == ["kept": Data("yes".utf8)])
        #expect(try reopened.reply(for: "svc.a good") == [2] && reopened.reply(for: "svc.a bad") == nil)
    }

    @Test func aCallsWritesAndItsReplyCommitTogetherAndARetryIsAnsweredFromTheFile() throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try RecordStore(path: path)
        // Another connection to the file (as a process reading it would be) sees only what is committed.
        let observer = try RecordStore(path: path)
        var seenDuringTheCall: [String: Data]?
        var replySeenDuringTheCall: [UInt8]?
        let reply = try store.answer("svc.a k1") {
            try? store.put("thing", "one", Data("1".utf8))
            try? store.apply([.put(kind: "thing", key: "two", value: Data("2".utf8))])
            seenDuringTheCall = try? observer.all("thing")
            replySeenDuringTheCall = try? observer.reply(for: "svc.a k1")
            return [42]
        }
        #expect(reply == [42])
        #expect(seenDuringTheCall == [:], "a write inside the call was committed before the reply")
        #expect(replySeenDuringTheCall == nil)
        #expect(try observer.all("thing").keys.sorted() == ["one", "two"])

        let reopened = try RecordStore(path: path)
        var applied = 0
        let retry = try reopened.answer("svc.a k1") {
            applied += 1
            return [0]
        }
        #expect(retry == [42] && applied == 0)
        // Without a key, every call runs and nothing is kept.
        _ = try reopened.answer("") { applied += 1; return [1] }
        _ = try reopened.answer("") { applied += 1; return [1] }
        #expect(applied == 2)
    }

    /// A call that writes nothing (a read, a refusal) costs no disk write: its reply is kept in
    /// memory, so a duplicate reaching this process is answered and not run again; a store
    /// opened afresh (a restarted process) runs it again, as nothing it did outlived the process.
    @Test func aCallThatWritesNothingKeepsItsReplyInMemoryOnly() throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try RecordStore(path: path, replyCapacity: 3)
        var applied = 0
        let reply = try store.answer("svc.a read-1") { applied += 1; return [5] }
        let duplicate = try store.answer("svc.a read-1") { applied += 1; return [6] }
        #expect(reply == [5] && duplicate == [5] && applied == 1)
        #expect(try store.reply(for: "svc.a read-1") == [5])

        let reopened = try RecordStore(path: path)
        #expect(try reopened.reply(for: "svc.a read-1") == nil, "a reply of a call that wrote nothing reached the file")
        #expect(try reopened.answer("svc.a read-1") { applied += 1; return [7] } == [7])
        #expect(applied == 2)

        // Only the newest `replyCapacity` are kept.
        for index in 2...4 { _ = try store.answer("svc.a read-\(index)") { [UInt8(index)] } }
        #expect(try store.reply(for: "svc.a read-1") == nil)
        #expect(try store.reply(for: "svc.a read-2") == [2] && store.reply(for: "svc.a read-4") == [4])
    }

    @Test func aStoreThatCannotBeOpenedSaysWhereAndWhatToDo() throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data("not a database".utf8).write(to: URL(fileURLWithPath: path))
        do {
            _ = try RecordStore(path: path)
            Issue.record("a file that is not a database was opened as one")
        } catch {
            #expect(error.description.contains(path) && error.description.contains("move the file away"), "\(error)")
        }
    }
}
