import FlowKit
import FlowProtocol
import Foundation
import Logging
import AppStore

/// The MDP service names of the app's services.
public enum AppServiceName {
    public static let users = "svc.users"
    public static let genres = "svc.genres"
    public static let movies = "svc.movies"
    public static let mail = "svc.mail"
    public static let expenses = "svc.expenses"
    public static let all = [users, genres, movies, mail, expenses]
}

/// The app's five services, as view models receive them (each view model takes the ones it uses).
public struct AppServices {
    public var users: any UserService
    public var genres: any GenreService
    public var movies: any MovieService
    public var mail: any MailService
    public var expenses: any ExpenseService
    /// Where the services commit their data (`durable`), and so where their replies are kept; nil: memory only.
    public var records: RecordStore?

    public init(
        users: any UserService, genres: any GenreService, movies: any MovieService, mail: any MailService, expenses: any ExpenseService,
        records: RecordStore? = nil
    ) {
        self.users = users
        self.genres = genres
        self.movies = movies
        self.mail = mail
        self.expenses = expenses
        self.records = records
    }

    /// The demo's in-memory services over `catalog`, the demo account seeded
    /// (demo@flowbus.dev / flowbus123). Serve them with `handlers`.
    public static func inMemory(
        catalog: Catalog, tokenLifetime: TimeInterval = InMemoryUserService.defaultTokenLifetime,
        resetCodeLifetime: TimeInterval = InMemoryUserService.defaultResetCodeLifetime, clock: @escaping AppClock = { Date() },
        hashIterations: Int = InMemoryUserService.defaultHashIterations
    ) -> AppServices {
        let mail = InMemoryMailService()
        let users = InMemoryUserService(
            mail: mail, tokenLifetime: tokenLifetime, resetCodeLifetime: resetCodeLifetime, clock: clock, hashIterations: hashIterations)
        users.seedDemoAccount()
        return AppServices(
            users: users, genres: InMemoryGenreService(catalog: catalog), movies: InMemoryMovieService(catalog: catalog),
            mail: mail, expenses: InMemoryExpenseService())
    }

    /// The services over `catalog` with their data in SQLite at `path` (created if missing): what
    /// they held before a kill -9 is there again, the demo account seeded only when absent.
    public static func durable(
        path: String, catalog: Catalog, tokenLifetime: TimeInterval = InMemoryUserService.defaultTokenLifetime,
        resetCodeLifetime: TimeInterval = InMemoryUserService.defaultResetCodeLifetime, clock: @escaping AppClock = { Date() },
        hashIterations: Int = InMemoryUserService.defaultHashIterations
    ) throws(RecordStoreError) -> AppServices {
        try durable(
            records: try RecordStore(path: path), catalog: catalog, tokenLifetime: tokenLifetime, resetCodeLifetime: resetCodeLifetime, clock: clock,
            hashIterations: hashIterations)
    }

    /// The services over `catalog` with their data in `records` — a SQLite file, or a
    /// PostgreSQL database that replicas share (each call then sees what any replica committed).
    public static func durable(
        records: RecordStore, catalog: Catalog, tokenLifetime: TimeInterval = InMemoryUserService.defaultTokenLifetime,
        resetCodeLifetime: TimeInterval = InMemoryUserService.defaultResetCodeLifetime, clock: @escaping AppClock = { Date() },
        hashIterations: Int = InMemoryUserService.defaultHashIterations
    ) throws(RecordStoreError) -> AppServices {
        let mail = InMemoryMailService(records: records)
        let users = InMemoryUserService(
            mail: mail, tokenLifetime: tokenLifetime, resetCodeLifetime: resetCodeLifetime, clock: clock, hashIterations: hashIterations, records: records)
        let movies = InMemoryMovieService(catalog: catalog, records: records)
        let expenses = InMemoryExpenseService(records: records)
        mail.followRecords()
        users.followRecords()
        movies.followRecords()
        expenses.followRecords()
        try records.load()
        users.seedDemoAccount()
        return AppServices(
            users: users, genres: InMemoryGenreService(catalog: catalog), movies: movies, mail: mail, expenses: expenses, records: records)
    }

    /// The in-memory services over the bundled catalog, as `movies-services` serves them.
    public static func inMemory(
        tokenLifetime: TimeInterval = InMemoryUserService.defaultTokenLifetime,
        resetCodeLifetime: TimeInterval = InMemoryUserService.defaultResetCodeLifetime, clock: @escaping AppClock = { Date() }
    ) throws(CatalogError) -> AppServices {
        inMemory(catalog: try Catalog.bundled(), tokenLifetime: tokenLifetime, resetCodeLifetime: resetCodeLifetime, clock: clock)
    }

    /// How long mailed codes stay valid, from `movies-services`' options: `--token-lifetime
    /// SECONDS` (e-mail verification, default 600) and `--reset-code-lifetime SECONDS` (password
    /// reset, default 900), each a whole number from 1 to 86,400.
    public static func codeLifetimes(from options: [String: String]) throws(PluginEnvironmentError) -> (token: TimeInterval, resetCode: TimeInterval) {
        func seconds(_ name: String, default value: TimeInterval) throws(PluginEnvironmentError) -> TimeInterval {
            guard let text = options[name] else { return value }
            guard let seconds = Int(text), (1...86_400).contains(seconds) else {
                throw PluginEnvironmentError(
                    "--\(name) takes whole seconds from 1 to 86400, as in `args: [\"--\(name)\", \"600\"]` in the manifest; got \"\(text)\"")
            }
            return TimeInterval(seconds)
        }
        return (try seconds("token-lifetime", default: InMemoryUserService.defaultTokenLifetime),
                try seconds("reset-code-lifetime", default: InMemoryUserService.defaultResetCodeLifetime))
    }

    /// The services as adapters over `transport` (`svc.*` on the bus), as view-model workers use them.
    public static func bus(transport: any ServiceTransport) -> AppServices {
        AppServices(
            users: BusUserService(transport: transport), genres: BusGenreService(transport: transport),
            movies: BusMovieService(transport: transport), mail: BusMailService(transport: transport),
            expenses: BusExpenseService(transport: transport))
    }

    /// The server side of these services, keyed by MDP service name (`svc.users`, ...).
    public var handlers: [String: ServiceHandler] { handlers(logger: nil) }

    /// The handlers, logging each failed or refused call (method and outcome, never the
    /// arguments: they hold passwords and tokens).
    public func handlers(logger: Logger?) -> [String: ServiceHandler] {
        let plain: [String: ServiceHandler] = [
            AppServiceName.users: ServiceHandlers.users(users),
            AppServiceName.genres: ServiceHandlers.genres(genres),
            AppServiceName.movies: ServiceHandlers.movies(movies, users: users),
            AppServiceName.mail: ServiceHandlers.mail(mail),
            AppServiceName.expenses: ServiceHandlers.expenses(expenses),
        ]
        return LoggedServiceHandlers.wrap(plain, logger: logger)
    }
}
