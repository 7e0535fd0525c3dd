import ArgumentParser
import FlowHost
import Foundation
import Clone
import Majordomo
import MessagePath
import Supervision
import FlowClient

struct Ps: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Shows the host's plugins, endpoints, and the broker's and Clone server's counters."
    )

    @OptionGroup var global: GlobalOptions

    @Flag(name: .long, help: "Print the whole status as JSON.")
    var json = false

    @Flag(name: .long, help: "Also list the live coordinator instances of each session (/c/), so a flow that ended is seen to leave none behind.")
    var sessions = false

    func run() async throws {
        let directory = global.runDirectory
        let client = ControlClient(runDirectory: directory)
        if json {
            guard let descriptor = try directory.liveHost() else { throw HostError.notRunning(runDirectory: directory.path) }
            let raw = try client.exchange(ControlRequest(command: .status), endpoint: descriptor.endpoints.control)
            let reply = try JSONDecoder.iso8601.decode(ControlReply<HostStatus>.self, from: raw)
            guard reply.ok, let status = reply.body else {
                throw HostError.rejected(command: "status", reason: reply.error ?? "no reason given")
            }
            let encoded = try JSONEncoder.pretty.encode(status)
            guard sessions else {
                print(String(decoding: encoded, as: UTF8.self))
                return
            }
            let snapshot = try await BusSnapshot.take(BusEndpoints(descriptor: descriptor))
            var object = try JSONSerialization.jsonObject(with: encoded) as? [String: Any] ?? [:]
            object["coordinatorInstances"] = try JSONSerialization.jsonObject(with: try JSONEncoder.cli.encode(snapshot.instances))
            let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
            print(String(decoding: data, as: UTF8.self))
            return
        }
        let status: HostStatus = try client.send(ControlRequest(command: .status))
        print(StatusTable(status: status).text)
        if sessions {
            let snapshot = try await BusSnapshot.take(BusEndpoints(descriptor: status.host))
            print("")
            print(Self.instanceTable(snapshot))
        }
    }

    /// Live coordinator instances, grouped by session.
    static func instanceTable(_ snapshot: BusSnapshot) -> String {
        guard !snapshot.instances.isEmpty else { return "coordinator instances: none live" }
        var rows = [["SESSION", "COORDINATOR", "PARENT", "CHILDREN", "INCARNATION", "STARTED"]]
        let now = Date()
        for instance in snapshot.instances {
            rows.append([
                instance.session, instance.coordinator, instance.parent.isEmpty ? "-" : instance.parent,
                instance.children.isEmpty ? "-" : instance.children.joined(separator: ","), "\(instance.incarnation)",
                instance.startedAt.map { StatusTable.duration(now.timeIntervalSince($0)) + " ago" } ?? "-",
            ])
        }
        let sessions = Set(snapshot.instances.map(\.session)).count
        return "coordinator instances: \(snapshot.instances.count) in \(sessions) session\(sessions == 1 ? "" : "s")\n"
            + StatusTable.align(rows).joined(separator: "\n")
    }
}

/// The human form of `flowbus ps`.
struct StatusTable {
    let status: HostStatus

