/// Messages a fault holds back on a message path's own thread: a delayed one until its time, a
/// reordered one until `behind` later messages have gone past it (or `reorderWait` runs out, so a
/// quiet path still delivers it). Few are held at once; a plain array is enough.
///
/// The loops ask `isEmpty` and `nextDeadline` on every pass: those are inlinable, so each caller
/// gets them specialized for its message type. Called across the module unspecialized, each
/// looked up the generic metadata of `Held`, its array and an optional at run time: some 3,400
/// instructions a pass of the broker's loop (callgrind, mdp-throughput).
public struct HeldMessages<Message> {
    @usableFromInline
    struct Held {
        @usableFromInline var due: MonotonicTime
        /// Later messages still to go past it (a reordered message).
        var behind: Int
        var reordered: Bool
        /// Its place in the order messages reached the path: only later ones overtake it.
        var arrival: Int
        var message: Message
    }

    @usableFromInline var held: [Held] = []
    private var arrivals = 0

    /// The longest a reordered message waits for others to overtake it.
    public static var reorderWait: Duration { .milliseconds(250) }

    public init() {}

    @inlinable public var isEmpty: Bool { held.isEmpty }
    @inlinable public var count: Int { held.count }

    public mutating func hold(_ message: Message, until due: MonotonicTime) {
        arrivals += 1
        held.append(Held(due: due, behind: 0, reordered: false, arrival: arrivals, message: message))
    }

    public mutating func hold(_ message: Message, behind count: Int, now: MonotonicTime) {
        arrivals += 1
        held.append(Held(due: now + Self.reorderWait, behind: max(1, count), reordered: true, arrival: arrivals, message: message))
    }

    /// A message that reached the path after every held one went past them: each has one fewer
    /// to wait for.
    public mutating func passed() {
        arrivals += 1
        overtake(before: arrivals)
    }

    private mutating func overtake(before arrival: Int) {
        for index in held.indices where held[index].behind > 0 && held[index].arrival < arrival { held[index].behind -= 1 }
    }

    /// Takes the messages free to go now — their time came, or enough overtook them — in the
    /// order they go: one released overtakes those held before it that are still waiting.
    public mutating func takeDue(now: MonotonicTime) -> [Message] {
        var due: [Message] = []
        var index = 0
        while index < held.count {
            let entry = held[index]
            guard entry.due <= now || (entry.reordered && entry.behind == 0) else {
                index += 1
                continue
            }
            held.remove(at: index)
            due.append(entry.message)
            overtake(before: entry.arrival)
            index = 0
        }
        return due
    }

    /// When the next held message falls due, if any is held.
    @inlinable public var nextDeadline: MonotonicTime? {
        if held.isEmpty { return nil }
        return held.min { $0.due < $1.due }?.due
    }
}
