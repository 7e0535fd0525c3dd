import Majordomo

/// A broker's traffic over one interval, as `flowbus tap` prints it each second.
public struct TrafficSummary: Sendable, Equatable {
    public var requests = 0
    public var replies = 0
    public var rejected = 0
    public var bad = 0
    public var dropped = 0
    /// Live workers by service, and requests waiting by service, now.
    public var workers: [String: Int] = [:]
    public var queued: [String: Int] = [:]

    public init() {}

    /// What changed from `previous` (nothing counted when there is none) to `now`.
    public init(_ now: BrokerStatistics, since previous: BrokerStatistics?) {
        requests = now.requests - (previous?.requests ?? now.requests)
        replies = now.replies - (previous?.replies ?? now.replies)
        rejected = now.rejections.total - (previous?.rejections.total ?? now.rejections.total)
        bad = now.badInput.total - (previous?.badInput.total ?? now.badInput.total)
        dropped = now.faultDropped - (previous?.faultDropped ?? now.faultDropped)
        workers = now.workersPerService
        queued = now.queuedPerService
    }

    /// One line of at most `width` columns: the counts, the workers in all, then the services
    /// with requests waiting and those with no worker, as many as fit, and how many more.
    public func line(width: Int = 80) -> String {
        var line = "mdp +\(requests) req +\(replies) rep"
        let problems = [(rejected, "rejected"), (bad, "bad"), (dropped, "dropped")].filter { $0.0 > 0 }
        if !problems.isEmpty { line += " (" + problems.map { "\($0.0) \($0.1)" }.joined(separator: ", ") + ")" }
        let live = workers.values.reduce(0, +)
        line += " · \(live) worker\(live == 1 ? "" : "s"), \(workers.count) service\(workers.count == 1 ? "" : "s")"
        let notes = queued.filter { $0.value > 0 }.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value) queued" }
            + workers.filter { $0.value == 0 }.keys.sorted().map { "\($0) no worker" }
        var shown = 0
        for note in notes {
            let more = notes.count - shown - 1
            let tail = more > 0 ? " +\(more) more" : ""
            guard line.count + 3 + note.count + tail.count <= width else { break }
            line += " · " + note
            shown += 1
        }
        let left = notes.count - shown
        if left > 0, let tail = [" +\(left) more", " +\(left)"].first(where: { line.count + $0.count <= width }) { line += tail }
        return line.count <= width ? line : String(line.prefix(width - 1)) + "…"
    }
}
