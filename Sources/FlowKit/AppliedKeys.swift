/// A view model's recently applied idempotency keys, oldest first, with the version each one's
/// reply carried: one small array per session (a dictionary and its order took two, and the
/// dictionary's table some 120 bytes for its first key). A lookup reads them all, newest first;
/// there are at most `ViewModelRuntime.rememberedKeys`. Each key is kept with its hash, so a
/// lookup compares words and compares strings only where the hashes agree: a string comparison
/// is a call of some hundred instructions, and every intent looked twice through up to 64 keys.
struct AppliedKeys {
    private var entries: [(key: String, hash: Int, version: UInt64)] = []

    var count: Int { entries.count }

    subscript(key: String) -> UInt64? {
        let hash = key.hashValue
        return entries.last { $0.hash == hash && $0.key == key }?.version
    }

    /// Remembers `key` (newest), forgetting the oldest past `keeping`; a key remembered already
    /// moves to the end with its new version.
    mutating func record(_ key: String, version: UInt64, keeping limit: Int) {
        let hash = key.hashValue
        remove(key, hash: hash)
        entries.append((key, hash, version))
        if entries.count > limit { entries.removeFirst(entries.count - limit) }
    }

    mutating func forget(_ key: String) {
        remove(key, hash: key.hashValue)
    }

    private mutating func remove(_ key: String, hash: Int) {
        entries.removeAll { $0.hash == hash && $0.key == key }
    }
}
