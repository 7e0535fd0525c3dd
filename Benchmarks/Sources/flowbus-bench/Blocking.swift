import Dispatch
import Synchronization

/// Runs async FlowClient code from the synchronous harness: the calling thread waits on a
/// semaphore (it is never one of the cooperative pool's threads) while `body` runs in a Task.
func blocking<Value: Sendable>(_ body: @escaping @Sendable () async throws -> Value) throws(BenchError) -> Value {
    let done = DispatchSemaphore(value: 0)
    let outcome = Mutex<Result<Value, BenchError>?>(nil)
    Task {
        let result: Result<Value, BenchError>
        do {
            result = .success(try await body())
        } catch let error as BenchError {
            result = .failure(error)
        } catch {
            result = .failure(BenchError("\(error)"))
        }
        outcome.withLock { $0 = result }
        done.signal()
    }
    done.wait()
    return try outcome.withLock { $0! }.get()
}
