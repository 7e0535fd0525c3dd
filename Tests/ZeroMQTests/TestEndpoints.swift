import Foundation

/// A fresh ipc:// endpoint under its own short temporary folder, so parallel tests never collide.
func ipcEndpoint(_ name: String = "s") -> String {
    let folder = "/tmp/fbz-\(UUID().uuidString.prefix(8))"
    try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    return "ipc://\(folder)/\(name)"
}
