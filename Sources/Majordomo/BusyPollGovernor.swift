/// Decides, burst by burst, whether the broker busy-polls after traffic.
///
/// A busy poll pays when the next message of a conversation comes while the broker spins (a
/// client waiting on one request at a time, a worker replying at once): the broker then handles
/// it without a thread wake-up. On a host whose peers are processes that take their time (an
/// app's view models calling services, with a dozen other processes on two cores), almost no
/// spin catches anything — 52 of 16,904 over some 4,000 likes — and each one holds a core for
/// the whole window that the peers needed to produce the very message awaited.
///
/// So the broker judges its spins in windows: a window of `window` spins in which fewer than one
/// in `minimumHitShare` caught a message turns spinning off; while off, one burst in `probeEvery`
/// still spins, and a window of `probeWindow` such probes that catch often enough turns it back
/// on. Conversational traffic keeps every spin; traffic that never catches keeps one in sixteen.
struct BusyPollGovernor {
    /// Spins judged together while spinning is on.
    static let window = 32
    /// Probes judged together while spinning is off.
    static let probeWindow = 8
    /// A window must catch at least one spin in this many to keep (or turn back) spinning on.
    static let minimumHitShare = 8
    /// While off, every this-many-th burst spins anyway, to notice traffic that turned conversational.
    static let probeEvery = 16

    /// Whether every burst spins (true), or only the probes.
    private(set) var enabled = true
    private var spins = 0
    private var hits = 0
    private var bursts = 0

    /// Whether the burst of traffic that just ended should be followed by a spin.
    mutating func shouldSpin() -> Bool {
        if enabled { return true }
        bursts += 1
        guard bursts >= Self.probeEvery else { return false }
        bursts = 0
        return true
    }

    /// Records how a spin went, and once its window is full, whether spinning stays on.
    mutating func record(caught: Bool) {
        spins += 1
        if caught { hits += 1 }
        guard spins >= (enabled ? Self.window : Self.probeWindow) else { return }
        enabled = hits * Self.minimumHitShare >= spins
        spins = 0
        hits = 0
        bursts = 0
    }
}
