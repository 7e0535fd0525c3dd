import CRawZMQ
import Foundation
import Glibc

/// `host-churn`: the host's resident memory through bursts of client connections, and after
/// them. Each round opens `batch` clients at once on tcp loopback — a DEALER asking the broker's
/// `mmi.service`, a DEALER asking the Clone server for the `/schema/` snapshot, a SUB on its
/// publisher — waits for the answers, then closes them all. The same churn runs against a host
/// with its memory trimmer off (FLOWBUS_MEMORY_TRIM=off): glibc keeping what libzmq freed, the
/// baseline the trimmer is measured against in the same run.
struct HostChurn {
    static let name = "host-churn"
    let options: Options

    var rounds: Int { options.quick ? 3 : 8 }
    var batch: Int { options.quick ? 500 : 1000 }

    struct Figures {
        var idleKiB = 0
        var peakKiB = 0
        var afterKiB = 0
        var trims = 0
        var returnedMiB = 0
        var answered = 0
        var asked = 0
    }

    func run() throws(BenchError) -> [ResultRow] {
        let idle = IdleMemory(options: options)
        if let reason = idle.prepare() { return [.unavailable(Self.name, reason)] }
        let trimmed = try measure(trimming: true)
        let kept = try measure(trimming: false)
        let mib = { (kib: Int) in Double(kib) / 1024 }
        let churn = "\(rounds) rounds of \(batch) clients at once (3 sockets each)"
        let limit = trimmed.idleKiB + 16 * 1024
        return [
            ResultRow(Self.name, "host VmRSS idle", unit: "MiB", flowbus: mib(trimmed.idleKiB), raw: mib(kept.idleKiB),
                      rawLabel: "trimmer off"),
            ResultRow(Self.name, "host VmRSS peak, \(batch) clients connected", unit: "MiB", flowbus: mib(trimmed.peakKiB),
                      raw: mib(kept.peakKiB), rawLabel: "trimmer off",
                      note: "host-churn: \(churn); \(trimmed.answered) of \(trimmed.asked) requests and snapshots answered (trimmer off: \(kept.answered) of \(kept.asked))"),
            ResultRow(Self.name, "host VmRSS 5 s after the last client left", unit: "MiB", flowbus: mib(trimmed.afterKiB),
                      raw: mib(kept.afterKiB), rawLabel: "trimmer off", target: "≤ idle + 16 MiB",
                      verdict: trimmed.afterKiB <= limit ? .pass : .miss,
                      note: "host-churn: the trimmer returned \(trimmed.returnedMiB) MiB of freed heap in \(trimmed.trims) trims; "
                        + "without it the host kept \(format(mib(kept.afterKiB - kept.idleKiB))) MiB more than idle"),
        ]
    }

