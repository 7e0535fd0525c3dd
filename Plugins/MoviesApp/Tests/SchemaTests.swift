import FlowClient
import FlowProtocol
import Foundation
import MoviesApp
import SwiftProtobuf
import Testing

/// The schema the movies app publishes lets a client that has none of its types read its
/// payloads exactly as protobuf's own JSON form has them.
@Suite("The movies app's published schema")
struct SchemaTests {
    static func json(_ message: some SwiftProtobuf.Message) throws -> NSDictionary {
        var options = JSONEncodingOptions()
        options.alwaysPrintInt64sAsNumbers = true
        return try #require(try JSONSerialization.jsonObject(with: message.jsonUTF8Data(options: options)) as? NSDictionary)
    }

    static func payloads() throws -> [ScreenData] {
        let services = AppServices.inMemory(catalog: try Catalog.bundled(), hashIterations: 1)
        var details = ScreenData()
        details.details = try services.movies.details(id: "series:2", user: "demo@flowbus.dev")
        var actor = ScreenData()
        actor.details = try services.movies.details(id: "actor:1", user: "demo@flowbus.dev")
        var home = ScreenData()
        home.home = try services.movies.home(user: "demo@flowbus.dev")
        var report = ScreenData()
        report.report = .empty(createdOn: Date(timeIntervalSince1970: 1_800_000_000))
        report.report.add(titulo: "Monitor", kind: .eletronicos, centavos: 123_456)
        var genres = ScreenData()
        genres.genres.genres = try services.genres.genres()
        return [details, actor, home, report, genres]
    }

    @Test func everyPayloadReadsAsProtobufJSONThroughTheSchemaAlone() throws {
        let schema = try MoviesSchema.bundled()
        #expect(schema.key == "/schema/movies.v1")
        let reader = PayloadReader(schemas: [schema])
        #expect(reader.knows("movies.v1.ScreenData"))
        for payload in try Self.payloads() {
            let read = try #require(reader.object(kind: "movies.v1.ScreenData", bytes: try payload.serializedData()))
            #expect(NSDictionary(dictionary: read) == (try Self.json(payload)), "\(payload)")
        }
    }

    @Test func dataPathsReachIntoTheReadPayload() throws {
        let reader = PayloadReader(schemas: [try MoviesSchema.bundled()])
        let payload = try Self.payloads()[3]
        let read = reader.object(kind: "movies.v1.ScreenData", bytes: try payload.serializedData())
        #expect(DataPath.values(of: "report.expenses", in: read) == ["1"])
        #expect(DataPath.values(of: "report.expenses.0.valorCentavos", in: read) == ["123456"])
        #expect(DataPath.matches("true", at: "report.podeRegistrar", in: read))
    }

    @Test func anUnknownKindOrBrokenBytesReadAsNothing() throws {
        let reader = PayloadReader(schemas: [try MoviesSchema.bundled()])
        #expect(reader.object(kind: "movies.v1.Nothing", bytes: Data([8, 1])) == nil)
        #expect(reader.object(kind: "movies.v1.ScreenData", bytes: Data([0x1a, 0x7f, 1])) == nil)
    }
}
