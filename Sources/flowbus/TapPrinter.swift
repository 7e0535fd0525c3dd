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
            Swift.print(Self.trafficLine(
                requests: requests, replies: replies, rejected: rejections, bad: bad, dropped: drops,
                workers: now.workersPerService, queued: now.queuedPerService))
        }
        fflush(nil)
    }

    /// One line of at most `width` columns: the second's counts, the workers in all, then the
    /// services with requests waiting and those with no worker, as many as fit (`--json` has all).
    static func trafficLine(
        requests: Int, replies: Int, rejected: Int, bad: Int, dropped: Int, workers: [String: Int], queued: [String: Int],
        width: Int = 80
    ) -> String {
        var line = "mdp +\(requests) req +\(replies) rep"
        let problems = [(rejected, "rejected"), (bad, "bad"), (dropped, "dropped")].filter { $0.0 > 0 }
        if !problems.isEmpty { line += " (" + problems.map { "\($0.0) \($0.1)" }.joined(separator: ", ") + ")" }
        line += " · \(workers.values.reduce(0, +)) workers, \(workers.count) services"
        let notes = queued.filter { $0.value > 0 }.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value) queued" }
            + workers.filter { $0.value == 0 }.keys.sorted().map { "\($0) no worker" }
        for (index, note) in notes.enumerated() {
            let more = notes.count - index - 1
            let tail = more > 0 ? " +\(more) more" : ""
            guard line.count + 3 + note.count + tail.count <= width else {
                line += " +\(notes.count - index) more"
                break
            }
            line += " · " + note
        }
        return line
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
