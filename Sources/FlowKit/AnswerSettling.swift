import FlowProtocol
import Logging
import ZeroMQ
import Synchronization

/// Holds a runtime's answer until the writes it stands for are in the Clone server
/// (`StateMap.settle`): a caller told "done" does not ask again, so a kill right after the answer
/// must not lose them. Waits at most `timeout`; when the writes are still unconfirmed then, the
/// answer is not sent: `ErrorReply.unsettledFrame` goes instead, and the caller asks again with
/// the same key. This process answers that retry from memory once the writes are confirmed (they
/// are sent again until they are); a restarted one, which never saw them, applies it afresh.
final class AnswerSettling: Sendable {
    /// A host without faults confirms in about a millisecond.
    static let timeout: Duration = .seconds(2)

    private let map: any StateMap
    private let service: String
    private let logger: Logger
    private let unsettled = Atomic<Int>(0)

    init(map: any StateMap, service: String, logger: Logger) {
        self.map = map
        self.service = service
        self.logger = logger
    }

    /// Answers held back because their writes were not confirmed in time.
    var unsettledAnswers: Int { unsettled.load(ordering: .relaxed) }

    /// Hands `send` the answer once the map's writes so far are confirmed, or
    /// `ErrorReply.unsettledFrame` when they are not within `timeout` (said in the log the first
    /// time and every hundredth). No thread waits for it: `send` runs on the thread that learns
    /// the writes are confirmed (a Clone agent's), or at once on this one when they are already;
    /// answers go to `send` in the order given. `send` must not wait.
    func whenSettled(_ answer: [Frame], _ send: @escaping ([Frame]) -> Void) {
        map.whenSettled(timeout: Self.timeout) { [self] settled in
            send(settled ? answer : heldBack())
        }
    }

    private func heldBack() -> [Frame] {
        let count = unsettled.add(1, ordering: .relaxed).newValue
        if count == 1 || count % 100 == 0 {
            logger.warning("held an answer back: the clone server has not confirmed the writes of \(service) (no confirmation in \(Self.timeout)); the caller is told to ask again, and they are still sent again until confirmed", metadata: [
                "flowbus.service": "\(service)", "flowbus.count": "\(count)",
                "flowbus.hint": "check the host (`flowbus ps`: clone write counters, fault rules) and its log",
            ])
        }
        return [ErrorReply.unsettledFrame]
    }
}
