import CFlowHost
import Foundation
import Glibc
import Logging
import Synchronization

/// Gives the heap the host has freed back to the system.
///
/// Every connection costs libzmq buffers and pipes, allocated by its I/O thread in a malloc arena
/// of its own. glibc keeps what is freed there for reuse and only returns the top of the main
/// arena by itself, so after a burst of connections (3,000 at once, closed again) the host stayed
/// at ~320 MiB with 4 MiB of it in use. Every `period` this looks at the resident size and at
/// what malloc holds free, and calls `malloc_trim(0)`, which hands every free page of every
/// arena back (that churn: 330 → 38 MiB), when either has grown by `threshold` since the last
/// trim (the resident size only counts with that much free). A host whose memory stays as it
/// is, or grows because it is in use (a large Clone map), is not trimmed again and again.
///
/// The threshold is 256 KiB (1 MiB until 2026-12-03, 16 MiB until 2026-11-28): sessions opening
/// one after another leave freed pages between the ones they hold (a write's frames, a map's old
/// table), about 1 KiB per session that glibc kept; trimmed, the first 1,000 sessions cost the app
/// about 1 KiB less each (app-memory, five alternated pairs: 14.1 against 15.3 KiB, the median).
/// What is left untrimmed at any moment is up to the threshold: with 1 MiB, the host's growth per
/// session between 2,000 and 4,000 sessions read 2.05–3.30 KiB from run to run (five runs), with
/// 256 KiB 2.44–2.79 (four). The app at work (40 sign-in, settings and sign-out loops) was trimmed
/// once.
final class MemoryTrimmer: Sendable {
    private let state = Mutex(MemoryStatistics())
    private let stopping = Atomic<Bool>(false)
    private let wake = DispatchSemaphore(value: 0)

    /// Starts looking every `period` on a thread of its own; with `trimming` off it only reads
    /// the resident size.
    static func start(period: Duration = .seconds(2), threshold: Int = 1 << 18, trimming: Bool = true, logger: Logger) -> MemoryTrimmer {
        let trimmer = MemoryTrimmer()
        let thread = Thread { trimmer.loop(period: period, threshold: trimming ? threshold : .max, logger: logger) }
        thread.name = "flowbus-memory"
        thread.start()
        return trimmer
    }

    var statistics: MemoryStatistics { state.withLock { $0 } }

    func stop() {
        stopping.store(true, ordering: .relaxed)
        wake.signal()
    }

    private func loop(period: Duration, threshold: Int, logger: Logger) {
        var rule = TrimRule(threshold: threshold, resident: Self.residentBytes() ?? 0, free: Int(clamping: cflowhost_heap_free_bytes()))
        let seconds = Double(period.components.seconds) + Double(period.components.attoseconds) / 1e18
        while !stopping.load(ordering: .relaxed) {
            _ = wake.wait(timeout: .now() + seconds)
            guard !stopping.load(ordering: .relaxed), let resident = Self.residentBytes() else { continue }
            state.withLock { $0.residentBytes = resident }
            guard rule.shouldTrim(resident: resident, free: Int(clamping: cflowhost_heap_free_bytes())) else { continue }
            _ = cflowhost_malloc_trim()
            let after = Self.residentBytes() ?? resident
            let returned = max(0, resident - after)
            state.withLock {
                $0.trims += 1
                $0.returnedBytes += returned
                $0.residentBytes = after
            }
            rule.trimmed(resident: after, free: Int(clamping: cflowhost_heap_free_bytes()))
            logger.debug("freed heap returned to the system", metadata: [
                "flowbus.resident_mib": "\(after >> 20)", "flowbus.returned_mib": "\(returned >> 20)",
            ])
        }
    }

    /// The process's resident size (second field of /proc/self/statm, in pages).
    static func residentBytes() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}

/// What `flowbus ps` shows of the host's memory.
public struct MemoryStatistics: Codable, Sendable, Equatable {
    /// The host's resident size at the last look (every 2 s), in bytes.
    public var residentBytes = 0
    /// How many times freed heap was handed back, and how much the resident size dropped by in all.
    public var trims = 0
    public var returnedBytes = 0
}

/// When the trimmer trims: once the resident size grew by `threshold` over its lowest since the
/// last trim while malloc holds more than `threshold` free, or malloc's free heap itself grew by
/// `threshold`. Memory in use that merely stays (or grows with nothing free) is never trimmed
/// again and again.
struct TrimRule {
    let threshold: Int
    private var baseline: Int
    private var freeBaseline: Int

    init(threshold: Int, resident: Int, free: Int) {
        self.threshold = threshold
        self.baseline = resident
        self.freeBaseline = free
    }

    mutating func shouldTrim(resident: Int, free: Int) -> Bool {
        let grown = (resident - threshold > baseline && free > threshold) || free - threshold > freeBaseline
        if !grown {
            baseline = min(baseline, resident)
            freeBaseline = min(freeBaseline, free)
        }
        return grown
    }

    /// After a trim: what it left is the new baseline.
    mutating func trimmed(resident: Int, free: Int) {
        baseline = resident
        freeBaseline = free
    }
}
