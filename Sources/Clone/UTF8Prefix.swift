import Glibc

extension String {
    /// Whether the text's UTF-8 begins with `prefix`: one `memcmp` on the string's own bytes,
    /// where `utf8.starts(with:)` walks both through generic iterators (about 45 instructions a
    /// byte: a Clone agent asked it of every update's key, 3 % of its work).
    func utf8HasPrefix(_ prefix: [UInt8]) -> Bool {
        if prefix.isEmpty { return true }
        if let answer = utf8.withContiguousStorageIfAvailable({ bytes -> Bool in
            bytes.count >= prefix.count && prefix.withUnsafeBufferPointer { memcmp(bytes.baseAddress!, $0.baseAddress!, prefix.count) == 0 }
        }) {
            return answer
        }
        return utf8.starts(with: prefix)
    }
}
