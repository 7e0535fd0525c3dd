/// A coordinator's name, e.g. `auth`: the `<coordinator>` of the service `coord.<coordinator>`
/// and of its instance records `/c/<coordinator>/<session>`. Same rules as a screen name.
public struct CoordinatorName: Hashable, Sendable, Comparable, CustomStringConvertible {
    public static let maximumBytes = ServiceName.maximumBytes - "coord.".utf8.count

    public let text: String

    public init(_ text: String) throws(NameError) {
        try NameRules.checkSegment(text, what: "coordinator name", limit: Self.maximumBytes, lowercase: true)
        self.text = text
    }

    /// The MDP service the coordinator serves.
    public var service: String { "coord.\(text)" }

    public var description: String { text }

    public static func < (lhs: CoordinatorName, rhs: CoordinatorName) -> Bool { lhs.text < rhs.text }
}
