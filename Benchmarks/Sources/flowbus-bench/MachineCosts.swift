import Foundation
import Glibc
import Supervision

/// What this machine charges for the two things every message of the bus pays in every process
/// it crosses, whatever the code around them (issue 16): a system call, and a sleeping thread
/// woken by another. The app's steps and their raw floors are made of little else (half of a
/// journey's CPU is the kernel's, `Benchmarks/JOURNAL.md`), so these figures say how far a figure
/// of one run can be compared with one taken on another machine. Measured first in a run, before
/// the other benchmarks load the machine.
///
/// - a system call: `getppid(2)` in a loop (it does nothing but enter and leave the kernel);
/// - a wake-up: two threads, each pinned to its CPU, pass a byte back and forth over two pipes,
///   each sleeping in `read(2)` until the other writes: a round trip is two wake-ups. On one CPU
///   the woken thread runs when the other sleeps; on two, the kernel has the other CPU woken.
///
/// Each is measured in five rounds; the median round is reported, the spread in the note.
struct MachineCosts {
    let options: Options

    static let rounds = 5

    func run() -> [ResultRow] {
        let calls = options.quick ? 100_000 : 400_000
        let trips = options.quick ? 4_000 : 20_000
        progress("machine: a system call and a thread's wake-up, \(Self.rounds) rounds each")
        var rows: [ResultRow] = []
        let call = Self.summary((0..<Self.rounds).map { _ in Self.systemCall(calls) })
        rows.append(ResultRow(
            "machine", "a system call (getppid), per call", unit: "µs", flowbus: call.median,
            note: "machine: a system call, \(Self.rounds) rounds of \(grouped(Double(calls))) calls, \(call.spread); \(Self.virtualization)"))
        // The CPUs this run may use (taskset, a cgroup's cpuset): the threads are pinned among them.
        guard let cpus = CPUPlacement.allowedCPUs(of: 0) else {
            rows.append(.failed("machine", "the CPUs this process may use could not be read (sched_getaffinity), so the wake-ups were not measured; run it where sched_getaffinity(2) is allowed (taskset -p $$ shows the set)"))
            return rows
        }
        for (label, pair) in [("one CPU", (cpus[0], cpus[0])), ("two CPUs", (cpus[0], cpus.count > 1 ? cpus[1] : -1))] {
            guard pair.1 >= 0 else {
                rows.append(ResultRow(
                    "machine", "a thread woken and back (two wake-ups), \(label)", unit: "µs", flowbus: nil, verdict: .unavailable,
                    note: "machine: a wake-up across two CPUs needs two; this run may use CPU \(cpus[0]) alone (see taskset -p $$)"))
                continue
            }
            do throws(BenchError) {
                var times: [Double] = []
                for _ in 0..<Self.rounds { times.append(try Self.wakeUps(trips, cpus: pair)) }
                let trip = Self.summary(times)
                progress("machine: a system call \(format(call.median, decimals: 2)) µs; a wake-up and back on \(label) \(format(trip.median, decimals: 1)) µs")
                rows.append(ResultRow(
                    "machine", "a thread woken and back (two wake-ups), \(label)", unit: "µs", flowbus: trip.median,
                    note: "machine: two threads on \(label) passing a byte over two pipes, \(Self.rounds) rounds of \(grouped(Double(trips))) round trips, \(trip.spread)"))
            } catch {
                rows.append(.failed("machine", "the wake-ups on \(label) could not be measured: \(error)"))
            }
        }
        return rows
    }

    /// The median of `values` and a phrase with their range.
    static func summary(_ values: [Double]) -> (median: Double, spread: String) {
        let sorted = values.sorted()
        let median = sorted[sorted.count / 2]
        return (median, "the median round shown (rounds \(format(sorted.first!, decimals: 2))–\(format(sorted.last!, decimals: 2)) µs)")
    }

    /// µs a `getppid` call, over `count` calls.
    static func systemCall(_ count: Int) -> Double {
        var sum: Int32 = 0
        let start = monotonicNanoseconds()
        for _ in 0..<count { sum &+= getppid() }
        let elapsed = monotonicNanoseconds() - start
        // The sum is used, so the calls are not optimized away.
        if sum == .min { progress("machine: \(sum)") }
        return Double(elapsed) / Double(count) / 1_000
    }

