import Dispatch
import Foundation
import Synchronization

/// Reads a run.json on every core: a run of a million events is mostly its sessions, which
/// `JSONDecoder` takes one at a time (some 11 MB/s on a two-core virtual machine). The sessions
/// array is found with a scan that only tracks strings and nesting, cut into one slice per core,
/// and each slice decoded on its own thread; the rest of the run (plan, decisions, processes) is
/// decoded with the array left empty. Anything the scan does not expect (not an object, no
/// `sessions` array, a slice that does not decode) falls back to one `JSONDecoder` pass over
/// the whole file, which says what is wrong with it.
extension ChaosRun {
    public static func decode(from data: Data, slices: Int = ProcessInfo.processInfo.activeProcessorCount) throws -> ChaosRun {
        if slices > 1, let run = try? decodeInSlices(data, slices: slices) { return run }
        return try JSONDecoder().decode(ChaosRun.self, from: data)
    }

    /// Nil when the file is not laid out as expected (the caller decodes it whole).
    static func decodeInSlices(_ data: Data, slices: Int) throws -> ChaosRun? {
        let bytes = [UInt8](data)
        guard let array = RunJSONScan.topLevelValue(named: "sessions", in: bytes),
              let elements = RunJSONScan.arrayElements(bytes, array) else { return nil }
        var rest = Data(bytes[..<array.lowerBound])
        rest.append(contentsOf: Array("[]".utf8))
        rest.append(contentsOf: bytes[array.upperBound...])
        var run = try JSONDecoder().decode(ChaosRun.self, from: rest)
        guard !elements.isEmpty else { return run }
        let count = min(slices, elements.count)
        let decoded = Mutex<[Result<[ChaosSessionRecord], any Error>?]>(Array(repeating: nil, count: count))
        DispatchQueue.concurrentPerform(iterations: count) { slice in
            let range = (elements.count * slice / count)..<(elements.count * (slice + 1) / count)
            var json = Data([UInt8(ascii: "[")])
            for (offset, element) in elements[range].enumerated() {
                if offset > 0 { json.append(UInt8(ascii: ",")) }
                json.append(contentsOf: bytes[element])
            }
            json.append(UInt8(ascii: "]"))
            let result = Result { try JSONDecoder().decode([ChaosSessionRecord].self, from: json) }
            decoded.withLock { $0[slice] = result }
        }
        var sessions: [ChaosSessionRecord] = []
        sessions.reserveCapacity(elements.count)
        let results = decoded.withLock { $0 }
        for result in results {
            guard case .success(let part) = result else { return nil }
            sessions += part
        }
        run.sessions = sessions
        return run
    }
}

/// Just enough of JSON to find where values start and end: strings (with their escapes),
/// nesting, commas and colons. It does not check what it skips; `JSONDecoder` does that.
enum RunJSONScan {
    /// The byte range of the value of `name` in the top-level object; nil when the text is not an
    /// object or has no such member.
    static func topLevelValue(named name: String, in bytes: [UInt8]) -> Range<Int>? {
        var index = skipSpace(bytes, 0)
        guard index < bytes.count, bytes[index] == UInt8(ascii: "{") else { return nil }
        index += 1
        let wanted = Array(name.utf8)
        while true {
            index = skipSpace(bytes, index)
            guard index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: "}") { return nil }
            guard bytes[index] == UInt8(ascii: "\""), let keyEnd = stringEnd(bytes, index) else { return nil }
            // Member names with escapes are compared as written: `sessions` has none.
            let key = bytes[(index + 1)..<(keyEnd - 1)]
            index = skipSpace(bytes, keyEnd)
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
            index = skipSpace(bytes, index + 1)
            guard let valueEnd = valueEnd(bytes, index) else { return nil }
            if key.elementsEqual(wanted) { return index..<valueEnd }
            index = skipSpace(bytes, valueEnd)
            guard index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            return nil
        }
    }

    /// The byte ranges of an array's elements; nil when `range` is not an array.
    static func arrayElements(_ bytes: [UInt8], _ range: Range<Int>) -> [Range<Int>]? {
        guard !range.isEmpty, bytes[range.lowerBound] == UInt8(ascii: "["), bytes[range.upperBound - 1] == UInt8(ascii: "]") else { return nil }
        var elements: [Range<Int>] = []
        var index = skipSpace(bytes, range.lowerBound + 1)
        if index < range.upperBound, bytes[index] == UInt8(ascii: "]") { return index + 1 == range.upperBound ? [] : nil }
        while index < range.upperBound {
            guard let end = valueEnd(bytes, index), end < range.upperBound else { return nil }
            elements.append(index..<end)
            index = skipSpace(bytes, end)
            guard index < range.upperBound else { return nil }
            if bytes[index] == UInt8(ascii: "]") { return index + 1 == range.upperBound ? elements : nil }
            guard bytes[index] == UInt8(ascii: ",") else { return nil }
            index = skipSpace(bytes, index + 1)
        }
        return nil
    }

    /// Where the value starting at `start` ends (one past its last byte); nil when it does not.
    static func valueEnd(_ bytes: [UInt8], _ start: Int) -> Int? {
        guard start < bytes.count else { return nil }
        switch bytes[start] {
        case UInt8(ascii: "\""):
            return stringEnd(bytes, start)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            var index = start
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "\""):
                    guard let end = stringEnd(bytes, index) else { return nil }
                    index = end
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return index + 1 }
                default:
                    break
                }
                index += 1
            }
            return nil
        default:
            // A number, true, false or null: up to the next delimiter.
            var index = start
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x09, 0x0A, 0x0D:
                    return index > start ? index : nil
                default:
                    index += 1
                }
            }
            return index > start ? index : nil
        }
    }

    /// One past the closing quote of the string whose opening quote is at `start`.
    static func stringEnd(_ bytes: [UInt8], _ start: Int) -> Int? {
        var index = start + 1
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\\"): index += 2
            case UInt8(ascii: "\""): return index + 1
            default: index += 1
            }
        }
        return nil
    }

    static func skipSpace(_ bytes: [UInt8], _ start: Int) -> Int {
        var index = start
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 || bytes[index] == 0x0A || bytes[index] == 0x0D {
            index += 1
        }
        return index
    }
}
