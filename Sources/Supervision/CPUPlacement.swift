import CFlowHost
import Glibc

/// Where the host and its plugin processes run (`flowbus up --placement`).
public enum Placement: String, Sendable {
    /// `pinned` on a host that may use two CPUs, `shared` on any other (`automatic`): `flowbus
    /// up`'s default.
    case auto
    /// The kernel places every thread of every process, and moves them as it likes.
    case shared
    /// The host's threads on one CPU the host may use, and each plugin process, with every
    /// thread it makes, on one CPU, the next ones in turn (`CPUPlacement`). A step's threads then
    /// hand work to each other on one CPU instead of waking another: less CPU and latency per
    /// message on a small or virtual machine, at the price of no plugin using more than one CPU.
    case pinned

    /// What `auto` is on a host that may use `count` CPUs: pinned on two, where it was measured
    /// to take 12–23 % off a step's time and CPU (the 2-vCPU VM of Benchmarks/JOURNAL.md, with
    /// every test passing pinned); shared on one, where there is nothing to place, and on more,
    /// where a busy host or a plugin that computes much may want more than one CPU.
    public static func automatic(allowedCPUs count: Int) -> Placement {
        count == 2 ? .pinned : .shared
    }
}

/// The CPUs of pinned placement: the host on the first, plugin instances in manifest order
/// (replicas in turn) on the following ones, wrapping around. A host starts from a CPU of its
/// own (`starting(at:)`), so several hosts on one machine do not all crowd the first one.
public struct CPUPlacement: Sendable, Equatable {
    /// The CPUs the host may use, the host's first; never empty.
    public let cpus: [Int]

    /// Nil when `cpus` is empty.
    public init?(cpus: [Int]) {
        guard !cpus.isEmpty else { return nil }
        self.cpus = cpus
    }

    /// The CPUs this process may use now (its affinity: `taskset`, a cgroup's cpuset), or nil when
    /// the kernel does not say.
    public static func ofThisProcess() -> CPUPlacement? {
        allowedCPUs(of: 0).flatMap { CPUPlacement(cpus: $0) }
    }

    public var hostCPU: Int { cpus[0] }

    /// The same CPUs, the host's being the one `index` places (modulo their count) and the
    /// plugins' following it.
    public func starting(at index: Int) -> CPUPlacement {
        let first = ((index % cpus.count) + cpus.count) % cpus.count
        return CPUPlacement(rotated: Array(cpus[first...] + cpus[..<first]))
    }

    private init(rotated cpus: [Int]) {
        self.cpus = cpus
    }

    /// The CPU of the `index`-th plugin instance started (0-based, in manifest order).
    public func cpu(ofInstance index: Int) -> Int {
        cpus[(index + 1) % cpus.count]
    }

    /// Pins every thread of this process to `cpu`; the errno when one could not be.
    public static func pinThisProcess(to cpu: Int) -> Int32? {
        let error = cflowhost_pin_process(Int32(cpu))
        return error == 0 ? nil : error
    }

    /// Pins one thread of this process (its kernel id; 0: the calling one) to `cpu`; the errno when
    /// it could not be.
    public static func pinThread(_ tid: Int, to cpu: Int) -> Int32? {
        let error = cflowhost_pin_thread(pid_t(tid), Int32(cpu))
        return error == 0 ? nil : error
    }

    /// The CPUs `pid` may run on (0: the calling thread), ascending; nil when it cannot be read
    /// (the process is gone).
    public static func allowedCPUs(of pid: pid_t) -> [Int]? {
        var cpus = [Int32](repeating: 0, count: 1024)
        let count = cflowhost_allowed_cpus(pid, &cpus, Int32(cpus.count))
        guard count > 0 else { return nil }
        return cpus.prefix(Int(min(count, Int32(cpus.count)))).map(Int.init)
    }
}
