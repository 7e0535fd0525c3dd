import Foundation
import Synchronization

/// How many times a thread of this process has been scheduled in: the third field of its
/// `/proc/<pid>/task/<tid>/schedstat`, about one a wake-up. Tests count a loop's wake-ups with it
/// (an idle loop that wakes ten times a second for nothing is a bug, not a speed).
public final class ThreadRuns: Sendable {
    private let path = Mutex<String?>(nil)

    public init() {}

    private init(path: String) {
        self.path.withLock { $0 = path }
    }

    /// Follows the thread of this process whose kernel id is `thread`.
    public convenience init(thread: Int) {
        self.init(path: "/proc/self/task/\(thread)/schedstat")
    }

    /// Follows the calling thread from now on.
    public func mark() {
        var buffer = [CChar](repeating: 0, count: 256)
        let length = readlink("/proc/thread-self", &buffer, buffer.count - 1)
        guard length > 0 else { return }
        let task = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        path.withLock { $0 = "/proc/\(task)/schedstat" }
    }

    /// The followed thread's `/proc` path, which names it in this process (nil before `mark`).
    public var task: String? { path.withLock { $0 } }

    /// Times scheduled in so far; nil before `mark`, or once the thread has ended.
    public func runs() -> Int? {
        guard let path = path.withLock({ $0 }), let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        return fields.count >= 3 ? Int(fields[2].trimmingCharacters(in: .whitespacesAndNewlines)) : nil
    }

    /// Times the followed thread gave up its CPU to wait (`voluntary_ctxt_switches` in its
    /// `status`): what a needless wake-up adds, where a busy machine's preemptions do not count.
    /// Nil before `mark`, or once the thread has ended.
    public func waits() -> Int? {
        guard let path = path.withLock({ $0 }),
              let status = try? String(contentsOfFile: String(path.dropLast("schedstat".count)) + "status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("voluntary_ctxt_switches:") {
            return line.split(whereSeparator: \.isWhitespace).last.flatMap { Int($0) }
        }
        return nil
    }

    /// This process's threads whose name (`comm`, at most 15 bytes) is `name`.
    public static func threads(named name: String) -> [ThreadRuns] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { task in
            let comm = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines)
            return comm == name ? ThreadRuns(path: "/proc/self/task/\(task)/schedstat") : nil
        }
    }

    /// A flag a thread raises when it ends, for a test to wait on without blocking its task.
    public final class Ended: Sendable {
        private let ended = Atomic<Bool>(false)

        public init() {}

        public func signal() { ended.store(true, ordering: .releasing) }

        /// True once signalled; false if `limit` passed first.
        public func wait(upTo limit: Duration) async -> Bool {
            let deadline = ContinuousClock.now + limit
            while !ended.load(ordering: .acquiring) {
                if ContinuousClock.now >= deadline { return false }
                try? await Task.sleep(for: .milliseconds(5))
            }
            return true
        }
    }
}
