import FlowClient
import FlowProtocol
import Foundation

/// What the controller asks its runner to do.
public enum ClientCommand: Sendable, Equatable {
    /// Send `action` on the top screen with `fields` (the runner calls SessionClient.send).
    case send(action: String, fields: [String: String])
    case quit
}

/// A modal alert: a view model's error, or a refusal this client got back.
public struct Alert: Sendable, Equatable {
    public enum Source: Sendable, Equatable {
        /// The top screen's view model is in `error` at this screen version.
        case viewModel(kind: String, version: UInt64)
        case local
    }
    public var title: String
    public var message: String
    /// OK first; more buttons send their action.
    public var buttons: [FormButton]
    public var source: Source
}

/// The terminal client's behaviour, without a terminal: keys in, commands out, and everything
/// the renderer needs to draw. Owned by one thread (the client's loop or a test).
public final class ClientController {
    public let readOnly: Bool
    public private(set) var view: SessionView
    public private(set) var form: ScreenForm?
    /// The focused target's index in `form.targets`.
    public internal(set) var focus = 0
    /// The focus each screen ("kind#id") had when another came over it, given back when it is
    /// on top again (going back returns to where the person was), unless a text field of it is
    /// empty: then that field, so what the person types goes in and fires no shortcut.
    private var focusBeneath: [String: Int] = [:]
    /// Field values per screen ("kind#id"), kept while the screen stays in the navigation.
    public internal(set) var values: [String: [String: String]] = [:]
    /// The cursor within each carousel, list and choice list, per screen and block id.
    public private(set) var cursors: [String: Int] = [:]
    /// The caret in each text field, in characters from its start, per screen and field; none: at the end.
    var carets: [String: Int] = [:]
    /// The action in flight, if any (its reply not back yet).
    public private(set) var pending: String?
    /// The tab asked for (a digit, `[`, `]`) while something was in flight: the last one asked
    /// wins, and is selected once the screen settles (`takeDeferred`), as a person expects.
    public private(set) var deferredTab: String?
    /// A refusal or failure shown as an alert until OK.
    public private(set) var localAlert: Alert?
    /// The screen version of each view model error already acknowledged with OK.
    public private(set) var acknowledged: [String: UInt64] = [:]
    public private(set) var alertFocus = 0
    public var showHelp = false
    public var showLog = false
    /// One line under the screen: what just happened or why a key did nothing.
    public internal(set) var notice = ""
    public private(set) var lastChange = Date()
    var screenKey = ""
    /// Fields to empty once the action's state settles in success (a form that adds
    /// one entry after another); kept when it ends in error, so the person can correct what they typed.
    private var clearAfterSuccess: (key: String, kind: String, fields: [String], version: UInt64?)?
    /// A view model's action applied whose state has not come yet: its words go in the notice line when it does.
    private var awaitedNotice: (kind: String, version: UInt64, label: String)?

    public init(view: SessionView, readOnly: Bool = false) {
        self.view = view
        self.readOnly = readOnly
        rebuild()
    }

    /// Shows `text` in the notice line until the next thing happens.
    public func say(_ text: String) {
        notice = text
    }

    // MARK: State from the bus

    /// A new view of the session: rebuilds the form and keeps the focus where it makes sense.
    public func update(_ newView: SessionView) {
        guard newView != view || form == nil else { return }
        lastChange = Date()
        view = newView
        rebuild()
        settleClear()
        settleNotice()
    }

    /// The notice line says what a view model's applied action did once its state has come: in
    /// the screen's own words ("We sent a new code to …"), else "<label>: done"; nothing when it
    /// ended in an error (the alert says it).
    private func settleNotice() {
        guard let awaited = awaitedNotice, let state = view.states[awaited.kind], state.screenVersion >= awaited.version,
              state.phase != .loading else { return }
        awaitedNotice = nil
        switch state.phase {
        case .error: notice = ""
        case .success where !state.message.isEmpty: notice = state.message
        default: notice = "\(awaited.label): done"
        }
    }

    /// What a person calls `action`: its button's label, else its name.
    private func label(of action: String) -> String {
        let label = form?.actions[action]?.label ?? ""
        return label.isEmpty ? action : label
    }

