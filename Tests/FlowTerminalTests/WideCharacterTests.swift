@testable import FlowClient
import FlowProtocol
@testable import FlowTerminal
import Testing

/// Text laid out by the cells a terminal gives it (issue 17: a nickname "jô 🎬" lost its ")" and
/// a text field's bracket moved, or the rest of its line vanished, with an emoji in it).
@Suite("Wide characters")
struct WideCharacterTests {
    @Test("a wide character takes two cells, a combining mark none, and the text reads back as written")
    func widthsOfCharacters() {
        var canvas = Canvas(rows: 1, columns: 20)
        let end = canvas.put("(jô 🎬)", row: 0, column: 0)
        #expect(end == 7, "( j ô space 🎬🎬 ) is 7 cells")
        #expect(canvas.text(row: 0) == "(jô 🎬)")
        #expect(canvas[0, 4].wide && canvas[0, 5].isContinuation && canvas[0, 6].scalar == ")")
        // A decomposed accent composes into one cell; a mark with no composed form is dropped.
        #expect(canvas.put("e\u{301}x", row: 0, column: 10) == 12)
        #expect(canvas.put("a\u{334}b", row: 0, column: 14) == 16)
        #expect("日本".displayWidth == 4 && "🎬".displayWidth == 2 && "ô".displayWidth == 1 && "\u{301}".displayWidth == 0)
    }

    @Test("clipping and padding count cells, so what follows stays in its column")
    func clipAndPad() {
        #expect("jô 🎬".padded(8).displayWidth == 8)
        #expect("🎬🎬🎬🎬".clipped(5) == "🎬🎬…")
        #expect("🎬🎬🎬🎬".clipped(5).displayWidth == 5)
        #expect("ab🎬".suffix(cells: 3) == "b🎬")
        #expect("ab🎬".suffix(cells: 2) == "🎬")
        #expect(ScreenRenderer.wrap("jô 🎬 🎬 🎬", width: 6) == ["jô 🎬", "🎬 🎬"])
    }

    @Test("half a wide character, at the edge or drawn over, shows as a blank, never as a character")
    func halves() {
        var canvas = Canvas(rows: 1, columns: 5)
        canvas.put("abc🎬", row: 0, column: 1)
        #expect(canvas.text(row: 0) == " abc", "🎬 does not fit in the last cell")
        canvas.put("🎬🎬", row: 0, column: 0)
        canvas.put("|", row: 0, column: 1)
        // The first 🎬 lost its second cell to "|": a blank, then "|", then the second 🎬 whole.
        #expect(canvas.text(row: 0) == " |🎬")
    }

    /// The garden screen's Name field, with an emoji typed and the cursor after it: its closing
    /// bracket stays in the column it has with plain text.
    @Test("a text field with an emoji keeps its bracket in place, with the cursor after the emoji")
    func fieldWithEmoji() {
        func bracketColumn(_ typed: [Key]) -> Int? {
            let controller = ClientController(view: GenericScreenTests.view())
            for key in typed { _ = controller.handle(key) }
            let canvas = ScreenRenderer.render(controller, rows: 30, columns: 80)
            for row in 0..<canvas.rows where canvas.text(row: row).contains("Name") {
                var cells = 0
                for column in 0..<canvas.columns where canvas[row, column].scalar == "]" { cells = column }
                return cells
            }
            return nil
        }
        let plain = bracketColumn([.character("a"), .character("b")])
        let emoji = bracketColumn([.character("a"), .character("🎬"), .character("b")])
        #expect(plain != nil && plain == emoji)
    }
}
