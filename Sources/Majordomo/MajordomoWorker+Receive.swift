import Foundation
import Logging
import MessagePath
import ZeroMQ

extension MajordomoWorker {
    /// Waits up to `timeout` (nil: forever) for the next request, keeping heartbeats and
    /// reconnection going meanwhile. Every request must be answered with `reply(to:body:)`; with
    /// the default credit of 1 the broker sends this worker the next request only after that reply,
    /// with a credit of N it keeps up to N in flight (`WorkerConfiguration.credit`).
    public func receive(timeout: Duration?) throws(MajordomoWorkerError) -> MajordomoRequest? {
        try receive(deadline: timeout.map { MonotonicTime.now() + $0 })
    }

    /// The same until `deadline` (nil: forever).
    func receive(deadline: MonotonicTime?) throws(MajordomoWorkerError) -> MajordomoRequest? {
        while true {
            var now = MonotonicTime.now()
            if let reconnectAt {
                if now >= reconnectAt {
                    do { try connect() } catch { throw .transport(error, endpoint: endpoint) }
                    continue
                }
                let wake = deadline.map { min($0, reconnectAt) } ?? reconnectAt
                if let deadline, now >= deadline { return nil }
                Thread.sleep(forTimeInterval: wake.since(now).seconds)
                continue
            }
            do {
                // A request already on the socket (a worker with credit gets them in batches) is
                // taken without a poll: the poll would find it ready and still make a system call
                // for the other descriptors, and a waiting request is handed out before the wake
                // signal or the heartbeat are looked at in any case (below).
                if socket?.mayHaveMessage == true, let request = try nextWaitingRequest(now: now) { return request }
                // A DISCONNECT among what it read dropped the socket: reconnect after the backoff,
                // above, rather than wait out a poll with nothing in it.
                if reconnectAt != nil { continue }
                var wait = now.nanoseconds(until: nextHeartbeat)
                if let deadline { wait = min(wait, now.nanoseconds(until: deadline)) }
                // A zero wait still makes one pass: `receive(timeout: .zero)` is a non-blocking check.
                try poller.poll(timeoutNanoseconds: wait)
                now = .now()
                if let request = try nextWaitingRequest(now: now) { return request }
                if let wakeIndex, let wake, poller.isReadable(wakeIndex) {
                    wake.drain()
                    keepAlive(now: now)
                    return nil
                }
            } catch {
                if error.code == .terminated { throw .transport(error, endpoint: endpoint) }
                logger.warning("worker receive failed", metadata: ["flowbus.service": "\(service)", "flowbus.error": "\(error)"])
            }
            keepAlive(now: now)
            if let deadline, MonotonicTime.now() >= deadline { return nil }
        }
    }

    /// The first request already queued on the socket, handling heartbeats and DISCONNECTs before it.
    /// Each message is read where libzmq holds it: only a request's client address and body become arrays.
    func nextWaitingRequest(now: MonotonicTime) throws(ZMQError) -> MajordomoRequest? {
        while let socket {
            var request: MajordomoRequest?
            guard try socket.receiveParts(dontWait: true, maxParts: Self.maxParts, maxBytes: .max, { parts in
                request = handle(parts, from: socket, now: now)
            }) else { return nil }
            if let request { return request }
        }
        return nil
    }

    /// The most frames a message from the broker may have (a broker passes at most
    /// `BrokerConfiguration.maxFramesPerMessage`, 256 unless set otherwise, to a worker).
    static let maxParts = 1024

    /// Heartbeats the broker when due; starts over when the broker has been silent too long.
    func keepAlive(now: MonotonicTime) {
        guard reconnectAt == nil else { return }
        if lastHeard.nanoseconds(until: now) >= brokerSilenceNanoseconds {
            scheduleReconnect("no word from the broker for \(brokerSilence)", now: now)
        } else if now >= nextHeartbeat {
            send(heartbeatFrames, now: now)
        }
    }

    /// Returns the request in `parts`, if any; takes care of HEARTBEAT, DISCONNECT and bad input.
    private func handle(_ parts: ReceivedParts, from socket: ZMQSocket, now: MonotonicTime) -> MajordomoRequest? {
        let layout: MDPLayout
        do {
            guard !parts.truncated else { throw MDPDecodeError.extraFrames(command: "message from the broker", frames: parts.count, expected: Self.maxParts) }
            layout = try MDPLayout.parse(parts, from: 0)
        } catch {
            invalidMessages += 1
            logger.debug("worker dropped an invalid message from the broker", metadata: ["flowbus.detail": "\(error)"])
            return nil
        }
        switch layout.kind {
        case .worker(.request):
            lastHeard = now
            backoff = configuration.reconnectInitial
            holding += 1
            return MajordomoRequest(service: service, client: socket.frame(of: parts[layout.subject]), parts: parts, bodyStart: layout.bodyStart)
        case .worker(.heartbeat):
            lastHeard = now
            backoff = configuration.reconnectInitial
            // Our own heartbeat falls due within half an interval: send it now, in this wake-up,
            // rather than wake again for it. The broker then hears from its idle workers in one
            // burst after its own heartbeats (it sends them together), not one wake-up each.
            if now.nanoseconds(until: nextHeartbeat) < heartbeatNanoseconds / 2 { send(heartbeatFrames, now: now) }
        case .worker(.disconnect):
            scheduleReconnect("the broker sent DISCONNECT", now: now)
        default:
            invalidMessages += 1
        }
        return nil
    }
}