    private func measure(trimming: Bool) throws(BenchError) -> Figures {
        let repository = URL(fileURLWithPath: options.repositoryPath)
        let flowbus = repository.appendingPathComponent("Benchmarks/.build-flowbus/release/flowbus").path
        let scratch = try ScratchDirectory()
        let runDirectory = scratch.path + "/run"
        let manifest = scratch.path + "/manifest.yaml"
        do {
            try "plugins:\n  - { name: echo, command: flowbus-echo, restart: permanent }\n".write(toFile: manifest, atomically: true, encoding: .utf8)
        } catch {
            throw BenchError("cannot write \(manifest): \(error)")
        }
        // Below Linux's ephemeral ports (32768 and up), which the churn's own connections take.
        let port = 24_000 + Int(getpid() % 1_000) * 8 + (trimming ? 0 : 4)
        let broker = "tcp://127.0.0.1:\(port)"
        let clone = "tcp://127.0.0.1:\(port + 1)"
        let host = Process()
        host.executableURL = URL(fileURLWithPath: flowbus)
        // One address opening 3,000 connections at once is what the connection rate limit stops:
        // off here, to measure the memory they cost.
        host.arguments = ["up", "--run-dir", runDirectory, "--manifest", manifest, "--broker", broker, "--clone", clone, "--log-level", "warning",
                          "--connection-rate", "0", "--snapshot-rate", "0"]
        var environment = ProcessInfo.processInfo.environment
        environment["FLOWBUS_MEMORY_TRIM"] = trimming ? "on" : "off"
        host.environment = environment
        let log = scratch.path + "/host.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        host.standardOutput = FileHandle(forWritingAtPath: log)
        host.standardError = FileHandle(forWritingAtPath: log)
        do { try host.run() } catch { throw BenchError("cannot start \(flowbus) up: \(error)") }
        defer {
            _ = IdleMemory.execute(flowbus, ["down", "--run-dir", runDirectory], in: repository)
            let deadline = Date().addingTimeInterval(20)
            while host.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
            if host.isRunning { kill(host.processIdentifier, SIGKILL) }
        }
        let label = "\(Self.name) (trimmer \(trimming ? "on" : "off"))"
        progress("\(label): flowbus up (pid \(host.processIdentifier)) on \(broker), \(clone)")
        do {
            try waitUntilServing(flowbus: flowbus, runDirectory: runDirectory, host: host, repository: repository)
        } catch {
            let tail = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").suffix(3).joined(separator: " | ")
            throw BenchError("\(error.description); its output: \(tail)")
        }
        Thread.sleep(forTimeInterval: 2)
        let pid = host.processIdentifier
        var figures = Figures()
        figures.idleKiB = try resident(pid)
        figures.peakKiB = figures.idleKiB
        let publisher = "tcp://127.0.0.1:\(port + 2)"
        for round in 1...rounds {
            // A context per round: ending it waits until libzmq has closed every socket of the round.
            let context = RawContext(maxSockets: Int32(batch * 3 + 64))
            var requests: [RawSocket] = []
            var snapshots: [RawSocket] = []
            var subscribers: [RawSocket] = []
            for _ in 0..<batch {
                let request = try RawSocket(context, ZMQ_DEALER)
                try request.connect(broker)
                for (index, frame) in ["", "MDPC01", "mmi.service", "flowbus.echo"].enumerated() {
                    try request.send(Array(frame.utf8), flags: index < 3 ? ZMQ_SNDMORE : 0)
                }
                requests.append(request)
                let snapshot = try RawSocket(context, ZMQ_DEALER)
                try snapshot.connect(clone)
                try snapshot.send(Array("ICANHAZ?".utf8), flags: ZMQ_SNDMORE)
                try snapshot.send(Array("/schema/".utf8))
                snapshots.append(snapshot)
                let subscriber = try RawSocket(context, ZMQ_SUB)
                subscriber.subscribe("/schema/")
                try subscriber.connect(publisher)
                subscribers.append(subscriber)
            }
            for socket in requests + snapshots {
                figures.asked += 1
                socket.set(ZMQ_RCVTIMEO, 5_000)
                if try socket.drainMessage() > 0 { figures.answered += 1 }
            }
            Thread.sleep(forTimeInterval: 0.2)
            figures.peakKiB = max(figures.peakKiB, try resident(pid))
            requests.removeAll()
            snapshots.removeAll()
            subscribers.removeAll()
            progress("\(label): round \(round) of \(rounds): \(batch) clients came and went; host VmRSS \(try resident(pid) / 1024) MiB")
        }
        Thread.sleep(forTimeInterval: 5)
        figures.afterKiB = try resident(pid)
        let (code, output) = IdleMemory.execute(flowbus, ["ps", "--json", "--run-dir", runDirectory], in: repository)
        if code == 0, let start = output.firstIndex(of: "{"),
           let json = try? JSONSerialization.jsonObject(with: Data(output[start...].utf8)) as? [String: Any],
           let memory = json["memory"] as? [String: Any] {
            figures.trims = memory["trims"] as? Int ?? 0
            figures.returnedMiB = (memory["returnedBytes"] as? Int ?? 0) >> 20
        }
        progress("\(label): idle \(figures.idleKiB / 1024) MiB, peak \(figures.peakKiB / 1024) MiB, 5 s after \(figures.afterKiB / 1024) MiB; \(figures.trims) trims returned \(figures.returnedMiB) MiB")
        return figures
    }

    private func resident(_ pid: Int32) throws(BenchError) -> Int {
        guard let memory = IdleMemory.Memory(pid: pid) else { throw BenchError("cannot read /proc/\(pid)/status of the host: did it exit?") }
        return memory.residentKiB
    }

    /// Waits until `flowbus ps` answers with the echo plugin running (30 s at most).
    private func waitUntilServing(flowbus: String, runDirectory: String, host: Process, repository: URL) throws(BenchError) {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            guard host.isRunning else { throw BenchError("`flowbus up` exited (status \(host.terminationStatus)) before it served; see its log in \(runDirectory)/logs") }
            let (code, output) = IdleMemory.execute(flowbus, ["ps", "--json", "--run-dir", runDirectory], in: repository)
            if code == 0, output.contains("\"running\"") { return }
            Thread.sleep(forTimeInterval: 0.2)
        }
        throw BenchError("the host in \(runDirectory) did not run its echo plugin within 30 s; see its logs there")
    }
}
