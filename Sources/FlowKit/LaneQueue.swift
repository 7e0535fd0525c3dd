/// Work waiting per lane, handed out one piece at a time per lane in the order it came: the
/// bookkeeping behind `LaneExecutor` and `BusCaller`, which guard it with their own locks.
///
/// A lane is a session, so a burst of sessions (thousands opened at once) can fill these tables;
/// once the burst has drained they give their room back (`retainedSlots` stays small) instead of
/// keeping it, and every session's name with it, for as long as the process runs.
struct LaneQueue<Item> {
    private var queues: [String: [Item]] = [:]
    /// Lanes with waiting work and none in progress, in the order they became ready.
    private var ready: [String] = []
    private var readyStart = 0
    /// Lanes with work in progress.
    private var busy: Set<String> = []
    /// Pieces waiting, over every lane.
    private(set) var waiting = 0

    /// Tables larger than this are let go of when they empty; smaller ones keep their room.
    static var keptRoom: Int { 64 }

    var hasReady: Bool { readyStart < ready.count }
    var isIdle: Bool { waiting == 0 && busy.isEmpty }

    func isIdle(lane: String) -> Bool { queues[lane] == nil && !busy.contains(lane) }

    /// The room the tables hold, in entries: what a drained burst would leave behind.
    var retainedSlots: Int { queues.capacity + ready.capacity + busy.capacity }

    /// Queues `item` behind `lane`'s earlier ones; returns whether the lane became ready with it
    /// (it had nothing waiting and nothing in progress): only then is there work a thread waiting
    /// could take.
    @discardableResult
    mutating func append(_ item: Item, lane: String) -> Bool {
        let becomesReady = queues[lane] == nil && !busy.contains(lane)
        if becomesReady { ready.append(lane) }
        queues[lane, default: []].append(item)
        waiting += 1
        return becomesReady
    }

    /// The next piece of a ready lane, whose lane is then in progress until `finished`.
    mutating func take() -> (lane: String, item: Item)? {
        guard readyStart < ready.count else { return nil }
        let lane = ready[readyStart]
        readyStart += 1
        if readyStart == ready.count {
            // Drained: the names taken are let go of now, not after a thousand more.
            ready.removeAll(keepingCapacity: ready.capacity <= Self.keptRoom)
            readyStart = 0
        } else if readyStart > Self.keptRoom, readyStart * 2 > ready.count {
            ready.removeFirst(readyStart)
            readyStart = 0
        }
        let item = queues[lane]!.removeFirst()
        if queues[lane]!.isEmpty {
            queues[lane] = nil
            if queues.isEmpty, queues.capacity > Self.keptRoom { queues = [:] }
        }
        waiting -= 1
        busy.insert(lane)
        return (lane, item)
    }

    /// The piece taken from `lane` is done; returns whether the lane has more ready.
    @discardableResult
    mutating func finished(_ lane: String) -> Bool {
        busy.remove(lane)
        if busy.isEmpty, busy.capacity > Self.keptRoom { busy = [] }
        guard queues[lane] != nil else { return false }
        ready.append(lane)
        return true
    }
}
