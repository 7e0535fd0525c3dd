import Foundation
import Glibc

/// Turns a manifest command into the path to execute.
struct CommandLocator: Sendable {
    var baseDirectory: URL
    /// Folders searched, in order, for a command without a slash.
    var searchFolders: [String]

    init(baseDirectory: URL, commandSearchPath: [String], environmentPATH: String?) {
        self.baseDirectory = baseDirectory
        let pathFolders = (environmentPATH ?? "").split(separator: ":").map(String.init)
        self.searchFolders = commandSearchPath + pathFolders
    }

    /// Absolute commands are kept as they are (exec reports a missing file); bare names must be found.
    func locate(_ command: String, plugin: String) throws(SupervisorError) -> String {
        if command.hasPrefix("/") { return command }
        if command.contains("/") {
            return baseDirectory.appendingPathComponent(command).standardizedFileURL.path
        }
        for folder in searchFolders where !folder.isEmpty {
            let candidate = URL(fileURLWithPath: folder).appendingPathComponent(command).path
            if isExecutableFile(candidate) { return candidate }
        }
        throw .commandNotFound(plugin: plugin, command: command, searched: searchFolders)
    }

    private func isExecutableFile(_ path: String) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return false }
        return access(path, X_OK) == 0
    }
}
