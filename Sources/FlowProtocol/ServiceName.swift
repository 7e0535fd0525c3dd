/// A Majordomo service name: 1 to 64 characters from `[a-z0-9._-]`.
///
/// Conventions: `mmi.*` belongs to the broker (8/MMI), `vm.<screen>` to view-model workers,
/// `coord.<name>` to coordinators, `flowbus.*` to Flowbus itself (`flowbus.echo` is the example).
public struct ServiceName: Hashable, Sendable, Comparable, CustomStringConvertible {
    public static let maximumBytes = 64
    public static let managementPrefix = "mmi."
    public static let viewModelPrefix = "vm."
    public static let coordinatorPrefix = "coord."
    public static let flowbusPrefix = "flowbus."

    /// The example plugin's service.
    public static let echo = ServiceName(unchecked: "flowbus.echo")
    /// 8/MMI's service lookup: reply "200" when a worker serves the name in the body, else "404".
    public static let mmiService = ServiceName(unchecked: "mmi.service")

    public let text: String

    public init(_ text: String) throws(NameError) {
        try NameRules.check(
            text, what: "service name", limit: Self.maximumBytes,
            allowed: NameRules.isLowercaseByte, allowedText: NameRules.lowercaseCharacters
        )
        self.text = text
    }

    private init(unchecked text: String) {
        self.text = text
    }

    /// `vm.<screen>`: always valid, since screen names are short enough.
    public static func viewModel(_ screen: ScreenName) -> ServiceName {
        ServiceName(unchecked: viewModelPrefix + screen.text)
    }

    /// `coord.<name>`, e.g. `coord.auth`.
    public static func coordinator(_ name: String) throws(NameError) -> ServiceName {
        try ServiceName(coordinatorPrefix + name)
    }

    /// Which convention the name follows.
    public enum Role: Hashable, Sendable {
        case management
        case viewModel(ScreenName)
        case coordinator(String)
        case flowbus
        case other
    }

    public var role: Role {
        if text.hasPrefix(Self.managementPrefix) { return .management }
        if text.hasPrefix(Self.viewModelPrefix), let screen = try? ScreenName(String(text.dropFirst(Self.viewModelPrefix.count))) {
            return .viewModel(screen)
        }
        if text.hasPrefix(Self.coordinatorPrefix), text.count > Self.coordinatorPrefix.count {
            return .coordinator(String(text.dropFirst(Self.coordinatorPrefix.count)))
        }
        if text.hasPrefix(Self.flowbusPrefix) { return .flowbus }
        return .other
    }

    /// The frame as MDP carries it.
    public var bytes: [UInt8] { Array(text.utf8) }

    public var description: String { text }

    public static func < (lhs: ServiceName, rhs: ServiceName) -> Bool { lhs.text < rhs.text }
}
