import FlowClient
import Foundation

/// Text fields as a line editor has them.
extension ClientController {
    /// A key in the focused text field, as a line editor has it: characters go in at the caret;
    /// ← → Home End (Ctrl-A, Ctrl-E) move it; Backspace and Delete remove a character, Ctrl-U
    /// everything before it, Ctrl-K everything after, Ctrl-W the word before; Enter in the last
    /// field before a row of buttons presses the first of them. Nil: not a key for the field.
    func editField(_ key: Key) -> [ClientCommand]? {
        guard let form, let target = focusedTarget, case .field(let field) = form.blocks[target.block] else { return nil }
        let text = Array(value(field.name))
        let at = caret(field.name)
        func replace(_ range: Range<Int>, with inserted: [Character]) {
            edit(field, String(text[..<range.lowerBound] + inserted + text[range.upperBound...]), caret: range.lowerBound + inserted.count)
        }
        switch key {
        case .left: setCaret(field.name, at - 1)
        case .right: setCaret(field.name, at + 1)
        case .home, .control("a"): setCaret(field.name, 0)
        case .end, .control("e"): setCaret(field.name, text.count)
        case .backspace: if at > 0 { replace((at - 1)..<at, with: []) }
        case .delete, .control("d"): if at < text.count { replace(at..<(at + 1), with: []) }
        case .control("u"): replace(0..<at, with: [])
        case .control("k"): replace(at..<text.count, with: [])
        case .control("w"):
            var start = at
            while start > 0, text[start - 1] == " " { start -= 1 }
            while start > 0, text[start - 1] != " " { start -= 1 }
            replace(start..<at, with: [])
        case .character(let c): replace(at..<at, with: [c])
        case .escape:
            // Out of the field (to the next target that is no text field), so the keys are
            // shortcuts again: 1–4 pick tabs, Esc once more goes back. Alt-1 arrives as Esc, 1.
            let targets = form.targets
            guard let index = targets.firstIndex(of: target),
                  let next = (1..<targets.count).lazy.map({ (index + $0) % targets.count }).first(where: { offset in
                      if case .field = form.blocks[targets[offset].block] { return false }
                      return true
                  }) else { return nil }
            focus = next
            let tabs = view.tabs.isEmpty ? "" : "1–\(view.tabs.count) pick tabs, "
            notice = "left \(field.label): keys are shortcuts now (\(tabs)Esc goes back, Tab returns to the fields)"
        case .enter:
            // The last field before a row of buttons: Enter submits with its first button.
            let targets = form.targets
            guard let index = targets.firstIndex(of: target), index + 1 < targets.count,
                  case .buttons = form.blocks[targets[index + 1].block] else { return nil }
            focus = index + 1
            skipDisabledButton()
            return activate()
        default: return nil
        }
        return []
    }

    private func setCaret(_ field: String, _ position: Int) {
        carets[screenKey + "/" + field] = max(0, min(value(field).count, position))
    }

    private func edit(_ field: FormField, _ proposed: String, caret: Int) {
        var text = proposed
        if field.numeric { text = String(text.filter { $0.isASCII && ($0.isNumber || ".,-".contains($0)) }) }
        if text.count > field.maxLength {
            text = String(text.prefix(field.maxLength))
            notice = "\(field.label) takes at most \(field.maxLength) characters"
        }
        values[screenKey, default: [:]][field.name] = text
        // What the filter or the limit took off came before the caret, or was the typing itself.
        setCaret(field.name, min(caret - (proposed.count - text.count), text.count))
    }
}
