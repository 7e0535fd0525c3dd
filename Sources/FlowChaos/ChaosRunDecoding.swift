import Dispatch
import Foundation
import Synchronization

/// Reads a run.json on every core: a run of a million events is mostly its sessions, which
/// `JSONDecoder` takes one at a time (some 11 MB/s on a two-core virtual machine). The sessions
/// array is found with a scan that only tracks strings and nesting, cut into one slice per core,
/// and each slice read on its own thread by `RunJSONReader`, straight from the file's bytes into
/// the records; the rest of the run (plan, decisions, processes) is decoded by `JSONDecoder` with
/// the array left empty. A slice the reader does not expect goes through `JSONDecoder`; anything
/// the scan does not expect (not an object, no `sessions` array, a slice that `JSONDecoder` does
/// not decode either) falls back to one `JSONDecoder` pass over the whole file, which says what
/// is wrong with it.
extension ChaosRun {
    public static func decode(from data: Data, slices: Int = ProcessInfo.processInfo.activeProcessorCount) throws -> ChaosRun {
        if let run = try? decodeInSlices(data, slices: max(1, slices)) { return run }
        do {
            return try JSONDecoder().decode(ChaosRun.self, from: data)
        } catch let error as DecodingError {
            // JSONDecoder on Linux says only "not valid JSON" for a bad byte or number: where the
            // reader stopped says which and where.
            guard let found = diagnosis(data) else { throw error }
            throw ChaosRunDecodingError(description: found)
        }
    }

    /// run.json as it was read before `RunJSONReader`: the sessions on every core, each slice by
    /// `JSONDecoder`. For the benchmark, which times it beside `decode` in the same run.
    @_spi(Benchmarks) public static func decodeWithJSONDecoderOnEveryCore(
        from data: Data, slices: Int = ProcessInfo.processInfo.activeProcessorCount
    ) throws -> ChaosRun {
        if let run = try? decodeInSlices(data, slices: max(1, slices), reader: false) { return run }
        return try JSONDecoder().decode(ChaosRun.self, from: data)
    }

    /// Where run.json stops being a run, for people: the first thing `RunJSONReader` does not
    /// accept, as a byte, line and column; nil when it finds nothing (JSONDecoder's error says it).
    static func diagnosis(_ data: Data) -> String? {
        data.withUnsafeBytes { raw -> String? in
            let bytes = raw.bindMemory(to: UInt8.self)
            func located(_ problem: RunJSONReader.Unexpected, _ context: String) -> String {
                let before = bytes[..<min(problem.offset, bytes.count)]
                let line = before.reduce(1) { $1 == 0x0A ? $0 + 1 : $0 }
                let column = problem.offset - ((before.lastIndex(of: 0x0A) ?? -1) + 1) + 1
                return "\(problem.what) at byte \(problem.offset) (line \(line), column \(column))\(context)"
            }
            var reader = RunJSONReader(bytes, 0..<bytes.count)
            do throws(RunJSONReader.Unexpected) {
                try reader.skipValue()
                guard reader.atEnd else { throw reader.unexpected("text after the run's object") }
            } catch {
                return located(error, "")
            }
            guard let array = RunJSONScan.topLevelValue(named: "sessions", in: bytes),
                  let elements = RunJSONScan.arrayElements(bytes, array) else { return nil }
            for (index, element) in elements.enumerated() {
                do throws(RunJSONReader.Unexpected) {
                    _ = try ChaosSessionRecord(readingAll: element, of: bytes)
                } catch {
                    return located(error, ", in session \(index + 1) of \(elements.count)")
                }
            }
            return nil
        }
    }

