import Clone
import FlowHost
import FlowProtocol
import Foundation
import Majordomo

/// How `flowbus tap` shows what it sees.
struct TapPrinter: Sendable {
    let json: Bool
    /// The app schema published at `/schema/<package>`, to read states' payloads with.
    let schema: @Sendable (String) -> AppSchema?

    func print(_ update: CloneUpdate) {
        let value = TapValue.decode(update.value, schema: schema)
        if json {
            let object: [String: Any] = [
                "type": "clone", "key": update.key, "sequence": update.sequence,
                "properties": update.properties.map { "\($0.name)=\($0.value)" },
                "delete": update.isDelete, "snapshot": update.fromSnapshot, "value": value.object,
            ]
            emit(object)
        } else {
            let marker = update.fromSnapshot ? "snapshot" : "update"
            let properties = update.properties.map { "\($0.name)=\($0.value)" }.joined(separator: " ")
            let shown = update.isDelete ? "(deleted)" : value.text
            Swift.print("clone \(marker) #\(update.sequence) \(update.key) \(properties.isEmpty ? "" : "[\(properties)] ")\(shown)")
        }
        fflush(nil)
    }

    func print(traffic status: HostStatus, since previous: BrokerStatistics?) {
        let traffic = TrafficSummary(status.broker, since: previous)
        if json {
            emit([
                "type": "mdp", "requests": traffic.requests, "replies": traffic.replies, "rejections": traffic.rejected,
                "badInput": traffic.bad, "faultDropped": traffic.dropped, "workersPerService": traffic.workers,
                "queuedPerService": traffic.queued,
            ])
        } else {
            Swift.print(traffic.line())
        }
        fflush(nil)
    }

    func note(_ text: String) {
        if json { emit(["type": "note", "text": text]) } else { Swift.print("tap: \(text)") }
        fflush(nil)
    }

    private func emit(_ object: [String: Any]) {
        if let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) {
            Swift.print(String(decoding: data, as: UTF8.self))
        }
    }
}
