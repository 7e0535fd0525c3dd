/// A key press as the client understands it, from the terminal or from a script.
public enum Key: Sendable, Equatable {
    case character(Character)
    /// Ctrl with a letter, e.g. `.control("c")`.
    case control(Character)
    case enter, tab, backTab, up, down, left, right, backspace, delete, escape
    case home, end, pageUp, pageDown, resize
    case help, toggleLog

    /// Keys from script notation: plain text is typed; `<Tab>`, `<S-Tab>`, `<Enter>`, `<Esc>`,
    /// `<BS>`, `<Up>`, `<Down>`, `<Left>`, `<Right>`, `<Space>`, `<F1>`, `<F2>`, `<C-x>` name keys.
    public static func parse(_ notation: String) throws(KeyNotationError) -> [Key] {
        var keys: [Key] = []
        var rest = Substring(notation)
        while let first = rest.first {
            if first == "<", let close = rest.firstIndex(of: ">") {
                let name = String(rest[rest.index(after: rest.startIndex)..<close])
                guard let key = named(name) else { throw KeyNotationError(name: name, notation: notation) }
                keys.append(key)
                rest = rest[rest.index(after: close)...]
            } else {
                keys.append(first == "\t" ? .tab : first == "\n" ? .enter : .character(first))
                rest = rest.dropFirst()
            }
        }
        return keys
    }

    static func named(_ name: String) -> Key? {
        switch name.lowercased() {
        case "tab": .tab
        case "s-tab", "backtab": .backTab
        case "enter", "cr", "return": .enter
        case "esc", "escape": .escape
        case "bs", "backspace": .backspace
        case "del", "delete": .delete
        case "up": .up
        case "down": .down
        case "left": .left
        case "right": .right
        case "space": .character(" ")
        case "lt": .character("<")
        case "f1": .help
        case "f2": .toggleLog
        case "home": .home
        case "end": .end
        default:
            if name.count == 3, name.lowercased().hasPrefix("c-"), let letter = name.last { .control(Character(letter.lowercased())) } else { nil }
        }
    }
}

/// A `<name>` in key notation that names no key.
public struct KeyNotationError: Error, Sendable, CustomStringConvertible {
    public var name: String
    public var notation: String
    public var description: String {
        "\"<\(name)>\" in \"\(notation)\" names no key; use <Tab>, <S-Tab>, <Enter>, <Esc>, <BS>, <Up>, <Down>, <Left>, <Right>, <Space>, <F1>, <F2>, <C-x> or <lt> for a literal <"
    }
}
