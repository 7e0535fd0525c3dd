import FlowProtocol
import Foundation
import SwiftProtobuf
import Testing

/// `ProtoWriter` writes what SwiftProtobuf writes, byte for byte, for every kind of field.
@Suite("ProtoWriter")
struct ProtoWriterTests {
    static func expectSameBytes(_ message: some SwiftProtobuf.Message, _ label: String) throws {
        let expected: [UInt8] = try message.serializedBytes()
        let written = try ProtoWriter.encode(message)
        #expect(written == expected, "\(label): \(written.count) bytes written, SwiftProtobuf writes \(expected.count)")
    }

    /// Every golden vector, decoded, is written again as SwiftProtobuf writes it.
    @Test(arguments: ProtobufVectorTests.names)
    func everyVector(name: String) throws {
        let text = try Vectors.text(name, "txtpb")
        let typeName = try #require(Vectors.header("type", in: text))
        let type = try #require(PayloadKinds.type(named: typeName))
        let decoded = try type.init(serializedBytes: Vectors.bytes(name))
        try Self.expectSameBytes(decoded, name)
    }

    /// A seeded generator of text, with multi-byte characters and lengths either side of the
    /// varint steps (127/128 and 16,383/16,384 bytes).
    struct Generator {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(max(1, bound)))
        }
        mutating func text(_ length: Int) -> String {
            let alphabet = Array("abcdefghij ♥é✓日本")
            return String((0..<length).map { _ in alphabet[next(alphabet.count)] })
        }
        mutating func item() -> Flowbus_V1_Item {
            var item = Flowbus_V1_Item()
            item.id = "movie:\(next(1000))"
            item.title = text(next(40))
            item.subtitle = next(2) == 0 ? "" : text(next(20))
            return item
        }
    }

    static func viewState(_ generator: inout Generator, items: Int, synopsis: Int) -> Flowbus_V1_ViewState {
        var state = Flowbus_V1_ViewState()
        state.phase = [.none, .loading, .success, .error][generator.next(4)]
        state.message = generator.text(generator.next(30))
        state.payload = Data((0..<generator.next(300)).map { _ in UInt8(generator.next(256)) })
        state.payloadKind = "movies.v1.ScreenData"
        state.screenVersion = UInt64(generator.next(1 << 20)) << UInt64(generator.next(40))
        state.screenID = "details-\(generator.next(9))"
        state.appearKey = "appear/s/details/\(generator.next(99))"
        var heading = Flowbus_V1_Component()
        heading.text.text = generator.text(20)
        heading.text.style = .heading
        var body = Flowbus_V1_Component()
        body.text.text = generator.text(synopsis)
        var collection = Flowbus_V1_Collection()
        collection.id = "cast"
        collection.title = "Cast"
        collection.items = (0..<items).map { _ in generator.item() }
        collection.action = "select"
        collection.field = "item"
        var list = Flowbus_V1_Component()
        list.collection = collection
        var buttons = Flowbus_V1_Component()
        var row = Flowbus_V1_Buttons()
        var like = Flowbus_V1_ActionRef()
        like.action = "like"
        like.label = "♡ Like"
        like.values = Dictionary(uniqueKeysWithValues: (0..<generator.next(5)).map { ("field\($0)", generator.text(generator.next(200))) })
        row.buttons = [like]
        buttons.buttons = row
        state.presentation.components = [heading, body, list, buttons]
        var action = Flowbus_V1_Action()
        action.name = "like"
        action.service = "vm.details"
        action.fields = ["a", "b"]
        action.disabled = generator.next(2) == 0
        action.handler = .coordinator
        state.actions = [action, action]
        state.errorField = generator.next(2) == 0 ? "" : "email"
        return state
    }

    @Test func viewStatesOfEverySize() throws {
        var generator = Generator(state: 0x5EED)
        for items in [0, 1, 3, 7, 40, 300] {
            for synopsis in [0, 60, 100, 126, 127, 128, 129, 5_000, 16_380, 16_384, 70_000] {
                let state = Self.viewState(&generator, items: items, synopsis: synopsis)
                try Self.expectSameBytes(state, "ViewState, \(items) items, synopsis of \(synopsis) characters")
                // And inside an envelope, as a view model publishes it.
                let envelope = try Envelope.wrapping(state, session: "s1", idempotencyKey: "k", writer: "vm-details/0", incarnation: 3, keyVersion: 9)
                try Self.expectSameBytes(envelope, "its Envelope")
                #expect(try Envelope.decodeChecked(envelope.encoded()).unwrap(Flowbus_V1_ViewState.self) == state)
            }
        }
    }

    /// Unknown fields kept from a newer writer go out again where SwiftProtobuf puts them.
    @Test func unknownFields() throws {
        var generator = Generator(state: 7)
        var bytes: [UInt8] = try Self.viewState(&generator, items: 3, synopsis: 10).serializedBytes()
        bytes += [0xF8, 0x06, 0x2A]  // field 111, varint 42
        bytes += [0xFA, 0x06, 0x03, 0x61, 0x62, 0x63]  // field 111, "abc"
        let decoded = try Flowbus_V1_ViewState(serializedBytes: bytes)
        #expect(!decoded.unknownFields.data.isEmpty)
        try Self.expectSameBytes(decoded, "ViewState with unknown fields")
    }

    /// Enums past the schema's values, negative ones included, and every scalar width.
    @Test func scalarsAndEnums() throws {
        var state = Flowbus_V1_ViewState()
        state.phase = .UNRECOGNIZED(-7)
        state.screenVersion = .max
        try Self.expectSameBytes(state, "ViewState with a negative unknown phase")
        var envelope = Envelope()
        envelope.version = .max
        envelope.sentAtUnixNanos = .min
        envelope.incarnation = 1 << 63
        envelope.check = .max
        try Self.expectSameBytes(envelope, "Envelope with extreme scalars")
    }

    /// proto2 with packed fields, optional presence and nested descriptors: the schema a plugin
    /// publishes (a FileDescriptorSet) goes through the writer too.
    @Test func descriptorsWithPackedFields() throws {
        var location = Google_Protobuf_SourceCodeInfo.Location()
        location.path = [4, 0, 2, -1, 300_000]
        location.span = [1, 2, 3, Int32.min, Int32.max]
        location.leadingComments = "a comment ♥"
        var file = Google_Protobuf_FileDescriptorProto()
        file.name = "movies.proto"
        file.package = "movies.v1"
        file.sourceCodeInfo.location = [location, location]
        var message = Google_Protobuf_DescriptorProto()
        message.name = "Details"
        var field = Google_Protobuf_FieldDescriptorProto()
        field.name = "liked"
        field.number = 5
        field.type = .bool
        field.label = .optional
        field.defaultValue = ""
        field.options.packed = false
        message.field = [field, field]
        file.messageType = [message]
        var set = Google_Protobuf_FileDescriptorSet()
        set.file = [file, file]
        try Self.expectSameBytes(set, "FileDescriptorSet")
        var packed = Google_Protobuf_SourceCodeInfo.Location()
        packed.path = Array(repeating: 127, count: 200)
        try Self.expectSameBytes(packed, "a packed field of 200 bytes")
    }
}

