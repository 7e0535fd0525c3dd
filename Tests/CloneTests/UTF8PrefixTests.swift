@testable import Clone
import Foundation
import Testing

@Suite("UTF-8 prefixes")
struct UTF8PrefixTests {
    @Test(arguments: [
        ("/s/abc/nav", "/s/", true), ("/s/abc/nav", "/s/abc/nav", true), ("/s/abc/nav", "", true),
        ("/s/abc/nav", "/s/abd", false), ("/s/", "/s/abc/", false), ("", "/", false),
        ("/s/Ω/x", "/s/Ω", true), ("/s/Ω/x", "/s/Ψ", false),
    ])
    func agreesWithStartsWith(text: String, prefix: String, expected: Bool) {
        let bytes = Array(prefix.utf8)
        #expect(text.utf8HasPrefix(bytes) == expected)
        #expect(text.utf8.starts(with: bytes) == expected)
        // A bridged or otherwise non-contiguous string takes the slow path to the same answer.
        let bridged = NSString(string: text) as String
        #expect(bridged.utf8HasPrefix(bytes) == text.utf8.starts(with: bytes))
    }
}
