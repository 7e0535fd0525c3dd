import Foundation
import Glibc

/// CPU time of several processes, each the sum of its threads' run time in nanoseconds
/// (`/proc/<pid>/task/<tid>/schedstat`, the scheduler's own count, not the 10 ms ticks of
/// `/proc/<pid>/stat`). The bench's own process is read with `getrusage`. What an app step costs
/// the machine, process by process: on 2 cores, a step whose processes together need more CPU
/// than its wall-clock time cannot be faster than that CPU allows.
struct ProcessTreeCPU: Sendable {
    /// A process to count: its label in the table and its pid (nil: this process).
    struct Member: Sendable {
        var label: String
        var pid: Int32?
    }

    let members: [Member]

    /// Nanoseconds of CPU per member, now. A process that has gone reads as nil.
    func sample() -> [Double?] {
        members.map { member in
            guard let pid = member.pid else { return Double(ProcessCPU.now().nanoseconds) }
            return Self.threadsRunTime(pid: pid)
        }
    }

    static func threadsRunTime(pid: Int32) -> Double? {
        guard let tids = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return nil }
        var total = 0.0
        for tid in tids {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/schedstat", encoding: .utf8),
                  let first = text.split(separator: " ").first, let nanoseconds = Double(first) else { continue }
            total += nanoseconds
        }
        return total
    }

    /// CPU per operation between two samples, in µs, by label (members sharing a label are
    /// summed), largest first; members that went away in between are left out.
    func perOperation(from start: [Double?], to end: [Double?], operations: Int) -> [(label: String, microseconds: Double)] {
        var byLabel: [String: Double] = [:]
        for (index, member) in members.enumerated() {
            guard let before = start[index], let after = end[index], after >= before else { continue }
            byLabel[member.label, default: 0] += (after - before) / 1000 / Double(max(1, operations))
        }
        return byLabel.map { ($0.key, $0.value) }.sorted { $0.microseconds > $1.microseconds }
    }
}
