import FlowClient
import FlowProtocol
import Foundation

/// A button: an action the screen offers, with its label.
public struct FormButton: Sendable, Equatable {
    public var action: String
    public var label: String
    public var enabled = true
    /// Why the action cannot be taken now, for the status line.
    public var disabledReason = ""
    /// Field values the button sends besides the form's own (e.g. verifyEmail's e-mail).
    public var extraFields: [String: String] = [:]
}

/// A text input of the form.
public struct FormField: Sendable, Equatable {
    public var name: String
    public var label: String
    public var masked = false
    /// Only digits and the separators `.`, `,` and `-` are typed.
    public var numeric = false
    /// The most characters a person can type.
    public var maxLength = ScreenForm.defaultMaxLength
}

/// A block of a screen's body, top to bottom. Fields, buttons, choices, carousels and lists take
/// the focus; text does not.
public enum FormBlock: Sendable, Equatable {
    case text(String, role: CellRole = .normal)
    case blank
    case field(FormField)
    case buttons([FormButton])
    /// A choice list; the field's value is the chosen id, or (multiple) the ids comma-separated.
    case choices(name: String, label: String, options: [Flowbus_V1_Option], multiple: Bool)
    /// A horizontal carousel: Enter on an entry sends `action` with `field` = its id.
    case carousel(id: String, title: String, items: [Flowbus_V1_Item], action: String, field: String)
    /// A vertical list; with an action, Enter on an entry sends it with `field` = the entry's id.
    case list(id: String, title: String, items: [Flowbus_V1_Item], action: String, field: String)
}

extension FormBlock {
    var isText: Bool { if case .text = self { !isHint } else { false } }
    /// A field's hint: text indented under its field.
    var isHint: Bool { if case .text(let text, .muted) = self { text.hasPrefix("    ") } else { false } }
    var isInput: Bool {
        switch self {
        case .field, .choices: true
        default: false
        }
    }
    var isButtons: Bool { if case .buttons = self { true } else { false } }
}

/// One thing that takes the focus: a block, and the button within it for a row of buttons.
public struct FocusTarget: Sendable, Equatable, Hashable {
    public var block: Int
    public var button: Int = 0
}

/// What a screen shows and lets a person do, built from what the screen published: its view
/// model's presentation (or the one the screen carries) and the actions it offers. No app's
/// screens are known here; any plugin's screen is drawn the same way.
public struct ScreenForm: Sendable, Equatable {
    /// What a field takes when its presentation sets no limit.
    public static let defaultMaxLength = 256

    public var kind: String
    public var title: String
    public var blocks: [FormBlock]
    /// Every action the screen offers, by name.
    public var actions: [String: Flowbus_V1_Action] = [:]
    /// Choices the view model's error alert offers besides OK.
    public var alertButtons: [FormButton] = []

    /// Every focus target in order (Tab order).
    public var targets: [FocusTarget] {
        var targets: [FocusTarget] = []
        for (index, block) in blocks.enumerated() {
            switch block {
            case .text, .blank: continue
            case .list(_, _, let items, let action, _): if !action.isEmpty, !items.isEmpty { targets.append(FocusTarget(block: index)) }
            case .carousel(_, _, let items, _, _): if !items.isEmpty { targets.append(FocusTarget(block: index)) }
            case .buttons(let buttons): for button in buttons.indices { targets.append(FocusTarget(block: index, button: button)) }
            case .field, .choices: targets.append(FocusTarget(block: index))
            }
        }
        return targets
    }

    /// The names of the form's fields and choice lists, in order.
    public var fieldNames: [String] {
        blocks.compactMap { block in
            switch block {
            case .field(let field): field.name
            case .choices(let name, _, _, _): name
            default: nil
            }
        }
    }

