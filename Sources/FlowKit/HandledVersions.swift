import FlowProtocol

/// The screen version a coordinator last acted on, for each session and each screen it watches
/// (`Coordinator.watchedScreens`): one small array per session, in the order of the watched
/// screens. A dictionary of three screens per session was some 180 bytes of heap in every open
/// session; this is 56. A coordinator that watches no screen keeps nothing.
struct HandledVersions {
    private var versions: [SessionID: [UInt64]] = [:]

    /// The session's versions, from a table by screen (its record, or what the map holds).
    mutating func set(_ session: SessionID, _ table: [String: UInt64], screens: [String]) {
        guard !screens.isEmpty else { return }
        versions[session] = screens.map { table[$0] ?? 0 }
    }

    /// The session's versions as a table by screen (for its record); nil when it has none.
    func table(of session: SessionID, screens: [String]) -> [String: UInt64]? {
        guard let held = versions[session] else { return nil }
        return Dictionary(uniqueKeysWithValues: zip(screens, held))
    }

    func version(of session: SessionID, screen index: Int) -> UInt64 {
        versions[session].map { index < $0.count ? $0[index] : 0 } ?? 0
    }

    mutating func setVersion(_ version: UInt64, of session: SessionID, screen index: Int, screens: [String]) {
        guard index < screens.count else { return }
        versions[session, default: [UInt64](repeating: 0, count: screens.count)][index] = version
    }

    mutating func remove(_ session: SessionID) {
        versions[session] = nil
    }
}
