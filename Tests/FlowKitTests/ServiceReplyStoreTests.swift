@testable import FlowKit
import FlowProtocol
import Synchronization
import Testing

/// A store whose replies live in `disk`, which outlives the store (as a database file outlives
/// a killed process); it records what it was asked, and fails on demand.
final class DiskReplies: ServiceReplyStore {
    final class Disk: Sendable {
        let replies = Mutex<[String: [UInt8]]>([:])
    }

    let disk: Disk
    let failing: Bool

    init(disk: Disk, failing: Bool = false) {
        self.disk = disk
        self.failing = failing
    }

    struct Broken: Error, CustomStringConvertible {
        var description: String { "the disk is full" }
    }

    func reply(for key: String) throws -> [UInt8]? {
        if failing { throw Broken() }
        return disk.replies.withLock { $0[key] }
    }

    func remember(_ key: String, reply: [UInt8]) throws {
        if failing { throw Broken() }
        guard !key.isEmpty else { return }
        disk.replies.withLock { if $0[key] == nil { $0[key] = reply } }
    }
}

/// A store that answers in one transaction of its own (as a database holding the app's data
/// does), logging the order of what happens.
final class TransactionalReplies: ServiceReplyStore {
    let log = Mutex<[String]>([])
    let kept = InMemoryServiceReplies()

    func reply(for key: String) -> [UInt8]? { kept.reply(for: key) }
    func remember(_ key: String, reply: [UInt8]) { kept.remember(key, reply: reply) }

    func answer(_ key: String, _ handle: () -> [UInt8]) throws -> [UInt8] {
        log.withLock { $0.append("begin") }
        defer { log.withLock { $0.append("commit") } }
        if let earlier = reply(for: key) { return earlier }
        let reply = handle()
        log.withLock { $0.append("handled") }
        remember(key, reply: reply)
        return reply
    }
}

@Suite("Service reply stores")
struct ServiceReplyStoreTests {
    /// A handler that counts its calls and answers each with a new count, so a reply applied twice shows.
    final class CountingHandler {
        var calls = 0
        var handler: ServiceHandler {
            { call in
                self.calls += 1
                var reply = Flowbus_V1_ServiceReply()
                reply.result = ["method": call.method, "call": String(self.calls)]
                return reply
            }
        }
    }

    static func request(_ method: String, key: String) throws -> [[UInt8]] {
        var call = Flowbus_V1_ServiceCall()
        call.method = method
        return [try Envelope.wrapping(call, idempotencyKey: key, writer: "test/caller").encoded()]
    }

    static func respond(
        _ method: String, key: String, service: String = "svc.things", _ handler: CountingHandler, _ replies: any ServiceReplyStore
    ) throws -> (bytes: [UInt8], reply: Flowbus_V1_ServiceReply?, failure: (any Error)?) {
        let answer = ServiceWorkerRuntime.respond(
            to: try request(method, key: key), service: service, handler: handler.handler, replies: replies, writer: "test/services")
        let bytes = try #require(answer.frames.first)
        let envelope = try Envelope.decodeChecked(bytes)
        let reply = envelope.holds(Flowbus_V1_ServiceReply.self) ? try envelope.unwrap(Flowbus_V1_ServiceReply.self) : nil
        return (bytes, reply, answer.storeFailure)
    }

    @Test("in memory: keeps the newest replies by key, the first reply for a key stays, a call without a key is never kept")
    func inMemoryIsBounded() {
        let replies = InMemoryServiceReplies(capacity: 3)
        for key in ["a", "b", "c"] { replies.remember(key, reply: Array(key.utf8)) }
        #expect(replies.reply(for: "a") == Array("a".utf8))
        replies.remember("a", reply: Array("changed".utf8))
        #expect(replies.reply(for: "a") == Array("a".utf8))
        replies.remember("d", reply: Array("d".utf8))
        #expect(replies.reply(for: "a") == nil)
        #expect(["b", "c", "d"].allSatisfy { replies.reply(for: $0) != nil })
        replies.remember("", reply: Array("no key".utf8))
        #expect(replies.reply(for: "") == nil)
        for key in ["e", "f", "g"] { replies.remember(key, reply: Array(key.utf8)) }
        #expect(["b", "c", "d"].allSatisfy { replies.reply(for: $0) == nil })
        #expect(["e", "f", "g"].allSatisfy { replies.reply(for: $0) != nil })
    }

