import Foundation

/// How a cell is drawn; the terminal maps each role to colours and attributes (see CTerminal).
public enum CellRole: Int32, Sendable, Equatable {
    case normal = 0, bar, focus, disabled, error, accent, muted, selected, title
}

/// One character cell of the screen. A wide character (CJK, an emoji) takes two: its own, then
/// a continuation cell (`Cell.continuation`) that holds nothing of its own.
public struct Cell: Sendable, Equatable {
    public var scalar: Unicode.Scalar
    public var role: CellRole
    /// Whether the character takes this cell and the next.
    public var wide = false

    public init(scalar: Unicode.Scalar, role: CellRole, wide: Bool = false) {
        self.scalar = scalar
        self.role = role
        self.wide = wide
    }

    public static let blank = Cell(scalar: " ", role: .normal)
    /// The scalar of the second cell of a wide character.
    public static let continuationScalar: Unicode.Scalar = "\u{0}"
    public var isContinuation: Bool { scalar == Self.continuationScalar }
}

/// A rectangle of cells: what the renderer draws into and what the terminal shows. Rendering is
/// tested on canvases alone (screen value in, rows of text out).
public struct Canvas: Sendable, Equatable {
    public let rows: Int
    public let columns: Int
    public private(set) var cells: [Cell]

    public init(rows: Int, columns: Int) {
        self.rows = max(0, rows)
        self.columns = max(0, columns)
        cells = Array(repeating: .blank, count: self.rows * self.columns)
    }

    public subscript(row: Int, column: Int) -> Cell {
        get { cells[row * columns + column] }
        set {
            guard row >= 0, row < rows, column >= 0, column < columns else { return }
            cells[row * columns + column] = newValue
        }
    }

    /// Writes `text` from (row, column) in `role`, clipped at `limit` cells and at the edge;
    /// returns the column after the last cell written.
    @discardableResult
    public mutating func put(_ text: String, row: Int, column: Int, role: CellRole = .normal, limit: Int? = nil) -> Int {
        guard row >= 0, row < rows else { return column }
        let end = min(columns, column + (limit ?? columns))
        var at = column
        for (scalar, width) in Self.displayScalars(text) {
            guard at + width <= end else {
                // Half a wide character does not fit: a blank keeps the edge where it is.
                if at < end, at >= 0 { self[row, at] = Cell(scalar: " ", role: role) }
                at = min(end, at + width)
                break
            }
            if at >= 0 { self[row, at] = Cell(scalar: scalar, role: role, wide: width == 2) }
            if width == 2, at + 1 >= 0 { self[row, at + 1] = Cell(scalar: Cell.continuationScalar, role: role) }
            at += width
        }
        return at
    }

    /// What the terminal shows in (row, column): a wide character whose second cell was drawn
    /// over, or a continuation whose first was, shows as a blank; a continuation of an intact
    /// wide character shows nothing (nil): the character before it covers it.
    public func shown(row: Int, column: Int) -> Unicode.Scalar? {
        let cell = self[row, column]
        if cell.isContinuation {
            return column > 0 && self[row, column - 1].wide ? nil : " "
        }
        if cell.wide, column + 1 >= columns || !self[row, column + 1].isContinuation { return " " }
        return cell.scalar
    }

    /// Fills a rectangle with `scalar` in `role`.
    public mutating func fill(row: Int, column: Int, height: Int, width: Int, scalar: Unicode.Scalar = " ", role: CellRole = .normal) {
        for r in max(0, row)..<min(rows, row + height) {
            for c in max(0, column)..<min(columns, column + width) { self[r, c] = Cell(scalar: scalar, role: role) }
        }
    }

