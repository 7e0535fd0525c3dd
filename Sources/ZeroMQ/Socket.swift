import CZeroMQ
import Glibc

/// One ZeroMQ message part.
public typealias Frame = [UInt8]

/// A ZeroMQ socket. Not thread-safe, like the libzmq socket it owns: it belongs to the
/// thread (or loop) that uses it, and other code reaches it through a queue or an
/// inproc pipe. It is closed when released.
public final class ZMQSocket {
    private let socketHandle: UnsafeMutableRawPointer
    /// The libzmq socket. Almost every libzmq call on a socket first takes in the commands its
    /// I/O thread queued for it (among them "a peer's pipe has messages again"), and a command
    /// taken in that way no longer wakes the socket's `ZMQ_FD`. So every use through this
    /// property makes `drained` false: `ZMQPoller` must ask the socket itself again.
    var handle: UnsafeMutableRawPointer {
        drained = false
        return socketHandle
    }
    /// The last thing done on this socket was a receive that found nothing, or a readiness check
    /// that found nothing to read. Both took in every pending command, so until something else
    /// is done on it, only a new command can give it a message, and that command wakes its
    /// `ZMQ_FD`: `ZMQPoller` can wait on the descriptor without asking libzmq first.
    var drained = false

    /// False when the last thing done on the socket was a receive or a readiness check that found
    /// nothing to read (`drained`): a receive that does not wait can then only fail until a
    /// poll says otherwise. True otherwise, when one may find a message without polling first.
    public var mayHaveMessage: Bool { !drained }

    /// Whether a message waits to be read, asked of libzmq (`ZMQ_EVENTS`, which takes in the
    /// pending commands); when none does, the socket is `drained` again, so its descriptor wakes
    /// a poll at the next message. True when the ask was interrupted: look again then.
    public func hasMessage() throws(ZMQError) -> Bool {
        guard let events = try pendingEvents() else { return true }
        return events & Int16(ZMQ_POLLIN) != 0
    }
    public let type: SocketType
    /// Keeps the context alive while the socket is open, so the context's
    /// termination never waits on a forgotten socket.
    public let context: ZMQContext
    /// Connected to a network endpoint: what it receives is lost while `IncomingPartition` is cut.
    var facesNetwork = false
    /// The last frame received had more parts after it.
    var midMessage = false
    /// Short frames received lately (protocol headers, commands, peer ids, service names): one
    /// that arrives again is handed out as the same array instead of a new allocation.
    private var recentShortFrames = ShortFrameCache()
    /// Room for the parts of one message `receiveParts` reads in place, made on first use: a slot
    /// for each part kept and, last, the spare. A slot is made a message when first used, so a
    /// reader that allows many parts and gets few touches the memory of few.
    var partSlots: UnsafeMutablePointer<zmq_msg_t>?
    var partBytes: UnsafeMutablePointer<UnsafeRawBufferPointer>?
    var partSlotCount = 0
    /// How many slots from the first are messages (`zmq_msg_init`); the spare always is.
    var partSlotsReady = 0

    /// Creates a socket with `ZMQ_LINGER` set, so closing it never hangs shutdown.
    public init(context: ZMQContext, type: SocketType, linger: Duration = .milliseconds(100)) throws(ZMQError) {
        guard let handle = zmq_socket(context.handle, type.rawValue) else {
            throw ZMQError.last("zmq_socket(\(type))")
        }
        self.socketHandle = handle
        self.type = type
        self.context = context
        do {
            try setOption(ZMQ_LINGER, Int32(linger.milliseconds), "ZMQ_LINGER")
        } catch {
            zmq_close(handle)
            throw error
        }
    }

    deinit {
        zmq_close(handle)
        releasePartSlots()
    }

    public func bind(_ endpoint: String) throws(ZMQError) {
        guard zmq_bind(handle, endpoint) == 0 else { throw ZMQError.last("zmq_bind(\(endpoint))") }
    }

    public func connect(_ endpoint: String) throws(ZMQError) {
        guard zmq_connect(handle, endpoint) == 0 else { throw ZMQError.last("zmq_connect(\(endpoint))") }
        if !endpoint.hasPrefix("inproc://") { facesNetwork = true }
    }

