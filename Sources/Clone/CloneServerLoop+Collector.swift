import Glibc
import Foundation
import Logging
import MessagePath
import WireCheck
import ZeroMQ

extension CloneServerLoop {
    private static let collectorPeer = Array("collector".utf8)

    func drainCollector() throws(ZMQError) {
        var handled = 0
        let access = configuration.access
        let limit = collectorReceiveLimit
        // A KVSET is read where the socket holds it and handled there: arrays are made only for
        // what the store keeps (key, UUID, properties, value), none for the sequence or a list of
        // frames, and the accepted write is not moved out through an enum and copied again.
        var failure: ZMQError?
        while handled < configuration.batchLimit, failure == nil,
              try collector.receiveParts(
                dontWait: true, maxParts: 5, maxBytes: limit, readUserID: access != nil, { (parts: ReceivedParts) -> Void in
                    let key = parts.count > 0 ? parts[0] : UnsafeRawBufferPointer(start: nil, count: 0)
                    if parts.count == 2, !parts.truncated, KVSetBatch.isBatch(key) {
                        // Each write of a batch counts toward the pass's limit, so that a stream of
                        // batches keeps the other sockets waiting no longer than one of KVSETs.
                        do throws(ZMQError) { handled += max(0, try takeBatch(parts) - 1) } catch { failure = error }
                        return
                    }
                    if let access, !access.mayWrite(key, as: PeerClass(userID: parts.userID)) {
                        refuseWrite(key: key, userID: parts.userID)
                        return
                    }
                    if parts.truncated {
                        countBadInput(parts.totalBytes > limit
                            ? .oversize(bytes: parts.totalBytes, limit: limit)
                            : .wrongFrameCount(command: "KVSET", expected: 5, got: 6), peer: Self.collectorPeer, channel: "collector")
                        return
                    }
                    let accepted: AcceptedSet
                    do throws(CloneDecodeError) {
                        accepted = try validate(parts)
                    } catch {
                        countBadInput(error, peer: Self.collectorPeer, channel: "collector")
                        return
                    }
                    do throws(ZMQError) { try deliver(accepted, forwarding: parts, writer: parts.userID) } catch { failure = error }
                }) {
            handled += 1
        }
        if let failure { throw failure }
        try sendAcks()
    }

    /// A KVSETS batch (`KVSetBatch`): each write read, checked, refused or taken as a KVSET would
    /// be, in order. A write that fails its checks is counted and the next one read; a batch cut
    /// short is counted once, the writes before the cut kept. Returns how many writes it read.
    private func takeBatch(_ parts: ReceivedParts) throws(ZMQError) -> Int {
        statistics.batchesReceived += 1
        let access = configuration.access
        var reader = KVSetBatch.Reader(parts[1])
        while true {
            let entry: KVSetBatch.Entry
            do throws(CloneDecodeError) {
                guard let next = try reader.next() else { return reader.count }
                entry = next
            } catch {
                countBadInput(error, peer: Self.collectorPeer, channel: "collector")
                return reader.count
            }
            statistics.batchedWrites += 1
            if let access, !access.mayWrite(entry.key, as: PeerClass(userID: parts.userID)) {
                refuseWrite(key: entry.key, userID: parts.userID)
                continue
            }
            let accepted: AcceptedSet
            do throws(CloneDecodeError) {
                accepted = try validate(key: entry.key, sequence: nil, uuid: entry.uuid, properties: entry.properties, value: entry.value)
            } catch {
                countBadInput(error, peer: Self.collectorPeer, channel: "collector")
                continue
            }
            // Published from what the store keeps: the batch has no frames to hand on.
            try deliver(accepted, forwarding: nil, writer: parts.userID)
        }
    }

    private func refuseWrite(key: UnsafeRawBufferPointer, userID: String?) {
        statistics.writesRefused += 1
        logRefusal("clone collector: refused a write from a peer that is not one of the host's plugins", userID: userID, [
            "flowbus.key": "\(key.printable)",
            "flowbus.hint": "clients change state through intents; only processes the host launched write keys (or start the host with --open)",
        ])
    }

