/// A screen's name, e.g. `checkout`: the `<screen>` of `/s/<session>/vm/<screen>`,
/// `/v/<screen>/<session>` and of the service `vm.<screen>`.
/// 1 to 61 characters from `[a-z0-9._-]`, lowercase so that `vm.<screen>` is a valid service name.
public struct ScreenName: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// 64 (the service name limit) minus the 3 bytes of `vm.`.
    public static let maximumBytes = ServiceName.maximumBytes - ServiceName.viewModelPrefix.utf8.count

    public let text: String

    public init(_ text: String) throws(NameError) {
        try NameRules.checkSegment(text, what: "screen name", limit: Self.maximumBytes, lowercase: true)
        self.text = text
    }

    public var description: String { text }

    public static func < (lhs: ScreenName, rhs: ScreenName) -> Bool { lhs.text < rhs.text }
}
