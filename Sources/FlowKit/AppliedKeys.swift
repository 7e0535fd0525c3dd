/// A view model's recently applied idempotency keys, oldest first, with the version each one's
/// reply carried: one small array per session (a dictionary and its order took two, and the
/// dictionary's table some 120 bytes for its first key). A lookup reads them all, newest first;
/// there are at most `ViewModelRuntime.rememberedKeys`.
struct AppliedKeys {
    private var entries: [(key: String, version: UInt64)] = []

    var count: Int { entries.count }

    subscript(key: String) -> UInt64? {
        entries.last { $0.key == key }?.version
    }

    /// Remembers `key` (newest), forgetting the oldest past `keeping`; a key remembered already
    /// moves to the end with its new version.
    mutating func record(_ key: String, version: UInt64, keeping limit: Int) {
        forget(key)
        entries.append((key, version))
        if entries.count > limit { entries.removeFirst(entries.count - limit) }
    }

    mutating func forget(_ key: String) {
        entries.removeAll { $0.key == key }
    }
}
