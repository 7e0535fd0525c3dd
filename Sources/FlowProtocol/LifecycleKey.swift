/// The idempotency keys of the navigation owner's `appear`, `reset` and `close` to view models:
/// `<action>/<session>/<screen id or kind>/<navigation version>`, the same for every try and
/// every incarnation of the owner. The navigation carries its top screen's `appear` key
/// (`Navigation.top_appear_key`), and a view model's state the key of the last `appear` it ran
/// (`ViewState.appear_key`).
public enum LifecycleKey {
    public static func make(action: String, session: SessionID, target: String, version: UInt64) -> String {
        "\(action)/\(session)/\(target)/\(version)"
    }

    /// The navigation version an `appear` key names (its last part); nil for any other text.
    public static func version(ofAppear key: String) -> UInt64? {
        guard key.hasPrefix("appear/"), let last = key.split(separator: "/").last else { return nil }
        return UInt64(last)
    }
}