    /// A box with a single-line border, its inside cleared.
    public mutating func box(row: Int, column: Int, height: Int, width: Int, role: CellRole = .normal) {
        guard height >= 2, width >= 2 else { return }
        fill(row: row, column: column, height: height, width: width, role: role)
        for c in column..<(column + width) {
            self[row, c] = Cell(scalar: "─", role: role)
            self[row + height - 1, c] = Cell(scalar: "─", role: role)
        }
        for r in row..<(row + height) {
            self[r, column] = Cell(scalar: "│", role: role)
            self[r, column + width - 1] = Cell(scalar: "│", role: role)
        }
        self[row, column] = Cell(scalar: "┌", role: role)
        self[row, column + width - 1] = Cell(scalar: "┐", role: role)
        self[row + height - 1, column] = Cell(scalar: "└", role: role)
        self[row + height - 1, column + width - 1] = Cell(scalar: "┘", role: role)
    }

    /// The text of one row, trailing blanks removed.
    public func text(row: Int) -> String {
        guard row >= 0, row < rows else { return "" }
        var line = String.UnicodeScalarView()
        for column in 0..<columns { if let scalar = shown(row: row, column: column) { line.append(scalar) } }
        var text = String(line)
        while text.last == " " { text.removeLast() }
        return text
    }

    /// Every row's text.
    public var lines: [String] { (0..<rows).map { text(row: $0) } }

    /// The whole screen as text, one line per row.
    public var text: String { lines.joined(separator: "\n") }

    /// The columns of the first cell of `role` in `row`, if any.
    public func columns(of role: CellRole, row: Int) -> [Int] {
        guard row >= 0, row < rows else { return [] }
        return (0..<columns).filter { self[row, $0].role == role }
    }

    /// Each character's scalar and the cells it takes: composed where possible, control
    /// characters shown as spaces, zero-width marks dropped, wide characters two cells.
    static func displayScalars(_ text: String) -> [(Unicode.Scalar, Int)] {
        var scalars: [(Unicode.Scalar, Int)] = []
        for character in text.precomposedStringWithCanonicalMapping {
            guard let first = character.unicodeScalars.first else { continue }
            if first.properties.generalCategory == .control {
                scalars.append((" ", 1))
                continue
            }
            let width = character.displayWidth
            if width > 0 { scalars.append((first, width)) }
        }
        return scalars
    }
}

extension Character {
    /// The cells a terminal gives it: 0 for a mark or format character on its own, 2 for East
    /// Asian wide and fullwidth characters and emoji shown as pictures, 1 otherwise (what
    /// wcwidth says for them).
    var displayWidth: Int {
        guard let first = unicodeScalars.first else { return 0 }
        let properties = first.properties
        switch properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return 0
        case .control: return 1
        default: break
        }
        if properties.isEmojiPresentation { return 2 }
        if properties.isEmoji, unicodeScalars.contains(where: { $0.value == 0xFE0F }) { return 2 }
        switch first.value {
        case 0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF,
             0xA000...0xA4CF, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60,
             0xFFE0...0xFFE6, 0x20000...0x3FFFD:
            return 2
        default:
            return 1
        }
    }
}

extension String {
    /// The cells the text takes on a terminal (`Character.displayWidth`).
    var displayWidth: Int { reduce(0) { $0 + $1.displayWidth } }

    /// The longest start of the text that fits in `width` cells.
    func prefix(cells width: Int) -> String {
        var used = 0
        var end = startIndex
        for index in indices {
            let cells = self[index].displayWidth
            guard used + cells <= width else { break }
            used += cells
            end = self.index(after: index)
        }
        return String(self[..<end])
    }

    /// The longest end of the text that fits in `width` cells.
    func suffix(cells width: Int) -> String {
        var used = 0
        var start = endIndex
        while start > startIndex {
            let before = index(before: start)
            let cells = self[before].displayWidth
            guard used + cells <= width else { break }
            used += cells
            start = before
        }
        return String(self[start...])
    }

    /// Clipped to `width` cells, with an ellipsis when cut.
    func clipped(_ width: Int) -> String {
        guard width > 0 else { return "" }
        guard displayWidth > width else { return self }
        return prefix(cells: max(0, width - 1)) + "…"
    }

    /// Padded with spaces (or clipped) to exactly `width` cells.
    func padded(_ width: Int) -> String {
        let clipped = clipped(width)
        return clipped + String(repeating: " ", count: max(0, width - clipped.displayWidth))
    }
}
