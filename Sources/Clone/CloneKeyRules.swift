import MessagePath

/// Flowbus's rules for keys and subtrees, on top of 12/CHP's "0MQ string".
public enum CloneKeyRules {
    public static let maximumKeyBytes = 255
    /// Command names that frame 0 of a message may hold; never keys.
    public static let reservedKeys: Set<String> = ["HUGZ", "KTHXBAI", "ICANHAZ?", "KVSETS"]

    /// Checks a key: printable ASCII, starting with `/`, at most 255 bytes, not a command name.
    public static func validate(key bytes: some Collection<UInt8>) throws(CloneDecodeError) {
        if bytes.withContiguousStorageIfAvailable({ isValidKey(UnsafeRawBufferPointer($0)) }) == true { return }
        guard !bytes.isEmpty else { throw .invalidKey("the key is empty") }
        guard bytes.count <= maximumKeyBytes else { throw .invalidKey("the key has \(bytes.count) bytes") }
        if bytes.first != UInt8(ascii: "/") {
            let text = String(decoding: bytes, as: UTF8.self)
            if reservedKeys.contains(text) { throw .reservedKey(text) }
            throw .invalidKey("'\(bytes.printable)' does not start with '/'")
        }
        for byte in bytes where byte < 0x21 || byte > 0x7E {
            throw .invalidKey("'\(bytes.printable)' holds a byte that is not printable ASCII (0x\(String(byte, radix: 16)))")
        }
    }

    /// The same check of a key read where the socket holds it.
    @inline(__always)
    public static func validate(key bytes: UnsafeRawBufferPointer) throws(CloneDecodeError) {
        if isValidKey(bytes) { return }
        try validate(key: bytes[...])
    }

    /// Whether a key passes `validate`. Every update a process takes has its key checked: a good
    /// one is read eight bytes at a time, and only a key that fails is looked at again, byte by
    /// byte, for the error.
    @inline(__always)
    static func isValidKey(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count <= maximumKeyBytes && bytes.first == UInt8(ascii: "/") && isPrintableASCII(bytes)
    }

    /// Whether every byte is printable ASCII other than the space (0x21–0x7E), eight at a time:
    /// a word holds a byte under 0x21 when subtracting 0x21 from each byte borrows into a byte's
    /// high bit that was clear, and one over 0x7E when adding 1 to each sets a high bit (or it
    /// was set). Either test may flag a wrong byte of the word, never a clean word.
    @inline(__always)
    static func isPrintableASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        @inline(__always) func clean(_ word: UInt64) -> Bool {
            let below = (word &- ones &* 0x21) & ~word & highs
            let above = ((word &+ ones) | word) & highs
            return below | above == 0
        }
        // A short key is padded with '!', which passes.
        return KeyWords.forEach(in: bytes, padding: UInt8(ascii: "!"), clean)
    }

    public static func validate(key: String) throws(CloneDecodeError) {
        // A native string's bytes, read in place: walking its UTF8View retains the string at
        // every step (some 480 instructions for a 12-byte key, on every write).
        var key = key
        let failure = key.withUTF8 { bytes -> CloneDecodeError? in
            do throws(CloneDecodeError) {
                try validate(key: UnsafeRawBufferPointer(bytes))
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw failure }
    }

    /// Checks a subtree: empty, or `/segment/.../` with non-empty printable segments.
    public static func validate(subtree bytes: some BidirectionalCollection<UInt8>) throws(CloneDecodeError) {
        if bytes.isEmpty { return }
        guard bytes.count <= maximumKeyBytes else { throw .invalidSubtree("it has \(bytes.count) bytes") }
        guard bytes.count >= 3, bytes.first == UInt8(ascii: "/"), bytes.last == UInt8(ascii: "/") else {
            throw .invalidSubtree("'\(bytes.printable)' does not start and end with '/' around a segment")
        }
        var previous: UInt8 = 0
        for byte in bytes {
            guard byte > 0x20 && byte < 0x7F else {
                throw .invalidSubtree("'\(bytes.printable)' holds a byte that is not printable ASCII")
            }
            if byte == UInt8(ascii: "/") && previous == UInt8(ascii: "/") {
                throw .invalidSubtree("'\(bytes.printable)' has an empty segment")
            }
            previous = byte
        }
    }

    public static func validate(subtree: String) throws(CloneDecodeError) {
        try validate(subtree: subtree.utf8)
    }

    /// The session subtree `/s/<id>/` a key lies in, as the length of that prefix; nil for other keys.
    @inline(__always)
    static func sessionPrefixLength(_ key: UnsafeRawBufferPointer) -> Int? {
        guard key.count > 4, key[0] == UInt8(ascii: "/"), key[1] == UInt8(ascii: "s"), key[2] == UInt8(ascii: "/") else {
            return nil
        }
        var index = 3
        while index < key.count {
            if key[index] == UInt8(ascii: "/") { return index > 3 ? index + 1 : nil }
            index += 1
        }
        return nil
    }

    /// The session subtree `/s/<id>/` of a key, or nil when the key is not in a session.
    public static func sessionSubtree(of key: String) -> String? {
        var utf8 = Array(key.utf8)
        let length = utf8.withUnsafeBytes { sessionPrefixLength($0) }
        guard let length else { return nil }
        utf8.removeSubrange(length...)
        return String(decoding: utf8, as: UTF8.self)
    }
}
