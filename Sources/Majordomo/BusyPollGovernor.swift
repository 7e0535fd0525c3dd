/// Decides, burst by burst, whether the broker busy-polls after traffic.
///
/// A busy poll pays when the next message of a conversation comes while the broker spins (a
/// client waiting on one request at a time, a worker replying at once): the broker then handles
/// it without a thread wake-up. It pays in CPU only when the spin is shorter than the sleep it
/// saves. On a host whose peers are processes that take their time (an app's view models calling
/// services, with a dozen other processes on two cores), almost no spin catches anything — 52 of
/// 16,904 over some 4,000 likes — and each one holds a core for the whole window that the peers
/// needed to produce the very message awaited. On a virtual machine whose hops take longer than
/// the window, half the spins catch, but only after 30–50 µs, to save a sleep that costs the
/// broker thread 9–16 µs of CPU (mdp-rtt, 2026-11-28): 50 µs more CPU per round trip for nothing.
///
/// So the broker judges its spins in windows, by two rules. A window of `window` spins keeps
/// spinning on only if at least one in `minimumHitShare` caught a message, and if the time spent
/// spinning, caught or not, is at most `budget` times what the sleeps it saved would have cost
/// (`sleepCost`, measured on the broker's own sleeps). While off, one burst in `probeEvery` still
/// spins, and a window of `probeWindow` such probes that passes both rules turns it back on.
/// Conversational traffic on a fast host keeps every spin; traffic that never catches, or
/// catches too late to save anything, keeps one in sixteen.
///
/// A spin is weighed by its wall time. Where the spinning thread's `sched_yield` hands its core to
/// another thread, that time is more than the CPU the spin took, and the governor errs towards
/// sleeping: on a host with more runnable threads than cores, those are the threads whose
/// messages the spin waits for (pipelined through mdp-throughput, a spin yields and ends 300–600
/// µs later having caught nothing).
struct BusyPollGovernor {
    /// Spins judged together while spinning is on.
    static let window = 32
    /// Probes judged together while spinning is off.
    static let probeWindow = 8
    /// A window must catch at least one spin in this many to keep (or turn back) spinning on.
    static let minimumHitShare = 8
    /// While off, every this-many-th burst spins anyway, to notice traffic that turned conversational.
    static let probeEvery = 16
    /// What a sleep is taken to cost the broker thread until one has been measured, ns.
    static let assumedSleepCost: Int64 = 15_000
    /// One sleep in this many is measured (two reads of the thread's CPU clock, system calls).
    static let measureSleepEvery = 8

    /// The spin time accepted per message caught, in sleeps' CPU (`BrokerConfiguration.busyPollBudget`).
    let budget: Double
    /// Whether every burst spins (true), or only the probes.
    private(set) var enabled = true
    /// What one sleep in the poll costs the broker thread in CPU, ns: going to sleep, being woken,
    /// coming back (a moving average of the measured ones).
    private(set) var sleepCost = Self.assumedSleepCost
    private var spins = 0
    private var hits = 0
    private var spun: Int64 = 0
    private var bursts = 0
    private var sleeps = 0

    init(budget: Double = 1) {
        self.budget = budget
    }

    /// Whether the burst of traffic that just ended should be followed by a spin.
    mutating func shouldSpin() -> Bool {
        if enabled { return true }
        bursts += 1
        guard bursts >= Self.probeEvery else { return false }
        bursts = 0
        return true
    }

    /// Records how a spin went: whether it caught a message, and how long it spun, ns. Once its
    /// window is full, decides whether spinning stays on.
    mutating func record(caught: Bool, spunFor nanoseconds: Int64) {
        spins += 1
        spun += max(0, nanoseconds)
        if caught { hits += 1 }
        guard spins >= (enabled ? Self.window : Self.probeWindow) else { return }
        let catchesEnough = hits * Self.minimumHitShare >= spins
        let paysForItself = hits > 0 && Double(spun) <= Double(hits) * Double(sleepCost) * budget
        enabled = catchesEnough && paysForItself
        spins = 0
        hits = 0
        spun = 0
        bursts = 0
    }

    /// Whether the sleep about to start should be measured.
    mutating func shouldMeasureSleep() -> Bool {
        sleeps += 1
        guard sleeps >= Self.measureSleepEvery else { return false }
        sleeps = 0
        return true
    }

    /// Records the CPU one sleep cost the broker thread, ns.
    mutating func recordSleep(cpuNanoseconds: Int64) {
        sleepCost += (max(0, cpuNanoseconds) - sleepCost) / 8
    }
}
