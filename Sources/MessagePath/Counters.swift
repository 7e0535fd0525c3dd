import Synchronization

/// Named counters that one thread bumps and any thread reads as a snapshot.
public final class Counters: Sendable {
    private let values = Mutex<[String: Int]>([:])

    public init(names: [String] = []) {
        values.withLock { table in for name in names { table[name] = 0 } }
    }

    public func increment(_ name: String, by amount: Int = 1) {
        values.withLock { $0[name, default: 0] += amount }
    }

    /// Adds a batch of local counts at once: hot loops count in plain integers and flush here.
    public func add(_ deltas: [String: Int]) {
        values.withLock { table in for (name, delta) in deltas { table[name, default: 0] += delta } }
    }

    public func set(_ name: String, to value: Int) {
        values.withLock { $0[name] = value }
    }

    public subscript(name: String) -> Int {
        values.withLock { $0[name, default: 0] }
    }

    public var snapshot: [String: Int] {
        values.withLock { $0 }
    }
}
