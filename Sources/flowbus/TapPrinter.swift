import Clone
import FlowHost
import FlowProtocol
import Foundation
import Majordomo

/// How `flowbus tap` shows what it sees.
struct TapPrinter: Sendable {
    let json: Bool

    func print(_ update: CloneUpdate) {
        let value = Self.describe(update.value)
        if json {
            let object: [String: Any] = [
                "type": "clone", "key": update.key, "sequence": update.sequence,
                "properties": update.properties.map { "\($0.name)=\($0.value)" },
                "delete": update.isDelete, "snapshot": update.fromSnapshot, "value": value,
            ]
            emit(object)
        } else {
            let marker = update.fromSnapshot ? "snapshot" : "update"
            let properties = update.properties.map { "\($0.name)=\($0.value)" }.joined(separator: " ")
            let shown = update.isDelete ? "(deleted)" : value
            Swift.print("clone \(marker) #\(update.sequence) \(update.key) \(properties.isEmpty ? "" : "[\(properties)] ")\(shown)")
        }
        fflush(nil)
    }

    func print(traffic status: HostStatus, since previous: BrokerStatistics?) {
        let now = status.broker
        let requests = now.requests - (previous?.requests ?? now.requests)
        let replies = now.replies - (previous?.replies ?? now.replies)
        let rejections = now.rejections.total - (previous?.rejections.total ?? now.rejections.total)
        let bad = now.badInput.total - (previous?.badInput.total ?? now.badInput.total)
        let drops = now.faultDropped - (previous?.faultDropped ?? now.faultDropped)
        if json {
            emit([
                "type": "mdp", "requests": requests, "replies": replies, "rejections": rejections,
                "badInput": bad, "faultDropped": drops, "workersPerService": now.workersPerService,
                "queuedPerService": now.queuedPerService,
            ])
        } else {
            let services = now.workersPerService.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: ", ")
            Swift.print("mdp +\(requests) requests +\(replies) replies +\(rejections) rejected +\(bad) bad +\(drops) fault-dropped; workers [\(services)]")
        }
        fflush(nil)
    }

    func note(_ text: String) {
        if json { emit(["type": "note", "text": text]) } else { Swift.print("tap: \(text)") }
        fflush(nil)
    }

    private func emit(_ object: [String: Any]) {
        if let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) {
            Swift.print(String(decoding: data, as: UTF8.self))
        }
    }

    /// A Flowbus envelope is shown by kind and, for the small payloads, by content; other bytes as text or size.
    static func describe(_ value: [UInt8]) -> String {
        if value.isEmpty { return "" }
        if let envelope = try? Envelope.decodeChecked(value), !envelope.kind.isEmpty {
            if let echo = try? envelope.unwrap(Flowbus_V1_Echo.self) {
                return "\(envelope.kind) \"\(echo.text)\""
            }
            return "\(envelope.kind) (\(envelope.payload.count) bytes, writer \(envelope.writer))"
        }
        if let text = String(validating: value, as: UTF8.self), text.unicodeScalars.allSatisfy({ $0.value >= 0x20 || $0 == "\n" }) {
            return "\"\(text)\""
        }
        return "<\(value.count) bytes>"
    }
}
