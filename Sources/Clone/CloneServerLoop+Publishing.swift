import Glibc
import MessagePath
import ZeroMQ

extension CloneServerLoop {
    /// Sends one five-frame message on the publisher. XPUB_NODROP turns a full subscriber queue
    /// into EAGAIN. A queue that is only briefly behind gets a short grace to drain; one that stays
    /// full (no grace again for `lossyGrace` after a drop) makes the message go out once more without
    /// NODROP, so every other subscriber still gets it and only the slow one sees a gap.
    /// Returns false when that happened.
    func sendPublished(_ f0: Frame, _ f1: Frame, _ f2: Frame, _ f3: Frame, _ f4: Frame) throws(ZMQError) -> Bool {
        try withBytes(f0) { (b0) throws(ZMQError) -> Bool in
            try withBytes(f1) { (b1) throws(ZMQError) -> Bool in
                try withBytes(f2) { (b2) throws(ZMQError) -> Bool in
                    try withBytes(f3) { (b3) throws(ZMQError) -> Bool in
                        try withBytes(f4) { (b4) throws(ZMQError) -> Bool in try sendPublished(b0, b1, b2, b3, b4) }
                    }
                }
            }
        }
    }

    /// The same from bytes the caller holds (libzmq copies them): no array per frame.
    func sendPublished(
        _ f0: UnsafeRawBufferPointer, _ f1: UnsafeRawBufferPointer, _ f2: UnsafeRawBufferPointer,
        _ f3: UnsafeRawBufferPointer, _ f4: UnsafeRawBufferPointer
    ) throws(ZMQError) -> Bool {
        try sendPublished { (dontWait) throws(ZMQError) -> Bool in try sendOnce(f0, f1, f2, f3, f4, dontWait: dontWait) }
    }

    /// The grace and the lossy fallback around `sendOnce`, which sends one whole message or, with
    /// `dontWait`, returns false when the first frame could not be queued.
    func sendPublished(_ sendOnce: (_ dontWait: Bool) throws(ZMQError) -> Bool) throws(ZMQError) -> Bool {
        if try sendOnce(true) { return true }
        let now = MonotonicTime.now()
        if lastLossySend + Self.lossyGrace <= now {
            let giveUp = now + Self.queueGrace
            while MonotonicTime.now() < giveUp {
                usleep(50)
                if try sendOnce(true) { return true }
            }
        }
        lastLossySend = .now()
        try publisher.setXPubNoDrop(false)
        defer { try? publisher.setXPubNoDrop(true) }
        _ = try sendOnce(false)
        return false
    }

    static var noBytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: nil, count: 0) }
    private static let queueGrace = Duration.milliseconds(2)
    private static let lossyGrace = Duration.milliseconds(100)

    private func sendOnce(
        _ f0: UnsafeRawBufferPointer, _ f1: UnsafeRawBufferPointer, _ f2: UnsafeRawBufferPointer,
        _ f3: UnsafeRawBufferPointer, _ f4: UnsafeRawBufferPointer, dontWait: Bool
    ) throws(ZMQError) -> Bool {
        guard try publisher.send(bytes: f0, more: true, dontWait: dontWait) else { return false }
        _ = try publisher.send(bytes: f1, more: true)
        _ = try publisher.send(bytes: f2, more: true)
        _ = try publisher.send(bytes: f3, more: true)
        _ = try publisher.send(bytes: f4)
        return true
    }
}

/// `array.withUnsafeBytes` for a body with a typed error (the array's own rethrows it as any
/// error): a frame sent, or a frame read, from where its bytes lie.
@inline(__always)
func withBytes<R, E: Error>(_ array: [UInt8], _ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
    let result: Result<R, E> = array.withUnsafeBytes { bytes in
        do throws(E) { return .success(try body(bytes)) } catch { return .failure(error) }
    }
    return try result.get()
}
