import CRawZMQ
import Dispatch
import Foundation
import Synchronization

/// One participant of a benchmark (client, worker, broker, subscriber) on a thread of its own,
/// as the house rules want for anything that blocks in zmq_poll or zmq_recv.
final class Party<Result: Sendable>: Sendable {
    /// What the thread leaves behind for `join`.
    private final class Outcome: Sendable {
        let done = DispatchSemaphore(value: 0)
        let value = Mutex<Swift.Result<Result, BenchError>?>(nil)
    }

    private let outcome = Outcome()
    let name: String

    init(_ name: String, _ body: @escaping @Sendable () throws(BenchError) -> Result) {
        self.name = name
        let outcome = self.outcome
        let thread = Thread {
            // Named for perf and top (Foundation's Thread.name does not reach the kernel here).
            CRawZMQ_nameThread(String(name.prefix(15)))
            let result: Swift.Result<Result, BenchError>
            do throws(BenchError) { result = .success(try body()) } catch { result = .failure(error) }
            outcome.value.withLock { $0 = result }
            outcome.done.signal()
        }
        thread.name = name
        thread.start()
    }

    /// Waits for the thread to end and returns what it returned, or throws what it threw.
    func join() throws(BenchError) -> Result {
        outcome.done.wait()
        outcome.done.signal()
        switch outcome.value.withLock({ $0 })! {
        case .success(let value): return value
        case .failure(let error): throw error
        }
    }
}

/// Why a benchmark could not produce its figure; the text says what happened.
struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A flag one thread raises and others poll.
final class StopFlag: Sendable {
    private let raised = Atomic<Bool>(false)
    func raise() { raised.store(true, ordering: .releasing) }
    var isRaised: Bool { raised.load(ordering: .acquiring) }
}

/// A short private directory under /tmp for ipc:// endpoints (unix socket paths are limited to ~100 bytes).
final class ScratchDirectory: Sendable {
    let path: String

    init() throws(BenchError) {
        var template = Array("/tmp/fbb-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw BenchError("cannot create a scratch directory under /tmp (errno \(errno)); check that /tmp is writable")
        }
        path = String(cString: made)
    }

    func endpoint(_ name: String) -> String { "ipc://\(path)/\(name)" }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Progress for the person watching; stdout is kept for the table.
func progress(_ text: String) {
    FileHandle.standardError.write(Data(("· " + text + "\n").utf8))
}

/// A one-shot "ready" signal between a party and the thread that started it.
final class Gate: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    func open() { semaphore.signal() }
    func wait() { semaphore.wait() }
}
