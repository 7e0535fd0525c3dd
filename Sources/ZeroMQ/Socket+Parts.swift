import CZeroMQ
import Glibc

/// The parts of one message where libzmq holds them, for a reader that decodes them in place
/// (`ZMQSocket.receiveParts`): no array is made for a part the reader does not keep. A collection
/// of the parts' bytes, so that code written for a message's frames reads them as well.
public struct ReceivedParts: RandomAccessCollection {
    /// The parts kept: at most the `maxParts` asked for.
    public let count: Int
    /// The size of the whole message, every part counted.
    public let totalBytes: Int
    /// More parts or bytes came than were asked for; those past the limit were let go.
    public let truncated: Bool
    /// The User-Id the ZAP handler gave the sender's connection, when asked for (`readUserID`).
    public let userID: String?
    /// Each kept part's bytes, looked up once from libzmq.
    @usableFromInline let bytes: UnsafeMutablePointer<UnsafeRawBufferPointer>
    /// The kept parts' messages, which `ZMQSocket.forward` hands on without a copy.
    let messages: UnsafeMutablePointer<zmq_msg_t>

    public var startIndex: Int { 0 }
    public var endIndex: Int { count }

    /// Part `index`'s bytes, valid only while the reader runs.
    @inlinable public subscript(index: Int) -> UnsafeRawBufferPointer {
        precondition(index >= 0 && index < count, "part of a message past its last")
        return bytes[index]
    }

    /// The parts copied into frames, for a reader that keeps them or hands them on.
    public var frames: [Frame] { frames(0..<count) }

    /// Parts `range` copied into frames, after `first` and before `last` when given (one array,
    /// made at its size): a request's or reply's body, or what a broker keeps of a request.
    public func frames(_ range: Range<Int>, first: Frame? = nil, last: Frame? = nil) -> [Frame] {
        var frames: [Frame] = []
        frames.reserveCapacity(range.count + (first == nil ? 0 : 1) + (last == nil ? 0 : 1))
        if let first { frames.append(first) }
        for index in range { frames.append(self[index].isEmpty ? [] : Array(self[index])) }
        if let last { frames.append(last) }
        return frames
    }
}

extension ZMQSocket {
    /// Parts up to this size stay in their slot after they are read, until the slot's next part.
    static let partKeptBytes = 64 * 1024

    /// Closes the messages the slots hold and frees them (on another `maxParts`, and in deinit).
    func releasePartSlots() {
        if let slots = partSlots {
            for index in 0..<partSlotsReady { zmq_msg_close(slots + index) }
            zmq_msg_close(slots + partSlotCount - 1)
            slots.deallocate()
        }
        partBytes?.deallocate()
        partSlots = nil
        partBytes = nil
        partSlotCount = 0
        partSlotsReady = 0
    }