    /// One `ACK/<agent>` message per agent that wrote in this batch, its value the UUIDs confirmed.
    func sendAcks() throws(ZMQError) {
        guard !pendingAcks.isEmpty else { return }
        for (agent, uuids) in pendingAcks {
            if try !sendPublished(Self.ackPrefix + agent.bytes, Self.zeroSequence, [], [], uuids) { statistics.publishBlocked += 1 }
            statistics.acksSent += 1
        }
        pendingAcks.removeAll(keepingCapacity: true)
    }

    private static let ackPrefix = Array(CloneProperties.ackTopicPrefix.utf8)
    private static let zeroSequence: Frame = [0, 0, 0, 0, 0, 0, 0, 0]

    private func acknowledge(_ update: AcceptedSet) {
        guard let agent = update.ackTo, let uuid = update.uuid else { return }
        uuid.withUnsafeBytes { pendingAcks[KeyBytes(agent), default: []].append(contentsOf: $0) }
    }

    /// 12/CHP's KVSET plus Flowbus's rules, without building strings on the hot path.
    private func validate(_ parts: ReceivedParts) throws(CloneDecodeError) -> AcceptedSet {
        guard parts.count == 5 else { throw .wrongFrameCount(command: "KVSET", expected: 5, got: parts.count) }
        return try validate(key: parts[0], sequence: parts[1], uuid: parts[2], properties: parts[3], value: parts[4])
    }