    public func unbind(_ endpoint: String) throws(ZMQError) {
        guard zmq_unbind(handle, endpoint) == 0 else { throw ZMQError.last("zmq_unbind(\(endpoint))") }
    }

    public func disconnect(_ endpoint: String) throws(ZMQError) {
        guard zmq_disconnect(handle, endpoint) == 0 else { throw ZMQError.last("zmq_disconnect(\(endpoint))") }
    }

    // MARK: Sending

    /// Sends one frame. Returns false when `dontWait` is set and the socket cannot take it now.
    @discardableResult
    public func send(_ frame: Frame, more: Bool = false, dontWait: Bool = false) throws(ZMQError) -> Bool {
        let flags = (more ? ZMQ_SNDMORE : 0) | (dontWait ? ZMQ_DONTWAIT : 0)
        while true {
            let result = frame.withUnsafeBytes { zmq_send(handle, $0.baseAddress, $0.count, flags) }
            if result >= 0 { return true }
            let code = zmq_errno()
            if code == EINTR { continue }
            if code == EAGAIN { return false }
            throw ZMQError(code: ZMQErrorCode(rawValue: code), operation: "zmq_send")
        }
    }

    /// Sends one frame from bytes the caller keeps (libzmq copies them). Returns false when
    /// `dontWait` is set and the socket cannot take it now.
    @discardableResult
    public func send(bytes: UnsafeRawBufferPointer, more: Bool = false, dontWait: Bool = false) throws(ZMQError) -> Bool {
        let flags = (more ? ZMQ_SNDMORE : 0) | (dontWait ? ZMQ_DONTWAIT : 0)
        while true {
            if zmq_send(handle, bytes.baseAddress, bytes.count, flags) >= 0 { return true }
            let code = zmq_errno()
            if code == EINTR { continue }
            if code == EAGAIN { return false }
            throw ZMQError(code: ZMQErrorCode(rawValue: code), operation: "zmq_send")
        }
    }

    /// Sends the frames as one multipart message. libzmq delivers all parts or none;
    /// with `dontWait`, returns false when the first part could not be queued.
    @discardableResult
    public func send(_ frames: [Frame], dontWait: Bool = false) throws(ZMQError) -> Bool {
        precondition(!frames.isEmpty, "a ZeroMQ message has at least one frame")
        let last = frames.count - 1
        for index in 0...last {
            // Only the first part can hit the high-water mark; later parts follow it.
            let accepted = try send(frames[index], more: index < last, dontWait: dontWait && index == 0)
            if !accepted { return false }
        }
        return true
    }

    /// Sends `prefix` frames followed by `frames` as one message, without building a joined array.
    @discardableResult
    public func send(prefix: [Frame], _ frames: [Frame], dontWait: Bool = false) throws(ZMQError) -> Bool {
        let total = prefix.count + frames.count
        precondition(total > 0, "a ZeroMQ message has at least one frame")
        var index = 0
        for frame in prefix {
            let accepted = try send(frame, more: index < total - 1, dontWait: dontWait && index == 0)
            if !accepted { return false }
            index += 1
        }
        for frame in frames {
            let accepted = try send(frame, more: index < total - 1, dontWait: dontWait && index == 0)
            if !accepted { return false }
            index += 1
        }
        return true
    }

    public func send(_ text: String, more: Bool = false, dontWait: Bool = false) throws(ZMQError) {
        try send(Array(text.utf8), more: more, dontWait: dontWait)
    }

    // MARK: Receiving

    /// Receives one frame and whether more parts of the same message follow.
    /// Returns nil when `dontWait` is set and nothing is waiting (or a receive timeout passed).
    public func receiveFrame(dontWait: Bool = false) throws(ZMQError) -> (frame: Frame, more: Bool)? {
        guard let received = try receiveFrame(dontWait: dontWait, readUserID: false) else { return nil }
        return (received.frame, received.more)
    }

