/// Work waiting per lane, handed out one piece at a time per lane in the order it came: the
/// bookkeeping behind `LaneExecutor` and `BusCaller`, which guard it with their own locks.
struct LaneQueue<Item> {
    private var queues: [String: [Item]] = [:]
    /// Lanes with waiting work and none in progress, in the order they became ready.
    private var ready: [String] = []
    private var readyStart = 0
    /// Lanes with work in progress.
    private var busy: Set<String> = []
    /// Pieces waiting, over every lane.
    private(set) var waiting = 0

    var hasReady: Bool { readyStart < ready.count }
    var isIdle: Bool { waiting == 0 && busy.isEmpty }

    func isIdle(lane: String) -> Bool { queues[lane] == nil && !busy.contains(lane) }

    mutating func append(_ item: Item, lane: String) {
        if queues[lane] == nil, !busy.contains(lane) { ready.append(lane) }
        queues[lane, default: []].append(item)
        waiting += 1
    }

    /// The next piece of a ready lane, whose lane is then in progress until `finished`.
    mutating func take() -> (lane: String, item: Item)? {
        guard readyStart < ready.count else { return nil }
        let lane = ready[readyStart]
        readyStart += 1
        if readyStart > 1024, readyStart * 2 > ready.count {
            ready.removeFirst(readyStart)
            readyStart = 0
        }
        let item = queues[lane]!.removeFirst()
        if queues[lane]!.isEmpty { queues[lane] = nil }
        waiting -= 1
        busy.insert(lane)
        return (lane, item)
    }

    /// The piece taken from `lane` is done; returns whether the lane has more ready.
    @discardableResult
    mutating func finished(_ lane: String) -> Bool {
        busy.remove(lane)
        guard queues[lane] != nil else { return false }
        ready.append(lane)
        return true
    }
}