/// `ViewState.head` reads what decoding the whole state reads, and refuses what it refuses.
@Suite("ProtoFields")
struct ProtoFieldsTests {
    @Test func aViewStatesHeadIsWhatTheWholeDecodes() throws {
        var generator = ProtoWriterTests.Generator(state: 99)
        for items in [0, 2, 50] {
            for synopsis in [0, 10, 200, 20_000] {
                var state = ProtoWriterTests.viewState(&generator, items: items, synopsis: synopsis)
                for phase in [Flowbus_V1_ViewState.Phase.none, .loading, .success, .error, .UNRECOGNIZED(9)] {
                    state.phase = phase
                    let bytes = try state.serializedData()
                    let head = try #require(Flowbus_V1_ViewState.head(of: bytes))
                    let whole = try Flowbus_V1_ViewState(serializedBytes: bytes)
                    #expect(head == Flowbus_V1_ViewState.Head(phase: whole.phase, screenVersion: whole.screenVersion, message: whole.message))
                }
            }
        }
    }

    @Test func malformedBytesHaveNoHead() throws {
        var state = Flowbus_V1_ViewState()
        state.phase = .success
        state.message = "Liked."
        state.screenVersion = 300
        let bytes = [UInt8](try state.serializedData())
        #expect(Flowbus_V1_ViewState.head(of: Data(bytes)) == Flowbus_V1_ViewState.Head(phase: .success, screenVersion: 300, message: "Liked."))
        // Cut anywhere inside, the bytes no longer make a message (except at a field's end).
        for cut in 1..<bytes.count {
            let head = Flowbus_V1_ViewState.head(of: Data(bytes[..<cut]))
            let whole = try? Flowbus_V1_ViewState(serializedBytes: Array(bytes[..<cut]))
            #expect((head == nil) == (whole == nil), "cut at \(cut)")
        }
        #expect(Flowbus_V1_ViewState.head(of: Data([0x12, 0x02, 0xC3, 0x28])) == nil)  // message: invalid UTF-8
        #expect(Flowbus_V1_ViewState.head(of: Data([0x0A, 0x01, 0x01])) == nil)  // phase sent as bytes
        #expect(Flowbus_V1_ViewState.head(of: Data([0x00, 0x01])) == nil)  // field number 0
        #expect(Flowbus_V1_ViewState.head(of: Data([0x28, 0xFF])) == nil)  // a varint cut short
    }
}
