import Foundation
import Glibc

/// Keeps the log files of a run bounded: a `.log` past its limit is copied to `.log.1` (the
/// previous one replaced) and cut back to nothing, with a line saying where the rest went. The
/// processes write with O_APPEND, so they carry on at the new end; a line written between the
/// copy and the cut is lost (logrotate's copytruncate does the same).
public enum LogRotation {
    /// Rotates every `*.log` in `directory` larger than `limit` bytes; returns the files rotated.
    @discardableResult
    public static func rotate(in directory: URL, limit: Int) -> [String] {
        guard limit > 0, let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return [] }
        var rotated: [String] = []
        for name in names.sorted() where name.hasSuffix(".log") {
            let path = directory.appendingPathComponent(name).path
            var info = stat()
            guard stat(path, &info) == 0, Int(info.st_size) > limit else { continue }
            if rotate(path) { rotated.append(name) }
        }
        return rotated
    }

    static func rotate(_ path: String) -> Bool {
        let previous = path + ".1"
        let copy = previous + ".partial"
        unlink(copy)
        guard (try? FileManager.default.copyItem(atPath: path, toPath: copy)) != nil, rename(copy, previous) == 0 else {
            unlink(copy)
            return false
        }
        // The note is made and the file opened before the cut, so the note follows it at once: the
        // processes writing on land after it, not some hundred milliseconds of their output
        // before it (seen on a loaded machine when the note was made after the cut).
        let note = "flowbus: this log reached its size limit at \(ISO8601DateFormatter().string(from: Date())); what came before is in \((previous as NSString).lastPathComponent)\n"
        let file = open(path, O_WRONLY | O_APPEND | O_CLOEXEC)
        guard file >= 0 else { return false }
        defer { close(file) }
        guard ftruncate(file, 0) == 0 else { return false }
        _ = Array(note.utf8).withUnsafeBytes { write(file, $0.baseAddress, $0.count) }
        return true
    }
}
