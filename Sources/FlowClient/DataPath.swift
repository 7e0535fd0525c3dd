import FlowProtocol
import Foundation
import SwiftProtobuf

/// Looks values up in a state's app payload by dotted path over its protobuf JSON form
/// (camelCase names, read through the app's published schema by `PayloadReader`):
/// `details.liked`, `report.totalTexto`, `items.items.*.id`, `home.carousels.0.items.2.title`. A number segment indexes a list, `*` means any element.
/// A path that ends on a list gives its length. Protobuf JSON leaves out default values, so a
/// missing leaf reads as its default: `false`, `0` or empty text.
public enum DataPath {
    /// The values `path` reaches in `data` as text (several with `*`); empty when none.
    public static func values(of path: String, in data: [String: Any]?) -> [String] {
        guard let object = data else { return [] }
        var current: [Any] = [object]
        for segment in path.split(separator: ".").map(String.init) {
            var next: [Any] = []
            for value in current {
                if let dictionary = value as? [String: Any] {
                    if let child = dictionary[segment] { next.append(child) }
                } else if let array = value as? [Any] {
                    if segment == "*" {
                        next.append(contentsOf: array)
                    } else if let index = Int(segment), array.indices.contains(index) {
                        next.append(array[index])
                    }
                }
            }
            current = next
        }
        return current.map(text)
    }

    /// True when some value at `path` is `expected`, or, when the path reaches nothing, `expected`
    /// is a default value (false, 0, empty).
    public static func matches(_ expected: String, at path: String, in data: [String: Any]?) -> Bool {
        let found = values(of: path, in: data)
        if found.isEmpty { return ["", "false", "0"].contains(expected) && data != nil && parentExists(of: path, in: data) }
        return found.contains(expected)
    }

    /// What `path` reaches, for a diff: one value, several joined with " | ", or "(nothing)".
    public static func describe(_ path: String, in data: [String: Any]?) -> String {
        guard data != nil else { return "(no data)" }
        let found = values(of: path, in: data)
        if found.isEmpty { return parentExists(of: path, in: data) ? "(default)" : "(nothing at \(path))" }
        let shown = found.prefix(8).joined(separator: " | ")
        return found.count > 8 ? shown + " | … (\(found.count) values)" : shown
    }

    /// Whether the path's parent object exists (so a missing leaf is a default, not a typo'd branch).
    static func parentExists(of path: String, in data: [String: Any]?) -> Bool {
        let segments = path.split(separator: ".")
        guard segments.count > 1 else { return true }
        return !values(of: segments.dropLast().joined(separator: "."), in: data).isEmpty
    }

    static func text(_ value: Any) -> String {
        switch value {
        case let array as [Any]: return String(array.count)
        case let string as String: return string
        case let bool as Bool: return bool ? "true" : "false"
        case let int as Int: return String(int)
        case let uint as UInt64: return String(uint)
        case let double as Double: return String(double)
        case let number as NSNumber:
            // JSON true/false come back as NSNumbers of ObjC type "c" (char), here and on Darwin.
            if String(cString: number.objCType) == "c" { return number.boolValue ? "true" : "false" }
            return number.stringValue
        case let dictionary as [String: Any]: return "{" + dictionary.keys.sorted().joined(separator: ", ") + "}"
        default: return "\(value)"
        }
    }
}