    /// Receives one frame and, when `readUserID` is set, the User-Id the ZAP handler gave its
    /// connection (nil without a ZAP handler); with `readProperty`, that ZMTP metadata property
    /// of the connection (one its peer set with `setMetadata`), nil when it has none.
    public func receiveFrame(
        dontWait: Bool, readUserID: Bool, readProperty: String? = nil
    ) throws(ZMQError) -> (frame: Frame, more: Bool, userID: String?, property: String?)? {
        while true {
            guard let received = try receiveOneFrame(dontWait: dontWait, readUserID: readUserID, readProperty: readProperty) else {
                return nil
            }
            let starts = !midMessage
            midMessage = received.more
            // A whole message that arrives while the process is cut off from the network is lost.
            if starts, facesNetwork, IncomingPartition.mayBeCut, IncomingPartition.isCut {
                var more = received.more
                while more, let rest = try receiveOneFrame(dontWait: false, readUserID: false, readProperty: nil) { more = rest.more }
                midMessage = false
                IncomingPartition.countDiscarded()
                continue
            }
            return received
        }
    }

    private func receiveOneFrame(
        dontWait: Bool, readUserID: Bool, readProperty: String?
    ) throws(ZMQError) -> (frame: Frame, more: Bool, userID: String?, property: String?)? {
        var message = zmq_msg_t()
        zmq_msg_init(&message)
        defer { zmq_msg_close(&message) }
        let flags = dontWait ? ZMQ_DONTWAIT : 0
        guard try retryingInterrupts("zmq_msg_recv", { zmq_msg_recv(&message, handle, flags) }) != nil else {
            // Nothing to read: libzmq took in every pending command before saying so.
            drained = true
            return nil
        }
        var userID: String?
        if readUserID, let text = zmq_msg_gets(&message, "User-Id") { userID = String(cString: text) }
        var property: String?
        if let readProperty, let text = zmq_msg_gets(&message, readProperty) { property = String(cString: text) }
        let size = zmq_msg_size(&message)
        let frame: Frame
        if size == 0 {
            frame = []
        } else {
            let bytes = UnsafeRawBufferPointer(start: zmq_msg_data(&message)!, count: size)
            frame = recentShortFrames.frame(for: bytes)
        }
        return (frame, zmq_msg_more(&message) != 0, userID, property)
    }

    /// `bytes` (a part of a message being read with `receiveParts`) as a frame: the same array as
    /// the last time these bytes came, when they are short and came lately (a peer's routing id, a
    /// service name), else a new one. What `receiveMessage` makes of each part.
    public func frame(of bytes: UnsafeRawBufferPointer) -> Frame {
        bytes.isEmpty ? [] : recentShortFrames.frame(for: bytes)
    }

    /// Every part of a message being read with `receiveParts`, as `receiveMessage` has them.
    public func frames(of parts: ReceivedParts) -> [Frame] {
        var frames: [Frame] = []
        frames.reserveCapacity(parts.count)
        for index in 0..<parts.count { frames.append(frame(of: parts[index])) }
        return frames
    }

    /// Receives a whole multipart message. Returns nil when `dontWait` is set and
    /// nothing is waiting. Once the first part has arrived the rest are already queued.
    public func receiveMessage(dontWait: Bool = false) throws(ZMQError) -> [Frame]? {
        guard let first = try receiveFrame(dontWait: dontWait) else { return nil }
        var more = first.more
        // MDP and CHP messages have up to about seven frames: the array is made with room for
        // them (one allocation; `[first]` then reserving would be two).
        var frames: [Frame] = []
        frames.reserveCapacity(more ? 8 : 1)
        frames.append(first.frame)
        while more {
            guard let next = try receiveFrame() else { break }
            frames.append(next.frame)
            more = next.more
        }
        return frames
    }

