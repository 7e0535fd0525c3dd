import Foundation

/// The folder one host run lives in: its ipc sockets, `host.json`, and the plugins' logs.
///
/// Every command finds the host through it, so `flowbus ps` and `flowbus down` need no
/// arguments when the host runs with the default one.
public struct RunDirectory: Sendable, Equatable {
    public let path: String

    public init(path: String) {
        self.path = path
    }

    /// `$FLOWBUS_RUN_DIR`, else `/tmp/flowbus-<uid>/default`: short, because a unix socket
    /// path has room for about 100 bytes.
    public static func defaultDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> RunDirectory {
        if let explicit = environment[BusVariables.runDirectory], !explicit.isEmpty {
            return RunDirectory(path: explicit)
        }
        return RunDirectory(path: "/tmp/flowbus-\(getuid())/default")
    }

    public var descriptorPath: String { path + "/host.json" }
    public var logDirectory: String { path + "/logs" }
    public var hostLogPath: String { logDirectory + "/host.log" }
    public var controlEndpoint: String { "ipc://\(path)/control.ipc" }
    public var defaultBrokerEndpoint: String { "ipc://\(path)/broker.ipc" }
    public var defaultCloneBase: String { "ipc://\(path)/clone" }

    /// Creates the folder and its `logs/` (owner-only: the sockets in it are the bus), then
    /// checks that what is there, made now or before, is the user's alone (`checkOwnership`).
    public func create() throws {
        try FileManager.default.createDirectory(
            atPath: logDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try checkOwnership()
    }

    /// Refuses a run directory another user could have prepared or could change: the folder,
    /// its parent, `logs/` and `host.json` must be owned by this user (or root) and writable by
    /// no one else — a parent such as `/tmp`, writable by all but sticky, is fine. Otherwise
    /// whoever controls it could point `host.json` at their own sockets.
    public func checkOwnership() throws(RunDirectoryError) {
        let parent = (path as NSString).deletingLastPathComponent
        try Self.check(parent, isParent: true)
        try Self.check(path, isParent: false)
        try Self.check(logDirectory, isParent: false, mayBeMissing: true)
        try Self.check(descriptorPath, isParent: false, mayBeMissing: true)
    }

    private static func check(_ path: String, isParent: Bool, mayBeMissing: Bool = false) throws(RunDirectoryError) {
        var status = stat()
        guard lstat(path, &status) == 0 else {
            if mayBeMissing && errno == ENOENT { return }
            throw .untrusted(path: path, reason: "cannot inspect it: \(String(cString: strerror(errno)))")
        }
        let user = geteuid()
        let mode = status.st_mode
        if (mode & S_IFMT) == S_IFLNK {
            throw .untrusted(path: path, reason: "it is a symbolic link, which whoever made it can point anywhere")
        }
        if status.st_uid != user && status.st_uid != 0 {
            throw .untrusted(path: path, reason: "it belongs to uid \(status.st_uid), not to you (uid \(user))")
        }
        let writableByOthers = mode & (S_IWGRP | S_IWOTH) != 0
        let sticky = mode & S_ISVTX != 0
        if writableByOthers && !(isParent && sticky) {
            throw .untrusted(path: path, reason: "group or others may write to it (mode \(String(mode & 0o7777, radix: 8)))")
        }
    }

    /// The descriptor of the host running here, or nil when none was written. Checks ownership
    /// first: a descriptor someone else could write is never trusted.
    public func readDescriptor() throws -> HostDescriptor? {
        guard FileManager.default.fileExists(atPath: descriptorPath) else { return nil }
        try checkOwnership()
        guard let data = FileManager.default.contents(atPath: descriptorPath) else { return nil }
        do {
            return try JSONDecoder.flowbus.decode(HostDescriptor.self, from: data)
        } catch {
            throw RunDirectoryError.unreadableDescriptor(path: descriptorPath, reason: "\(error)")
        }
    }

    public func writeDescriptor(_ descriptor: HostDescriptor) throws {
        let data = try JSONEncoder.flowbus.encode(descriptor)
        let temporary = descriptorPath + ".tmp"
        try data.write(to: URL(fileURLWithPath: temporary))
        // Owner-only whatever the umask: a descriptor others could write is refused on reading.
        chmod(temporary, 0o600)
        // rename is atomic: a reader sees the old file or the new one, never half of one.
        guard rename(temporary, descriptorPath) == 0 else {
            throw RunDirectoryError.unwritableRunDirectory(path: path, reason: String(cString: strerror(errno)))
        }
    }

    /// The host's session-capability key (64 hex digits), owner-only; it outlives the host so the
    /// capabilities it gave stay good across a restart on the same run directory.
    public var sessionKeyPath: String { path + "/session.key" }

    /// The session-capability key written here, or nil when there is none or this user cannot
    /// read it (another user's tools never can: the file is 0600).
    public func readSessionKey() -> String? {
        guard let data = FileManager.default.contents(atPath: sessionKeyPath) else { return nil }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }

    /// The key written here, or `make()`'s, written owner-only first when there is none. An
    /// existing key file must be the user's, not a link, and readable by no one else.
    public func sessionKey(orWrite make: () -> String) throws -> String {
        try Self.check(sessionKeyPath, isParent: false, mayBeMissing: true)
        var status = stat()
        if lstat(sessionKeyPath, &status) == 0, status.st_mode & 0o077 != 0 {
            throw RunDirectoryError.untrusted(
                path: sessionKeyPath, reason: "others may read it (mode \(String(status.st_mode & 0o7777, radix: 8))), so they could act on any session")
        }
        if let existing = readSessionKey() { return existing }
        let key = make()
        let descriptor = open(sessionKeyPath, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard descriptor >= 0 else {
            if errno == EEXIST, let existing = readSessionKey() { return existing }
            throw RunDirectoryError.unwritableRunDirectory(path: path, reason: "session.key: \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        let bytes = Array((key + "\n").utf8)
        guard write(descriptor, bytes, bytes.count) == bytes.count else {
            unlink(sessionKeyPath)
            throw RunDirectoryError.unwritableRunDirectory(path: path, reason: "session.key: \(String(cString: strerror(errno)))")
        }
        return key
    }

    public func removeDescriptor() {
        unlink(descriptorPath)
    }

    /// The host running here; throws `noHost` when none is.
    public func requireLiveHost() throws -> HostDescriptor {
        guard let descriptor = try liveHost() else { throw RunDirectoryError.noHost(runDirectory: path) }
        return descriptor
    }

    /// The host recorded here if its process is still alive.
    public func liveHost() throws -> HostDescriptor? {
        guard let descriptor = try readDescriptor() else { return nil }
        return isAlive(pid: descriptor.pid) ? descriptor : nil
    }
}

/// What a running host announces in `<run-dir>/host.json`.
public struct HostDescriptor: Codable, Sendable, Equatable {
    public var pid: Int32
    public var startedAt: Date
    public var runDirectory: String
    public var endpoints: HostEndpoints
    /// The z85 public key clients must use as CURVE server key, when CURVE is on.
    public var serverPublicKey: String?
    /// Whether the bus is closed (only the host's plugins serve; the default) or open
    /// (`flowbus up --open`). nil from a host that predates the distinction.
    public var access: BusAccessMode?
    /// ipc endpoints in the run directory, for processes of this user on this machine (the
    /// plugins, and local tools such as `flowbus sessions`), when `endpoints` are tcp.
    public var localEndpoints: HostEndpoints?

    /// The endpoints a process on this machine uses: the local ipc ones when there are.
    public var endpointsOnThisMachine: HostEndpoints { localEndpoints ?? endpoints }

    public init(pid: Int32, startedAt: Date, runDirectory: String, endpoints: HostEndpoints, serverPublicKey: String?, access: BusAccessMode? = .closed) {
        self.pid = pid
        self.startedAt = startedAt
        self.runDirectory = runDirectory
        self.endpoints = endpoints
        self.serverPublicKey = serverPublicKey
        self.access = access
    }
}

/// Closed: only the host's plugins register as workers, call plugin services and write state;
/// clients send intents and read their own session. Open: everyone may do everything.
public enum BusAccessMode: String, Codable, Sendable {
    case closed
    case open
}

/// Whether a process with this pid runs (one of another user's counts). A zombie — exited, not
/// yet reaped by its parent (a `flowbus demo` that started the host) — does not.
public func isAlive(pid: Int32) -> Bool {
    guard kill(pid, 0) == 0 || errno == EPERM else { return false }
    return !isZombie(pid: pid)
}

/// Whether `pid` has exited and waits for its parent to reap it (`Z` in /proc/<pid>/stat).
public func isZombie(pid: Int32) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return false }
    // `pid (comm) S …`: the state follows the command name, which may itself hold spaces or parentheses.
    return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).first == "Z"
}

extension JSONEncoder {
    /// How Flowbus writes its JSON files and control messages: sorted keys, ISO 8601 dates.
    public static var flowbus: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }
}

extension JSONDecoder {
    public static var flowbus: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}

/// Why a run directory could not be read or written; each says what to do.
public enum RunDirectoryError: Error, CustomStringConvertible, Equatable, Sendable {
    case unreadableDescriptor(path: String, reason: String)
    case unwritableRunDirectory(path: String, reason: String)
    /// No live host announced itself in the run directory.
    case noHost(runDirectory: String)
    /// The run directory (or its parent, `logs/`, `host.json`) is not this user's alone.
    case untrusted(path: String, reason: String)

    public var description: String {
        switch self {
        case .unreadableDescriptor(let path, let reason):
            "cannot read the host descriptor \(path): \(reason); remove the file if no host is running"
        case .unwritableRunDirectory(let path, let reason):
            "cannot write to the run directory \(path): \(reason); pick a writable one with --run-dir"
        case .noHost(let directory):
            "no flowbus host is running in \(directory); start one with `flowbus up` (or pass the --run-dir it uses)"
        case .untrusted(let path, let reason):
            "refusing to use \(path): \(reason); someone else could control the bus through it. "
                + "Remove it if it is not yours (as its owner or root), or choose a private folder with --run-dir or FLOWBUS_RUN_DIR"
        }
    }
}