    var text: String {
        var lines: [String] = []
        let host = status.host
        lines.append("flowbus host \(host.pid), up \(Self.duration(status.uptimeSeconds)), run directory \(host.runDirectory)")
        if let memory = status.memory {
            let returned = memory.trims == 0 ? "" : ", \(memory.returnedBytes >> 20) MiB of freed heap returned to the system in \(memory.trims) trim(s)"
            lines.append("  memory   \(memory.residentBytes >> 20) MiB resident\(returned)")
        }
        lines.append("  broker   \(host.endpoints.broker)")
        lines.append("  clone    \(host.endpoints.cloneSnapshot)  \(host.endpoints.clonePublisher)  \(host.endpoints.cloneCollector)")
        if let key = host.serverPublicKey { lines.append("  curve    server key \(key)") }
        switch host.access {
        case .open:
            lines.append("  access   OPEN: any peer may serve, call any service and write any key (started with --open)")
        case .closed, nil:
            let clone = status.clone
            lines.append("  access   closed: refused \(status.broker.unauthorizedWorkers) worker command(s), \(status.broker.rejections.forbidden) forbidden call(s), "
                + "\(clone.writesRefused) write(s), \(clone.snapshotsRefused) snapshot(s), \(clone.subscriptionsRefused) subscription(s)")
            let connections = status.connectionsRateLimited ?? 0
            if connections > 0 || clone.snapshotsRateLimited > 0 {
                lines.append("           over the rate: \(connections) connection(s), \(clone.snapshotsRateLimited) snapshot(s) (flowbus up --connection-rate, --snapshot-rate)")
            }
        }
        let pinned = status.hostCPU != nil || status.plugins.contains { $0.cpu != nil }
        if pinned {
            let asked = status.placement == Placement.auto.rawValue
                ? "--placement auto, the default on a host that may use two CPUs; --placement shared lets the kernel place them"
                : "--placement pinned"
            lines.append("  cpus     pinned: the host on CPU \(status.hostCPU.map(String.init) ?? "-"), each plugin process on the CPU of its row (\(asked))")
        }
        lines.append("")
        let header = ["PLUGIN", "PID"] + (pinned ? ["CPU"] : []) + ["STATE", "RESTARTS", "UPTIME", "HEARTBEAT", "LAST EXIT"]
        var rows = [header]
        let now = Date()
        for plugin in status.plugins {
            let name = "\(plugin.name)[\(plugin.replica)]"
            let pid = plugin.pid.map(String.init) ?? "-"
            // Restarts after a hang say so: 2 (1 hung).
            let restarts = plugin.hangs > 0 ? "\(plugin.restarts) (\(plugin.hangs) hung)" : "\(plugin.restarts)"
            let uptime = plugin.pid == nil ? "-" : Self.duration(plugin.uptime)
            let heartbeat = plugin.lastHeartbeat.map { Self.duration(now.timeIntervalSince($0)) + " ago" } ?? "-"
            var row = [name, pid]
            if pinned { row.append(plugin.cpu.map(String.init) ?? "-") }
            row += [plugin.state.rawValue, restarts, uptime, heartbeat, plugin.lastExitReason ?? "-"]
            rows.append(row)
        }
        lines.append(contentsOf: Self.align(rows))
        lines.append("")
        let broker = status.broker
        // A service whose workers offer credit shows it: svc×2 (credit 16).
        var credits: [String: Int] = [:]
        for worker in status.workers where worker.credit > 1 { credits[worker.service] = max(credits[worker.service] ?? 1, worker.credit) }
        let services = broker.workersPerService.sorted { $0.key < $1.key }.map { name, count in
            credits[name].map { "\(name)×\(count) (credit \($0))" } ?? "\(name)×\(count)"
        }.joined(separator: ", ")
        lines.append("broker: \(broker.requests) requests, \(broker.replies) replies, \(broker.mmiRequests) mmi, workers [\(services)], queued \(broker.queuedPerService.values.reduce(0, +)), rejections \(broker.rejections.total), workers expired \(broker.workersExpired) (\(broker.expiredWorkersHeard) heard from after and told to reconnect), fault drops \(broker.faultDropped)\(broker.faults.total > 0 ? " (and \(broker.faults.total) requests delayed, duplicated, reordered or damaged, heartbeats held)" : ""), bad input \(broker.badInput.total), busy polls \(broker.busyPolls) (\(broker.busyPollHits) caught a message, \(Self.spinTime(broker))\(broker.busyPollsSkipped > 0 ? "; \(broker.busyPollsSkipped) skipped, as recent ones caught too few or cost more than the sleeps they saved" : ""))")
        let clone = status.clone
        lines.append("clone:  sequence \(clone.sequence), \(clone.keysStored) keys (\(Self.packedValues(clone))), \(clone.updatesPublished) published, \(clone.snapshotsServed) snapshots, \(clone.ttlExpiries) expired, \(clone.hugzSent) hugz, fault drops \(clone.faultDropped)\(clone.faults.total > 0 ? " (and \(clone.faults.total) writes delayed, duplicated, reordered or damaged)" : ""), bad input \(clone.badInputTotal), damaged writes \(clone.damagedWrites), writes confirmed in \(clone.acksSent) acks (\(clone.duplicateWrites) resent writes already applied, \(clone.staleWritesDropped) late writes older than the key's value dropped, \(clone.fencedWrites) writes of replaced incarnations dropped)")
        if !status.faults.isEmpty {
            lines.append("faults: " + status.faults.map { "\($0.rule.id) (\($0.rule.action.name)) matched \($0.matched) acted on \($0.fired)" }.joined(separator: "; "))
        }
        return lines.joined(separator: "\n")
    }

    /// How many values the map keeps packed against similar ones, and what they take so.
    static func packedValues(_ clone: CloneServerStatistics) -> String {
        guard clone.valuesPacked > 0 else { return "none packed yet" }
        func kib(_ bytes: Int) -> String { String(format: "%.1f KiB", Double(bytes) / 1024) }
        return "\(clone.valuesPacked) packed: \(kib(clone.packedValueBytes)) held as \(kib(clone.packedBytes)), against \(clone.packReferences) references of \(kib(clone.packReferenceBytes))"
    }

    /// "spun 12.3 ms in all, a sleep costs the broker 11 µs": what the spins cost, and what each
    /// one that catches saves.
    static func spinTime(_ broker: BrokerStatistics) -> String {
        let spun = String(format: "%.1f", Double(broker.busyPollNanoseconds) / 1e6)
        guard broker.busyPollSleepCostNanoseconds > 0 else { return "spun \(spun) ms in all" }
        return "spun \(spun) ms in all, a sleep costs the broker \(broker.busyPollSleepCostNanoseconds / 1000) µs"
    }

    static func align(_ rows: [[String]]) -> [String] {
        guard let first = rows.first else { return [] }
        let widths = first.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
    }

    static func duration(_ seconds: Double) -> String {
        if seconds < 10 { return String(format: "%.1fs", seconds) }
        let whole = Int(seconds)
        if whole < 120 { return "\(whole)s" }
        if whole < 7200 { return "\(whole / 60)m\(whole % 60)s" }
        return "\(whole / 3600)h\(whole / 60 % 60)m"
    }
}

extension JSONDecoder {
    static var iso8601: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}
