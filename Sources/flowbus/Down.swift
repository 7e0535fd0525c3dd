import ArgumentParser
import FlowHost
import Foundation

struct Down: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Stops the host and every plugin it started, leaving no process behind."
    )

    @OptionGroup var global: GlobalOptions

    @Option(name: .long, help: "Seconds to wait for the host to finish before killing it.")
    var timeout: Double = 20

    func run() throws {
        let directory = global.runDirectory
        guard let descriptor = try directory.liveHost() else {
            print("no flowbus host is running in \(directory.path); nothing to stop")
            return
        }
        let control = ControlClient(runDirectory: directory)
        do {
            let _: Empty = try control.send(ControlRequest(command: .down))
        } catch {
            // The control socket may be wedged; a signal does the same job.
            kill(descriptor.pid, SIGTERM)
        }
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            // A zombie has stopped: the `flowbus demo` that started it reaps it.
            if !isAlive(pid: descriptor.pid) {
                print("flowbus host \(descriptor.pid) stopped")
                return
            }
            usleep(20_000)
        }
        // The host's children die with it (PR_SET_PDEATHSIG), so killing it cleans up too.
        kill(descriptor.pid, SIGKILL)
        directory.removeDescriptor()
        print("flowbus host \(descriptor.pid) did not stop within \(Int(timeout)) s and was killed; its plugins died with it")
    }
}
