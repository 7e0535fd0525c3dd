/// What a person types to create an account (already validated by the sign-up view model).
public struct Registration: Sendable, Equatable {
    public var name: String
    public var nickname: String
    public var email: String
    public var password: String
    /// Genre ids, e.g. `drama`.
    public var genres: [String]

    public init(name: String, nickname: String, email: String, password: String, genres: [String]) {
        self.name = name
        self.nickname = nickname
        self.email = email
        self.password = password
        self.genres = genres
    }
}
