import Foundation

/// Where a services process keeps the app's data, as its `--data` option says: a SQLite file
/// (the default, in the run directory), `memory` (nothing kept), or a PostgreSQL address shared
/// by the services' replicas.
public enum AppData: Equatable, Sendable {
    case memory
    case file(String)
    case postgres(address: String, schema: String)

    /// Reads `--data` (`option`); without it, `defaultFile` (nil when the process has no run
    /// directory: memory). `app` is the PostgreSQL schema (`movies`, `photos`).
    ///
    /// Replicas must share their data: replica 1 and above are refused a file or memory of their
    /// own, whose accounts and likes the other replicas would never see.
    public init(option: String?, defaultFile: String?, app: String, replica: Int) throws(AppDataError) {
        let chosen = option ?? defaultFile
        if let chosen, RecordStore.isPostgresAddress(chosen) {
            self = .postgres(address: chosen, schema: app)
        } else if let chosen, chosen != "memory" {
            self = .file(chosen)
        } else {
            self = .memory
        }
        if replica > 0, case .postgres = self {} else if replica > 0 {
            throw AppDataError(
                "replica \(replica) of the \(app) services would keep data of its own (\(self)), which the other replicas never see; "
                    + "give every replica one PostgreSQL database: --data postgresql://USER@HOST/DATABASE, or run one replica")
        }
    }

    /// The store, opened (nil for memory).
    public func open() throws(RecordStoreError) -> RecordStore? {
        switch self {
        case .memory: nil
        case .file(let path): try RecordStore(path: path)
        case .postgres(let address, let schema): try RecordStore(postgres: address, schema: schema)
        }
    }
}

extension AppData: CustomStringConvertible {
    public var description: String {
        switch self {
        case .memory: "memory only"
        case .file(let path): "SQLite at \(path)"
        case .postgres(let address, let schema): "PostgreSQL at \(PostgresRecords.redacted(address)), schema \(schema)"
        }
    }
}

public struct AppDataError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}
