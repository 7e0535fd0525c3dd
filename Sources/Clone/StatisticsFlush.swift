import MessagePath

/// When a Clone loop next publishes its counters. While something moves it flushes every
/// `interval`; a flush that finds nothing new (`quiet`) arms no timer, and the loop's next pass
/// for any other reason (a message, a command, another deadline) arms it again. Before, each
/// agent and the server woke every 20 ms to publish the same counters: an idle app of 19
/// plugins made some 1,000 wake-ups a second for nothing.
enum StatisticsFlush {
    /// How far off an idle loop puts its next flush: never reached in practice, since any pass
    /// of the loop re-arms the flush first.
    static let idleWait: Duration = .seconds(3_600)

    /// The next flush after one at `now`, and whether the loop is idle (to be re-armed by its next pass).
    static func next(after now: MonotonicTime, interval: Duration, quiet: Bool) -> (at: MonotonicTime, idle: Bool) {
        quiet ? (now + idleWait, true) : (now + interval, false)
    }
}