    @Test("a retry with the same key gets the first reply, byte for byte, and the handler runs once; a new key is a new call")
    func aRetryIsAnsweredFromTheStore() throws {
        let handler = CountingHandler()
        let replies = InMemoryServiceReplies()
        let first = try Self.respond("register", key: "k1", handler, replies)
        let retry = try Self.respond("register", key: "k1", handler, replies)
        #expect(retry.bytes == first.bytes)
        #expect(handler.calls == 1)
        #expect(try Self.respond("register", key: "k2", handler, replies).reply?.result["call"] == "2")
    }

    @Test("a store that outlives the process answers a retry after a restart; the in-memory default applies it again")
    func anInjectedStoreOutlivesTheProcess() throws {
        let disk = DiskReplies.Disk()
        let handler = CountingHandler()
        let first = try Self.respond("register", key: "k1", handler, DiskReplies(disk: disk))
        // A new process: a new store over the same disk, and a new handler that has forgotten.
        let restarted = CountingHandler()
        let retry = try Self.respond("register", key: "k1", restarted, DiskReplies(disk: disk))
        #expect(retry.bytes == first.bytes)
        #expect(restarted.calls == 0)

        _ = try Self.respond("register", key: "k1", handler, InMemoryServiceReplies())
        let forgotten = try Self.respond("register", key: "k1", restarted, InMemoryServiceReplies())
        #expect(restarted.calls == 1 && forgotten.reply?.result["call"] == "1")
    }

    @Test("replies are kept per service, and a call without a key is applied every time")
    func keysAreScopedAndKeylessCallsAreNotKept() throws {
        let disk = DiskReplies.Disk()
        let replies = DiskReplies(disk: disk)
        let handler = CountingHandler()
        _ = try Self.respond("register", key: "same", service: "svc.a", handler, replies)
        let other = try Self.respond("send", key: "same", service: "svc.b", handler, replies)
        #expect(other.reply?.result["method"] == "send")
        #expect(handler.calls == 2)
        _ = try Self.respond("register", key: "", handler, replies)
        _ = try Self.respond("register", key: "", handler, replies)
        #expect(handler.calls == 4)
        #expect(disk.replies.withLock { $0.keys.sorted() } == ["svc.a same", "svc.b same"])
    }

    @Test("a store's own answer is used: the handler runs inside it, and the reply is kept before it ends")
    func aStoreThatAnswersItselfIsUsed() throws {
        let replies = TransactionalReplies()
        let handler = CountingHandler()
        _ = try Self.respond("register", key: "k1", handler, replies)
        _ = try Self.respond("register", key: "k1", handler, replies)
        #expect(replies.log.withLock { $0 } == ["begin", "handled", "commit", "begin", "commit"])
        #expect(handler.calls == 1)
    }

    @Test("a store that fails: the call is answered UNAVAILABLE with what to do, the failure is reported, nothing is applied")
    func aFailingStoreAnswersUnavailable() throws {
        let handler = CountingHandler()
        let answer = try Self.respond("register", key: "k1", handler, DiskReplies(disk: DiskReplies.Disk(), failing: true))
        #expect(handler.calls == 0)
        #expect(answer.reply == nil)
        #expect(answer.failure.map { "\($0)" } == "the disk is full")
        let error = try Envelope.decodeChecked(answer.bytes).unwrap(WireError.self)
        #expect(error.code == .unavailable)
        #expect(error.message.contains("svc.things could not keep its reply") && error.message.contains("the disk is full"))
        #expect(error.hint.contains("same idempotency key"))
    }

    @Test("a request that is not a ServiceCall is refused MALFORMED and never kept")
    func aWrongKindIsRefused() throws {
        let handler = CountingHandler()
        let disk = DiskReplies.Disk()
        var echo = Flowbus_V1_Echo()
        echo.text = "hi"
        let body = [try Envelope.wrapping(echo, idempotencyKey: "k1", writer: "test").encoded()]
        let answer = ServiceWorkerRuntime.respond(to: body, service: "svc.things", handler: handler.handler, replies: DiskReplies(disk: disk), writer: "w")
        let error = try Envelope.decodeChecked(try #require(answer.frames.first)).unwrap(WireError.self)
        #expect(error.code == .malformed)
        #expect(handler.calls == 0 && disk.replies.withLock { $0.isEmpty })
    }
}
