import FlowClient
import FlowHost
import FlowbusTesting
import Foundation
import Synchronization

/// `app-store`: what the services' durable store costs per call, through the bus. movies-services
/// alone (no view models or coordinators) runs three ways in turn — on its SQLite file (one
/// process: the baseline), on PostgreSQL as one replica, on PostgreSQL as two replicas sharing
/// the database — and 4 callers each toggle a like (`svc.movies like`: one write transaction
/// and its kept reply per call) as fast as the replies come. Every run ends with a check: each
/// user's likes must be exactly the ids toggled an odd number of times, so a replica that lost
/// or doubled an update fails the benchmark instead of flattering it.
struct AppStoreBench {
    static let name = "app-store"
    let options: Options

    var callers: Int { 4 }
    var callsPerCaller: Int { options.quick ? 150 : 600 }
    static let ids = (1...7).map { "movie:\($0)" }

    struct Figures {
        var callsPerSecond: Double
        var p50: Double
        var p99: Double
    }

    func run() throws(BenchError) -> [ResultRow] {
        if let reason = AppHost.prepare(options: options, label: Self.name) { return [.unavailable(Self.name, reason)] }
        let server: PostgresServer
        do { server = try PostgresServer.shared() } catch { return [.unavailable(Self.name, "no PostgreSQL server: \(error)")] }
        let sqlite = try measure(label: "SQLite, 1 process", data: nil, replicas: 1)
        let one = try measure(label: "PostgreSQL, 1 replica", data: try database(on: server), replicas: 1)
        let two = try measure(label: "PostgreSQL, 2 replicas", data: try database(on: server), replicas: 2)
        let load = "\(callers) callers × \(callsPerCaller) `svc.movies like` through the broker, each a write transaction with its reply kept"
        return [
            ResultRow(Self.name, "calls/s, PostgreSQL 1 replica", unit: "calls/s", flowbus: one.callsPerSecond, raw: sqlite.callsPerSecond,
                      rawLabel: "SQLite, 1 process", note: "app-store: \(load); every user's likes checked afterwards"),
            ResultRow(Self.name, "calls/s, PostgreSQL 2 replicas", unit: "calls/s", flowbus: two.callsPerSecond, raw: sqlite.callsPerSecond,
                      rawLabel: "SQLite, 1 process", note: "app-store: replicas take turns on the schema's advisory lock"),
            ResultRow(Self.name, "call p50, PostgreSQL 2 replicas", unit: "ms", flowbus: two.p50, raw: sqlite.p50, rawLabel: "SQLite, 1 process",
                      note: "app-store: p99 \(format(two.p99)) ms (1 replica: p50 \(format(one.p50)), p99 \(format(one.p99)); SQLite p99 \(format(sqlite.p99)))"),
        ]
    }

    func database(on server: PostgresServer) throws(BenchError) -> String {
        do { return try server.createDatabase("bench_" + UUID().uuidString.prefix(8).lowercased()) } catch {
            throw BenchError("cannot create a database on the benchmark's PostgreSQL server: \(error)")
        }
    }

    func manifest(data: String?, replicas: Int) -> String {
        let args = ["--lanes", "4"] + (data.map { ["--data", $0] } ?? [])
        return """
            plugins:
              - name: services
                command: movies-services
                args: [\(args.map { "\"\($0)\"" }.joined(separator: ", "))]
                restart: permanent
                replicas: \(replicas)

            """
    }