    /// Receives a whole message and hands its parts to `read` where libzmq holds them; returns
    /// false when `dontWait` is set and nothing is waiting. Keeps at most `maxParts` parts and
    /// `maxBytes` bytes, as `receiveMessage(maxFrames:maxBytes:)` does: the rest of an oversize
    /// message is let go and the parts say `truncated`. A message that comes while the process is
    /// cut off from the network (`IncomingPartition`) is lost, as there.
    ///
    /// For a reader of many small messages (a Clone subscriber or the Clone server's collector:
    /// five parts an update): receiving frames made an array of each part, and a list of them,
    /// for bytes most of which are read once. With `readUserID`, the parts carry the User-Id of
    /// the sender's connection. Not generic over what `read` makes: a reader keeps what it needs
    /// in its own variables, and the loop, called from another module, stores no result through
    /// the runtime's generic witnesses (some 50 instructions a message).
    public func receiveParts(
        dontWait: Bool = false, maxParts: Int, maxBytes: Int, readUserID: Bool = false, _ read: (ReceivedParts) -> Void
    ) throws(ZMQError) -> Bool {
        precondition(maxParts > 0, "a message has at least one part")
        if partSlotCount != maxParts + 1 {
            releasePartSlots()
            partSlots = .allocate(capacity: maxParts + 1)
            partBytes = .allocate(capacity: maxParts)
            partSlotCount = maxParts + 1
            zmq_msg_init(partSlots! + maxParts)
        }
        let slots = partSlots!
        let bytes = partBytes!
        // The part that arrives past `maxParts` or `maxBytes` goes here and is let go at once.
        let spare = slots + maxParts
        // The slots stay initialized from one message to the next: zmq_msg_recv lets go of what a
        // slot held before it fills it (and leaves it empty when nothing came), so a part costs
        // no zmq_msg_init and zmq_msg_close of its own. A large part is let go once read, so an
        // idle socket does not keep it.
        while true {
            var kept = 0
            var total = 0
            defer {
                // No part of a message that size can be: the common case looks at none.
                if total > Self.partKeptBytes {
                    for index in 0..<kept where bytes[index].count > Self.partKeptBytes {
                        zmq_msg_close(slots + index)
                        zmq_msg_init(slots + index)
                    }
                }
            }
            var truncated = false
            var userID: String?
            // Each part is one call into libzmq and a few register moves: the socket, the flags
            // and the next slot are worked out once a part (a reader of five-part updates pays
            // this loop for every update).
            let socket = handle
            var flags = dontWait ? ZMQ_DONTWAIT : 0
            var slot = slots
            while true {
                // A slot first used becomes a message; the slots before it already are.
                if slot != spare, kept == partSlotsReady {
                    zmq_msg_init(slot)
                    partSlotsReady &+= 1
                }
                // On an error the slot is still a valid message: libzmq either did not touch it or
                // left it empty.
                let received = zmq_msg_recv(slot, socket, flags)
                if received < 0 {
                    let code = zmq_errno()
                    if code == EINTR { continue }
                    if code == EAGAIN {
                        // Only the first part can be missing: the rest of a message arrives with
                        // it. libzmq took in every pending command before saying there was nothing.
                        drained = true
                        return false
                    }
                    throw ZMQError(code: ZMQErrorCode(rawValue: code), operation: "zmq_msg_recv")
                }
                flags = 0
                if readUserID, userID == nil, let text = zmq_msg_gets(slot, "User-Id") { userID = String(cString: text) }
                let more = zmq_msg_more(slot) != 0
                // zmq_msg_recv returns the part's size.
                let size = Int(received)
                total &+= size
                if slot == spare || total > maxBytes {
                    truncated = true
                    zmq_msg_close(slot)
                    zmq_msg_init(slot)
                } else {
                    bytes[kept] = size == 0 ? UnsafeRawBufferPointer(start: nil, count: 0) : UnsafeRawBufferPointer(start: zmq_msg_data(slot), count: size)
                    kept &+= 1
                }
                guard more else { break }
                slot = truncated || kept == maxParts ? spare : slots + kept
            }
            midMessage = false
            if facesNetwork, IncomingPartition.mayBeCut, IncomingPartition.isCut {
                IncomingPartition.countDiscarded()
                continue
            }
            read(ReceivedParts(count: kept, totalBytes: total, truncated: truncated, userID: userID, bytes: bytes, messages: slots))
            return true
        }
    }
}

extension ZMQSocket {
    /// `receiveParts` for a reader that makes one value of the parts: what `read` returned, or
    /// nil when `dontWait` is set and nothing is waiting.
    public func receiveParts<Result>(
        dontWait: Bool = false, maxParts: Int, maxBytes: Int, readUserID: Bool = false, _ read: (ReceivedParts) -> Result
    ) throws(ZMQError) -> Result? {
        var result: Result?
        guard try receiveParts(dontWait: dontWait, maxParts: maxParts, maxBytes: maxBytes, readUserID: readUserID, { result = read($0) }) else {
            return nil
        }
        return result
    }
}

extension ZMQSocket {
    /// Sends part `index` of a message being read (`receiveParts`) as one frame of a message on
    /// this socket, handing libzmq its buffer as it is: no copy, no allocation (a proxy's move).
    /// Once sent the part is gone: `parts[index]` must not be read again. Returns false, the
    /// part kept, when `dontWait` is set and the socket cannot take it now.
    public func forward(_ parts: ReceivedParts, part index: Int, more: Bool = false, dontWait: Bool = false) throws(ZMQError) -> Bool {
        precondition(index >= 0 && index < parts.count, "part of a message past its last")
        let flags = (more ? ZMQ_SNDMORE : 0) | (dontWait ? ZMQ_DONTWAIT : 0)
        guard try retryingInterrupts("zmq_msg_send", { zmq_msg_send(parts.messages + index, handle, flags) }) != nil else { return false }
        parts.bytes[index] = UnsafeRawBufferPointer(start: nil, count: 0)
        return true
    }
}
