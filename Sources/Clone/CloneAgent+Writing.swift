import MessagePath
import Foundation
import Synchronization
import ZeroMQ

extension CloneAgent {
    /// Sends a KVSET with a fresh UUID; `ttl` asks the server to delete the key after that long.
    /// The write is queued until the collector is reachable; returns the UUID.
    @discardableResult
    public func set(key: String, value: [UInt8], ttl: Duration? = nil, properties: CloneProperties = []) throws(CloneWriteError) -> UUID {
        let write = try prepare(key: key, value: value, ttl: ttl, properties: properties)
        let uuid = write.uuid
        // Moved into the outbox, not copied: its key, value and lines are not retained and
        // released again on the way.
        var pending: PreparedWrite? = consume write
        try enqueue(count: 1) { _ in pending.take()! }
        return uuid
    }

    /// One KVSET per key, all with `value` and `properties`, each with its own UUID, queued
    /// together: the agent's thread is woken once for all of them, and sends them in one go (a
    /// view model's two copies of a state). None is queued when one key is refused.
    @discardableResult
    public func set(keys: [String], value: [UInt8], properties: CloneProperties = []) throws(CloneWriteError) -> [UUID] {
        // Prepared into a buffer of their own and moved from there into the outbox: read out of
        // an array, each write was copied (its key, lines and value retained) and the array's
        // copy destroyed after. `enqueue` takes all of them or none.
        let writes = UnsafeMutablePointer<PreparedWrite>.allocate(capacity: keys.count)
        var prepared = 0
        var moved = false
        defer {
            if !moved { writes.deinitialize(count: prepared) }
            writes.deallocate()
        }
        var uuids: [UUID] = []
        uuids.reserveCapacity(keys.count)
        for key in keys {
            let write = try prepare(key: key, value: value, ttl: nil, properties: properties)
            uuids.append(write.uuid)
            (writes + prepared).initialize(to: write)
            prepared += 1
        }
        try enqueue(count: prepared) { (writes + $0).move() }
        moved = true
        return uuids
    }

    /// Checks a write and keeps what its frames are made of; `enqueue` numbers it, and the agent's
    /// thread writes the frames as it sends them. Nothing is copied or allocated here but the
    /// properties' bytes when the writer gives any: the key and value are the caller's.
    private func prepare(
        key: String, value: [UInt8], ttl: Duration?, properties: CloneProperties
    ) throws(CloneWriteError) -> PreparedWrite {
        do {
            try CloneKeyRules.validate(key: key)
        } catch {
            throw .invalid(error)
        }
        guard value.count <= maxValueBytes else {
            throw .invalid(.valueTooLarge(size: value.count, limit: maxValueBytes))
        }
        var properties = properties
        if let ttl {
            guard ttl > .zero else { throw .invalid(.malformedProperties("ttl must be positive")) }
            properties.set(CloneProperties.ttlName, Self.seconds(ttl))
        }
        for property in properties where property.name.contains("=") || property.name.isEmpty
            || property.name.contains(where: { $0.isWhitespace }) || property.value.contains("\n") {
            throw .invalid(.malformedProperties("'\(property.name)' cannot be sent as one name=value line"))
        }
        return PreparedWrite(key: key, uuid: writeIDs.next(), leading: KVSetLines.leading(properties, own: ownLines), value: value)
    }

    /// How many writes this agent has made: the number of the last one.
    public var writesMade: UInt64 { shared.outbox.withLock { $0.written } }

    /// Waits until every write made so far (or up to `mark`) is settled — confirmed by the
    /// server when writes are confirmed (`confirmWrites`), else sent — or was replaced by a newer
    /// write of its key, or given up; at most `timeout`. False when the time ran out or the agent
    /// stopped. A writer that must not answer before its writes are safe in the server (a
    /// coordinator, whose caller will not ask again) calls it before answering.
    public func settle(through mark: UInt64? = nil, timeout: Duration) -> Bool {
        let mark = mark ?? writesMade
        return shared.settled.wait(for: mark, until: Date(timeIntervalSinceNow: timeout.seconds))
    }

    /// `settle` without a thread waiting: runs `body(true)` once every write made so far is
    /// settled — on the thread that settles them (this agent's, as the confirmation comes in),
    /// or at once on this one when they are — and `body(false)` when `timeout` passes first or the
    /// agent stops. Bodies run one at a time, in the order given; one must neither wait for
    /// another thread nor write to this agent. A runtime hands its answer to the caller so
    /// (`AnswerSettling`): the lane that made the writes need not wake to send it.
    public func whenSettled(timeout: Duration, _ body: @escaping (Bool) -> Void) {
        let deadline = MonotonicTime.now() + timeout
        // Due before this agent's thread means to wake (it knew of no such deadline): wake it to
        // plan again.
        if shared.settled.whenReached(writesMade, deadline: deadline, body) { shared.wake.wake() }
    }

    /// Deletes a key (a KVSET with an empty value).
    @discardableResult
    public func delete(key: String) throws(CloneWriteError) -> UUID {
        try set(key: key, value: [])
    }

