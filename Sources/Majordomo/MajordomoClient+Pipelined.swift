import MessagePath
import ZeroMQ

extension MajordomoClient {
    /// Queues one request without waiting for its reply (many may be in flight). No retries:
    /// the caller counts what comes back. Blocks only if the high-water mark is reached.
    public func send(service: String, body: [Frame]) throws(MajordomoClientError) {
        guard !service.isEmpty else { throw .invalidService(service) }
        do {
            try socket.send(prefix: [MDP.empty, MDP.clientHeader, Array(service.utf8)], MDPCommand.nonEmpty(body))
        } catch {
            throw .transport(error, endpoint: endpoint)
        }
    }

    /// The next reply, or nil if none arrives within `timeout` (nil waits forever).
    /// Messages that are not client REPLYs are dropped.
    public func receive(timeout: Duration?) throws(MajordomoClientError) -> MajordomoReply? {
        let deadline = timeout.map { MonotonicTime.now() + $0 }
        while true {
            do {
                reading: while true {
                    switch try readReply() {
                    case .nothing: break reading
                    case .dropped: continue
                    case .reply(let service, let body): return MajordomoReply(service: String(decoding: service, as: UTF8.self), body: body)
                    }
                }
                let now = MonotonicTime.now()
                if let deadline, now >= deadline { return nil }
                try poller.poll(timeoutNanoseconds: deadline.map { now.nanoseconds(until: $0) })
            } catch {
                throw .transport(error, endpoint: endpoint)
            }
        }
    }
}