    /// Nil when the file is not laid out as expected (the caller decodes it whole).
    /// `reader: false` decodes every slice with `JSONDecoder`, as before the reader (for the
    /// tests, which compare the two, and the benchmark's baseline).
    static func decodeInSlices(_ data: Data, slices: Int, reader: Bool = true) throws -> ChaosRun? {
        try data.withUnsafeBytes { raw throws -> ChaosRun? in
            let bytes = raw.bindMemory(to: UInt8.self)
            guard let array = RunJSONScan.topLevelValue(named: "sessions", in: bytes),
                  let elements = RunJSONScan.arrayElements(bytes, array) else { return nil }
            var rest = Data(UnsafeRawBufferPointer(rebasing: raw[..<array.lowerBound]))
            rest.append(contentsOf: Array("[]".utf8))
            rest.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[array.upperBound...]))
            var run = try JSONDecoder().decode(ChaosRun.self, from: rest)
            guard !elements.isEmpty else { return run }
            let count = min(slices, elements.count)
            let decoded = Mutex<[Result<[ChaosSessionRecord], any Error>?]>(Array(repeating: nil, count: count))
            // The threads only read the bytes, which outlive them (`concurrentPerform` returns once all are done).
            nonisolated(unsafe) let shared = bytes
            let work: @Sendable (Int) -> Void = { slice in
                let part = elements[(elements.count * slice / count)..<(elements.count * (slice + 1) / count)]
                let result = reader ? Self.read(part, in: shared) : Self.decodeWithJSONDecoder(part, in: shared)
                decoded.withLock { $0[slice] = result }
            }
            if count == 1 {
                work(0)
            } else {
                DispatchQueue.concurrentPerform(iterations: count, execute: work)
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

    /// One slice's sessions by `RunJSONReader`; by `JSONDecoder` when the reader meets what it
    /// does not expect.
    static func read(_ elements: ArraySlice<Range<Int>>, in bytes: UnsafeBufferPointer<UInt8>) -> Result<[ChaosSessionRecord], any Error> {
        do throws(RunJSONReader.Unexpected) {
            var sessions: [ChaosSessionRecord] = []
            sessions.reserveCapacity(elements.count)
            for element in elements {
                sessions.append(try ChaosSessionRecord(readingAll: element, of: bytes))
            }
            return .success(sessions)
        } catch {
            return decodeWithJSONDecoder(elements, in: bytes)
        }
    }

    static func decodeWithJSONDecoder(_ elements: ArraySlice<Range<Int>>, in bytes: UnsafeBufferPointer<UInt8>) -> Result<[ChaosSessionRecord], any Error> {
        var json = Data([UInt8(ascii: "[")])
        for (offset, element) in elements.enumerated() {
            if offset > 0 { json.append(UInt8(ascii: ",")) }
            json.append(UnsafeBufferPointer(rebasing: bytes[element]))
        }
        json.append(UInt8(ascii: "]"))
        return Result { try JSONDecoder().decode([ChaosSessionRecord].self, from: json) }
    }
}

/// A run.json that is not a run, said for a person: what is wrong and where.
public struct ChaosRunDecodingError: Error, CustomStringConvertible {
    public var description: String
}

extension ChaosSessionRecord {
    /// One session's JSON read by `RunJSONReader` alone, with no `JSONDecoder` behind it: for the
    /// fuzzer, which checks the two agree.
    @_spi(Fuzzing) public static func readAlone(_ bytes: [UInt8]) -> Result<ChaosSessionRecord, any Error> {
        bytes.withUnsafeBufferPointer { buffer in
            Result { () throws(RunJSONReader.Unexpected) in try ChaosSessionRecord(readingAll: 0..<buffer.count, of: buffer) }
                .mapError { $0 as any Error }
        }
    }
}

/// Just enough of JSON to find where values start and end: strings (with their escapes),
/// nesting, commas and colons. It does not check what it skips; `JSONDecoder` does that.
enum RunJSONScan {
    /// The byte range of the value of `name` in the top-level object; nil when the text is not an
    /// object or has no such member.
    static func topLevelValue(named name: String, in bytes: UnsafeBufferPointer<UInt8>) -> Range<Int>? {
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
    static func arrayElements(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> [Range<Int>]? {
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
    static func valueEnd(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int) -> Int? {
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
    static func stringEnd(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int) -> Int? {
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

    static func skipSpace(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int) -> Int {
        var index = start
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 || bytes[index] == 0x0A || bytes[index] == 0x0D {
            index += 1
        }
        return index
    }
}