    private func settleClear() {
        guard let clear = clearAfterSuccess, let version = clear.version, let state = view.states[clear.kind],
              state.screenVersion >= version, state.phase != .loading else { return }
        if state.phase == .success {
            for field in clear.fields { values[clear.key]?[field] = nil }
            // The next entry starts in the first field, not on the button just pressed.
            if clear.key == screenKey, let first = clear.fields.first { focus(field: first) }
        }
        clearAfterSuccess = nil
    }

    /// The reply to an action this controller asked for.
    public func finished(_ outcome: IntentOutcome) {
        pending = nil
        if let error = outcome.error {
            clearAfterSuccess = nil
            deferredTab = nil
            let message = outcome.isStale
                ? "The screen changed before this action arrived (another client acted on it, or what it shows was updated; the action was made on v\(outcome.prepared.version)). Nothing was applied: look at the screen as it is now, then act again."
                : error.message + (error.hint.isEmpty ? "" : "\n\(error.hint)")
            localAlert = Alert(title: "\(outcome.prepared.action) was not applied", message: message,
                               buttons: [FormButton(action: "", label: "OK")], source: .local)
            alertFocus = 0
            notice = "refused: \(outcome.prepared.action) (\(error.code))"
        } else {
            let action = outcome.prepared.action
            if case .viewModel(let kind) = outcome.prepared.route {
                // Said once the screen's state has come (see settleNotice).
                awaitedNotice = (kind, outcome.reply.screenVersion, label(of: action))
                settleNotice()
            } else {
                // Back, a tab, OK: the screen shown is the answer.
                notice = SessionActionNames.all.contains(action) ? "" : "\(label(of: action)): done"
            }
            if clearAfterSuccess != nil {
                clearAfterSuccess?.version = outcome.reply.screenVersion
                settleClear()
            }
        }
    }

    /// The tab deferred while something was in flight, once nothing is (and no alert waits for
    /// the person): the commands to send it. A refusal or failure drops it, as the person
    /// has something to read first.
    public func takeDeferred() -> [ClientCommand] {
        guard let tab = deferredTab, !busy else { return [] }
        deferredTab = nil
        guard alert == nil, view.tabs.contains(tab) else { return [] }
        return act("selectTab", fields: ["tab": tab])
    }

    /// The bus did not answer an action.
    public func failed(_ action: String, _ error: any Error) {
        pending = nil
        deferredTab = nil
        localAlert = Alert(title: "\(action) got no answer", message: "\(error)", buttons: [FormButton(action: "", label: "OK")], source: .local)
        alertFocus = 0
    }

    // MARK: What is shown

    /// The alert on top: this client's own first, then the view model's unacknowledged error.
    public var alert: Alert? {
        if let localAlert { return localAlert }
        guard let state = view.topState, state.phase == .error, !state.message.isEmpty,
              acknowledged[state.kind] != state.screenVersion else { return nil }
        let buttons = [FormButton(action: "", label: "OK")] + (form?.alertButtons ?? []).filter(\.enabled)
        return Alert(title: "Error", message: state.message, buttons: buttons, source: .viewModel(kind: state.kind, version: state.screenVersion))
    }

    /// Loading or waiting for a reply: the screen's actions are disabled.
    public var busy: Bool { pending != nil || view.phase == .loading }

    public var focusedTarget: FocusTarget? {
        guard let targets = form?.targets, focus < targets.count else { return nil }
        return targets[focus]
    }

    public func value(_ field: String) -> String { values[screenKey]?[field] ?? "" }

    public func cursor(_ block: String) -> Int { cursors[screenKey + "/" + block] ?? 0 }

    /// Where the caret is in `field`: characters before it.
    public func caret(_ field: String) -> Int {
        let count = value(field).count
        return min(carets[screenKey + "/" + field] ?? count, count)
    }

    /// Whether the focus is in a text field (letters go there, not to shortcuts).
    public var editing: Bool {
        guard alert == nil, let target = focusedTarget, case .field? = form?.blocks[target.block] else { return false }
        return true
    }

    /// Whether the back action is there: a stack deeper than one and no modal.
    public var canGoBack: Bool { view.modal == nil && view.stack.count > 1 }

    // MARK: Keys

