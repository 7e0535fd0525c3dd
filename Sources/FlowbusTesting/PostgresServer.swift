import Foundation
import Synchronization

/// A PostgreSQL server of the test process's own (Debian's `postgresql` package, which
/// scripts/setup installs): a new cluster in a folder under /tmp, listening only on a Unix socket
/// in that folder, started on first use and stopped when the test process exits. Tests that
/// share data between replicas of a services process use it; it is never the machine's own
/// server, so a test can stop or kill it.
///
/// As root (CI), the server runs as the `postgres` user that the package creates: PostgreSQL
/// refuses to run as root.
public final class PostgresServer: Sendable {
    /// The folder holding the cluster (`data/`), the socket and the server's log.
    public let folder: String
    /// The postmaster's process id.
    public let pid: Int32
    static let port = 5432

    static let started = Mutex<Result<PostgresServer, PostgresServerError>?>(nil)

    /// The server of this test process, started on first use (initdb and start: 1–3 s).
    public static func shared() throws(PostgresServerError) -> PostgresServer {
        try started.withLock { started throws(PostgresServerError) in
            if started == nil { started = Result { () throws(PostgresServerError) in try PostgresServer() } }
            return try started!.get()
        }
    }

    /// The libpq address of `database` on this server, as the superuser `postgres`.
    public func address(database: String = "postgres") -> String {
        "postgresql:///\(database)?host=\(folder)&port=\(Self.port)&user=postgres"
    }

    /// Creates a database named `name` (letters, digits, `_`), returning its address.
    public func createDatabase(_ name: String) throws(PostgresServerError) -> String {
        let outcome = Self.run(try Self.binary("psql"), [
            "-h", folder, "-p", "\(Self.port)", "-U", "postgres", "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-q",
            "-c", "CREATE DATABASE \(name)",
        ], asServerUser: false)
        guard outcome.status == 0 else { throw PostgresServerError("CREATE DATABASE \(name) failed: \(outcome.output)") }
        return address(database: name)
    }

    /// Runs `sql` on `database` with psql and returns what it printed (unaligned, no headers).
    public func query(_ sql: String, database: String) throws(PostgresServerError) -> String {
        let outcome = Self.run(try Self.binary("psql"), [
            "-h", folder, "-p", "\(Self.port)", "-U", "postgres", "-d", database, "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql,
        ], asServerUser: false)
        guard outcome.status == 0 else { throw PostgresServerError("\(sql) failed: \(outcome.output)") }
        return outcome.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    init() throws(PostgresServerError) {
        Self.removeAbandoned()
        folder = "/tmp/flowbus-pg-\(getpid())-\(UUID().uuidString.prefix(6))"
        let data = folder + "/data"
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw PostgresServerError("cannot create \(folder): \(error)")
        }
        if getuid() == 0 {
            guard let user = getpwnam("postgres") else {
                throw PostgresServerError("there is no postgres user to run the test server as (root may not run it); install Debian's postgresql package: bash scripts/setup")
            }
            chown(folder, user.pointee.pw_uid, user.pointee.pw_gid)
        }
        let initdb = Self.run(try Self.binary("initdb"), ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"], asServerUser: true)
        guard initdb.status == 0 else { throw PostgresServerError("initdb failed: \(initdb.output)") }

        // The server: its socket in `folder`, no TCP, no fsync (a kill -9 of any process loses
        // nothing the system's page cache holds; only the machine's crash would).
        let process = Process()
        let postgres = try Self.binary("postgres")
        let arguments = ["-D", data, "-k", folder, "-p", "\(Self.port)", "-c", "listen_addresses=", "-c", "fsync=off", "-c", "max_connections=200"]
        (process.executableURL, process.arguments) = Self.command(postgres, arguments, asServerUser: true)
        let log = folder + "/server.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        if getuid() == 0, let user = getpwnam("postgres") { chown(log, user.pointee.pw_uid, user.pointee.pw_gid) }
        process.standardOutput = FileHandle(forWritingAtPath: log)
        process.standardError = FileHandle(forWritingAtPath: log)
        do { try process.run() } catch { throw PostgresServerError("cannot start \(postgres): \(error)") }
        pid = process.processIdentifier

        // Ready when postmaster.pid says so (its eighth line).
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if let text = try? String(contentsOfFile: data + "/postmaster.pid", encoding: .utf8), text.contains("ready") { break }
            if !process.isRunning { break }
            usleep(20_000)
        }
        guard process.isRunning, (try? String(contentsOfFile: data + "/postmaster.pid", encoding: .utf8))?.contains("ready") == true else {
            let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            kill(pid, SIGKILL)
            throw PostgresServerError("the test PostgreSQL server did not start in 30 s:\n\(output)")
        }
        let (pid, folder) = (pid, folder)
        Self.atExit.withLock { $0.append((pid, folder)) }
        if !Self.exitHandlerInstalled.exchange(true, ordering: .relaxed) {
            atexit {
                for (pid, folder) in PostgresServer.atExit.withLock({ $0 }) {
                    kill(pid, SIGQUIT)
                    for _ in 0..<100 where kill(pid, 0) == 0 { usleep(20_000) }
                    try? FileManager.default.removeItem(atPath: folder)
                }
            }
        }
    }

