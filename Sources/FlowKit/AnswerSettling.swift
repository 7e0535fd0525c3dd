import Logging
import Synchronization

/// Holds a runtime's answer until the writes it stands for are in the Clone server
/// (`StateMap.settle`): a caller told "done" does not ask again, so a kill right after the answer
/// must not lose them. Waits at most `timeout`, then answers anyway (the writes are still sent
/// again until confirmed) and says so in the log, the first time and every hundredth.
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

    /// Answers sent before their writes were confirmed.
    var unsettledAnswers: Int { unsettled.load(ordering: .relaxed) }

    func waitForWrites() {
        guard !map.settle(timeout: Self.timeout) else { return }
        let count = unsettled.add(1, ordering: .relaxed).newValue
        guard count == 1 || count % 100 == 0 else { return }
        logger.warning("answered before the clone server confirmed the writes of \(service) (no confirmation in \(Self.timeout)); they are still sent again until confirmed", metadata: [
            "flowbus.service": "\(service)", "flowbus.count": "\(count)",
            "flowbus.hint": "check the host (`flowbus ps`: clone write counters, fault rules) and its log",
        ])
    }
}