    /// Handles one key; returns what the runner should do.
    public func handle(_ key: Key) -> [ClientCommand] {
        if key == .control("c") || key == .control("q") { return [.quit] }
        if key == .resize { return [] }
        if showHelp {
            showHelp = false
            return key == .character("q") ? [.quit] : []
        }
        if key == .help || (!editing && key == .character("?")) {
            showHelp = true
            return []
        }
        if key == .toggleLog || (!editing && (key == .character("l") || key == .character("L"))) {
            showLog.toggle()
            return []
        }
        if let alert { return handleAlert(key, alert) }
        if !editing, key == .character("q") { return [.quit] }
        if !editing, case .character(let c) = key, let digit = c.wholeNumberValue, digit >= 1, digit <= view.tabs.count {
            return act("selectTab", fields: ["tab": view.tabs[digit - 1]])
        }
        if !editing, key == .character("[") || key == .character("]") { return switchTab(by: key == .character("]") ? 1 : -1) }
        if editing, let handled = editField(key) { return handled }
        switch key {
        case .tab: move(1)
        case .backTab: move(-1)
        case .up: if !moveInList(-1) { move(-1) }
        case .down: if !moveInList(1) { move(1) }
        case .left: moveSideways(-1)
        case .right: moveSideways(1)
        case .enter: return activate()
        case .character(" ") where !editing: return activate(space: true)
        case .escape: return back()
        case .backspace: return back()
        default: break
        }
        return []
    }

    private func handleAlert(_ key: Key, _ alert: Alert) -> [ClientCommand] {
        switch key {
        case .tab, .right, .down: alertFocus = (alertFocus + 1) % alert.buttons.count
        case .backTab, .left, .up: alertFocus = (alertFocus + alert.buttons.count - 1) % alert.buttons.count
        case .escape: dismiss(alert)
        case .enter, .character(" "):
            let button = alert.buttons[min(alertFocus, alert.buttons.count - 1)]
            dismiss(alert)
            if !button.action.isEmpty { return act(button.action, fields: button.extraFields) }
        case .character("q"): return [.quit]
        default: break
        }
        return []
    }

    private func dismiss(_ alert: Alert) {
        switch alert.source {
        case .local: localAlert = nil
        case .viewModel(let kind, let version):
            acknowledged[kind] = version
            // The field the error is about takes the focus, so what the person types next goes there.
            if let field = view.states[kind]?.state.errorField, !field.isEmpty { focus(field: field) }
        }
        alertFocus = 0
    }

    /// The target of the form's first text field with nothing typed in it.
    private func firstEmptyTextField() -> Int? {
        guard let form else { return nil }
        return form.targets.firstIndex { target in
            if case .field(let field) = form.blocks[target.block] { return value(field.name).isEmpty }
            return false
        }
    }

    /// Puts the focus on the form's field or choice list `name`, if the form has it.
    private func focus(field name: String) {
        guard let form else { return }
        let index = form.targets.firstIndex { target in
            switch form.blocks[target.block] {
            case .field(let field): field.name == name
            case .choices(let choices, _, _, _): choices == name
            default: false
            }
        }
        if let index { focus = index }
    }

    private func back() -> [ClientCommand] {
        if view.modal != nil { return act("ok") }
        guard canGoBack else {
            notice = "nothing to go back to"
            return []
        }
        return act("back")
    }

    private func switchTab(by step: Int) -> [ClientCommand] {
        let tabs = view.tabs
        guard !tabs.isEmpty, let current = view.tab, let index = tabs.firstIndex(of: current) else { return [] }
        return act("selectTab", fields: ["tab": tabs[(index + step + tabs.count) % tabs.count]])
    }

    func activate(space: Bool = false) -> [ClientCommand] {
        guard let form, let target = focusedTarget else { return [] }
        switch form.blocks[target.block] {
        case .field:
            if !space { move(1) }
        case .buttons(let buttons):
            let button = buttons[target.button]
            guard button.enabled else {
                notice = "\(button.label) is not available now" + (button.disabledReason.isEmpty ? "" : ": \(button.disabledReason)")
                return []
            }
            // The action reads the form fields it declares; the button may add values of its own.
            var fields: [String: String] = [:]
            let declared = form.actions[button.action]?.fields.filter(form.fieldNames.contains) ?? []
            for name in declared { fields[name] = value(name) }
            fields.merge(button.extraFields) { _, extra in extra }
            if form.actions[button.action]?.clearsFields == true, !declared.isEmpty {
                clearAfterSuccess = (screenKey, form.kind, declared, nil)
            }
            return act(button.action, fields: fields)
        case .choices(let name, _, let options, let multiple):
            guard !options.isEmpty else { return [] }
            let id = options[min(cursor(name), options.count - 1)].id
            var chosen = value(name).split(separator: ",").map(String.init)
            if let index = chosen.firstIndex(of: id) { chosen.remove(at: index) } else if multiple { chosen.append(id) } else { chosen = [id] }
            values[screenKey, default: [:]][name] = chosen.joined(separator: ",")
        case .carousel(let id, _, let items, let action, let field), .list(let id, _, let items, let action, let field):
            guard !items.isEmpty, !action.isEmpty else { return [] }
            return act(action, fields: [field: items[min(cursor(id), items.count - 1)].id])
        default: break
        }
        return []
    }

