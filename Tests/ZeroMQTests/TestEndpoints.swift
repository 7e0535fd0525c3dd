import FlowbusTesting
import Foundation

/// A fresh ipc:// endpoint under its own short temporary folder, so parallel tests never collide.
func ipcEndpoint(_ name: String = "s") -> String {
    let folder = TestScratch.directory("fbz")
    return "ipc://\(folder)/\(name)"
}
