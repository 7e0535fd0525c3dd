import AppStore
import FlowKit
import Foundation
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
