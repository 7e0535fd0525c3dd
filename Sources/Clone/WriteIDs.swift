import Foundation
import Synchronization

/// The UUIDs an agent puts in its KVSETs: a random prefix drawn once per agent and a counter.
/// Unique like random UUIDs for CHP's purpose, without a read of /dev/urandom on every write
/// (Foundation's `UUID()` does one, and it was a quarter of the cost of a write).
final class WriteIDs: Sendable {
    private let prefix: UInt64
    private let counter = Atomic<UInt64>(0)
    /// The random prefix as 16 hex digits: the agent's name in write confirmations (`ACK/<id>`).
    let agentID: String

    init() {
        var random = SystemRandomNumberGenerator()
        prefix = random.next()
        let hex = String(prefix, radix: 16)
        agentID = String(repeating: "0", count: 16 - hex.count) + hex
    }

    func next() -> UUID {
        let count = counter.wrappingAdd(1, ordering: .relaxed).newValue
        let a = prefix.bigEndian, b = count.bigEndian
        return withUnsafeBytes(of: (a, b)) { bytes in
            UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                        bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
        }
    }
}