    /// A KVSET's frames, or a batched write's parts (which have no sequence), checked.
    private func validate(
        key: UnsafeRawBufferPointer, sequence: UnsafeRawBufferPointer?, uuid: UnsafeRawBufferPointer,
        properties frame: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer
    ) throws(CloneDecodeError) -> AcceptedSet {
        try CloneKeyRules.validate(key: key)
        if let sequence, sequence.count != 8 { throw .badSequenceLength(sequence.count) }
        guard uuid.isEmpty || uuid.count == 16 else { throw .badUUIDLength(uuid.count) }
        guard value.count <= configuration.maxValueBytes else {
            throw .valueTooLarge(size: value.count, limit: configuration.maxValueBytes)
        }
        var published: [UInt8] = []
        var ttl: Duration?
        var ackTo: [UInt8]?
        var order: WriteOrder?
        var generation: WriterGeneration?
        if !frame.isEmpty {
            // The server's own properties are taken out; subscribers never see them. Read where
            // the socket holds the frame: an array is made only for the lines kept.
            let properties = try KVSetProperties(frame)
            if let agent = KVSetProperties.slice(properties.ackRange, of: frame) {
                // The confirmation is between the writer and the server.
                guard agent.count == 16, agent.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 || $0 >= 0x61 && $0 <= 0x66 }) else {
                    throw .malformedProperties("ack must be the writing agent's id, 16 lowercase hex digits; got '\(Self.text(agent))'")
                }
                ackTo = ackNames.interned(agent)
            }
            if let text = KVSetProperties.slice(properties.writeSequenceRange, of: frame) {
                guard let parsed = WriteOrder(text, names: &writerNames) else {
                    throw .malformedProperties("wseq must be the writing agent's id and its count of writes, as in abc123:17; got '\(Self.text(text))'")
                }
                order = parsed
            }
            if let text = KVSetProperties.slice(properties.writerGenerationRange, of: frame) {
                guard let parsed = WriterGeneration(text, names: &generationNames) else {
                    throw .malformedProperties("wgen must be the writer's name and its incarnation, as in coord-app/0:2; got '\(Self.text(text))'")
                }
                generation = parsed
            }
            if let text = KVSetProperties.slice(properties.ttlRange, of: frame) {
                guard let duration = CloneProperties.ttl(Self.text(text)) else {
                    throw .malformedProperties("ttl must be a positive number of seconds, got '\(Self.text(text))'")
                }
                ttl = duration
            }
            published = properties.published
        }
        return AcceptedSet(
            key: Array(key), uuid: WriteUUID(uuid), properties: published, ttl: ttl,
            value: value.isEmpty ? [] : Array(value), ackTo: ackTo, order: order, generation: generation)
    }

    private static func text(_ bytes: UnsafeRawBufferPointer) -> String { String(decoding: bytes, as: UTF8.self) }

    /// The fault seam: every accepted KVSET passes here before it is sequenced. A dropped update
    /// is never stored nor published, so no subscriber sees it and no sequence number is spent; a
    /// delayed or reordered one is applied when it falls due (`releaseHeld`), a duplicated one
    /// arrives again (and is recognised by its UUID when its writer asked for a confirmation).
    ///
    /// `parts` are the KVSET the write came in: published as they are when nothing changed the
    /// write on the way (its key, UUID and value frames handed on, not copied); nil for a write of
    /// a batch. `writer`: the sender's User-Id (closed mode).
    private func deliver(_ update: AcceptedSet, forwarding parts: ReceivedParts?, writer: String?) throws(ZMQError) {
        guard faults.isArmed else { return try apply(update, forwarding: parts) }
        // The writer's name is read only here, for rules aimed at one plugin, and kept with a
        // write held for later.
        var update = update
        update.writer = writer
        let verdict = faults.verdict(scope: .key, subject: update.key, peer: update.writer)
        if case .drop = verdict {
            statistics.faultDropped += 1
            // Not confirmed: its writer sends it again, as after a real loss.
            return
        }
        statistics.faults.count(verdict)
        switch verdict {
        case .deliver:
            try apply(update, forwarding: parts)
            if !held.isEmpty {
                // The ones it overtook enough go right behind it.
                held.passed()
                for overtaken in held.takeDue(now: .now()) { try apply(overtaken) }
            }
        case .drop:
            break
        case .delay(_, let duration):
            held.hold(update, until: .now() + duration)
        case .reorder(_, let behind):
            held.hold(update, behind: behind, now: .now())
        case .duplicate(_, let copies):
            for _ in 0...copies { try apply(update) }
        case .truncate(_, let bytes):
            var damaged = update
            FaultVerdict.truncate(&damaged.value, bytes: bytes)
            try apply(damaged)
        case .corrupt(_, let bytes, let seed):
            var damaged = update
            FaultVerdict.corrupt(&damaged.value, bytes: bytes, seed: seed)
            try apply(damaged)
        case .stale:
            // After a delete nothing is served: a subscriber could not tell a deleted key's old value.
            let previous = update.value.isEmpty ? nil : store[KeyBytes(update.key)]
            try apply(update)
            if let previous { try publishStale(key: update.key, previous) }
        }
    }

    /// Serves subscribers `previous` again, as a lagging replica would: under a new sequence
    /// number (so no subscriber can tell it by its place) and in its session's chain, while the
    /// map keeps the newer value (a snapshot or the key's next write puts them right). What
    /// protects a client is the writer's own key_version in the value (Protocols §5).
    private func publishStale(key: [UInt8], _ previous: Stored) throws(ZMQError) {
        sequence += 1
        var properties = previous.properties
        if let length = key.withUnsafeBytes({ CloneKeyRules.sessionPrefixLength($0) }) {
            let session = KeyBytes(Array(key[0..<length]))
            let chained = sessions.updateValue(sequence, forKey: session) ?? 0
            properties.append(contentsOf: "\(CloneProperties.sessionPreviousName)=\(chained)\n".utf8)
        }
        // Without a UUID, as a snapshot's entry: the map keeps none.
        if try !sendPublished(key, sequence.bigEndianFrame, [], properties, value(of: previous, key: key)) {
            statistics.publishBlocked += 1
        }
        statistics.updatesPublished += 1
        lastPublished = .now()
    }

    /// Applies the held writes whose time came (or that enough others overtook).
    func releaseHeld(now: MonotonicTime) throws(ZMQError) {
        let due = held.takeDue(now: now)
        guard !due.isEmpty else { return }
        for update in due { try apply(update) }
        try sendAcks()
    }

    /// A write that asks for a confirmation is confirmed once applied; one already applied (sent
    /// again because its confirmation was late) is confirmed again and not applied twice.
    private func apply(_ update: AcceptedSet, forwarding parts: ReceivedParts? = nil) throws(ZMQError) {
        if !update.value.isEmpty, Self.isChecked(update.key, by: checkedPrefixes) {
            let verdict = WireCheck.verify(update.value)
            guard verdict == .intact else {
                // Lost on the way, as far as anyone can tell: not confirmed, so sent again.
                statistics.damagedWrites += 1
                logger.debug("clone collector: a write arrived damaged and was not applied; its writer sends it again", metadata: [
                    "flowbus.key": "\(update.key.printable)", "flowbus.why": "\(verdict)",
                ])
                return
            }
        }
        // `if case .some`, not `!= nil`: tested before and after the throwing `commit`, `!= nil`
        // made Swift keep a copy of the array, copied and destroyed through the runtime's generic
        // witnesses (some 90 instructions each way, every write).
        if case .some = update.ackTo, let uuid = update.uuid {
            if confirmedWrites.contains(uuid) {
                statistics.duplicateWrites += 1
                acknowledge(update)
                return
            }
        }
        // The key's entry, looked up once for the order check, the quota and the store.
        let key = KeyBytes(update.key)
        let slot = store.index(forKey: key)
        if let order = update.order {
            if let newer = slot.flatMap({ readStored($0) { $0.order } }) ?? deletedOrders[key], order.precedes(newer) {
                // Sent before what the key holds, by the same writer: late, not new.
                statistics.staleWritesDropped += 1
                acknowledge(update)
                return
            }
        }
        if let generation = update.generation {
            let newest = writerGenerations[KeyBytes(generation.name)] ?? 0
            if generation.number < newest {
                // From a process a newer incarnation has replaced (which has written since): its
                // late write would put an outdated value back. Confirmed, so a writer still alive
                // (paused, cut off) stops sending it.
                statistics.fencedWrites += 1
                acknowledge(update)
                return
            }
            if generation.number > newest { writerGenerations[KeyBytes(generation.name)] = generation.number }
        }
        if !update.value.isEmpty, let why = quotaRefusal(update, key: key, existingCount: slot.map { readStored($0) { packedValues.valueCount(of: $0) } }) {
            statistics.quotaRefused += 1
            logRefusal("clone collector: a write was refused: \(why)", userID: nil, peer: Self.quotaPeer, [
                "flowbus.key": "\(update.key.printable)",
                "flowbus.hint": "a plugin is writing more than a session needs; delete what it no longer uses, or raise the quota (CloneServerConfiguration)",
            ])
            // Confirmed as handled, so the writer does not send it again and again.
            acknowledge(update)
            return
        }
        try commit(update, forwarding: parts, slot: slot)
        if case .some = update.ackTo, let uuid = update.uuid {
            confirmedWrites.insert(uuid)
            acknowledge(update)
        }
    }

    private static let quotaPeer = Array("quota".utf8)

    /// Whether `key` starts with one of `prefixes`: a function of its own, so that no closure
    /// captures (and copies) the whole write.
    private static func isChecked(_ key: [UInt8], by prefixes: [[UInt8]]) -> Bool {
        prefixes.contains { key.starts(with: $0) }
    }

    /// Reads the entry at `slot` where the map holds it: `store.values[slot]` copies the whole
    /// entry out (retaining its value, properties and writer's name, and releasing them after),
    /// twice a write.
    @inline(__always)
    private func readStored<T>(_ slot: [KeyBytes: Stored].Index, _ read: (borrowing Stored) -> T) -> T {
        Self.borrowing(&store.values[slot], read)
    }

    @inline(__always)
    private static func borrowing<T>(_ stored: inout Stored, _ read: (borrowing Stored) -> T) -> T { read(stored) }

    /// Why `update` would take its session or the map past a quota, or nil; `existingCount` is
    /// the length of the value the map holds under `key`.
    private func quotaRefusal(_ update: AcceptedSet, key: KeyBytes, existingCount: Int?) -> String? {
        let old = existingCount.map { $0 + update.key.count } ?? 0
        let new = update.value.count + update.key.count
        if storeBytes - old + new > configuration.maxStoreBytes {
            return "the map would hold more than \(configuration.maxStoreBytes) bytes"
        }
        guard let session = sessionPrefix(of: update.key) else { return nil }
        if (sessionBytes[session] ?? 0) - old + new > configuration.maxSessionBytes {
            return "session \(session.string) would hold more than \(configuration.maxSessionBytes) bytes"
        }
        if old == 0, index.count(inGroup: session.bytes) >= configuration.maxSessionKeys {
            return "session \(session.string) would hold more than \(configuration.maxSessionKeys) keys"
        }
        return nil
    }

    private func sessionPrefix(of key: [UInt8]) -> KeyBytes? {
        key.withUnsafeBytes { CloneKeyRules.sessionPrefixLength($0) }.map { KeyBytes(Array(key[0..<$0])) }
    }

    /// Keeps the byte counts of the quotas: `delta` more bytes under `key`, in `session` (its
    /// `/s/<id>/` prefix, if it has one).
    private func account(_ delta: Int, session: KeyBytes?) {
        guard delta != 0 else { return }
        storeBytes += delta
        guard let session else { return }
        let total = (sessionBytes[session] ?? 0) + delta
        sessionBytes[session] = total > 0 ? total : nil
    }

    /// Sequences, stores and publishes one change (a delete when the value is empty). With
    /// `parts`, the message it came in as is, its key, UUID and value are sent from there.
    /// `slot` is where the map holds the key, when the caller looked it up (the map unchanged since).
    func commit(_ update: AcceptedSet, forwarding parts: ReceivedParts? = nil, slot: [KeyBytes: Stored].Index? = nil) throws(ZMQError) {
        sequence += 1
        let key = KeyBytes(update.key)
        // One array for the session's prefix, however many tables name it (quota, chain, index).
        let session = sessionPrefix(of: update.key)
        if update.value.isEmpty {
            if let removedCount = packedValues.removeValue(forKey: key, in: &store) {
                index.remove(key)
                account(-(removedCount + update.key.count), session: session)
            }
            if let order = update.order { deletedOrders.remember(order, for: key) }
            statistics.deletesPublished += 1
        } else {
            // A view model writes each state twice, under `/v/` then `/s/`, the same bytes: the
            // second key shares the first one's array.
            var value = update.value
            if sameBytes(value, lastStoredValue) { value = lastStoredValue } else { lastStoredValue = value }
            let stored = Stored(value: value, sequence: sequence, properties: update.properties, order: update.order)
            if let replacedCount = packedValues.store(
                stored, under: key, at: slot, in: &store, after: configuration.packValuesAfter, smallest: deltas.limits.smallestValue
            ) {
                account(update.value.count - replacedCount, session: session)
            } else {
                // Only a key the map does not hold can have a delete remembered.
                deletedOrders.forget(key)
                index.insert(key, group: session)
                account(update.value.count + update.key.count, session: session)
            }
            if let ttl = update.ttl {
                expiries.push(.init(deadline: .now() + ttl, sequence: sequence, key: key))
            }
        }
        journal(update)
        var chained = false
        if let session {
            let previous = sessions.updateValue(sequence, forKey: session) ?? 0
            publishedProperties.removeAll(keepingCapacity: true)
            publishedProperties.append(contentsOf: update.properties)
            publishedProperties.append(contentsOf: CloneProperties.sessionPreviousName.utf8)
            publishedProperties.append(UInt8(ascii: "="))
            withDecimalDigits(previous) { publishedProperties.append(contentsOf: $0) }
            publishedProperties.append(UInt8(ascii: "\n"))
            chained = true
            if let observer = configuration.sessionObserver { observeSessionUpdate(update, previous: previous, observer: observer) }
            // A session with no key left is forgotten (its chain starts again from 0 if it is
            // written again), so closed sessions cost nothing.
            if update.value.isEmpty, index.count(inGroup: session.bytes) == 0 { sessions[session] = nil }
        }
        let properties = chained ? publishedProperties : update.properties
        // The frames are sent by functions of their own, handed only what they send: a closure
        // here would capture the whole write, and Swift copied it field by field (its writer's
        // name through the runtime's generic witnesses) twice a write.
        let sent = if let parts {
            try forwardPublished(parts, properties: properties)
        } else {
            try publish(key: update.key, uuid: update.uuid, properties: properties, value: update.value)
        }
        if !sent {
            statistics.publishBlocked += 1
        }
        statistics.updatesPublished += 1
        lastPublished = .now()
    }

    /// The KVPUB of a write as it came in (`parts`): a proxy's move of its key, UUID and value
    /// frames, the server's sequence and `properties` between them.
    private func forwardPublished(_ parts: ReceivedParts, properties: [UInt8]) throws(ZMQError) -> Bool {
        try withUnsafeBytes(of: sequence.bigEndian) { (number) throws(ZMQError) -> Bool in
            try withBytes(properties) { (properties) throws(ZMQError) -> Bool in
                try sendPublished { (dontWait) throws(ZMQError) -> Bool in
                    guard try publisher.forward(parts, part: 0, more: true, dontWait: dontWait) else { return false }
                    _ = try publisher.send(bytes: number, more: true)
                    _ = try publisher.forward(parts, part: 2, more: true)
                    _ = try publisher.send(bytes: properties, more: true)
                    _ = try publisher.forward(parts, part: 4)
                    return true
                }
            }
        }
    }

    /// The KVPUB of a write the server makes or holds itself: one a fault rule held, duplicated or
    /// damaged, or the delete of a key whose ttl ran out.
    private func publish(key: [UInt8], uuid: WriteUUID?, properties: [UInt8], value: [UInt8]) throws(ZMQError) -> Bool {
        try withUnsafeBytes(of: sequence.bigEndian) { (number) throws(ZMQError) -> Bool in
            try withBytes(properties) { (properties) throws(ZMQError) -> Bool in
                try withBytes(key) { (key) throws(ZMQError) -> Bool in
                    try withBytes(value) { (value) throws(ZMQError) -> Bool in
                        guard let uuid else { return try sendPublished(key, number, Self.noBytes, properties, value) }
                        return try uuid.withUnsafeBytes { (uuid) throws(ZMQError) -> Bool in try sendPublished(key, number, uuid, properties, value) }
                    }
                }
            }
        }
    }

    func expireDue(now: MonotonicTime) throws(ZMQError) {
        while let item = expiries.popDue(now: now) {
            guard let stored = store[item.key], stored.sequence == item.sequence else { continue }
            statistics.ttlExpiries += 1
            try commit(AcceptedSet(key: item.key.bytes, uuid: nil, properties: [], ttl: nil, value: [], expired: true))
        }
    }
}

/// Calls `body` with `number`'s decimal digits as ASCII, made on the stack: the KVSET counts and
/// session chains the agents and the server write for every update.
func withDecimalDigits<R>(_ number: UInt64, _ body: (UnsafeRawBufferPointer) -> R) -> R {
    var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
    return withUnsafeMutableBytes(of: &digits) { digits in
        var start = digits.count
        var rest = number
        repeat {
            start -= 1
            digits[start] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
        } while rest > 0
        return body(UnsafeRawBufferPointer(rebasing: digits[start...]))
    }
}
