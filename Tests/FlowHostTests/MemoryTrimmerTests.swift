@testable import FlowHost
import Foundation
import Glibc
import Logging
import Synchronization
import Testing

/// The host hands freed heap back: what a burst of connections leaves behind in malloc's arenas.
@Suite("Memory trimmer")
struct MemoryTrimmerTests {
    /// 64 MiB in 1 KiB blocks, allocated and mostly freed on a thread of its own (its own malloc
    /// arena, as libzmq's I/O thread has), one block in 16 kept so nothing shrinks by itself.
    /// Returns the kept blocks' addresses.
    static func churn() -> [Int] {
        let kept = Mutex<[Int]>([])
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            var all: [UnsafeMutableRawPointer] = []
            for _ in 0..<65_536 {
                let block = malloc(1024)!
                memset(block, 1, 1024)
                all.append(block)
            }
            for (index, block) in all.enumerated() {
                if index % 16 == 0 { kept.withLock { $0.append(Int(bitPattern: block)) } } else { free(block) }
            }
            done.signal()
        }
        thread.start()
        done.wait()
        return kept.withLock { $0 }
    }

    @Test("freed heap that stays resident is returned, and counted")
    func returnsFreedHeap() async throws {
        let trimmer = MemoryTrimmer.start(period: .milliseconds(50), threshold: 8 << 20, logger: Logger(label: "test"))
        defer { trimmer.stop() }
        try await Task.sleep(for: .milliseconds(120))
        let kept = Self.churn()
        defer { kept.forEach { free(UnsafeMutableRawPointer(bitPattern: $0)) } }
        var waited = 0
        while trimmer.statistics.returnedBytes < 32 << 20, waited < 100 {
            try await Task.sleep(for: .milliseconds(50))
            waited += 1
        }
        let statistics = trimmer.statistics
        #expect(statistics.trims >= 1)
        // 60 of the 64 MiB were freed; most of it must have gone back.
        #expect(statistics.returnedBytes >= 32 << 20, "returned \(statistics.returnedBytes >> 20) MiB in \(statistics.trims) trims")
    }

    @Test("a host whose memory stays as it is is not trimmed over and over")
    func leavesLiveMemory() async throws {
        let trimmer = MemoryTrimmer.start(period: .milliseconds(50), threshold: 8 << 20, logger: Logger(label: "test"))
        defer { trimmer.stop() }
        try await Task.sleep(for: .milliseconds(120))
        // 32 MiB in use, none of it freed: the resident size grows, malloc holds nothing free.
        let live = (0..<32_768).map { _ in
            let block = malloc(1024)!
            memset(block, 1, 1024)
            return block
        }
        defer { live.forEach { free($0) } }
        try await Task.sleep(for: .milliseconds(300))
        // At most one trim per 8 MiB of growth (a trim may find free heap left by other tests),
        // then none while nothing changes: 12 more looks.
        let settled = trimmer.statistics.trims
        #expect(settled <= 4)
        try await Task.sleep(for: .milliseconds(600))
        #expect(trimmer.statistics.trims == settled)
        #expect(trimmer.statistics.residentBytes > 32 << 20)
    }
}