    /// Queues `count` writes, the `index`th made by `write(index)` under the outbox's lock, or
    /// none of them when the outbox is closed or they would take it past `maxHeldWrites`.
    private func enqueue(count: Int, _ write: (Int) -> PreparedWrite) throws(CloneWriteError) {
        guard count > 0 else { return }
        let limit = maxHeldWrites
        let outcome: Result<Bool, CloneWriteError> = shared.outbox.withLock { outbox in
            guard outbox.open else { return .failure(.stopped) }
            let waiting = outbox.writes.count + outbox.held
            guard waiting + count <= limit else { return .failure(.backlogFull(held: waiting)) }
            let wasEmpty = outbox.writes.isEmpty
            // Numbered in the order they are queued, which is the order they are sent.
            for index in 0..<count {
                outbox.written += 1
                var queued = write(index)
                queued.count = outbox.written
                // Moved in: a plain `append(queued)` copied it (retaining its key, lines and
                // value) and destroyed the original.
                outbox.writes.append(consume queued)
            }
            return .success(wasEmpty)
        }
        // Only writes into an empty outbox wake the thread: it takes the whole outbox. While it
        // sleeps, this thread may send them instead.
        if try outcome.get(), !sentFromThisThread() { shared.wake.wake() }
    }

    /// Sends the outbox from the calling thread if the agent's thread sleeps in its poll and
    /// nothing waits before these writes (`CloneAgentLoop.sendForWriter`); false when the agent's
    /// thread must be woken: it is awake (it takes the outbox on its pass), or has work only it
    /// does, or `writersSend` is off.
    private func sentFromThisThread() -> Bool {
        guard writersSend else { return false }
        let shortcut = shared.shortcut
        guard shortcut.gate.tryLock() else { return false }
        defer { shortcut.gate.unlock() }
        return shortcut.loop?.sendForWriter() ?? false
    }

    /// The lines every KVSET of this agent ends with, as bytes: `ack=<agent>` when writes are
    /// confirmed, then `wseq=<agent>:` (the count follows) and `wgen=<writer>:<incarnation>`.
    struct OwnLines: Sendable {
        var leading: [UInt8]
        var writeSequencePrefix: [UInt8]
        var trailing: [UInt8]

        init(agentID: String, confirmation: (name: String, value: String)?, generation: String?) {
            leading = confirmation.map { Array("\($0.name)=\($0.value)\n".utf8) } ?? []
            writeSequencePrefix = Array("\(CloneProperties.writeSequenceName)=\(agentID):".utf8)
            trailing = generation.map { Array("\(CloneProperties.writerGenerationName)=\($0)\n".utf8) } ?? []
        }
    }

    /// A KVSET's properties frame: the writer's lines, then the agent's own (`ack`, `wseq` with
    /// the write's count, `wgen`), which replace any of the same name the writer gave (as
    /// `CloneProperties.set` would).
    enum KVSetLines {
        /// Everything before `wseq`: the writer's `properties` without the agent's names, then `ack`.
        static func leading(_ properties: CloneProperties, own: OwnLines) -> [UInt8] {
            guard !properties.isEmpty else { return own.leading }
            var properties = properties
            if !own.leading.isEmpty { properties.set(CloneProperties.ackName, nil) }
            properties.set(CloneProperties.writeSequenceName, nil)
            if !own.trailing.isEmpty { properties.set(CloneProperties.writerGenerationName, nil) }
            return properties.isEmpty ? own.leading : properties.encoded + own.leading
        }

        /// Writes the whole frame at the start of `buffer` (made larger when it is too small):
        /// `leading`, `wseq=<agent>:<count>`, then `wgen`; returns its length. Every write's frame is
        /// made here, on the agent's thread, so it copies the parts' bytes and nothing else.
        static func write(into buffer: inout UnsafeMutableRawBufferPointer, leading: [UInt8], own: OwnLines, count: UInt64) -> Int {
            withDecimalDigits(count) { number in
                let length = leading.count + own.writeSequencePrefix.count + number.count + 1 + own.trailing.count
                if buffer.count < length {
                    buffer.deallocate()
                    buffer = .allocate(byteCount: max(length, 2 * buffer.count), alignment: 1)
                }
                var at = 0
                func put(_ bytes: UnsafeRawBufferPointer) {
                    guard bytes.count > 0 else { return }
                    UnsafeMutableRawBufferPointer(rebasing: buffer[at..<(at + bytes.count)]).copyMemory(from: bytes)
                    at += bytes.count
                }
                leading.withUnsafeBytes(put)
                own.writeSequencePrefix.withUnsafeBytes(put)
                put(number)
                buffer[at] = UInt8(ascii: "\n")
                at += 1
                own.trailing.withUnsafeBytes(put)
                return at
            }
        }

        /// A KVSET's sequence frame: 12/CHP leaves it zero.
        static let zeroSequence: Frame = [0, 0, 0, 0, 0, 0, 0, 0]
    }

    static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        if attoseconds == 0 { return String(seconds) }
        return String(Double(seconds) + Double(attoseconds) * 1e-18)
    }
}

/// A KVSET checked and numbered, waiting for the agent's thread (and, when writes are confirmed,
/// for its confirmation): what its frames are made of, written only as it is sent.
struct PreparedWrite: Sendable {
    var key: String
    var uuid: UUID
    /// The properties frame up to `wseq`: the writer's lines and the agent's `ack`.
    var leading: [UInt8]
    var value: [UInt8]
    /// Its number among the agent's writes (`wseq`), given as it is queued: the number the
    /// agent's thread settles it by (`CloneAgent.settle`) once it is sent or confirmed.
    var count: UInt64 = 0
    /// Sent again because its confirmation did not come in time (it waits behind the others).
    var isResend = false
}