    /// µs a round trip of a byte between two threads pinned to `cpus`, over `trips` round trips.
    /// Each thread closes its own ends of the pipes when it ends, so one that fails ends the
    /// other's wait (a read at a closed pipe's end returns), and neither can hang the run.
    static func wakeUps(_ trips: Int, cpus: (Int, Int)) throws(BenchError) -> Double {
        var there: [Int32] = [-1, -1], back: [Int32] = [-1, -1]
        guard pipe(&there) == 0 else {
            throw BenchError("pipe(2) failed (errno \(errno)); check the open-file limit (ulimit -n)")
        }
        guard pipe(&back) == 0 else {
            let error = errno
            close(there[0])
            close(there[1])
            throw BenchError("pipe(2) failed (errno \(error)); check the open-file limit (ulimit -n)")
        }
        let (thereRead, thereWrite, backRead, backWrite) = (there[0], there[1], back[0], back[1])
        let echo = Party<Void>("machine-echo") { () throws(BenchError) in
            defer {
                close(thereRead)
                close(backWrite)
            }
            try pin(cpus.1)
            try relay(trips, from: thereRead, to: backWrite, sendingFirst: false, who: "echo")
        }
        let timer = Party<Double>("machine-timer") { () throws(BenchError) in
            defer {
                close(thereWrite)
                close(backRead)
            }
            try pin(cpus.0)
            let start = monotonicNanoseconds()
            try relay(trips, from: backRead, to: thereWrite, sendingFirst: true, who: "timing")
            return Double(monotonicNanoseconds() - start) / Double(trips) / 1_000
        }
        // Both threads' errors are told when both failed: one of them made the other's.
        var echoError: BenchError?
        do throws(BenchError) { try echo.join() } catch { echoError = error }
        do throws(BenchError) {
            return try timer.join()
        } catch {
            throw echoError.map { BenchError("\(error.description); the echo thread: \($0.description)") } ?? error
        }
    }

    /// `trips` bytes passed on: each read from `from` and written to `to` (with `sendingFirst`,
    /// written first, then read back), again when a signal interrupted a call.
    static func relay(_ trips: Int, from: Int32, to: Int32, sendingFirst: Bool, who: String) throws(BenchError) {
        var byte: UInt8 = 1
        func pass(_ sending: Bool) -> Bool {
            while true {
                let done = sending ? write(to, &byte, 1) : read(from, &byte, 1)
                if done == 1 { return true }
                if done < 0, errno == EINTR { continue }
                return false
            }
        }
        for _ in 0..<trips {
            guard pass(sendingFirst), pass(!sendingFirst) else {
                throw BenchError("the \(who) thread's pipe failed (errno \(errno))")
            }
        }
    }

    /// Pins the calling thread to `cpu`, or says why it could not.
    static func pin(_ cpu: Int) throws(BenchError) {
        if let error = CPUPlacement.pinThread(0, to: cpu) {
            throw BenchError("this thread could not be pinned to CPU \(cpu) (\(String(cString: strerror(error)))); run the benchmark where every CPU may be used (taskset -p $$)")
        }
    }

    /// "a virtual machine (...)" or "no hypervisor flag", from /proc/cpuinfo and the kernel's command line.
    static var virtualization: String {
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let flags = cpuinfo.split(separator: "\n").first { $0.hasPrefix("flags") } ?? ""
        guard flags.split(separator: " ").contains("hypervisor") else { return "no hypervisor flag in /proc/cpuinfo" }
        let commandLine = (try? String(contentsOfFile: "/proc/cmdline", encoding: .utf8)) ?? ""
        let nested = commandLine.split(separator: " ").first { $0.hasPrefix("nested_pvm") }
        return "a virtual machine (/proc/cpuinfo's hypervisor flag)" + (nested.map { ", its kernel started with \($0) (nested virtualization)" } ?? "")
    }
}
