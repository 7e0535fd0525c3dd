/// The server's keys grouped by their first two segments (`/s/<id>/`, `/v/<screen>/`,
/// `/c/<name>/`), and the groups by their first segment: a snapshot of one session reads that
/// session's keys and no other, however many sessions the map holds.
struct SubtreeIndex {
    private var groups: [KeyBytes: Set<KeyBytes>] = [:]
    private var groupsByTop: [KeyBytes: Set<KeyBytes>] = [:]

    /// The prefix of `bytes` through its `count`-th `/`, or nil when it has fewer.
    static func prefix(_ bytes: [UInt8], throughSlash count: Int) -> [UInt8]? {
        var seen = 0
        for (index, byte) in bytes.enumerated() where byte == UInt8(ascii: "/") {
            seen += 1
            if seen == count { return Array(bytes[...index]) }
        }
        return nil
    }

    /// `/s/<id>/` for `/s/<id>/nav`; `/schema/` for `/schema/<app>`; empty for a key of one segment.
    static func group(of key: [UInt8]) -> [UInt8] {
        prefix(key, throughSlash: 3) ?? prefix(key, throughSlash: 2) ?? []
    }

    static func top(of group: [UInt8]) -> [UInt8] {
        prefix(group, throughSlash: 2) ?? []
    }

    /// `group`: the key's group when the caller has it already (its array is then shared).
    mutating func insert(_ key: KeyBytes, group known: KeyBytes? = nil) {
        let group = known ?? KeyBytes(Self.group(of: key.bytes))
        if groups[group, default: []].insert(key).inserted, groups[group]?.count == 1 {
            groupsByTop[KeyBytes(Self.top(of: group.bytes)), default: []].insert(group)
        }
    }

    mutating func remove(_ key: KeyBytes) {
        let group = KeyBytes(Self.group(of: key.bytes))
        guard groups[group]?.remove(key) != nil, groups[group]?.isEmpty == true else { return }
        groups[group] = nil
        let top = KeyBytes(Self.top(of: group.bytes))
        groupsByTop[top]?.remove(group)
        if groupsByTop[top]?.isEmpty == true { groupsByTop[top] = nil }
    }

    /// How many keys the group (`/s/<id>/`, the prefix through the third `/`) holds.
    func count(inGroup group: [UInt8]) -> Int {
        groups[KeyBytes(group)]?.count ?? 0
    }

    /// The keys under `subtree` (a validated subtree: empty, or `/…/`), or nil for the whole map.
    func keys(under subtree: [UInt8]) -> [KeyBytes]? {
        guard !subtree.isEmpty else { return nil }
        if let group = Self.prefix(subtree, throughSlash: 3) {
            let members = groups[KeyBytes(group)] ?? []
            return group.count == subtree.count ? Array(members) : members.filter { $0.bytes.starts(with: subtree) }
        }
        // One segment (`/s/`): every group under it.
        var keys: [KeyBytes] = []
        for group in groupsByTop[KeyBytes(subtree)] ?? [] {
            keys.append(contentsOf: groups[group] ?? [])
        }
        return keys
    }
}