    private func measure(label: String, data: String?, replicas: Int) throws(BenchError) -> Figures {
        let host = try AppHost.start(
            options: options, label: "\(Self.name) (\(label))", manifest: manifest(data: data, replicas: replicas), waitingFor: ["svc.movies"])
        defer { host.stop() }
        let endpoints = try host.endpoints()
        let connections: [BusConnection]
        do { connections = try (0..<callers).map { _ in try BusConnection(endpoints: endpoints) } } catch {
            throw BenchError("cannot connect to the host: \(error)")
        }
        defer { connections.forEach { $0.stop() } }
        // Warm-up: each caller's first calls open its sockets and fill the workers' queues.
        for (index, connection) in connections.enumerated() { _ = try like(connection, caller: index, call: -1) }
        _ = try connections.enumerated().map { index, connection throws(BenchError) in try like(connection, caller: index, call: -1) }

        progress("\(Self.name) (\(label)): \(callers) callers × \(callsPerCaller) likes")
        let latencies = Mutex<[Double]>([])
        let failures = Mutex<[String]>([])
        let group = DispatchGroup()
        let started = DispatchTime.now().uptimeNanoseconds
        for (index, connection) in connections.enumerated() {
            group.enter()
            Thread {
                defer { group.leave() }
                var mine: [Double] = []
                for call in 0..<callsPerCaller {
                    let before = DispatchTime.now().uptimeNanoseconds
                    do { _ = try like(connection, caller: index, call: call) } catch {
                        failures.withLock { $0.append("\(error)") }
                        return
                    }
                    mine.append(Double(DispatchTime.now().uptimeNanoseconds - before) / 1e6)
                }
                latencies.withLock { $0 += mine }
            }.start()
        }
        group.wait()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        if let failure = failures.withLock({ $0.first }) { throw BenchError("\(label): a call failed: \(failure)") }
        try checkLikes(connections, label: label)
        _ = try host.checkNoRestarts()
        let sorted = latencies.withLock { $0 }.sorted()
        let percentile = { (share: Double) in sorted[min(sorted.count - 1, Int(Double(sorted.count) * share))] }
        let figures = Figures(callsPerSecond: Double(sorted.count) / seconds, p50: percentile(0.5), p99: percentile(0.99))
        progress("\(Self.name) (\(label)): \(format(figures.callsPerSecond)) calls/s, p50 \(format(figures.p50)) ms, p99 \(format(figures.p99)) ms")
        return figures
    }

    /// Call `call` of `caller` (-1: the warm-up's, on an id of its own).
    private func like(_ connection: BusConnection, caller: Int, call: Int) throws(BenchError) {
        let id = call < 0 ? "movie:8" : Self.ids[call % Self.ids.count]
        let reply = try blocking { try await connection.serviceCall("svc.movies", method: "like", args: ["id": id, "user": "bench\(caller)@example.com"]) }
        if !reply.refusal.isEmpty { throw BenchError("svc.movies like was refused: \(reply.refusal)") }
    }

    /// Each user's likes are the ids it toggled an odd number of times (the warm-up's two
    /// toggles of movie:8 cancel out).
    private func checkLikes(_ connections: [BusConnection], label: String) throws(BenchError) {
        for (index, connection) in connections.enumerated() {
            var toggles: [String: Int] = [:]
            for call in 0..<callsPerCaller { toggles[Self.ids[call % Self.ids.count], default: 0] += 1 }
            let expected = Set(toggles.filter { $0.value % 2 == 1 }.keys)
            let reply = try blocking { try await connection.serviceCall("svc.movies", method: "likes", args: ["user": "bench\(index)@example.com"]) }
            // movies.v1.ItemList: items = 1 (Item: id = 1), read off the wire without the app's types.
            let ids = Set(Self.fields(reply.payload, 1).map { Self.fields($0, 1).first.map { String(decoding: $0, as: UTF8.self) } ?? "" })
            guard ids == expected else {
                throw BenchError("\(label): bench\(index)'s likes are \(ids.sorted()), expected \(expected.sorted()): an update was lost or applied twice")
            }
        }
    }

    /// The length-delimited values of field `number` in the protobuf message `bytes`.
    static func fields(_ bytes: some Collection<UInt8>, _ number: UInt64) -> [[UInt8]] {
        let bytes = Array(bytes)
        var index = 0
        func varint() -> UInt64? {
            var value: UInt64 = 0, shift: UInt64 = 0
            while index < bytes.count, shift < 64 {
                let byte = bytes[index]
                index += 1
                value |= UInt64(byte & 0x7F) << shift
                if byte & 0x80 == 0 { return value }
                shift += 7
            }
            return nil
        }
        var found: [[UInt8]] = []
        while index < bytes.count, let tag = varint() {
            switch tag & 7 {
            case 0: guard varint() != nil else { return found }
            case 1: index += 8
            case 5: index += 4
            case 2:
                guard let length = varint(), index + Int(length) <= bytes.count else { return found }
                if tag >> 3 == number { found.append(Array(bytes[index..<index + Int(length)])) }
                index += Int(length)
            default: return found
            }
        }
        return found
    }
}
