import Foundation
@testable import FlowClient
import FlowProtocol
import SwiftProtobuf
import Testing

/// `Expectation.isMet(by:)` answers without writing the diff; it must say exactly what the diff
/// says (`differences(from:)`, every row matching) for every expectation and every view.
@Suite("Expectation matching")
struct ExpectationMatchTests {
    /// A schema `t.v1.Item { string id = 1; bool liked = 2; Item inner = 3; }` and payloads of it.
    static let schema: AppSchema = {
        var item = Google_Protobuf_DescriptorProto()
        item.name = "Item"
        for (name, number, type) in [("id", Int32(1), Google_Protobuf_FieldDescriptorProto.TypeEnum.string),
                                     ("liked", 2, .bool), ("inner", 3, .message)] {
            var field = Google_Protobuf_FieldDescriptorProto()
            field.name = name
            field.jsonName = name
            field.number = number
            field.label = .optional
            field.type = type
            if type == .message { field.typeName = ".t.v1.Item" }
            item.field.append(field)
        }
        var file = Google_Protobuf_FileDescriptorProto()
        file.name = "t.proto"
        file.package = "t.v1"
        file.syntax = "proto3"
        file.messageType = [item]
        var set = Google_Protobuf_FileDescriptorSet()
        set.file = [file]
        return try! AppSchema(package: "t.v1", serialized: try! set.serializedData())
    }()

    /// The wire bytes of an Item: its id, its flag, and an inner Item with an id.
    static func payload(id: String?, liked: Bool, inner: String?) -> Data {
        func text(_ number: UInt8, _ value: String) -> [UInt8] { [number << 3 | 2, UInt8(value.utf8.count)] + Array(value.utf8) }
        var bytes: [UInt8] = []
        if let id { bytes += text(1, id) }
        if liked { bytes += [2 << 3, 1] }
        if let inner {
            let nested = text(1, inner)
            bytes += [3 << 3 | 2, UInt8(nested.count)] + nested
        }
        return Data(bytes)
    }

    struct Draw {
        var state: UInt64
        mutating func next(_ count: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int((state >> 33) % UInt64(count))
        }
        mutating func pick<T>(_ values: [T]) -> T { values[next(values.count)] }
    }

    static func view(_ draw: inout Draw) -> SessionView {
        var view = SessionView(session: "s1")
        view.schemas["t.v1"] = schema
        let kinds = ["home", "details", "likes"]
        switch draw.next(4) {
        case 0: break
        case 1:
            view.navigation = BusFixture.stack(
                (0..<draw.next(3) + 1).map { _ in BusFixture.screen(draw.pick(kinds), owner: "app") }, version: 2)
        default:
            view.navigation = BusFixture.tabs([
                ("home", [BusFixture.screen("home", owner: "app")] + (draw.next(2) == 0 ? [] : [BusFixture.screen("details", owner: "app")])),
                ("likes", [BusFixture.screen("likes", owner: "app")]),
            ], selected: draw.pick(["home", "likes"]), version: 3)
            if draw.next(4) == 0 { view.navigation?.modal = BusFixture.screen("details", owner: "app") }
        }
        for kind in kinds where draw.next(3) != 0 {
            var state = Flowbus_V1_ViewState()
            state.screenVersion = UInt64(draw.next(4))
            state.phase = draw.pick([.loading, .success, .error, .none])
            state.message = draw.pick(["", "Sorry", "\"quoted\""])
            state.notice = draw.pick(["", "loggedOut"])
            state.screenID = kind
            if draw.next(3) != 0 {
                state.payloadKind = draw.pick(["t.v1.Item", "t.v1.Item", "other.v1.Thing"])
                state.payload = payload(id: draw.pick([nil, "movie:19", "actor:1"]), liked: draw.next(2) == 0, inner: draw.pick([nil, "x"]))
            }
            view.states[kind] = ScreenState(kind: kind, state: state, writer: "vm-\(kind)", incarnation: 1, sequence: 1)
        }
        if draw.next(3) != 0 {
            var record = Flowbus_V1_SessionRecord()
            record.user = draw.pick(["", "demo@flowbus.dev", "(signed out)"])
            view.record = record
        }
        return view
    }

    static func expectation(_ draw: inout Draw) -> FlowClient.Expectation {
        var expectation = FlowClient.Expectation()
        if draw.next(2) == 0 { expectation.screen = draw.pick(["home", "details", "likes", "(none)"]) }
        if draw.next(3) == 0 { expectation.stack = draw.pick([[], ["home"], ["home", "details"], ["likes"], ["home, details"]]) }
        if draw.next(3) == 0 { expectation.tab = draw.pick(["home", "likes", "(none)"]) }
        if draw.next(4) == 0 { expectation.modal = draw.pick(["none", "details"]) }
        if draw.next(2) == 0 { expectation.phase = draw.pick(ScreenPhase.allCases) }
        if draw.next(4) == 0 { expectation.message = draw.pick(["", "Sorry", "\"quoted\""]) }
        if draw.next(4) == 0 { expectation.notice = draw.pick(["", "loggedOut"]) }
        if draw.next(3) == 0 { expectation.stateOf = draw.pick(["home", "details", "likes", "signin"]) }
        if draw.next(4) == 0 { expectation.user = draw.pick(["", "demo@flowbus.dev", "(signed out)"]) }
        if draw.next(2) == 0 {
            var data: [String: String] = [:]
            for _ in 0..<draw.next(3) {
                data[draw.pick(["id", "liked", "inner.id", "inner.liked", "missing", "missing.id"])] =
                    draw.pick(["movie:19", "actor:1", "true", "false", "", "0", "x"])
            }
            expectation.data = data
        }
        if draw.next(3) == 0 { expectation.newerThan[draw.pick(["home", "details", "likes"])] = UInt64(draw.next(4)) }
        return expectation
    }

    @Test func saysWhatTheDiffSaysForEveryExpectationAndView() {
        var draw = Draw(state: 20261203)
        var met = 0
        for _ in 0..<20_000 {
            let view = Self.view(&draw)
            let expectation = Self.expectation(&draw)
            let byDiff = expectation.differences(from: view).allSatisfy { $0.matches }
            #expect(expectation.isMet(by: view) == byDiff, "\(expectation) against \(view.summary)")
            if byDiff { met += 1 }
        }
        // Both answers occur often enough for the comparison to mean something.
        #expect(met > 1_000 && met < 19_000)
    }

    @Test func readsThePayloadOfTheFreshState() {
        var view = SessionView(session: "s1")
        view.schemas["t.v1"] = Self.schema
        var state = Flowbus_V1_ViewState()
        state.screenVersion = 3
        state.phase = .success
        state.payloadKind = "t.v1.Item"
        state.payload = Self.payload(id: "movie:19", liked: true, inner: nil)
        view.states["details"] = ScreenState(kind: "details", state: state, writer: "vm-details", incarnation: 1, sequence: 1)
        var expectation = FlowClient.Expectation(phase: .success, stateOf: "details")
        expectation.data = ["id": "movie:19", "liked": "true"]
        #expect(expectation.isMet(by: view))
        expectation.data = ["id": "movie:19", "liked": "false"]
        #expect(!expectation.isMet(by: view))
        // A state from before the intent does not count, whatever it holds.
        expectation.data = ["id": "movie:19"]
        expectation.newerThan["details"] = 3
        #expect(!expectation.isMet(by: view))
    }
}
