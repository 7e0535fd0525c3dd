import Foundation

/// How a cell is drawn; the terminal maps each role to colours and attributes (see CTerminal).
public enum CellRole: Int32, Sendable, Equatable {
    case normal = 0, bar, focus, disabled, error, accent, muted, selected, title
}

/// One character cell of the screen.
public struct Cell: Sendable, Equatable {
    public var scalar: Unicode.Scalar
    public var role: CellRole

    public static let blank = Cell(scalar: " ", role: .normal)
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
        for scalar in Self.displayScalars(text) {
            guard at < end else { break }
            if at >= 0 { self[row, at] = Cell(scalar: scalar, role: role) }
            at += 1
        }
        return at
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
        for column in 0..<columns { line.append(self[row, column].scalar) }
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

    /// One scalar per cell: composed where possible, control characters shown as spaces, and
    /// zero-width marks dropped (the client's text is Latin; wide scripts are not laid out).
    static func displayScalars(_ text: String) -> [Unicode.Scalar] {
        var scalars: [Unicode.Scalar] = []
        for character in text.precomposedStringWithCanonicalMapping {
            guard let first = character.unicodeScalars.first else { continue }
            if first.properties.generalCategory == .control { scalars.append(" ") } else { scalars.append(first) }
        }
        return scalars
    }
}

extension String {
    /// Clipped to `width` cells, with an ellipsis when cut.
    func clipped(_ width: Int) -> String {
        guard width > 0 else { return "" }
        guard count > width else { return self }
        return String(prefix(max(0, width - 1))) + "…"
    }

    /// Padded with spaces (or clipped) to exactly `width` cells.
    func padded(_ width: Int) -> String {
        let clipped = clipped(width)
        return clipped + String(repeating: " ", count: max(0, width - clipped.count))
    }
}