    /// An action the person asked for, unless this client may not act now.
    private func act(_ action: String, fields: [String: String] = [:]) -> [ClientCommand] {
        if readOnly {
            notice = "read-only: this client observes; attach with --session ID (without --observe) to act"
            return []
        }
        if busy {
            if action == "selectTab", let tab = fields["tab"] {
                // Tabs pressed while waiting are not lost: the last one is shown next.
                deferredTab = tab
                notice = "tab \(tab) next, once " + (pending.map { "\($0) is answered" } ?? "the screen has loaded")
                return []
            }
            notice = pending.map { "wait: \($0) is in flight" } ?? "wait: the screen is loading"
            return []
        }
        pending = action
        notice = "\(label(of: action))…"
        return [.send(action: action, fields: fields)]
    }

    func move(_ step: Int) {
        guard let count = form?.targets.count, count > 0 else { return }
        focus = (focus + step + count) % count
    }

    /// Up/Down inside a list; false at its ends (the focus moves on instead).
    private func moveInList(_ step: Int) -> Bool {
        guard let form, let target = focusedTarget, case .list(let id, _, let items, _, _) = form.blocks[target.block] else { return false }
        let next = cursor(id) + step
        guard next >= 0, next < items.count else { return false }
        cursors[screenKey + "/" + id] = next
        return true
    }

    private func moveSideways(_ step: Int) {
        guard let form, let target = focusedTarget else { return }
        switch form.blocks[target.block] {
        case .carousel(let id, _, let items, _, _): cursors[screenKey + "/" + id] = max(0, min(items.count - 1, cursor(id) + step))
        case .choices(let name, _, let options, _): cursors[screenKey + "/" + name] = max(0, min(options.count - 1, cursor(name) + step))
        case .buttons: move(step)
        default: break
        }
    }

    private func rebuild() {
        guard let screen = view.topScreen else {
            form = nil
            screenKey = ""
            return
        }
        let key = "\(screen.kind)#\(screen.id)"
        form = ScreenForm.make(for: screen, in: view)
        if key != screenKey {
            if !screenKey.isEmpty { focusBeneath[screenKey] = focus }
            screenKey = key
            if let saved = focusBeneath.removeValue(forKey: key) {
                focus = firstEmptyTextField() ?? saved
            } else {
                focus = 0
            }
        }
        if let count = form?.targets.count { focus = count == 0 ? 0 : min(focus, count - 1) }
        skipDisabledButton()
        // Values and cursors of screens that left the navigation go with them (passwords included).
        let live = Set(liveScreenKeys())
        values = values.filter { live.contains($0.key) }
        cursors = cursors.filter { entry in live.contains(where: { entry.key.hasPrefix($0 + "/") }) }
        carets = carets.filter { entry in live.contains(where: { entry.key.hasPrefix($0 + "/") }) }
        focusBeneath = focusBeneath.filter { live.contains($0.key) }
    }

    /// The focus leaves a button that cannot be pressed now (Like once liked) for the next
    /// target that can, if there is one.
    func skipDisabledButton() {
        guard let form else { return }
        let targets = form.targets
        func disabled(_ index: Int) -> Bool {
            guard case .buttons(let buttons) = form.blocks[targets[index].block] else { return false }
            return !buttons[targets[index].button].enabled
        }
        guard !targets.isEmpty, disabled(focus) else { return }
        if let next = (1..<targets.count).lazy.map({ (self.focus + $0) % targets.count }).first(where: { !disabled($0) }) {
            focus = next
        }
    }

    private func liveScreenKeys() -> [String] {
        guard let navigation = view.navigation else { return [] }
        var screens = navigation.stacks.flatMap(\.screens)
        if navigation.hasModal { screens.append(navigation.modal) }
        return screens.map { "\($0.kind)#\($0.id)" }
    }
}
