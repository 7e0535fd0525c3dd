import Foundation
import Logging
import MessagePath

extension CloneServerLoop {
    /// The value `stored` holds under `key`, unpacked if it is packed.
    func value(of stored: Stored, key: [UInt8]) -> [UInt8] {
        guard let value = packedValues.value(of: stored, key: key, deltas: deltas) else {
            // Only this loop packs, against references it never drops: a delta it cannot read is
            // a bug, never input. Logged rather than trapped; the key reads as deleted.
            logger.error("clone server: a packed value could not be unpacked", metadata: ["flowbus.service": "clone"])
            return []
        }
        return value
    }

    /// Packs the values that have stayed unchanged long enough; at most `limit` keys a pass, so
    /// the loop is never away from its sockets for long (the rest are due at once, next pass).
    /// The second copy of a view model's state shares the first one's delta (`lastPacked`) when
    /// both keys have the same name (`/v/<screen>/<id>`, `/s/<id>/vm/<screen>`).
    func packDue(now: MonotonicTime, limit: Int = 256) {
        guard let after = configuration.packValuesAfter else { return }
        packedValues.packDue(in: &store, now: now, after: after, limit: limit) { value, key in
            let name = ValueDeltas.name(of: key.bytes)
            if let lastPacked, sameBytes(value, lastPacked.value), name.elementsEqual(lastPacked.name) { return lastPacked.delta }
            guard let delta = deltas.pack(value, key: key.bytes) else { return nil }
            lastPacked = (value, name, delta)
            return delta
        }
    }
}