    static let atExit = Mutex<[(Int32, String)]>([])
    static let exitHandlerInstalled = Atomic<Bool>(false)

    /// Servers left by test processes that died without their exit handler (a crash, a kill):
    /// stopped, and their folders removed.
    static func removeAbandoned() {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/tmp")) ?? []
        for entry in entries where entry.hasPrefix("flowbus-pg-") {
            let parts = entry.split(separator: "-")
            guard parts.count >= 4, let owner = Int32(parts[2]), owner != getpid(), kill(owner, 0) != 0, errno == ESRCH else { continue }
            let folder = "/tmp/" + entry
            if let text = try? String(contentsOfFile: folder + "/data/postmaster.pid", encoding: .utf8),
               let line = text.split(separator: "\n").first, let server = Int32(line) {
                kill(server, SIGKILL)
            }
            try? FileManager.default.removeItem(atPath: folder)
        }
    }

    /// The PostgreSQL program `name`: from `pg_config --bindir` (libpq-dev), else the newest
    /// /usr/lib/postgresql/N/bin.
    static func binary(_ name: String) throws(PostgresServerError) -> String {
        var folders: [String] = []
        if let pgConfig = FlowbusProcesses.executable(named: "pg_config") {
            let outcome = run(pgConfig.path, ["--bindir"], asServerUser: false)
            if outcome.status == 0 { folders.append(outcome.output.trimmingCharacters(in: .whitespacesAndNewlines)) }
        }
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []).compactMap { Int($0) }.sorted(by: >)
        folders += versions.map { "/usr/lib/postgresql/\($0)/bin" }
        for folder in folders where FileManager.default.isExecutableFile(atPath: folder + "/" + name) { return folder + "/" + name }
        throw PostgresServerError("\(name) was not found (looked in \(folders)); install Debian's postgresql package: bash scripts/setup")
    }

    /// `executable arguments`, as the `postgres` user when running as root (setpriv execs in place,
    /// so the process started is the program itself).
    static func command(_ executable: String, _ arguments: [String], asServerUser: Bool) -> (URL, [String]) {
        guard asServerUser, getuid() == 0 else { return (URL(fileURLWithPath: executable), arguments) }
        return (URL(fileURLWithPath: "/usr/bin/setpriv"), ["--reuid=postgres", "--regid=postgres", "--init-groups", "--", executable] + arguments)
    }

    static func run(_ executable: String, _ arguments: [String], asServerUser: Bool) -> FlowbusProcesses.Outcome {
        let process = Process()
        (process.executableURL, process.arguments) = command(executable, arguments, asServerUser: asServerUser)
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        // initdb refuses a working directory it cannot read; / is readable by everyone.
        process.currentDirectoryURL = URL(fileURLWithPath: "/")
        do { try process.run() } catch { return .init(status: -1, output: "cannot run \(executable): \(error)") }
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return .init(status: process.terminationStatus, output: String(decoding: output, as: UTF8.self))
    }
}

public struct PostgresServerError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}
