import Foundation
import FlowClient
import FlowProtocol

/// A button: an action of the app's action table, with its label.
public struct FormButton: Sendable, Equatable {
    public var action: String
    public var label: String
    public var enabled = true
    /// Fields the action sends besides the form's own (e.g. verifyEmail's e-mail).
    public var extraFields: [String: String] = [:]
}

/// A block of a screen's body, top to bottom. Fields, buttons, choices, carousels and lists take
/// the focus; text does not.
public enum FormBlock: Sendable, Equatable {
    case text(String, role: CellRole = .normal)
    case blank
    case field(name: String, label: String, masked: Bool)
    case buttons([FormButton])
    /// A multi-select list (SignUp's genres): (id, name) pairs; the field's value is the ids, comma-separated.
    case choices(name: String, label: String, options: [Flowbus_V1_Genre])
    /// A horizontal carousel (Home): Enter on an item sends `select` with its id.
    case carousel(id: String, title: String, items: [Flowbus_V1_Item])
    /// A vertical list of selectable items: Enter sends `select` with the item's id.
    case list(id: String, title: String, items: [Flowbus_V1_Item], selectable: Bool)
}

/// One thing that takes the focus: a block, and the button within it for a row of buttons.
public struct FocusTarget: Sendable, Equatable, Hashable {
    public var block: Int
    public var button: Int = 0
}

/// What a screen shows and lets a person do, built from the session's view: the client's
/// rendering of the app's screens (the view model says what, this says how).
public struct ScreenForm: Sendable, Equatable {
    public var kind: String
    public var title: String
    public var blocks: [FormBlock]

    /// Every focus target in order (Tab order).
    public var targets: [FocusTarget] {
        var targets: [FocusTarget] = []
        for (index, block) in blocks.enumerated() {
            switch block {
            case .text, .blank: continue
            case .list(_, _, let items, let selectable): if selectable, !items.isEmpty { targets.append(FocusTarget(block: index)) }
            case .carousel(_, _, let items): if !items.isEmpty { targets.append(FocusTarget(block: index)) }
            case .buttons(let buttons): for button in buttons.indices { targets.append(FocusTarget(block: index, button: button)) }
            case .field, .choices: targets.append(FocusTarget(block: index))
            }
        }
        return targets
    }

    /// The names of the form's text fields and choice lists, in order.
    public var fieldNames: [String] {
        blocks.compactMap { block in
            switch block {
            case .field(let name, _, _), .choices(let name, _, _): name
            default: nil
            }
        }
    }

    /// The form of the screen on top of `view` (the modal if any).
    public static func make(for screen: Flowbus_V1_Screen, in view: SessionView) -> ScreenForm {
        let state = view.states[screen.kind].flatMap { state in
            state.screenID.isEmpty || screen.id.isEmpty || state.screenID == screen.id ? state : nil
        }
        let data = state?.data
        let title = screen.title.isEmpty ? screen.kind.capitalized : screen.title
        var form = ScreenForm(kind: screen.kind, title: title, blocks: [])
        switch screen.kind {
        case "signin": form.blocks = signIn(data)
        case "signup": form.blocks = signUp(data)
        case "emailverification": form.blocks = emailVerification(screen)
        case "forgotpassword": form.blocks = forgotPassword()
        case "home": form.blocks = home(data)
        case "details": form.blocks = details(data)
        case "likes": form.blocks = likes(data)
        case "settings": form.blocks = settings(data)
        case "changepassword": form.blocks = changePassword()
        case "expenses": form.blocks = expenses(data)
        case "confirmation": form.blocks = [.text(screen.params["text"] ?? "Done."), .blank, .buttons([FormButton(action: "ok", label: "OK")])]
        default: form.blocks = unknown(screen)
        }
        return form
    }

    static func signIn(_ data: Flowbus_V1_ScreenData?) -> [FormBlock] {
        [
            .text("Sign in to Amor por Filmes e Séries.", role: .muted), .blank,
            .field(name: "email", label: "E-mail", masked: false),
            .field(name: "password", label: "Password", masked: true), .blank,
            .buttons([FormButton(action: "logIn", label: "Log in"), FormButton(action: "register", label: "Create account"),
                      FormButton(action: "forgotPassword", label: "Forgot password")]),
        ]
    }

    static func signUp(_ data: Flowbus_V1_ScreenData?) -> [FormBlock] {
        var blocks: [FormBlock] = [
            .field(name: "name", label: "Name", masked: false),
            .field(name: "nickname", label: "Nickname", masked: false),
            .field(name: "email", label: "E-mail", masked: false),
            .field(name: "password", label: "Password", masked: true),
            .field(name: "passwordConfirmation", label: "Confirm", masked: true),
        ]
        if case .genres(let list)? = data?.data, !list.genres.isEmpty {
            blocks.append(.choices(name: "genres", label: "Genres", options: list.genres))
        } else {
            blocks.append(.text("Genres: loading…", role: .muted))
        }
        blocks.append(.buttons([FormButton(action: "signUp", label: "Sign up")]))
        return blocks
    }

    static func emailVerification(_ screen: Flowbus_V1_Screen) -> [FormBlock] {
        let email = screen.params["email"] ?? "your e-mail"
        return [
            .text("We sent a 6-digit code to \(email)."),
            .text("No real mail here: `flowbus outbox \(email)` prints it.", role: .muted), .blank,
            .field(name: "token", label: "Code", masked: false), .blank,
            .buttons([FormButton(action: "verify", label: "Verify"), FormButton(action: "resend", label: "Resend code")]),
        ]
    }