    /// Receives a whole message but keeps at most `maxFrames` parts and `maxBytes` bytes;
    /// the rest of an oversize message is drained and discarded so the socket stays in step.
    /// With `readUserID`, the message's `userID` is the User-Id the ZAP handler gave its connection;
    /// with `readProperty`, `property` is that metadata property of the connection.
    public func receiveMessage(
        dontWait: Bool = false, maxFrames: Int, maxBytes: Int, readUserID: Bool = false, readProperty: String? = nil
    ) throws(ZMQError) -> ReceivedMessage? {
        guard let first = try receiveFrame(dontWait: dontWait, readUserID: readUserID, readProperty: readProperty) else { return nil }
        var more = first.more
        var frames: [Frame] = []
        frames.reserveCapacity(more ? 8 : 1)
        frames.append(first.frame)
        var bytes = first.frame.count
        var truncated = bytes > maxBytes
        // A ROUTER makes the routing-id frame itself; the User-Id is on the frames the peer sent.
        var userID = first.userID
        var property = first.property
        while more {
            let wanted = property == nil ? readProperty : nil
            guard let next = try receiveFrame(dontWait: false, readUserID: readUserID && userID == nil, readProperty: wanted) else { break }
            if userID == nil { userID = next.userID }
            if property == nil { property = next.property }
            more = next.more
            bytes += next.frame.count
            if truncated || frames.count >= maxFrames || bytes > maxBytes {
                truncated = true
                continue
            }
            frames.append(next.frame)
        }
        return ReceivedMessage(frames: frames, totalBytes: bytes, truncated: truncated, userID: userID, property: property)
    }
}

/// The last few short frames a socket received, so that the ones every message repeats (an MDP
/// header, a command byte, a peer's routing id, a service name) are not allocated again each
/// time. Eight slots replaced in CLOCK order: a frame met again since the hand last passed keeps
/// its slot, so one-off frames (sequence numbers, write ids) do not push the repeated ones out.
/// A socket whose short frames seldom repeat (a Clone subscriber's keys, sequences and UUIDs)
/// would pay a search for nothing on each: when fewer than one in eight of a window's lookups
/// found their frame, the cache stands aside for a while, then looks again.
struct ShortFrameCache {
    static let longest = 32
    static let slots = 8
    /// Lookups judged together, and how many frames pass by the cache after a poor window.
    static let window = 256
    static let pause = 4_096
    private var frames: [Frame] = []
    private var used: [Bool] = []
    private var hand = 0
    private var lookups = 0
    private var hits = 0
    private var passing = 0

    /// Whether frames currently pass by the cache (it found too few of them lately).
    var isStandingAside: Bool { passing > 0 }

    /// `bytes` as a frame: a kept one with the same bytes, or a new one (kept when short).
    mutating func frame(for bytes: UnsafeRawBufferPointer) -> Frame {
        guard bytes.count <= Self.longest else { return Frame(bytes) }
        if passing > 0 {
            passing -= 1
            return Frame(bytes)
        }
        lookups += 1
        if lookups == Self.window {
            if hits * 8 < lookups { passing = Self.pause }
            lookups = 0
            hits = 0
        }
        for index in frames.indices where frames[index].count == bytes.count {
            let same = frames[index].withUnsafeBytes { memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 }
            if same {
                used[index] = true
                hits += 1
                return frames[index]
            }
        }
        let frame = Frame(bytes)
        if frames.count < Self.slots {
            frames.append(frame)
            used.append(false)
            return frame
        }
        while used[hand] {
            used[hand] = false
            hand = (hand + 1) % Self.slots
        }
        frames[hand] = frame
        hand = (hand + 1) % Self.slots
        return frame
    }
}

/// A received message with what was cut off: `truncated` means the frames are only a prefix.
public struct ReceivedMessage: Sendable {
    public var frames: [Frame]
    public var totalBytes: Int
    public var truncated: Bool
    /// The User-Id of the sender's connection, when asked for and a ZAP handler gave one.
    public var userID: String?
    /// The metadata property asked for (`readProperty`), when the sender's connection carries it.
    public var property: String?

    public init(frames: [Frame], totalBytes: Int, truncated: Bool, userID: String? = nil, property: String? = nil) {
        self.frames = frames
        self.totalBytes = totalBytes
        self.truncated = truncated
        self.userID = userID
        self.property = property
    }
}

// Sockets are not thread-safe; the type system keeps one from crossing threads by accident.
@available(*, unavailable)
extension ZMQSocket: Sendable {}

extension Duration {
    /// Whole milliseconds, rounded down, as libzmq's options and zmq_poll expect.
    public var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}

extension Frame {
    /// The frame as UTF-8 text, or nil when it is not valid UTF-8.
    public var utf8String: String? { String(validating: self, as: UTF8.self) }
}
