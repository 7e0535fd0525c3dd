import AccountKit
import FlowKit
import FlowProtocol

/// Creates an account: `appear` loads the genres (`loadGenres` again, after they failed);
/// `signUp` validates every field, then registers (success: account + notice "verificationSent").
public final class SignUpViewModel: ViewModel {
    override public class var screen: String { "signup" }
    override public class var actions: [ActionSpec] {
        [ActionSpec("signUp", label: "Sign up", fields: ["name", "nickname", "email", "password", "passwordConfirmation", "genres"]),
         ActionSpec("loadGenres", label: "Load genres")]
    }

    let users: any UserService
    let genres: any GenreService
    /// The genres last loaded, shown while the sign-up's own outcome is on screen.
    var genreList: [Movies_V1_Genre] = []

    public init(session: String, users: any UserService, genres: any GenreService) {
        self.users = users
        self.genres = genres
        super.init(session: session)
    }

    override public func handle(_ intent: IntentInput) throws(IntentRefusal) {
        switch intent.action {
        case "appear", "loadGenres": loadGenres()
        case "signUp": signUp(intent)
        default: try super.handle(intent)
        }
    }

    func loadGenres() {
        load({ () throws(ServiceFailure) -> ScreenPayload in
            var data = ScreenData()
            data.genres.genres = try genres.genres()
            genreList = data.genres.genres
            return .movies(data)
        }, message: { _ in "Could not load the genres: the genre service is not available. Press Load genres to try again in a moment." })
    }

    /// The first rule the form breaks, in the order of its fields: the field and the message.
    func problem(
        email: String, password: String, confirmation: String, name: String, nickname: String, genres: [String]
    ) -> (field: String, message: String)? {
        if name.isEmpty { return ("name", "Enter your name.") }
        if name.count > FieldLimits.name { return ("name", AccountRules.tooLong("name", limit: FieldLimits.name)) }
        if nickname.isEmpty { return ("nickname", "Enter a nickname.") }
        if nickname.count > FieldLimits.name { return ("nickname", AccountRules.tooLong("nickname", limit: FieldLimits.name)) }
        if let problem = AccountRules.emailProblem(email) { return ("email", problem) }
        if let fault = AccountRules.newPasswordFault(password, confirmation: confirmation) {
            return (fault.field == .password ? "password" : "passwordConfirmation", fault.message)
        }
        if genres.isEmpty { return ("genres", "Choose at least one genre.") }
        if case .genres(let list)? = screenData?.data {
            let known = Set(list.genres.map(\.id))
            if let unknown = genres.first(where: { !known.contains($0) }) {
                return ("genres", "\"\(unknown)\" is not one of the genres. Choose genres from the list.")
            }
        }
        return nil
    }

    func signUp(_ intent: IntentInput) {
        let email = intent.field("email")
        let password = intent.rawField("password")
        let genreIDs = intent.field("genres").split(separator: ",").map { $0.trimmingWhitespace }.filter { !$0.isEmpty }
        let registration = Registration(
            name: intent.field("name"), nickname: intent.field("nickname"), email: email, password: password, genres: genreIDs)
        if let problem = problem(
            email: email, password: password, confirmation: intent.rawField("passwordConfirmation"),
            name: registration.name, nickname: registration.nickname, genres: genreIDs) {
            return fail(problem.message, field: problem.field)
        }
        load({ () throws(ServiceFailure) -> ScreenPayload in
            let account = try users.register(registration)
            return .account(account, notice: "verificationSent", "We sent a 6-digit code to \(account.email). Type it on the next screen.")
        }, message: { failure in
            switch failure {
            case .refused(.emailTaken): "An account already exists for \(email). Sign in instead, or use another e-mail."
            case .refused(let refusal): CommonMessages.unexpected(refusal)
            case .unavailable: CommonMessages.unavailable("sign-up service")
            }
        })
    }

    /// The genres loaded on appear, kept while the sign-up itself shows its outcome.
    var loadedGenres: [Movies_V1_Genre] {
        if case .genres(let list)? = screenData?.data { return list.genres }
        return genreList
    }

    override public func presentation() -> Presentation {
        var components: [PresentationComponent] = [
            .field("name", label: "Name", maxLength: FieldLimits.name),
            .field("nickname", label: "Nickname", maxLength: FieldLimits.name),
            .field("email", label: "E-mail", maxLength: FieldLimits.email),
            .field("password", label: "Password", kind: .secret, maxLength: FieldLimits.password),
            .field("passwordConfirmation", label: "Confirm", kind: .secret, maxLength: FieldLimits.password),
        ]
        let genres = loadedGenres
        if genres.isEmpty {
            if state == .loading {
                components.append(.muted("Genres: loading…"))
            } else {
                components.append(.muted("Genres: not loaded; press Load genres to try again"))
                components.append(.buttons("loadGenres"))
            }
        } else {
            components.append(.field("genres", label: "Genres", kind: .multiChoice, options: genres.map { ($0.id, $0.name) }))
        }
        components.append(.buttons("signUp"))
        return Presentation(components)
    }

    /// Load genres only while none are loaded and none are loading.
    override public func disabledReason(for action: String) -> String? {
        guard action == "loadGenres" else { return nil }
        if !loadedGenres.isEmpty { return "the genres are loaded" }
        if state == .loading { return "the genres are loading" }
        return nil
    }
}