    static func forgotPassword() -> [FormBlock] {
        [
            .text("We will mail you a link to choose a new password."), .blank,
            .field(name: "email", label: "E-mail", masked: false), .blank,
            .buttons([FormButton(action: "send", label: "Send")]),
        ]
    }

    static func home(_ data: Flowbus_V1_ScreenData?) -> [FormBlock] {
        guard case .home(let feed)? = data?.data else { return [.text("Loading your home…", role: .muted)] }
        var blocks: [FormBlock] = []
        for carousel in feed.carousels {
            if carousel.items.isEmpty {
                blocks.append(.text("\(carousel.title): nothing yet", role: .muted))
            } else {
                blocks.append(.carousel(id: carousel.id, title: carousel.title, items: carousel.items))
            }
        }
        return blocks
    }

    static func details(_ data: Flowbus_V1_ScreenData?) -> [FormBlock] {
        guard case .details(let details)? = data?.data else { return [.text("Loading…", role: .muted)] }
        var heading = details.item.title
        if details.year > 0 { heading += " (\(details.year))" }
        heading += " · \(details.item.kind)"
        var blocks: [FormBlock] = [.text(heading, role: .title)]
        if !details.genres.isEmpty { blocks.append(.text(details.genres.joined(separator: ", "), role: .muted)) }
        if !details.synopsis.isEmpty { blocks.append(.text(details.synopsis)) }
        if details.item.kind != "actor" {
            blocks.append(.buttons([
                FormButton(action: "like", label: details.liked ? "♥ Liked" : "♡ Like"),
                FormButton(action: "markWatched", label: details.watched ? "✓ Watched" : "Mark watched"),
            ]))
        } else {
            blocks.append(.buttons([FormButton(action: "like", label: details.liked ? "♥ Liked" : "♡ Like")]))
        }
        if !details.cast.isEmpty { blocks.append(.list(id: "cast", title: "Cast", items: details.cast, selectable: true)) }
        if !details.filmography.isEmpty {
            blocks.append(.list(id: "filmography", title: "Filmography", items: details.filmography, selectable: true))
        }
        if !details.episodes.isEmpty {
            let episodes = details.episodes.map { episode -> Flowbus_V1_Item in
                var item = Flowbus_V1_Item()
                item.id = episode.id
                item.kind = "episode"
                item.title = episode.title
                item.subtitle = "S\(episode.season) E\(episode.number)"
                return item
            }
            blocks.append(.list(id: "episodes", title: "Episodes", items: episodes, selectable: false))
        }
        return blocks
    }

    static func likes(_ data: Flowbus_V1_ScreenData?) -> [FormBlock] {
        guard case .items(let list)? = data?.data else { return [.text("Loading your likes…", role: .muted)] }
        if list.items.isEmpty { return [.text("Nothing liked yet: open a movie or a series and choose Like.", role: .muted)] }
        return [.list(id: "likes", title: "Liked", items: list.items, selectable: true)]
    }

    static func settings(_ data: Flowbus_V1_ScreenData?) -> [FormBlock] {
        var blocks: [FormBlock] = []
        if case .account(let account)? = data?.data {
            blocks.append(.text("\(account.name) (\(account.nickname))", role: .title))
            blocks.append(.text(account.email))
            if !account.genres.isEmpty { blocks.append(.text("Genres: " + account.genres.joined(separator: ", "), role: .muted)) }
            blocks.append(.blank)
        }
        blocks.append(.buttons([FormButton(action: "changePassword", label: "Change password"), FormButton(action: "logOut", label: "Log out")]))
        return blocks
    }

    static func changePassword() -> [FormBlock] {
        [
            .field(name: "current", label: "Current", masked: true),
            .field(name: "password", label: "New", masked: true),
            .field(name: "passwordConfirmation", label: "Confirm", masked: true), .blank,
            .buttons([FormButton(action: "change", label: "Change password")]),
        ]
    }

    static func expenses(_ data: Flowbus_V1_ScreenData?) -> [FormBlock] {
        guard case .report(let report)? = data?.data else { return [.text("Carregando o relatório…", role: .muted)] }
        var blocks: [FormBlock] = [
            .text("Relatório \(report.id) · criado em \(report.criadoEm)", role: .muted),
            .field(name: "titulo", label: "Título", masked: false),
            .field(name: "tipo", label: "Tipo", masked: false),
            .text("          1 Eletrônicos · 2 Escritório", role: .muted),
            .field(name: "valor", label: "Valor", masked: false),
            .buttons([FormButton(action: "adicionar", label: "Adicionar")]),
        ]
        if report.expenses.isEmpty {
            blocks.append(.text("Nenhuma despesa ainda.", role: .muted))
        } else {
            for expense in report.expenses {
                blocks.append(.text("• \(expense.titulo.padded(24)) \(expense.tipoTexto.padded(12)) \(expense.valorTexto)"))
            }
        }
        blocks.append(.text("Total: \(report.totalTexto)", role: .title))
        blocks.append(.buttons([FormButton(action: "registrar", label: "Registrar", enabled: report.podeRegistrar)]))
        return blocks
    }

    static func unknown(_ screen: Flowbus_V1_Screen) -> [FormBlock] {
        let buttons = (ActionTable.dataActions[screen.kind] ?? []).filter { $0 != "appear" }.map { FormButton(action: $0, label: $0) }
        var blocks: [FormBlock] = [.text("This client does not know the \(screen.kind) screen; its actions:", role: .muted)]
        if !buttons.isEmpty { blocks.append(.buttons(buttons)) }
        return blocks
    }
}
