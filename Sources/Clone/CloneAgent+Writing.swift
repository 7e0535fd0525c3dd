import MessagePath
import Foundation
import Synchronization
import ZeroMQ

extension CloneAgent {
    /// Sends a KVSET with a fresh UUID; `ttl` asks the server to delete the key after that long.
    /// The write is queued until the collector is reachable; returns the UUID.
    @discardableResult
    public func set(key: String, value: [UInt8], ttl: Duration? = nil, properties: CloneProperties = []) throws(CloneWriteError) -> UUID {
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
        if let confirmation { properties.set(confirmation.name, confirmation.value) }
        let uuid = writeIDs.next()
        let agent = writeIDs.agentID
        // Numbered in the order they are queued, which is the order they are sent.
        try enqueue { sequence in
            var numbered = properties
            numbered.set(CloneProperties.writeSequenceName, "\(agent):\(sequence)")
            if let generation { numbered.set(CloneProperties.writerGenerationName, generation) }
            return CloneMessage.kvset(CloneRecord(key: key, uuid: uuid, properties: numbered, value: value)).frames
        }
        return uuid
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

    private func enqueue(_ frames: (UInt64) -> [Frame]) throws(CloneWriteError) {
        let limit = maxHeldWrites
        let outcome: Result<Bool, CloneWriteError> = shared.outbox.withLock { outbox in
            guard outbox.open else { return .failure(.stopped) }
            let waiting = outbox.frames.count + outbox.held
            guard waiting < limit else { return .failure(.backlogFull(held: waiting)) }
            outbox.written += 1
            outbox.frames.append(frames(outbox.written))
            return .success(outbox.frames.count == 1)
        }
        // Only the first write into an empty outbox wakes the thread: it takes the whole outbox.
        if try outcome.get() { shared.wake.wake() }
    }

    static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        if attoseconds == 0 { return String(seconds) }
        return String(Double(seconds) + Double(attoseconds) * 1e-18)
    }
}
