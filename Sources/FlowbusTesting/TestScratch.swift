import Foundation
import Synchronization

/// Folders the tests write into (ipc:// endpoints, run directories, journals, plans), all under
/// one folder per test process, `/tmp/fbt-<uid>/<pid>`, so that a test run leaves nothing behind:
///
/// - the process's folder is removed when it exits, unless `FLOWBUS_KEEP_TEST_FILES=1` is set
///   (then its path is printed, to read a failed test's logs);
/// - a folder whose process is gone (a run killed with SIGKILL, or kept as above) is removed by
///   the next test process that asks for a folder.
///
/// The paths stay short: an ipc:// endpoint's path must fit in 107 bytes.
public enum TestScratch {
    /// A new, empty folder for one test: `/tmp/fbt-<uid>/<pid>/<prefix>-<8 hex digits>`.
    public static func directory(_ prefix: String) -> String {
        let path = root() + "/\(prefix)-\(UUID().uuidString.prefix(8))"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// A path for a file of one test in this process's folder; the file itself is not made.
    public static func file(_ prefix: String, suffix: String = "") -> String {
        root() + "/\(prefix)-\(UUID().uuidString.prefix(8))\(suffix)"
    }

    /// The parent of every process's folder.
    public static var parent: String { "/tmp/fbt-\(getuid())" }

    private static let processRoot = Mutex<String?>(nil)

    private static func root() -> String {
        processRoot.withLock { root in
            if let root { return root }
            let path = "\(parent)/\(getpid())"
            try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            sweepFoldersOfEndedProcesses()
            if ProcessInfo.processInfo.environment["FLOWBUS_KEEP_TEST_FILES"] == "1" {
                FileHandle.standardError.write(Data("TestScratch: this test process's files are kept in \(path)\n".utf8))
            } else {
                atexit { TestScratch.removeOwnFolder() }
            }
            root = path
            return path
        }
    }

    private static func removeOwnFolder() {
        try? FileManager.default.removeItem(atPath: "\(parent)/\(getpid())")
    }

    /// Removes the folders of test processes that no longer run.
    static func sweepFoldersOfEndedProcesses() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: parent) else { return }
        for name in names {
            guard let pid = Int32(name), pid != getpid() else { continue }
            if kill(pid, 0) == -1 && errno == ESRCH {
                try? FileManager.default.removeItem(atPath: "\(parent)/\(name)")
            }
        }
    }
}