    /// The form of `screen` in `view`: its view model's presentation when its state belongs to
    /// this screen, else the presentation the screen carries.
    public static func make(for screen: Flowbus_V1_Screen, in view: SessionView) -> ScreenForm {
        let state = view.state(of: screen)
        var offered = (state?.actions ?? []) + screen.actions
        if screen.id == view.topScreen?.id { offered += view.navigation?.actions ?? [] }
        let actions = Dictionary(offered.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let presentation: Flowbus_V1_Presentation? = if let state, state.state.hasPresentation {
            state.presentation
        } else if screen.hasPresentation {
            screen.presentation
        } else {
            nil
        }
        let title = [presentation?.title ?? "", screen.title].first { !$0.isEmpty } ?? screen.kind.capitalized
        var form = ScreenForm(kind: screen.kind, title: title, blocks: [], actions: actions)
        if let presentation {
            form.blocks = spaced(presentation.components.flatMap { form.blocks(for: $0) })
            form.alertButtons = presentation.alertButtons.map(form.button)
        } else {
            form.blocks = form.placeholder(screen, loading: state == nil && !screen.viewModel.isEmpty)
        }
        return form
    }

    /// A blank line where a form changes from text to inputs, and from inputs to their buttons,
    /// so each group reads as one.
    static func spaced(_ blocks: [FormBlock]) -> [FormBlock] {
        var spaced: [FormBlock] = []
        for block in blocks {
            if let previous = spaced.last {
                let textToInput = previous.isText && block.isInput
                let inputToButtons = (previous.isInput || previous.isHint) && block.isButtons
                if textToInput || inputToButtons { spaced.append(.blank) }
            }
            spaced.append(block)
        }
        return spaced
    }

    func button(_ ref: Flowbus_V1_ActionRef) -> FormButton {
        guard let action = actions[ref.action] else {
            return FormButton(action: ref.action, label: ref.label.isEmpty ? ref.action : ref.label, enabled: false,
                              disabledReason: "this screen does not offer \(ref.action) now", extraFields: ref.values)
        }
        return FormButton(
            action: ref.action, label: ref.label.isEmpty ? action.label : ref.label, enabled: !action.disabled,
            disabledReason: action.disabledReason, extraFields: ref.values)
    }

    func blocks(for component: Flowbus_V1_Component) -> [FormBlock] {
        switch component.component {
        case .text(let text):
            let role: CellRole = switch text.style {
            case .heading: .title
            case .muted: .muted
            default: .normal
            }
            return [.text(text.text, role: role)]
        case .field(let field):
            var blocks: [FormBlock]
            switch field.kind {
            case .choice, .multiChoice:
                blocks = [.choices(name: field.name, label: field.label, options: field.options, multiple: field.kind == .multiChoice)]
            default:
                blocks = [.field(FormField(
                    name: field.name, label: field.label, masked: field.kind == .secret, numeric: field.kind == .number,
                    maxLength: field.maxLength > 0 ? Int(field.maxLength) : Self.defaultMaxLength))]
            }
            if !field.hint.isEmpty { blocks.append(.text(String(repeating: " ", count: 11) + field.hint, role: .muted)) }
            return blocks
        case .buttons(let buttons):
            return buttons.buttons.isEmpty ? [] : [.buttons(buttons.buttons.map(button))]
        case .collection(let collection):
            guard !collection.items.isEmpty else {
                let text = collection.emptyText.isEmpty ? "\(collection.title): nothing yet" : collection.emptyText
                return [.text(text, role: .muted)]
            }
            if collection.style == .carousel {
                return [.carousel(id: collection.id, title: collection.title, items: collection.items, action: collection.action, field: collection.field)]
            }
            return [.list(id: collection.id, title: collection.title, items: collection.items, action: collection.action, field: collection.field)]
        case .summary(let summary):
            return [.text("\(summary.label): \(summary.value)", role: .title)]
        case .notice(let notice):
            return [.text(notice.text, role: .accent)]
        case nil:
            return []
        }
    }

    /// What shows before the screen's view model has published, or for a screen that publishes
    /// no presentation: a wait, or its own actions as buttons.
    func placeholder(_ screen: Flowbus_V1_Screen, loading: Bool) -> [FormBlock] {
        if loading { return [.text("Loading…", role: .muted)] }
        let own = actions.values.filter { !SessionActionNames.all.contains($0.name) }.sorted { $0.name < $1.name }
        var blocks: [FormBlock] = [.text("The \(screen.kind) screen publishes no presentation.", role: .muted)]
        if !own.isEmpty { blocks.append(.buttons(own.map { button(Flowbus_V1_ActionRef.to($0.name)) })) }
        return blocks
    }
}

/// The session's own navigation actions (Navigation.actions), which the chrome shows as keys.
enum SessionActionNames {
    static let all: Set<String> = ["back", "selectTab", "ok", "dismiss"]
}

extension Flowbus_V1_ActionRef {
    static func to(_ action: String) -> Self {
        var ref = Self()
        ref.action = action
        return ref
    }
}
