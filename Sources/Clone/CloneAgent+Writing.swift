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
        try enqueue([write.frames])
        return write.uuid
    }

    /// One KVSET per key, all with `value` and `properties`, each with its own UUID, queued
    /// together: the agent's thread is woken once for all of them, and sends them in one go (a
    /// view model's two copies of a state). None is queued when one key is refused.
    @discardableResult
    public func set(keys: [String], value: [UInt8], properties: CloneProperties = []) throws(CloneWriteError) -> [UUID] {
        var writes: [(uuid: UUID, frames: (UInt64) -> [Frame])] = []
        writes.reserveCapacity(keys.count)
        for key in keys { writes.append(try prepare(key: key, value: value, ttl: nil, properties: properties)) }
        try enqueue(writes.map(\.frames))
        return writes.map(\.uuid)
    }

    /// Checks a write and makes every byte of its frames but the count, which `enqueue` fills in.
    private func prepare(
        key: String, value: [UInt8], ttl: Duration?, properties: CloneProperties
    ) throws(CloneWriteError) -> (uuid: UUID, frames: (UInt64) -> [Frame]) {
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
        let uuid = writeIDs.next()
        let lines = KVSetLines(properties, own: ownLines)
        let keyFrame = Array(key.utf8)
        let uuidFrame = uuid.frame
        // Numbered in the order they are queued, which is the order they are sent: only the
        // count is filled in under the queue's lock, every other byte is ready.
        return (uuid, { sequence in lines.frames(key: keyFrame, uuid: uuidFrame, value: value, count: sequence) })
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

    /// Deletes a key (a KVSET with an empty value).
    @discardableResult
    public func delete(key: String) throws(CloneWriteError) -> UUID {
        try set(key: key, value: [])
    }

    private func enqueue(_ writes: [(UInt64) -> [Frame]]) throws(CloneWriteError) {
        guard !writes.isEmpty else { return }
        let limit = maxHeldWrites
        let outcome: Result<Bool, CloneWriteError> = shared.outbox.withLock { outbox in
            guard outbox.open else { return .failure(.stopped) }
            let waiting = outbox.frames.count + outbox.held
            guard waiting + writes.count <= limit else { return .failure(.backlogFull(held: waiting)) }
            let wasEmpty = outbox.frames.isEmpty
            for frames in writes {
                outbox.written += 1
                outbox.frames.append(frames(outbox.written))
            }
            return .success(wasEmpty)
        }
        // Only writes into an empty outbox wake the thread: it takes the whole outbox.
        if try outcome.get() { shared.wake.wake() }
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

    /// A KVSET's properties frame but for its count, and how to finish it.
    struct KVSetLines {
        var leading: [UInt8]
        var own: OwnLines

        /// The writer's `properties`, then the agent's own lines, which replace any of the same
        /// name (as `CloneProperties.set` would): `ack`, `wseq`, `wgen`.
        init(_ properties: CloneProperties, own: OwnLines) {
            var properties = properties
            if !own.leading.isEmpty { properties.set(CloneProperties.ackName, nil) }
            properties.set(CloneProperties.writeSequenceName, nil)
            if !own.trailing.isEmpty { properties.set(CloneProperties.writerGenerationName, nil) }
            leading = properties.isEmpty ? own.leading : properties.encoded + own.leading
            self.own = own
        }

        /// The five frames of the KVSET numbered `count`: the same bytes as
        /// `CloneMessage.kvset(record).frames` with `wseq=<agent>:<count>` (and `wgen`) set.
        func frames(key: [UInt8], uuid: [UInt8], value: [UInt8], count: UInt64) -> [Frame] {
            var properties: [UInt8] = []
            properties.reserveCapacity(leading.count + own.writeSequencePrefix.count + 21 + own.trailing.count)
            properties.append(contentsOf: leading)
            properties.append(contentsOf: own.writeSequencePrefix)
            let digitsStart = properties.count
            var rest = count
            repeat {
                properties.append(UInt8(ascii: "0") + UInt8(rest % 10))
                rest /= 10
            } while rest > 0
            properties[digitsStart...].reverse()
            properties.append(UInt8(ascii: "\n"))
            properties.append(contentsOf: own.trailing)
            return [key, KVSetLines.zeroSequence, uuid, properties, value]
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
