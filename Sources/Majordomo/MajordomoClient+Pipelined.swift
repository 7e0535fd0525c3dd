import MessagePath
import ZeroMQ

extension MajordomoClient {
    /// Queues one request without waiting for its reply (many may be in flight). No retries:
    /// the caller counts what comes back. Blocks only if the high-water mark is reached.
    public func send(service: String, body: [Frame]) throws(MajordomoClientError) {
        guard !service.isEmpty else { throw .invalidService(service) }
        do {
            try sendRequest(serviceFrame(service), body)
        } catch {
            throw .transport(error, endpoint: endpoint)
        }
    }

    /// The next reply, or nil if none arrives within `timeout` (nil waits forever).
    /// Messages that are not client REPLYs are dropped.
    public func receive(timeout: Duration?) throws(MajordomoClientError) -> MajordomoReply? {
        let started = MonotonicTime.now()
        // Worked out when first needed: a reply already waiting costs no `Duration` arithmetic.
        var deadline: MonotonicTime?
        while true {
            do {
                reading: while true {
                    switch try readReply() {
                    case .nothing: break reading
                    case .dropped: continue
                    case .reply(let service, let body): return MajordomoReply(service: serviceName(service), body: body)
                    }
                }
                let now = MonotonicTime.now()
                if deadline == nil, let timeout { deadline = started + timeout }
                if let deadline, now >= deadline { return nil }
                try poller.poll(timeoutNanoseconds: deadline.map { now.nanoseconds(until: $0) })
            } catch {
                throw .transport(error, endpoint: endpoint)
            }
        }
    }

    /// `"" MDPC01 service body...`, written frame by frame: no array of the whole message.
    func sendRequest(_ service: Frame, _ body: [Frame]) throws(ZMQError) {
        // Only the first part can wait for room (the high-water mark); the rest follow it.
        try socket.send(MDP.empty, more: true)
        try socket.send(MDP.clientHeader, more: true)
        try socket.send(service, more: true)
        try socket.send(body.isEmpty ? [MDP.empty] : body)
    }

    /// `service` as a frame, made once for the same service in a row.
    func serviceFrame(_ service: String) -> Frame {
        if let last = lastService, last.name == service { return last.frame }
        let frame = Array(service.utf8)
        lastService = (service, frame)
        return frame
    }

    /// The name of a reply's service: the last one asked for, without decoding it again.
    func serviceName(_ frame: Frame) -> String {
        if let last = lastService, last.frame == frame { return last.name }
        return String(decoding: frame, as: UTF8.self)
    }
}
