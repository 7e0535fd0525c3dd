/// The schema version carried in every `Envelope.version`.
///
/// The rule for receivers (Protocols/README.md, "Versions"): a version above `current` is
/// rejected with `UNKNOWN_VERSION` where a reply is possible, and otherwise ignored and counted;
/// version 0 means the writer never set it and is treated as malformed.
public enum WireVersion {
    /// The version this build writes and the newest it reads.
    public static let current: UInt32 = 1
    /// The oldest version this build still reads.
    public static let oldestSupported: UInt32 = 1

    /// Whether a receiver built from this package understands `version`.
    public static func isSupported(_ version: UInt32) -> Bool {
        (oldestSupported...current).contains(version)
    }
}
